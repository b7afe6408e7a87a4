#!/bin/sh
# The guest half of `make compare` (tools/compare.sh): one busybox sh script, run unchanged on
# Cadence (sh=) and on the Linux peer (run.sh), so both kernels run the same binaries with the
# same command lines. Each benchmark's output follows an `@@name` line; the host parses them.
#
#   sh /guest.sh NCPUS OTHER LOOPS HIST_US TRACED
#
# NCPUS   cyclictest threads (one per CPU, -a pins them)
# OTHER   the CPU on the other core for the cross-core pipe (2 with 2 threads per core, else 1)
# LOOPS   cyclictest loops per run
# HIST_US cyclictest -h bucket count (1 µs buckets); rows of zeros are dropped before they reach
#         the console (a serial line is slow on both kernels)
# TRACED  1: add the traced run (scheduler events of cyclictest under hackbench, with the
#         trace markers of cyclictest's and rt-app's threads). The trace goes to /dev/vda when
#         the kernel has a disk, else to the console between @@trace-begin and @@trace-end.
set -u
ncpus=$1 other=$2 loops=$3 hist=$4 traced=$5
cd / && PATH=/:$PATH
nozero() { awk '{ if ($1 ~ /^[0-9][0-9][0-9][0-9][0-9][0-9]$/) { s = 0; for (i = 2; i <= NF; i++) s += $i; if (s == 0) next } print }'; }
cyc="-m -q -t$ncpus -a -p90 -i1000 -l$loops -h $hist"
# A background load that outlives the measurement; stopped by killall.
load() { hackbench -p -g 4 -l 1000000 > /dev/null 2>&1 & sleep 0.5; }

echo @@uname; uname -r
echo @@syscall; syscall-bench 100000
echo @@pipe; pipetest 20000 0 0; pipetest 20000 0 "$other"
echo @@hackbench-p; hackbench -p -g 4 -l 50
echo @@hackbench-T; hackbench -T -g 4 -l 50
# SCHED_OTHER: cyclictest without -p (its default priority 0 is the normal policy).
echo @@wakeup; cyclictest -m -q -t1 -i1000 -l3000 -h "$hist" | nozero
echo @@cyclic-idle; cyclictest $cyc | nozero
echo @@cyclic-load; load; cyclictest $cyc | nozero; killall hackbench 2> /dev/null; sleep 0.2
# rt-app's ticker: a FIFO 90 thread, 100 µs of work (at 400 ns per calibration loop, about
# what TCG gives) every 1 ms for 3 s; its log's wu_lat column.
# The percentiles are taken here (the same awk on every kernel), not by printing the log's 3000
# rows: Debian's PREEMPT_RT kernel stops serving the serial IRQ under that much output ("irq 4:
# nobody cared") and loses the rest of the run's console.
echo @@rtapp; rt-app /ticker.json > /tmp/rt-app.out 2>&1; echo "rt-app rc=$?"
awk '/^#idx/ { for (i = 1; i <= NF; i++) if ($i == "wu_lat") c = i; next } /^ *[0-9]/ && c { print $c }' /tmp/ticker-*.log | sort -n |
  awk '{ v[NR] = $1 } END { p = int(NR * 0.5) + 1; q = int(NR * 0.99) + 1; if (p > NR) p = NR; if (q > NR) q = NR; if (NR) print "rt-app: wu_lat n=" NR " p50=" v[p] " p99=" v[q] " max=" v[NR] }'

[ "$traced" = 1 ] || exit 0
# The traced run: 400 KiB of events per CPU; the four scheduler events the host analysis
# reads, and print (trace_marker) so the markers of rt-app (every phase of its ticker, with
# ftrace: true) and of cyclictest (at a break, --tracemark) land in the trace.
echo @@traced
T=/sys/kernel/tracing
echo 0 > $T/tracing_on; echo > $T/trace; echo 400 > $T/buffer_size_kb
echo 0 > $T/events/enable
for e in sched_switch sched_wakeup sched_wakeup_new sched_migrate_task; do echo 1 > $T/events/sched/$e/enable; done
# rt-app 1.0 writes its markers to debugfs's tracing/trace_marker.
[ -e /sys/kernel/debug/tracing/trace_marker ] || mount -t debugfs debugfs /sys/kernel/debug 2> /dev/null
echo 1 > $T/tracing_on
# rt-app's ticker beside the traced run, writing its markers (ftrace: true). It starts before
# the load, at FIFO 80 (its ticker thread sets FIFO 90 itself): a SCHED_OTHER rt-app among 160
# hackbench tasks could take longer to set up than cyclictest takes to run, and its first
# marker would meet a stopped trace (EBADF, and rt-app exits). It must outlast cyclictest (a
# 4 s ticker ended before PREEMPT_RT's traced cyclictest did, and the wrapped rings had lost its
# markers), so it runs until it writes its first marker after cyclictest's break stopped the
# trace (rt-app rc=1 then, on every kernel), or until killall below.
sed 's/"ftrace" : false/"ftrace" : true/; s/"duration" : 3/"duration" : 60/' /ticker.json > /tmp/ticker-traced.json
(chrt -f 80 rt-app /tmp/ticker-traced.json; echo "rt-app rc=$?") > /tmp/rt-app-traced.out 2>&1 &
load
# Affinities read while cyclictest runs: the analysis needs them to tell a CPU a task could
# have run on.
(sleep 0.5; for t in /proc/[0-9]*/task/[0-9]*; do m=$(awk '/^Cpus_allowed:/{print $2}' $t/status 2> /dev/null); [ -n "$m" ] && echo "# cadence-affinity: pid=${t##*/} mask=0x$m"; done > /tmp/aff) &
a=$!
echo "compare: traced run begins" > $T/trace_marker
# Tracing stops from an RT shell the moment cyclictest ends: a SCHED_OTHER shell could wait
# seconds behind hackbench and the rings would fill with hackbench alone. The last cyclictest
# breaks at once (-b 1: a latency above 1 µs), so its --tracemark marker ends the trace
# (cyclictest stops tracing itself at a break).
chrt -f 95 sh -c "cyclictest -m -q -t$ncpus -p90 -i1000 -l1000 -a; echo 'compare: traced run ends' > $T/trace_marker; cyclictest -q -t1 -p90 -i1000 -l100 -b 1 --tracemark > /dev/null; echo 0 > $T/tracing_on"
killall hackbench rt-app 2> /dev/null
wait
grep -v "^$" /tmp/rt-app-traced.out
if [ -b /dev/vda ]; then
  (cat /tmp/aff; cat $T/trace) > /dev/vda; sync; echo @@trace-dumped
else
  echo @@trace-begin; cat /tmp/aff; cat $T/trace; echo @@trace-end
fi
