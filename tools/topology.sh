#!/usr/bin/env bash
# The machine topologies both kernels are measured on, as QEMU flags: one place for Cadence's
# runs (pass-through arguments after its own, QEMU keeps the last -smp and -m) and the Linux
# peer's (QEMU_EXTRA, plus --smp for run.sh, which puts its own -smp after QEMU_EXTRA).
#
#   tools/topology.sh NAME [MIB]          one QEMU argument per line (no argument has a space)
#   tools/topology.sh --words NAME [MIB]  the same as one line of shell words
#   tools/topology.sh --smp NAME          only the -smp value (for the peer's run.sh --smp)
#   tools/topology.sh --list              the names, one per line
#
# MIB is the guest's total memory in MiB (default 512, Cadence's -m; the peer boots with 1024).
# The NUMA nodes' memory backends add up to exactly MIB (QEMU refuses anything else): every node
# gets MIB/N and node 0 also the remainder. The output ends with `-m MIBM` so a launcher that
# put its own -m earlier gets the same size (QEMU keeps the last -m); the peer's run.sh puts
# `-m 1024` after QEMU_EXTRA, so pass 1024 there.
#
# Examples:
#   mapfile -t a < <(tools/topology.sh 8node 512); cadence-boot run ... -- "${a[@]}"
#   QEMU_EXTRA="$(tools/topology.sh --words 8node 1024)" \
#     ../shared/peer/run.sh --linux 6.12 --smp "$(tools/topology.sh --smp 8node)" 'cat /proc/schedstat'
#
# Topologies (CPUs are numbered by QEMU socket, then core, then thread, as both kernels number them;
# a node is a set of whole sockets, assigned with -numa cpu,node-id=N,socket-id=S):
#   flat     -smp 4: one socket, four cores, no SMT, no NUMA (no SRAT, no SLIT).
#   smt4     -smp 16,sockets=1,cores=4,threads=4: one socket, four SMT4 cores, no NUMA.
#   2node    -smp 8,sockets=2,cores=2,threads=2: two sockets, one node each, distance 20
#            (given, so QEMU emits a SLIT).
#   8node    -smp 64,sockets=8,cores=4,threads=2: eight sockets, one node each, distances
#            10/16/22/28: node i to j is 16 when i^j == 1 (pairs), 22 in the same half
#            (i/4 == j/4), 28 across halves. Linux 6.12's cpu0 domains: SMT 3, MC ff,
#            NUMA ffff, NUMA ffffffff, NUMA (all 64). The wasted-cores paper's machine had
#            8 nodes of 8 cores.
#   mesh     -smp 8,sockets=4,cores=2,threads=1: four nodes in a ring 0-1-2-3-0, neighbours at
#            20, opposite nodes (0-2, 1-3) at 30, two hops: a NUMA level whose spans overlap
#            (node 0 sees {3,0,1}, node 1 sees {0,1,2}).
#   seed003  -smp 224,sockets=2,cores=28,threads=4: seed 003's machine (2 NUMA nodes x 28 cores
#            x SMT4), one node per socket, distance 20.
#   x255     -smp 255: the most CPUs with 8-bit xAPIC ids (0..254, on the default pc machine);
#            one socket of 255 cores (QEMU 10 prefers cores), no NUMA.
#   x1024    -machine q35,smm=off -device intel-iommu,intremap=on,eim=on
#            -smp 1024,sockets=16,cores=32,threads=2: x2APIC ids (beyond 255 QEMU requires q35
#            and an IOMMU with interrupt remapping in extended (x2APIC) mode: eim=on; under TCG
#            there is no kernel irqchip, so no kernel-irqchip=split), 16 nodes of one socket
#            (64 CPUs) each; no distances given, so no SLIT (Linux then uses 10 and 20).
#            smm=off: with SMM every vCPU has a second address space (cpu-smm) with its own
#            flat view and dispatch tables, and QEMU 10.0.2 grew past 8 GB within 15 s of
#            starting 1,024 vCPUs, stopped (-S), and a Linux boot was OOM-killed at 23.8 GB on
#            this 24 GB host; with smm=off the same QEMU settles at 397 MB (measured).
set -euo pipefail

names="flat smt4 2node 8node mesh seed003 x255 x1024"
usage() { echo "usage: $0 [--words|--smp] NAME [MIB] | --list   (NAME: $names)" >&2; exit 2; }

mode=lines
case ${1:-} in
  --list) printf '%s\n' $names; exit 0;;
  --words) mode=words; shift;;
  --smp) mode=smp; shift;;
  -h|--help|'') usage;;
esac
name=${1:-}; mib=${2:-512}
[[ $mib =~ ^[1-9][0-9]*$ ]] || { echo "$0: MIB must be a positive integer (MiB), not '$mib'" >&2; exit 2; }

machine=(); smp=; nodes=0; dist=()
# by_socket N: N nodes, node i holding socket i (the -smp spec must have N sockets).
# dist A B D: distance D between nodes A and B, both ways (QEMU would mirror it, but an explicit
# matrix leaves nothing to its completion rules).
d() { dist+=("$1:$2:$3" "$2:$1:$3"); }
case $name in
  flat) smp=4;;
  smt4) smp=16,sockets=1,cores=4,threads=4;;
  2node) smp=8,sockets=2,cores=2,threads=2; nodes=2; d 0 1 20;;
  8node) smp=64,sockets=8,cores=4,threads=2; nodes=8
    for ((i = 0; i < 8; i++)); do for ((j = i + 1; j < 8; j++)); do
      if (( (i ^ j) == 1 )); then v=16; elif (( i / 4 == j / 4 )); then v=22; else v=28; fi
      d $i $j $v; done; done;;
  mesh) smp=8,sockets=4,cores=2,threads=1; nodes=4
    for ((i = 0; i < 4; i++)); do for ((j = i + 1; j < 4; j++)); do
      if (( j - i == 2 )); then v=30; else v=20; fi   # 0-2 and 1-3 are opposite
      d $i $j $v; done; done;;
  seed003) smp=224,sockets=2,cores=28,threads=4; nodes=2; d 0 1 20;;
  x255) smp=255;;
  x1024) machine=(-machine q35,smm=off -device intel-iommu,intremap=on,eim=on); smp=1024,sockets=16,cores=32,threads=2; nodes=16;;
  *) usage;;
esac

if [ $mode = smp ]; then echo "$smp"; exit 0; fi
(( nodes <= mib )) || { echo "$0: $name has $nodes nodes: $mib MiB is too little" >&2; exit 2; }

args=("${machine[@]}" -smp "$smp")
if (( nodes > 0 )); then
  each=$((mib / nodes)); first=$((each + mib % nodes))
  for ((n = 0; n < nodes; n++)); do
    size=$each; (( n == 0 )) && size=$first
    args+=(-object "memory-backend-ram,id=m$n,size=${size}M" -numa "node,nodeid=$n,memdev=m$n")
  done
  for ((n = 0; n < nodes; n++)); do args+=(-numa "cpu,node-id=$n,socket-id=$n"); done
  for e in "${dist[@]}"; do IFS=: read -r s t v <<<"$e"; args+=(-numa "dist,src=$s,dst=$t,val=$v"); done
fi
args+=(-m "${mib}M")

if [ $mode = words ]; then echo "${args[*]}"; else printf '%s\n' "${args[@]}"; fi
