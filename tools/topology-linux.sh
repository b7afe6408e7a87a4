#!/usr/bin/env bash
# Records Linux 6.12's view of one of tools/topology.sh's machines, by booting the Linux peer
# (../shared/peer/run.sh) with that topology's QEMU flags and running tools/topology/probe.sh:
#
#   tools/topology-linux.sh NAME OUTDIR [TABLEDIR]
#
# writes into OUTDIR one plain-text file per command (uname.txt, schedstat.txt, sched-domains.txt,
# node.txt, node-meminfo.txt, cpu-topology.txt, lscpu.txt, lscpu-e.txt, numactl-hardware.txt,
# dmesg-numa.txt) and command.txt (the QEMU flags, the QEMU version, the host wall time of the
# boot); into TABLEDIR (default OUTDIR) the firmware's ACPI SRAT and SLIT as Linux read them from
# /sys/firmware/acpi/tables (binary; absent when QEMU built none). The fixtures in the tree:
#
#   for t in flat smt4 2node 8node mesh; do
#     tools/topology-linux.sh $t tests/fixtures/topology/linux-6.12/$t lib/firmware/tests/fixtures/$t
#   done
#
# numactl is Debian 12's (the peer already carries its libnuma1): NUMACTL=/path/to/numactl, or it
# is fetched once with `apt-get download numactl` into $TMPDIR/cadence-numactl. The peer boots with
# -m 1024, so the topology's memory backends are sized for 1024 MiB. PEER_TIMEOUT (default 900 s)
# bounds the boot. The peer's serial console carries everything: tables travel as base64.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { echo "usage: $0 NAME OUTDIR [TABLEDIR]   (NAME: $("$root/tools/topology.sh" --list | tr '\n' ' '))" >&2; exit 2; }
name=$1; out=$2; tables=${3:-$2}
. "$root/tools/peer-env.sh"
peer_find || { echo "topology-linux: no Linux peer (../shared/peer/run.sh)" >&2; exit 2; }

extra=$("$root/tools/topology.sh" --words "$name" 1024)
smp=$("$root/tools/topology.sh" --smp "$name")

numactl=${NUMACTL:-}
if [ -z "$numactl" ]; then
  cache=${TMPDIR:-/tmp}/cadence-numactl
  numactl=$cache/usr/bin/numactl
  if [ ! -x "$numactl" ]; then
    mkdir -p "$cache"
    (cd "$cache" && apt-get download numactl >/dev/null 2>&1 && dpkg-deb -x numactl_*.deb .) ||
      { echo "topology-linux: cannot fetch numactl (apt-get download numactl); set NUMACTL=" >&2; exit 2; }
  fi
fi

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cp "$root/tools/topology/probe.sh" "$work/probe.sh"; cp "$numactl" "$work/numactl"
# The first-touch probe, static (the peer's busybox root has no glibc of ours).
gcc -O2 -static -Wall -o "$work/numa-touch" "$root/tests/user/numa-touch.c"
start=$(date +%s.%N)
set +e
QEMU_EXTRA="$extra" PEER_APPEND="sched_verbose${PEER_APPEND:+ $PEER_APPEND}" PEER_TIMEOUT=${PEER_TIMEOUT:-900} "$PEER_RUN" --linux 6.12 --smp "$smp" \
  --file "$work/probe.sh" --file "$work/numactl" --file "$work/numa-touch" 'sh /probe.sh' > "$work/raw"
rc=$?
set -e
wall=$(echo "$(date +%s.%N) - $start" | bc)
if ! grep -q '^@@@ end$' "$work/raw"; then
  echo "topology-linux: $name: the peer did not finish (rc=$rc, ${wall%.*} s); its output:" >&2
  tail -n 40 "$work/raw" >&2; exit 1
fi

if grep -n -E '^\[ *[0-9]+\.[0-9]+\] ' "$work/raw" >&2; then
  echo "topology-linux: $name: kernel messages on the console (above) among the output; not recorded" >&2; exit 1
fi
mkdir -p "$out" "$tables"
awk -v dir="$work/split" 'BEGIN { system("mkdir -p " dir) }
  /^@@@ / { f = dir "/" $2; next }
  f != "" { print > f }' "$work/raw"
rm -f "$work/split/end"
for t in SRAT SLIT; do
  if [ "$(cat "$work/split/$t.base64")" = absent ]; then rm -f "$tables/$t"
  else base64 -d "$work/split/$t.base64" > "$tables/$t"; fi
  rm "$work/split/$t.base64"
done
cp "$work/split/"* "$out/"
{
  echo "topology: $name (tools/topology.sh $name 1024)"
  echo "recorded by: tools/topology-linux.sh $name OUTDIR [TABLEDIR]"
  echo "peer: run.sh --linux 6.12 --smp '$smp' --file probe.sh --file numactl --file numa-touch 'sh /probe.sh'"
  echo "QEMU_EXTRA: $extra"
  echo "PEER_APPEND: sched_verbose${PEER_APPEND:+ $PEER_APPEND}"
  echo "qemu: $(qemu-system-x86_64 --version | head -n 1)"
  echo "kernel: $(head -n 1 "$out/uname.txt")"
  printf 'host wall time: %.0f s (boot, probe and poweroff; the host has %s CPUs)\n' "$wall" "$(nproc)"
} > "$out/command.txt"
printf 'topology-linux: %s: %s files in %s, tables in %s, %.0f s\n' "$name" "$(ls "$out" | wc -l)" "$out" "$tables" "$wall"
