#!/bin/sh
# stress-ng-class.sh CLASS [SECS] [EXTRA...]: every stressor of stress-ng's CLASS, one at a time
# (one instance, SECS seconds each, default 2, with --verify and EXTRA options), each prints
#   stress-ng-class: CLASS NAME pass|fail|skip rc=N secs=S
# (rc: stress-ng's exit status, 0 passed, 2 a stressor failed, 3 out of resources, 4 not
# implemented; skip: stress-ng said it skipped the stressor, which it does with status 0 for a
# system call the kernel lacks; secs: how long the run took, the guest's clock). Runs in
# /tmp (stressors make files in the working directory). The same script on Cadence and on the
# Linux peer (tools/test-stress-ng.sh).
class="${1:?usage: stress-ng-class.sh CLASS [SECS] [EXTRA...]}"; secs="${2:-2}"; shift; [ $# -gt 0 ] && shift
cd /tmp || exit 1
list=$(stress-ng --class "$class?" 2>&1 | sed -n "s/^class '$class' stressors: //p")
[ -n "$list" ] || { echo "stress-ng-class: no stressors in class $class"; exit 1; }
echo "stress-ng-class: $class: $list"
for s in $list; do
  t0=$(cut -d' ' -f1 /proc/uptime)
  stress-ng --"$s" 1 -t "${secs}s" --verify "$@" > /tmp/stress-ng-class.out 2>&1
  rc=$?
  t1=$(cut -d' ' -f1 /proc/uptime)
  # A stressor's own lines when it did not pass (what failed, or why it was skipped).
  verdict=pass
  grep -qE 'skipped|skipping' /tmp/stress-ng-class.out && verdict=skip
  [ $rc -eq 0 ] || verdict=fail
  [ $verdict = pass ] || grep -E 'fail|error|skip|not implemented|aborted' /tmp/stress-ng-class.out | head -5 | sed "s/^/stress-ng-class: $s: /"
  echo "stress-ng-class: $class $s $verdict rc=$rc secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')"
done
echo "stress-ng-class: $class done"
