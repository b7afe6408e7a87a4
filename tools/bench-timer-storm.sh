#!/usr/bin/env bash
# `make bench-timer-storm [ROUNDS=3] [SMP=2]`: issue 59's latency targets, on Cadence and the
# Linux peer (6.12 generic) with the same binaries, alternating boots. One guest script per
# boot: cyclictest (SCHED_FIFO 90, 1 ms, 3000 loops) pinned to CPU 1 and then to CPU 0, first
# idle, then beside tests/user/timerstorm on CPU 0 (MODES, default `timerfd posix`: 4 timerfds
# with a 1 ns period read in a loop, a POSIX timer with a 1 ns period; timerstorm's own FIFO 90
# watchers run too). Prints per round and kernel one line per (mode, CPU):
#   timer-storm: KERNEL round=R mode=M cpu=C min=A avg=B max=C
# then the medians over the rounds. The targets (issue 59): on the other CPU (1) the max stays
# within 2x of the idle one; on the storm's CPU (0) the max stays under 10 ms.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds="${1:-3}"; smp="${2:-2}"; modes="${MODES:-timerfd posix}"
boot="$root/target/release/cadence-boot"
kernel="${KERNEL:-$root/kernel/target/x86_64-unknown-none/release/cadence-kernel}"
. "$root/tools/peer-env.sh"
peer_find || { echo "bench-timer-storm: no Linux peer (../shared/peer/run.sh)" >&2; exit 1; }
out="$(mktemp -d)"; trap 'rm -rf "$out"' EXIT
{
  echo 'ct() { cyclictest -m -p90 -t1 -a"$2" -i1000 -l3000 -q 2>&1 | sed -n "s/^T: *0 .*Min: *\([0-9]*\).*Avg: *\([0-9]*\).*Max: *\([0-9]*\).*/timer-storm: mode=$1 cpu=$2 min=\1 avg=\2 max=\3/p"; }'
  echo 'ct idle 1; ct idle 0'
  for m in $modes; do
    echo "for c in 1 0; do timerstorm $m 5 >/dev/null & sleep 0.3; ct $m \$c; wait; done"
  done
  echo 'echo timer-storm: end'
} > "$out/storm.sh"
"$boot" initramfs -o "$out/files.cpio" "$out/storm.sh=storm.sh" "$root/target/user/timerstorm=timerstorm" > /dev/null
cat "$root/target/user/initramfs.cpio" "$out/files.cpio" > "$out/initrd.cpio"
for r in $(seq 1 "$rounds"); do
  "$boot" run --kernel "$kernel" --initrd "$out/initrd.cpio" --smp "$smp" --timeout 600 --args 'sh="sh /storm.sh" poweroff' > "$out/c.$r" 2>&1 \
    || { echo "bench-timer-storm: Cadence round $r failed" >&2; tail -20 "$out/c.$r" >&2; exit 1; }
  PEER_TIMEOUT=600 "$PEER_RUN" --linux 6.12 --smp "$smp" --file "$out/storm.sh" --file "$root/target/user/timerstorm" \
    "cp /timerstorm /usr/bin/ && sh /storm.sh" > "$out/l.$r" 2>&1 \
    || { echo "bench-timer-storm: Linux round $r failed" >&2; tail -20 "$out/l.$r" >&2; exit 1; }
  for side in c l; do
    name=$([ $side = c ] && echo cadence || echo linux-6.12)
    tr -d '\r' < "$out/$side.$r" | grep '^timer-storm: mode=' | sed "s/^timer-storm: /timer-storm: $name round=$r /"
  done
done | tee "$out/all"
python3 - "$out/all" <<'PY'
import re, statistics, sys
rows = {}
for l in open(sys.argv[1]):
    m = re.match(r"timer-storm: (\S+) round=\d+ mode=(\S+) cpu=(\d) min=(\d+) avg=(\d+) max=(\d+)", l)
    if m:
        rows.setdefault((m[1], m[2], m[3]), []).append(int(m[6]))
print("== medians of the max latency (us) over the rounds")
print("%-12s %-8s %4s %10s %12s" % ("kernel", "mode", "cpu", "max", "vs idle"))
for (k, mode, cpu), v in sorted(rows.items()):
    idle = statistics.median(rows.get((k, "idle", cpu), [0]) or [0])
    med = statistics.median(v)
    print("%-12s %-8s %4s %10d %12s" % (k, mode, cpu, med, "%.2fx" % (med / idle) if idle and mode != "idle" else "-"))
PY
