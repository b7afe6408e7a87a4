#!/bin/sh
# The autogroup experiment of seeds 000/001 from user space: a CPU hog pinned to CPU 0 in this
# session, beside a parallel load (10 spinners on every CPU, like `make -j10`) started in
# another session (setsid), in one of three setups:
#   on       autogroup on (kernel.sched_autogroup_enabled=1): one group per session
#   off      autogroup off: every task in the root group
#   lennart  autogroup off, and the seed-001 lines (cgroup v1 cpu, one group per shell)
# Prints the hog's share of CPU 0 over 5 s (from /proc/PID/stat utime+stime) and the wakeup
# latency of a SCHED_OTHER cyclictest thread on CPU 0 in the hog's session:
#   autogroup-exp: mode=<m> hog_share=<x.xx> latency_us min=<n> avg=<n> max=<n>
# Usage: autogroup-exp.sh on|off|lennart
mode="${1:?usage: autogroup-exp.sh on|off|lennart}"
case "$mode" in
  on) echo 1 > /proc/sys/kernel/sched_autogroup_enabled ;;
  off|lennart) echo 0 > /proc/sys/kernel/sched_autogroup_enabled ;;
  *) echo "autogroup-exp: unknown mode $mode" >&2; exit 2 ;;
esac
# The seed's ~/.bashrc lines, sourced by every shell of the experiment (Lennart's way only).
cat > /tmp/bashrc <<'RC'
if [ "$PS1" ] ; then
        mkdir -m 0700 /sys/fs/cgroup/cpu/user/$$
        echo $$ > /sys/fs/cgroup/cpu/user/$$/tasks
fi
RC
if [ "$mode" = lennart ]; then
  [ -d /sys/fs/cgroup/cpu/user ] || sh /bin/seed-001.sh > /dev/null
  PS1='$ ' . /tmp/bashrc
else
  : > /tmp/bashrc
fi
# The load, in its own session (and, Lennart's way, its own shell's group).
PS1='$ ' setsid sh -c '. /tmp/bashrc
  i=0; while [ $i -lt 10 ]; do sh -c "while :; do :; done" & i=$((i+1)); done; wait' &
load=$!
taskset 1 sh -c 'while :; do :; done' &
hog=$!
sleep 1
ticks() { awk '{print $14 + $15}' /proc/$hog/stat; }
t0=$(ticks); sleep 5; t1=$(ticks)
lat=$(cyclictest -t1 -a0 -i10000 -l300 -q 2>/dev/null | sed -n 's/.*Min: *\([0-9]*\).*Avg: *\([0-9]*\).*Max: *\([0-9]*\).*/min=\1 avg=\2 max=\3/p')
echo "autogroup-exp: mode=$mode hog_share=$(awk "BEGIN{printf \"%.2f\", ($t1 - $t0) / 500}") latency_us $lat"
# The load's session is its own process group (setsid made its shell the leader).
kill $hog; kill -TERM -$load
wait 2>/dev/null
true
