#!/bin/sh
# Seed 001 (Lennart Poettering, 2010): per-session cgroups from the shell, the alternative to
# the autogroup patch. What a 2010 distribution had first (a tmpfs on /sys/fs/cgroup and a
# directory for the cpu hierarchy), then the seed's four lines verbatim: the first two once, the
# `if` block from ~/.bashrc in every shell (here: this one, run with PS1 set as an interactive
# shell has it). Prints the files that show the result.
[ -d /sys/fs/cgroup/cpu ] || { mount -t tmpfs cgroup_root /sys/fs/cgroup && mkdir /sys/fs/cgroup/cpu; }
mount -t cgroup cgroup /sys/fs/cgroup/cpu -o cpu
mkdir -m 0777 /sys/fs/cgroup/cpu/user
# ~/.bashrc:
if [ "$PS1" ] ; then
        mkdir -m 0700 /sys/fs/cgroup/cpu/user/$$
        echo $$ > /sys/fs/cgroup/cpu/user/$$/tasks
fi
echo "seed-001: shell $$ in $(cat /proc/$$/cgroup)"
echo "seed-001: tasks of user/$$: $(cat /sys/fs/cgroup/cpu/user/$$/tasks | tr '\n' ' ')"
ls -ld /sys/fs/cgroup/cpu/user /sys/fs/cgroup/cpu/user/$$ | awk '{print "seed-001: " $1 " " $NF}'
grep ' cgroup ' /proc/mounts | sed 's/^/seed-001: mount: /'
