#!/usr/bin/env bash
# Two Cadence builds side by side in one sitting: the same benchmarks on kernel A and kernel B,
# alternating boots (A B A B ...) so the host's load falls on both alike; prints each run's
# figures and the medians. For "no behaviour change" claims (an old commit's kernel against a
# new one's).
#
#   tools/compare-kernels.sh A.elf B.elf [ROUNDS] [SMP]
#
# Benchmarks: `bench pipe -l 5000` (us per switch, same CPU and two cores), `bench hackbench -g 4
# -l 50` (Time: s), `bench cyclic -t 4 -a -p 90 -i 1000 -l 2000 -q` (max of the per-thread Avg
# and Max, us).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
a="${1:?usage: compare-kernels.sh A.elf B.elf [ROUNDS] [SMP]}"
b="${2:?usage: compare-kernels.sh A.elf B.elf [ROUNDS] [SMP]}"
rounds="${3:-3}"
smp="${4:-4,sockets=1,cores=2,threads=2}"
boot="$root/target/release/cadence-boot"
cmds='bench pipe -l 5000; bench hackbench -g 4 -l 50; bench cyclic -t 4 -a -p 90 -i 1000 -l 2000 -q'
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for r in $(seq 1 "$rounds"); do
  for side in A B; do
    k="$a"; [[ $side == B ]] && k="$b"
    log="$out/$side.$r"
    "$boot" run --kernel "$k" --smp "$smp" --timeout 600 --args "run=\"$cmds\" poweroff" >"$log" 2>&1 \
      || { echo "compare-kernels: $side run $r failed (see below)" >&2; tail -20 "$log" >&2; exit 1; }
    same=$(grep -m1 'us per switch' "$log" | sed 's/.*, \([0-9.]*\) us per switch.*/\1/')
    cross=$(grep 'us per switch' "$log" | sed -n 2p | sed 's/.*, \([0-9.]*\) us per switch.*/\1/')
    hack=$(grep -m1 '^Time:' "$log" | awk '{print $2}')
    avg=$(grep -E '^T: *[0-9]' "$log" | sed 's/.*Avg: *\([0-9]*\).*/\1/' | sort -n | tail -1)
    max=$(grep -E '^T: *[0-9]' "$log" | sed 's/.*Max: *\([0-9]*\).*/\1/' | sort -n | tail -1)
    echo "$side run $r: pipe_same_us=$same pipe_cross_us=$cross hackbench_s=$hack cyclic_avg_us=$avg cyclic_max_us=$max"
    echo "$same $cross $hack $avg $max" >>"$out/$side.all"
  done
done
median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
for side in A B; do
  line="$side median:"
  for col in 1 2 3 4 5; do
    name=$(echo "pipe_same_us pipe_cross_us hackbench_s cyclic_avg_us cyclic_max_us" | cut -d' ' -f$col)
    line="$line $name=$(cut -d' ' -f$col "$out/$side.all" | median)"
  done
  echo "$line"
done
