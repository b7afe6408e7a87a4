#!/usr/bin/env bash
# `bench scale`'s CPU-count sweep (issue 60, item 7): the switch and wakeup paths' cost as the
# machine grows, on the machines of tools/topology.sh. Each machine boots once and runs the
# in-kernel benchmarks on its first CPUs while the others idle (tickless):
#
#   tools/bench-scale-cpus.sh [MACHINES]        (make bench-scale-cpus [MACHINES="..."])
#
#   MACHINES   default "flat 8node seed003 x255" (4, 64, 224 and 255 vCPUs); add x1024 for
#              1,024 (x2APIC, SeaBIOS, 2 GiB; minutes of host time)
#   switch     `bench scale -n 2,100 -d 1000`: N tasks yielding on one CPU, µs per switch
#              (the pick, the switch, the tick under it)
#   wakeup     `bench pipe -l 5000`: a pipe ping-pong on one CPU and across two cores, µs per
#              switch (the wakeup, its placement, the IPI to a halted CPU)
#
# A path that walks every CPU shows as a column that grows with the CPU count. Host wall time
# is printed per machine: the host has 2 cores, and idle vCPUs still cost it something. Never
# run this beside another QEMU. Needs `make kernel boot-tool`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
machines=${1:-${MACHINES:-flat 8node seed003 x255}}
boot=$root/target/release/cadence-boot
kernel=$root/kernel/target/x86_64-unknown-none/release/cadence-kernel
for f in "$boot" "$kernel"; do
  [ -e "$f" ] || { echo "bench-scale-cpus: $f missing: make kernel boot-tool" >&2; exit 2; }
done
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }
. "$root/tools/topology-run.sh"

echo "## bench scale over CPU counts (Cadence $(git -C "$root" rev-parse --short HEAD), $(qemu-system-x86_64 --version | head -n1))"
echo
echo "| machine | vCPUs | µs/switch, 2 tasks | µs/switch, 100 tasks | pipe, one CPU µs | pipe, two cores µs | host wall s |"
echo "|---|---|---|---|---|---|---|"
for name in $machines; do
  mib=1024; [ "$name" = x1024 ] && mib=2048
  smp=$("$root/tools/topology.sh" --smp "$name")
  t=$(now)
  rc=0
  topology_cadence "$name" "$mib" 'run="bench scale -n 2,100 -d 1000; bench pipe -l 5000" poweroff' "$work/out" none || rc=$?
  wall=$(echo "$(now) - $t" | bc | xargs printf '%.0f')
  [ $rc = 0 ] || { echo "bench-scale-cpus: $name exited $rc; its console's end:" >&2; tail -n 15 "$work/out" >&2; }
  sw() { sed -n "s/.*scale: tasks=$1 .*us_per_switch=\([0-9.]*\).*/\1/p" "$work/out" | head -n1; }
  # bench pipe prints its same-CPU pipetest line first, then the two-core one.
  pipe() { sed -n 's/.*pipetest: .* \([0-9.]*\) us per switch.*/\1/p' "$work/out" | sed -n "${1}p"; }
  echo "| $name | ${smp%%,*} | $(sw 2) | $(sw 100) | $(pipe 1) | $(pipe 2) | $wall |"
done
