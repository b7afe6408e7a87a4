#!/bin/sh
# The "wasted cores" scenarios of issue 61 (Lozi et al., EuroSys 2016), one per run, the same
# script on Cadence and on the Linux peer (with wcload, tests/user/wcload.c, in PATH or /):
#   group   group imbalance: a build-like load (wcload build, JOBS jobs at a time) in one
#           session (autogroup) beside two single-threaded hogs, each in a session of its own
#   pinned  a build-like load pinned to two nodes two hops apart (CPUS, a taskset list)
#   wakeup  a wakeup storm: hogs pinned to every CPU of one node (CPUS) and THREADS threads
#           started there that sleep and are woken together each round (wcload wake)
#   mixed   pinned hogs on CPU 0 and unpinned shell loops: the balancer must not keep
#           choosing a CPU whose tasks are all pinned
#   hotplug the CPUs of CPUS (a list, no ranges) taken offline and back through
#           /sys/devices/system/cpu/cpuN/online, then the build-like load on every CPU: a CPU
#           back online must be balanced onto (the paper's "missing scheduling domains")
# The scheduler's events are traced while it runs (sched_switch, sched_wakeup, sched_wakeup_new,
# sched_migrate_task, sched_process_exit) and printed between `wc-trace-begin SCENARIO` and
# `wc-trace-end` for the host's `cadence-boot trace check wc` (tools/bench-balance.sh), after
# the wcload lines and `wc-cpus N`.
# Usage: wasted-cores.sh SCENARIO [JOBS] [CPUS] [THREADS]  (KB: trace buffer per CPU, default 2048)
scenario="${1:?usage: wasted-cores.sh group|pinned|wakeup|mixed|hotplug [JOBS] [CPUS] [THREADS]}"
jobs="${2:-16}"
cpus="${3:-0-1}"
threads="${4:-16}"
W=wcload; command -v wcload > /dev/null || W=/wcload
# What each pinned task may run on, for the checker (a trace does not say): wcload's children
# (WCLOAD_AFFINITY) and the pinned hogs (pin_note), printed with the trace.
aff=/tmp/wc-affinity; : > $aff
export WCLOAD_AFFINITY=$aff
pin_note() {
  for p in "$@"; do
    m=$(sed -n 's/^Cpus_allowed:[[:space:]]*//p' /proc/$p/status 2> /dev/null | tr -d ,)
    [ -n "$m" ] && echo "# cadence-affinity: pid=$p mask=0x$m" >> $aff
  done
}
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs none $T 2> /dev/null
echo 0 > $T/tracing_on
echo "${KB:-2048}" > $T/buffer_size_kb
echo > $T/set_event
for e in sched_switch sched_wakeup sched_wakeup_new sched_migrate_task sched_process_exit; do
  echo 1 > $T/events/sched/$e/enable
done
# Cadence's own event (no such file on Linux): each affinity change, which the checker prefers
# to the affinity lines (Cadence reuses the pids of exited tasks, so a line written at the end
# for a live task may name an exited hog's pid too).
[ -d $T/events/sched/sched_set_affinity ] && echo 1 > $T/events/sched/sched_set_affinity/enable
if [ "$scenario" = hotplug ]; then
  # Before the trace: the checker would count an offline CPU as an idle one.
  for c in $(echo "$cpus" | tr ',' ' '); do echo 0 > /sys/devices/system/cpu/cpu$c/online || echo "wasted-cores: cpu$c: offline failed"; done
  echo "wc-offline $(cat /sys/devices/system/cpu/offline)"
  sleep 0.2
  for c in $(echo "$cpus" | tr ',' ' '); do echo 1 > /sys/devices/system/cpu/cpu$c/online || echo "wasted-cores: cpu$c: online failed"; done
  echo "wc-online $(cat /sys/devices/system/cpu/online)"
  sleep 0.2
fi
echo > $T/trace
echo 1 > $T/tracing_on
case "$scenario" in
  group)
    setsid $W hog 6 &
    setsid $W hog 6 &
    sleep 0.2
    setsid $W build "$jobs" $((jobs * 8)) 40
    wait ;;
  pinned)
    taskset -c "$cpus" $W build "$jobs" $((jobs * 8)) 40 ;;
  wakeup)
    for c in $(echo "$cpus" | tr ',' ' '); do
      lo=${c%-*}; hi=${c#*-}
      i=$lo; while [ "$i" -le "$hi" ]; do taskset -c "$i" $W hog 4 > /dev/null & pins="$pins $!"; i=$((i + 1)); done
    done
    sleep 0.2
    pin_note $pins
    taskset -c "$cpus" $W wake "$threads" 200 2
    wait ;;
  mixed)
    for i in 1 2 3 4; do taskset -c 0 $W hog 3 > /dev/null & pins="$pins $!"; done
    sleep 0.2
    pin_note $pins
    $W build "$jobs" $((jobs * 8)) 40
    wait ;;
  hotplug)
    $W build "$jobs" $((jobs * 8)) 40 ;;
  *) echo "wasted-cores: unknown scenario $scenario" >&2; exit 2 ;;
esac
echo 0 > $T/tracing_on
echo "wc-cpus $(grep -c '^processor' /proc/cpuinfo)"
echo "wc-trace-begin $scenario"
cat $T/trace
cat $aff
echo wc-trace-end
