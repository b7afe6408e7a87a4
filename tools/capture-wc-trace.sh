#!/usr/bin/env bash
# Captures a small Linux 6.12 ftrace text in which work conservation is exercised, for
# `cadence-boot trace check wc` (lib/trace/src/wccheck.rs): the Linux peer (../shared/peer/run.sh,
# -smp 4) runs six CPU hogs of different lengths (busybox sh counting loops: more hogs than CPUs,
# ending one by one, so CPUs go idle while others still hold two) and two sleepers (4 ms naps),
# with the scheduler events the checkers replay enabled, then prints the trace.
#
#   tools/capture-wc-trace.sh OUT [--rt] [--linux 6.1|6.12]
#
# The fixture in the tree: tools/capture-wc-trace.sh tests/fixtures/linux-6.12-wc.txt
#
# A Linux trace has no `# cadence-affinity:` lines; this script adds one per task alive at the end
# whose Cpus_allowed (/proc/PID/status) is not every CPU (the per-CPU kernel threads: kworker/N,
# ksoftirqd/N, migration/N, cpuhp/N...), after the header. Tasks gone by then (the hogs, the
# sleepers' children) were unbound. PEER_TIMEOUT (default 240 s) bounds the boot.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 OUT [--rt] [--linux 6.1|6.12]" >&2; exit 2; }
out=$1; shift
args=("$@"); [ ${#args[@]} -gt 0 ] || args=(--linux 6.12)
. "$root/tools/peer-env.sh"
peer_find || { echo "capture-wc-trace: no Linux peer (../shared/peer/run.sh)" >&2; exit 2; }

guest='T=/sys/kernel/tracing
echo 0 > $T/tracing_on; echo 1024 > $T/buffer_size_kb
for e in sched_switch sched_wakeup sched_wakeup_new sched_migrate_task sched_process_exit; do echo 1 > $T/events/sched/$e/enable; done
hog() { i=0; while [ $i -lt $1 ]; do i=$((i+1)); done; }
nap() { n=0; while [ $n -lt $1 ]; do usleep 4000; hog 10; n=$((n+1)); done; }
echo > $T/trace; echo 1 > $T/tracing_on
hog 1500 & hog 2500 & hog 3000 & hog 3500 & hog 4000 & hog 5000 &
nap 25 & nap 25 &
wait
echo 0 > $T/tracing_on
echo wc-trace-begin
for d in /proc/[0-9]*; do m=$(sed -n "s/^Cpus_allowed:[[:space:]]*//p" $d/status 2>/dev/null | tr -d ,); [ -n "$m" ] && [ "$m" != f ] && echo "# cadence-affinity: pid=${d#/proc/} mask=0x$m"; done
cat $T/trace
echo wc-trace-end'

raw=$(mktemp); trap 'rm -f "$raw"' EXIT
PEER_TIMEOUT=${PEER_TIMEOUT:-240} "$PEER_RUN" --smp 4,sockets=1,cores=2,threads=2 "${args[@]}" "$guest" > "$raw"
grep -q '^wc-trace-end' "$raw" || { echo "capture-wc-trace: no trace in the peer's output:" >&2; tail -20 "$raw" >&2; exit 1; }
kernel=$(sed -n 's/.*peer: \([^ ]*\) cpus=.*/\1/p' "$raw" | head -1)
# The header (ftrace's # lines), a line naming the capture, the affinity lines, the events.
sed -n '/^wc-trace-begin/,/^wc-trace-end/p' "$raw" | sed '1d;$d' > "$raw.body"
{
  grep -v '^# cadence-affinity:' "$raw.body" | sed -n '/^#/p'
  echo "# captured by tools/capture-wc-trace.sh ${args[*]} on Linux $kernel (-smp 4)"
  grep '^# cadence-affinity:' "$raw.body" || true
  grep -v '^#' "$raw.body"
} > "$out"
rm -f "$raw.body"
echo "capture-wc-trace: $out: $(grep -vc '^#' "$out") events, $(wc -c < "$out") bytes, Linux $kernel"
