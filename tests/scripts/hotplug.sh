#!/bin/sh
# CPU hot-plug through sysfs, what a user sees (the same script on Cadence and the Linux peer,
# at -smp 4): the online/offline lists, cpuN/online, a task pinned to the CPU taken offline (its
# affinity widened), nproc, bad writes, and the CPU back. Prints `hp: ...` lines to compare.
C=/sys/devices/system/cpu
say() { echo "hp: $*"; }
say "online $(cat $C/online) offline [$(cat $C/offline)] possible $(cat $C/possible) present $(cat $C/present)"
say "cpu0 online file: $([ -e $C/cpu0/online ] && echo yes || echo no)"
say "cpu3/online $(cat $C/cpu3/online)"
taskset -c 3 sh -c 'while :; do :; done' &
p=$!
sleep 0.2
say "pinned $(grep Cpus_allowed_list /proc/$p/status | tr -s '\t' ' ')"
echo 0 > $C/cpu3/online; say "offline cpu3 rc=$?"
say "online $(cat $C/online) offline [$(cat $C/offline)] cpu3/online $(cat $C/cpu3/online)"
say "widened $(grep Cpus_allowed_list /proc/$p/status | tr -s '\t' ' ')"
say "runs on cpu3: $(awk '{print ($39 == 3) ? "yes" : "no"}' /proc/$p/stat)"
say "nproc $(nproc)"
say "cpu3 entries: $(ls $C/cpu3 | grep -E '^(online|topology|cache)$' | tr '\n' ' ')"
say "proc: stat cpu lines $(grep -c '^cpu[0-9]' /proc/stat), cpuinfo processors $(grep -c '^processor' /proc/cpuinfo), interrupts columns $(head -n 1 /proc/interrupts | wc -w), $(grep -m 1 '^siblings' /proc/cpuinfo | tr -d '\t')"
say "taskset -c 3 true: $(taskset -c 3 true 2>&1 > /dev/null | sed 's/.*: //'; echo rc=$?)"
echo 0 > $C/cpu3/online; say "offline again rc=$?"
echo 2 > $C/cpu3/online 2> /dev/null; say "write 2 rc=$?"
echo x > $C/cpu3/online 2> /dev/null; say "write x rc=$?"
echo 1 > $C/cpu3/online; say "online cpu3 rc=$?"
say "online $(cat $C/online) offline [$(cat $C/offline)] cpu3/online $(cat $C/cpu3/online)"
say "nproc $(nproc)"
say "cpu3 entries: $(ls $C/cpu3 | grep -E '^(online|topology|cache)$' | tr '\n' ' ')"
echo off > $C/cpu2/online; say "off cpu2 rc=$? online $(cat $C/online)"
echo on > $C/cpu2/online; say "on cpu2 rc=$? online $(cat $C/online)"
# Linux's kstrtobool spellings beyond 0/1 and on/off.
for w in false true disable enable; do
  echo $w > $C/cpu2/online 2> /dev/null; say "write $w rc=$? online $(cat $C/online)"
done
echo 1 > $C/cpu2/online
kill $p
wait $p 2> /dev/null
say done
