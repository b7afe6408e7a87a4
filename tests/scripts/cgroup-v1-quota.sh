#!/bin/sh
# cgroup v1's hierarchical quota check, as Linux's tg_cfs_schedulable_down: a child's
# quota/period may not exceed its nearest limited ancestor's (EINVAL), in either direction of
# the change. Prints `step rc=N` per write; run on Cadence and on the Linux peer, the outputs
# are equal (tests/tests/user.rs holds Linux 6.1's).
mkdir -p /tmp/cpu && mount -t cgroup cgroup /tmp/cpu -o cpu && cd /tmp/cpu && mkdir p p/c || exit 1
w() { echo "$2" > "$3" 2>/dev/null; echo "$1 rc=$?"; }
w parent-50ms 50000 p/cpu.cfs_quota_us
w child-60ms 60000 p/c/cpu.cfs_quota_us
w child-40ms 40000 p/c/cpu.cfs_quota_us
w parent-30ms 30000 p/cpu.cfs_quota_us
w child-period-200ms 200000 p/c/cpu.cfs_period_us
w child-period-50ms 50000 p/c/cpu.cfs_period_us
w child-unlimited -1 p/c/cpu.cfs_quota_us
w parent-30ms-again 30000 p/cpu.cfs_quota_us
echo "quotas $(cat p/cpu.cfs_quota_us) $(cat p/c/cpu.cfs_quota_us) $(cat p/c/cpu.cfs_period_us)"
cd / && rmdir /tmp/cpu/p/c /tmp/cpu/p && umount /tmp/cpu
