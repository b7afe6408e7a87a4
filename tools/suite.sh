#!/usr/bin/env bash
# `make suite`: the rt-tests programs and rt-app examples that give a verdict or a miss count, on
# Cadence, Linux generic and Linux PREEMPT_RT (../shared/peer) in one sitting, one boot each,
# under the same QEMU flags (TCG, -smp $SMP, -cpu max,vendor=GenuineIntel). Prints one markdown
# table: a row per program, per kernel pass / fail and the figures the program reports.
#
#   tools/suite.sh            (make suite [SMP=spec] [LINUX=6.1] [SECS=n] [RTAPP_SECS=n] [OUT=dir])
#   SMP=2 tools/suite.sh
#
# One guest script, tools/suite/guest.sh, runs unchanged on all three kernels (Cadence through
# sh=, Linux through the peer's run.sh) with the same command lines; N = the CPU count (the
# first number of SMP), SECS (default 3) each timed program's duration:
#   deadline_test   deadline_test -t N -p 50 -P 25 -i 100000: N SCHED_DEADLINE tasks, runtime
#                   50 ms of periods 100 ms, 100.5 ms, ... (half the machine reserved, within
#                   admission), each job working a quarter of its runtime (-P 25: room for a
#                   host gap of tens of ms, TCG on a shared host); 10 s (its own duration)
#   cyclicdeadline  cyclicdeadline -t N -i 10000 -D SECS -q
#   signaltest      signaltest -m -p 90 -tN -D SECS -q
#   ptsematest, sigwaittest, pmqtest, svsematest
#                   NAME -a -tN -p 99 -i 100 -d 25 -D SECS -q (N pairs, pinned per CPU)
#   oslat           oslat -D SECS -q
#   rt-app:NAME     rt-app on each rt-app 1.0 example of tests/fixtures/rtapp that needs no
#                   ftrace (14, as make rtapp-all), rewritten with duration RTAPP_SECS (2)
#
# The rules for pass, each what the program itself reports (a row's figures say what it
# printed; every program must also exit 0):
#   deadline_test   its summary for each of the N tasks, and "missed deadlines = 0" in every
#                   one (the issue's rule: no miss within admission). Missed periods (a late
#                   start) are shown, not judged.
#   cyclicdeadline, signaltest
#                   a `T:` summary line for each of the N threads with cycles > 0: they run to
#                   completion and print their summary (neither judges its latencies; the table
#                   shows the worst thread's Max and Avg)
#   ptsematest, sigwaittest, pmqtest, svsematest
#                   a `#a -> #b, Min ..., Max ...` line for each of the N pairs, each measured
#                   (not "not yet ready", Min not -1): the same, for pairs
#   oslat           its Maximum row: ran to completion and printed its summary (worst CPU's max)
#   rt-app:NAME     rt-app's exit status 0 (its own verdict: it ran the workload to its end);
#                   the figures are the timed phases (a timer event, c_period > 0) whose slack
#                   was negative, out of all timed phases, the largest wu_lat, and the number
#                   of per-thread logs (rt-app judges none of them)
# A program that stopped with an error fails with its own error line (pmqtest and svsematest
# where POSIX message queues or SysV semaphores are ENOSYS). A program that printed nothing
# parseable (no summary and no line at all) or never finished (no exit status: the kernel
# stopped) makes the command fail, naming the program and the kernel.
#
# LINUX=6.12 (default: EEVDF, as Cadence's fair class, and mainline PREEMPT_RT) or 6.1; the
# columns are the guests' `uname -r`. Raw outputs stay in $OUT (default target/suite/):
# cadence.txt, linux.txt, linux-rt.txt. Under TCG on a shared host the maxima are the host's
# vCPU gaps as much as the kernels'; a verdict is one sitting.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
SMP=${SMP:-4,sockets=1,cores=2,threads=2}
LINUX=${LINUX:-6.12}
SECS=${SECS:-3}
RTAPP_SECS=${RTAPP_SECS:-2}
OUT=${OUT:-$root/target/suite}
boot="$root/target/release/cadence-boot"
kernel="${KERNEL:-$root/kernel/target/x86_64-unknown-none/release/cadence-kernel}"
. "$root/tools/peer-env.sh"
peer_find || { echo "suite: no Linux peer (../shared/peer/run.sh)" >&2; exit 2; }
[[ "$LINUX" == 6.1 || "$LINUX" == 6.12 ]] || { echo "suite: LINUX must be 6.1 or 6.12, got '$LINUX'" >&2; exit 2; }
[[ "$SECS" =~ ^[1-9][0-9]*$ && "$RTAPP_SECS" =~ ^[1-9][0-9]*$ ]] || { echo "suite: SECS and RTAPP_SECS must be positive numbers" >&2; exit 2; }
[[ "$SMP" =~ ^[1-9][0-9]*(,.*)?$ ]] || { echo "suite: SMP must start with the CPU count (4 or 4,sockets=1,cores=2,threads=2), got '$SMP'" >&2; exit 2; }
ncpus=${SMP%%,*}
for f in "$boot" "$kernel" "$root/target/user/initramfs.cpio"; do
  [ -f "$f" ] || { echo "suite: $f is missing (make kernel boot-tool initramfs)" >&2; exit 2; }
done
mkdir -p "$OUT/files"
rm -f "$OUT"/*.txt "$OUT"/files/*

# rt-app's examples in rt-app 1.0's grammar, duration RTAPP_SECS, logs in /tmp (as rtapp-all.sh:
# rtapp-host refuses the legacy 0.x files and the merge fragments, as rt-app 1.0 does; the
# "ftrace": true files need tracing on).
(cd "$root" && cargo build --release -q -p cadence-rtapp --bin rtapp-host)
host="$root/target/release/rtapp-host"
cp "$root/tools/suite/guest.sh" "$OUT/files/suite-guest.sh"
files=("$OUT/files/suite-guest.sh")
for f in "$root"/tests/fixtures/rtapp/*.json; do
  n=$(basename "$f" .json)
  grep -q '"ftrace" *: *true' "$f" && continue
  "$host" peer-json "$f" -d "$RTAPP_SECS" --logdir /tmp --basename "$n" > "$OUT/files/rtj-$n.json" 2> /dev/null \
    || { rm -f "$OUT/files/rtj-$n.json"; continue; }
  files+=("$OUT/files/rtj-$n.json")
done
cmd="sh /suite-guest.sh $ncpus $SECS"
# Generous: about 3 minutes of programs at the defaults, TCG boots and a busy host.
limit=$(( 900 + 20 * SECS + 20 * RTAPP_SECS ))

# Cadence reads a second newc archive after the root filesystem's (as make run FILES= does).
args=(); for f in "${files[@]}"; do args+=("$f=$(basename "$f")"); done
"$boot" initramfs -o "$OUT/files.cpio" "${args[@]}" > /dev/null
cat "$root/target/user/initramfs.cpio" "$OUT/files.cpio" > "$OUT/initrd.cpio"
peer_files=(); for f in "${files[@]}"; do peer_files+=(--file "$f"); done

start=$SECONDS
for side in cadence linux linux-rt; do
  echo "suite: $side (smp $SMP) ... ($((SECONDS - start)) s)" >&2
  case $side in
    cadence)
      # Straight to a file (no pipe buffering it): $OUT/cadence.txt can be followed while it runs.
      "$boot" run --kernel "$kernel" --initrd "$OUT/initrd.cpio" --smp "$SMP" --timeout "$limit" \
        --args "sh=\"$cmd\" poweroff" > "$OUT/$side.txt" 2>&1 \
        || echo "suite: the $side boot failed or timed out (see $OUT/$side.txt)" >&2
      sed -i 's/\r$//' "$OUT/$side.txt";;
    linux|linux-rt)
      rt=(); [ $side = linux-rt ] && rt=(--rt)
      PEER_TIMEOUT=$limit "$PEER_RUN" --linux "$LINUX" "${rt[@]}" --smp "$SMP" "${peer_files[@]}" "$cmd" \
        > "$OUT/$side.txt" 2>&1 || echo "suite: the $side boot failed or timed out (see $OUT/$side.txt)" >&2;;
  esac
done
rm -f "$OUT/files.cpio" "$OUT/initrd.cpio"
echo "suite: done in $((SECONDS - start)) s; raw outputs in $OUT" >&2
echo "Programs on Cadence and Linux $LINUX, -smp $SMP, SECS=$SECS, RTAPP_SECS=$RTAPP_SECS, one sitting."
echo
python3 "$root/tools/suite/report.py" "$OUT" "$SMP"
