#!/bin/sh
# Runs inside the Linux peer (busybox sh), started by tools/topology-linux.sh: prints what Linux
# shows of the machine's topology, each command's output after a line `@@@ FILE`, which the host
# script splits into FILE. Binary ACPI tables are printed in base64.
# Only emergencies on the console: a kernel message (an RCU stall report at 64 CPUs under TCG)
# would land in the middle of a file. The log itself keeps everything.
echo 1 > /proc/sys/kernel/printk
mount -t debugfs none /sys/kernel/debug 2>/dev/null
# Linux 6.12 fills debugfs sched/domains only in verbose mode (sched_verbose on the command line,
# which also prints every CPU's domains and groups to the kernel log, or this switch).
[ "$(cat /sys/kernel/debug/sched/verbose)" = Y ] || echo Y > /sys/kernel/debug/sched/verbose
n=$(nproc)
sec() { echo "@@@ $1"; }

sec uname.txt; uname -r; cat /proc/version
sec schedstat.txt; cat /proc/schedstat
# debugfs: every CPU's domains, in CPU then level order (cpu10 after cpu9).
sec sched-domains.txt
c=0; while [ $c -lt $n ]; do
  for d in /sys/kernel/debug/sched/domains/cpu$c/domain*; do
    [ -d "$d" ] || continue
    echo "${d#/sys/kernel/debug/sched/domains/} name=$(cat $d/name) flags=$(cat $d/flags)"
  done; c=$((c + 1)); done
# The kernel log's account of the domains (sched_verbose): spans, levels and every group.
sec sched-domains-dmesg.txt
dmesg | sed 's/^\[ *[0-9.]*\] //' | grep -E '^CPU[0-9]+ attaching|^ +domain-[0-9]+:|^ +groups:|ERROR'

sec node.txt
for f in possible online has_cpu has_memory has_normal_memory; do
  echo "node/$f: $(cat /sys/devices/system/node/$f 2>&1)"; done
for d in /sys/devices/system/node/node*; do
  for f in cpulist cpumap distance; do echo "${d#/sys/devices/system/}/$f: $(cat $d/$f)"; done
done
sec node-meminfo.txt
for d in /sys/devices/system/node/node*; do head -n 5 $d/meminfo; done
# Topology files: every CPU up to 64, beyond that the first two, the middle one and the last.
sec cpu-topology.txt
if [ $n -le 64 ]; then cpus=$(seq 0 $((n - 1))); else cpus="0 1 $((n / 2)) $((n - 1))"; fi
for c in $cpus; do
  for f in /sys/devices/system/cpu/cpu$c/topology/*; do
    echo "${f#/sys/devices/system/}: $(cat $f 2>&1)"; done; done
sec lscpu.txt; lscpu
sec lscpu-e.txt; lscpu -e
sec numactl-hardware.txt
# The peer gets Debian's numactl as /numactl; Cadence's root filesystem has it in /usr/bin.
nm=/numactl; [ -x $nm ] || nm=$(command -v numactl || true)
if [ -n "$nm" ] && [ -x "$nm" ]; then $nm --hardware 2>&1; echo "rc=$?"; else echo "no numactl in the guest"; fi
# First touch: 16 MiB touched from the first CPU of each node land on that node
# (tests/user/numa-touch.c; the peer gets a static copy as /numa-touch).
sec numa-touch.txt
nt=/numa-touch; [ -x $nt ] || nt=$(command -v numa-touch || true)
if [ -n "$nt" ]; then
  for d in /sys/devices/system/node/node*; do
    c=$(cut -d, -f1 $d/cpulist | cut -d- -f1)
    [ -n "$c" ] && $nt "$c" 16
  done
else echo "no numa-touch in the guest"; fi
sec dmesg-numa.txt
dmesg | grep -E 'SRAT|SLIT|NUMA|[Nn]ode|x2apic|x2APIC|smpboot|sched_clock|Memory:|IOMMU|DMAR' | grep -v -E 'domain-[0-9]+:' | sed 's/^\[ *[0-9.]*\] //'
for t in SRAT SLIT; do
  sec $t.base64
  if [ -e /sys/firmware/acpi/tables/$t ]; then base64 /sys/firmware/acpi/tables/$t; else echo "absent"; fi
done
sec end
