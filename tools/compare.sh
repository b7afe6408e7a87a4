#!/usr/bin/env bash
# `make compare`: the same Debian binaries, the same command lines, on Cadence, Linux generic and
# Linux PREEMPT_RT (../shared/peer), under the same QEMU flags (TCG, -smp $SMP,
# -cpu max,vendor=GenuineIntel), one boot after the other in each sitting. Prints one table with
# the medians over the sittings and the ratios Cadence/Linux (< 1: Cadence faster / lower latency).
#
#   tools/compare.sh                  (make compare [SITTINGS=n] [TRACED=n] [SMP=spec] [LINUX=6.1])
#   SMP=2 SITTINGS=1 tools/compare.sh
#
# One guest script, tools/compare/guest.sh, runs on all three kernels (Cadence through sh=, Linux
# through the peer's run.sh), with tools/compare/ticker.json and our static pipetest and
# syscall-bench copied into / on both:
#   syscall         syscall-bench: getppid round trip, fork+exit+wait
#   pipe            pipetest 20000 0 0 (both on CPU 0), pipetest 20000 0 X (X on the other core)
#   hackbench       hackbench -p -g 4 -l 50 (processes) and -T (threads), 160 tasks
#   wakeup          cyclictest -t1 -i1000 -l3000 at SCHED_OTHER (no -p)
#   cyclic idle     cyclictest -m -tN -a -p90 -i1000 -l$LOOPS (N = CPUs)
#   cyclic load     the same while hackbench -p -g 4 runs in the background
#   rt-app ticker   rt-app, one FIFO 90 thread: 100 µs of work every 1 ms for 3 s (its log's wu_lat)
#   traced          (the first $TRACED sittings, default 1) cyclictest -l1000 under hackbench with
#                   sched_switch, sched_wakeup, sched_wakeup_new and sched_migrate_task enabled
#                   through tracefs on both kernels, rt-app's ticker writing its markers beside it
#                   and a cyclictest --tracemark break at the end; the ftrace text goes to a scratch
#                   virtio disk (or the console if a kernel has no /dev/vda) and through one host
#                   analysis: `cadence-boot trace report` and `trace check rt`.
# Every latency row gives the average and, from cyclictest's -h histograms (1 µs buckets up to
# HIST_US, default 20000; overflows count as above it), the median, p99 and maximum.
# SITTINGS (default 3) runs each kernel that many times, alternating; a cell is the median
# (min–max) over the sittings and ratios are ratios of medians. LINUX=6.12 (default: EEVDF, as
# Cadence's fair class, and mainline PREEMPT_RT) or 6.1; the series printed is the guests'
# `uname -r`. A kernel that produced no number for a row fails the command, naming it.
# Raw outputs stay in $OUT (default target/compare/): <side>-N.txt and the traces <side>-N.trace.
# The kernel-task benchmarks (Cadence's in-kernel bench pipe/hackbench/cyclic beside Linux's
# programs) keep their own table: `make compare-inkernel` (tools/compare-inkernel.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
SMP=${SMP:-4,sockets=1,cores=2,threads=2}
LOOPS=${LOOPS:-2000}
SITTINGS=${SITTINGS:-3}
TRACED=${TRACED:-1}
LINUX=${LINUX:-6.12}
HIST_US=${HIST_US:-20000}
OUT=${OUT:-$root/target/compare}
. "$root/tools/peer-env.sh"
peer_find || { echo "compare: no Linux peer (../shared/peer/run.sh)" >&2; exit 2; }
[[ "$SITTINGS" =~ ^[1-9][0-9]*$ ]] || { echo "compare: SITTINGS must be a positive number, got '$SITTINGS'" >&2; exit 2; }
[[ "$TRACED" =~ ^[0-9]+$ ]] || { echo "compare: TRACED must be a number of sittings, got '$TRACED'" >&2; exit 2; }
[[ "$LINUX" == 6.1 || "$LINUX" == 6.12 ]] || { echo "compare: LINUX must be 6.1 or 6.12, got '$LINUX'" >&2; exit 2; }
[[ "$LOOPS" =~ ^[1-9][0-9]*$ && "$HIST_US" =~ ^[1-9][0-9]*$ ]] || { echo "compare: LOOPS and HIST_US must be positive numbers" >&2; exit 2; }
mkdir -p "$OUT"
rm -f "$OUT"/*.txt "$OUT"/*.trace "$OUT"/*.hist "$OUT"/*.img

ncpus=${SMP%%,*}
# The cross-core pipe partner: with 2 threads per core CPUs 0 and 1 are siblings (QEMU numbers
# threads first), so CPU 2 is on the other core; otherwise CPU 1 is.
if [[ "$SMP" == *threads=2* ]]; then other=2; else other=1; fi
files=("$root/tools/compare/guest.sh" "$root/tools/compare/ticker.json" "$root/target/user/pipetest" "$root/target/user/syscall-bench")
for f in "${files[@]}"; do [ -f "$f" ] || { echo "compare: $f is missing (make initramfs builds target/user)" >&2; exit 2; }; done
peer_files=(); for f in "${files[@]}"; do peer_files+=(--file "$f"); done
cmd="sh /guest.sh $ncpus $other $LOOPS $HIST_US"

# A traced run writes its trace to a scratch disk, FILE.img; cut_trace keeps the text (without
# the image's zero fill) as FILE.trace, or takes it from the console output when the kernel had
# no /dev/vda (the guest script prints it between @@trace-begin and @@trace-end then).
new_disk() { rm -f "$1.img" && truncate -s 64M "$1.img"; }
# The disk is read whether or not `@@trace-dumped` reached the console: a kernel whose serial
# console stalled (PREEMPT_RT's "irq 4: nobody cared") still wrote its trace.
cut_trace() {
  tr -d '\0' < "$1.img" > "$1.trace"
  [ -s "$1.trace" ] || sed -n '/^@@trace-begin$/,/^@@trace-end$/p' "$1.txt" | sed '1d;$d' > "$1.trace"
  rm -f "$1.img"
}
for ((i = 1; i <= SITTINGS; i++)); do
  traced=$((i <= TRACED ? 1 : 0))
  for side in cadence linux linux-rt; do
    echo "compare: sitting $i/$SITTINGS: $side (smp $SMP) ..." >&2
    disk=(); ((traced)) && new_disk "$OUT/$side-$i"
    case $side in
      cadence)
        ((traced)) && disk=(DISK="$OUT/$side-$i.img")
        make -s -C "$root" run SMP="$SMP" TIMEOUT=900 "${disk[@]}" FILES="${files[*]}" \
          ARGS="sh=\"$cmd $traced\" poweroff" 2>&1 | tr -d '\r' > "$OUT/$side-$i.txt" \
          || echo "compare: the $side run of sitting $i failed (see $OUT/$side-$i.txt)" >&2;;
      linux|linux-rt)
        ((traced)) && disk=(--disk "$OUT/$side-$i.img")
        rt=(); [ $side = linux-rt ] && rt=(--rt)
        PEER_TIMEOUT=900 "$PEER_RUN" --linux "$LINUX" "${rt[@]}" --smp "$SMP" "${disk[@]}" "${peer_files[@]}" "$cmd $traced" \
          > "$OUT/$side-$i.txt" 2>&1 || echo "compare: the $side run of sitting $i failed (see $OUT/$side-$i.txt)" >&2;;
    esac
    ((traced)) && cut_trace "$OUT/$side-$i"
  done
done

python3 "$root/tools/compare/report.py" "$OUT" "$SMP" "$SITTINGS" "$TRACED" "$HIST_US" "$root/target/release/cadence-boot"
