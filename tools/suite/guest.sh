#!/bin/sh
# The guest half of `make suite` (tools/suite.sh): one busybox sh script, run unchanged on
# Cadence (sh=) and on the Linux peer (run.sh), so every kernel runs the same Debian binaries
# with the same command lines. Each program's output follows an `@@run NAME COMMAND` line and
# ends with `@@rc NAME STATUS SECONDS`; the host (tools/suite/report.py) parses them.
#
#   sh /suite-guest.sh NCPUS SECS
#
# NCPUS  thread counts (-t$NCPUS: one thread, pair or deadline task per CPU)
# SECS   duration of each timed program (-D SECS) and of each rt-app example
#
# A program's output goes to a file in /tmp while it runs and to the console after it ended,
# so no kernel pays console time inside a measurement. Its standard input is /dev/null:
# deadline_test writes its per-period lines to fd 0 when it finds no debugfs (its mark_fd
# stays 0), and a read-only fd turns those writes into EBADF on every kernel.
set -u
n=$1 secs=$2
# A hung program ends after this many seconds (SIGTERM: the rt-tests print their summary;
# SIGKILL 10 s later if it is still there).
limit=$((secs * 10 + 60))
mkdir -p /tmp && cd /tmp
# deadline_test and cyclicdeadline look for debugfs in /proc/mounts; mounted, their per-period
# lines go to tracing/trace_marker (refused while tracing is off) on both kernels.
grep -q ' debugfs ' /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug 2> /dev/null
echo "@@uname $(uname -r)"
echo "@@ncpus $(grep -c '^processor' /proc/cpuinfo)"

# start NAME COMMAND...: runs it and prints its output, leaving its status in $rc and the
# seconds it took in $took.
start() {
  name=$1; shift
  echo "@@run $name $*"
  t0=$(date +%s)
  timeout -k 10 "$limit" "$@" < /dev/null > /tmp/suite.out 2>&1
  rc=$?
  took=$(($(date +%s) - t0))
  cat /tmp/suite.out
}
run() { start "$@"; echo "@@rc $name $rc ${took}s"; }

# SCHED_DEADLINE: NCPUS tasks of period 100 ms (+0.5 ms per task) and runtime 50 ms (-p is the
# share of the CPUs: 50 * NCPUS / NCPUS per task), half the machine reserved, within admission.
# Each job works a quarter of its runtime (-P 25: 12.5 ms), so a host gap under ~35 ms inside
# a job (TCG on a shared host: the vCPU thread descheduled) is not a miss; deadline_test's own
# check of a job at set-up fails the same way when a gap outlasts the runtime. It runs 10 s.
run deadline_test deadline_test -t "$n" -p 50 -P 25 -i 100000
run cyclicdeadline cyclicdeadline -t "$n" -i 10000 -D "$secs" -q
# Signals, semaphores, message queues: pairs pinned per CPU (-a), FIFO 99, 100 µs interval.
run signaltest signaltest -m -p 90 -t"$n" -D "$secs" -q
run ptsematest ptsematest -a -t"$n" -p 99 -i 100 -d 25 -D "$secs" -q
run sigwaittest sigwaittest -a -t"$n" -p 99 -i 100 -d 25 -D "$secs" -q
run pmqtest pmqtest -a -t"$n" -p 99 -i 100 -d 25 -D "$secs" -q
# svsematest makes its SysV key with ftok() on $_ or argv[0]: a relative name fails in /tmp
# ("ftok: No such file or directory", and it exits 0), so it gets its full path.
run svsematest "$(command -v svsematest)" -a -t"$n" -p 99 -i 100 -d 25 -D "$secs" -q
# Busy loops on every CPU but the main thread's, counting the gaps.
run oslat oslat -D "$secs" -q

# rt-app's examples (rewritten by the host for rt-app 1.0: duration SECS, logs in /tmp). After
# rt-app's own output, one @@rtapp line summarises its logs: rows (phase executions), timed
# rows (phases with a timer, c_period > 0), missed (timed rows with a negative slack: the
# phase ended after its timer's period) and the largest wu_lat (µs).
for j in /rtj-*.json; do
  [ -f "$j" ] || continue
  e=${j#/rtj-}; e=${e%.json}
  start "rt-app:$e" rt-app "$j"
  logs=$(ls /tmp/"$e"-*.log 2> /dev/null | wc -l)
  cat /tmp/"$e"-*.log 2> /dev/null | awk -v logs="$logs" '
    !/^#/ && NF >= 11 { r++; if ($10 > 0) { t++; if ($8 < 0) m++ } if ($11 > w) w = $11 }
    END { printf "@@rtapp logs=%d rows=%d timed=%d missed=%d wu_max=%d\n", logs, r, t, m, w }'
  echo "@@rc $name $rc ${took}s"
  rm -f /tmp/"$e"-*.log
done
echo "@@end"
