#!/bin/bash
# Boots Cadence once per configuration and runs Debian's cyclictest (-m -tN -a -p90 -i1000
# -l3000 -h 20000) idle, then under `hackbench -p -g 4`, printing one summary line each
# (all threads' p50, p99 from the histogram, max) and the debug.timer counters: an A/B of
# kernel settings given as boot arguments, in one sitting.
#
#   tools/cyclic-ab.sh SMP ROUNDS 'TAG=ARGS' ['TAG=ARGS'...]
#   e.g. tools/cyclic-ab.sh 2 2 'off=sysctl.kernel.sched_features=NO_TIMER_KICK sysctl.kernel.timer_advance_ns=0' 'on='
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
smp=$1 rounds=$2; shift 2
n=${smp%%,*}
for ((r = 1; r <= rounds; r++)); do
  for cfg in "$@"; do
    tag=${cfg%%=*} args=${cfg#*=}
    make -s -C "$root" run SMP="$smp" TIMEOUT=300 FILES="$root/tools/compare/cyclic-summary.sh" \
      ARGS="$args sh=\"sh /cyclic-summary.sh $n\" poweroff" 2>&1 | tr -d '\r' |
      grep -E '^(RES|cpu0 )' | sed "s/^/$tag round $r: /"
  done
done
