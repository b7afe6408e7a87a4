#!/bin/sh
# The guest half of tools/cyclic-ab.sh: sh /cyclic-summary.sh NCPUS. cyclictest idle, then under
# hackbench -p -g 4, each summarized over all threads from its histogram (num() strips the
# rows' leading zeros: busybox awk's percentiles came out wrong without it); then the
# debug.timer counters.
cd / && PATH=/:$PATH
n=$1
cyc="-m -q -t$n -a -p90 -i1000 -l3000 -h 20000"
z=" 000000"; i=1; while [ $i -lt $n ]; do z="$z$(printf '\t')000000"; i=$((i+1)); done
summ() { awk -v name=$1 'function num(x) { sub(/^0+/, "", x); return x + 0 } /^[0-9][0-9][0-9][0-9][0-9][0-9]/{v=num($1); s=0; for(i=2;i<=NF;i++) s+=num($i); c[v]=s; n+=s; if(v>mx) mx=v} /^# Max Latencies/{for(i=4;i<=NF;i++) if(num($i)>M) M=num($i)} /^# Histogram Overflows/{for(i=4;i<=NF;i++) ov+=num($i)} END{t=0; p50=-1; p99=-1; for(v=0; v<=mx; v++){ t+=c[v]; if(p50<0 && t>=0.5*(n+ov)) p50=v; if(p99<0 && t>=0.99*(n+ov)) p99=v } print "RES", name, "n=" n+ov, "p50=" p50, "p99=" p99, "max=" M }'; }
cat /proc/sys/kernel/sched_features /proc/sys/kernel/timer_advance_ns 2>/dev/null
cyclictest $cyc | grep -v -e "$z\$" | summ idle
hackbench -p -g 4 -l 1000000 > /dev/null 2>&1 & sleep 0.5
cyclictest $cyc | grep -v -e "$z\$" | summ load
killall hackbench 2>/dev/null; sleep 0.3
cat /proc/sys/debug/timer 2>/dev/null
