#!/bin/sh
# PELT's target of issue 61: a 25%-duty rt-app task (4 ms of `runtime` every 16 ms, SCHED_OTHER,
# alone on CPU 1) and its utilization as /proc/PID/sched prints it (se.avg.util_avg), sampled
# every ~10 ms (plus a fork and exec) from CPU 0 once it has settled (after 1 s) until it ends, on Cadence and Linux alike:
#   pelt-duty: samples=<n> util_avg mean=<n> min=<n> max=<n> load_avg mean=<n>
# A random sampling phase makes the mean the signal's time average (Linux's steady state
# oscillates between about 230 and 290 around it). Usage: pelt-duty.sh [SECONDS]
secs="${1:-4}"
cat > /tmp/pelt-duty.json <<EOF
{
  "tasks": { "duty": { "loop": -1, "cpus": [1], "runtime": 4000, "timer": { "ref": "tick", "period": 16000 } } },
  "global": { "duration": $secs, "default_policy": "SCHED_OTHER", "calibration": 100, "logdir": "/tmp", "log_basename": "pelt-duty" }
}
EOF
taskset -c 0 rt-app /tmp/pelt-duty.json > /tmp/pelt-duty.out 2>&1 &
app=$!
taskset -p -c 0 $$ > /dev/null
sleep 1
tid=
for t in /proc/$app/task/*; do
  [ "$(cat "$t/comm" 2>/dev/null)" = duty ] && tid="${t##*/}"
done
[ -n "$tid" ] || { echo "pelt-duty: no duty thread in rt-app $app"; cat /tmp/pelt-duty.out; exit 1; }
# Until the task ends (rt-app stops it after SECONDS).
while grep -E '^se\.avg\.(util|load)_avg ' "/proc/$app/task/$tid/sched" 2> /dev/null; do
  usleep 10000
done | awk '
  $1 == "se.avg.util_avg" { u = $3; n++; s += u; if (n == 1 || u < lo) lo = u; if (u > hi) hi = u }
  $1 == "se.avg.load_avg" { l += $3 }
  END { if (n == 0) { print "pelt-duty: no samples"; exit 1 }
        printf "pelt-duty: samples=%d util_avg mean=%d min=%d max=%d load_avg mean=%d\n", n, s / n, lo, hi, l / n }'
wait $app
