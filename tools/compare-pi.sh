#!/usr/bin/env bash
# `make compare-pi`: the priority-inversion benchmark (tests/user/pi-bench.c) on Cadence and on
# the Linux peer in one sitting, alternating boots: a SCHED_FIFO 90 thread waits for a mutex a
# SCHED_FIFO 10 thread holds for 5 ms of its CPU time while a SCHED_FIFO 50 hog spins 200 ms,
# all on CPU 0; PTHREAD_PRIO_INHERIT against PTHREAD_PRIO_NONE. Prints every round's waits and
# the medians per protocol and kernel.
#
#   tools/compare-pi.sh [ROUNDS] [SMP] [LINUX]     (defaults: 3, 4,sockets=1,cores=2,threads=2, 6.1)
#
# What differs between the two sides: Linux's PI futexes go through rt_mutex with its wait_lock
# and pi_lock per task and the generic kernel's voluntary preemption; Cadence's through one
# sleeping lock for all PI futexes and one chain table (`sched::pi`), with a preemptible kernel.
# The same binary (glibc 2.36's PI mutexes) and QEMU flags (TCG) on both.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds="${1:-3}"; smp="${2:-4,sockets=1,cores=2,threads=2}"; linux="${3:-6.1}"
boot="$root/target/release/cadence-boot"
kernel="${KERNEL:-$root/kernel/target/x86_64-unknown-none/release/cadence-kernel}"
initrd="$root/target/user/initramfs.cpio"
. "$root/tools/peer-env.sh"
peer_find || { echo "compare-pi: no Linux peer (../shared/peer/run.sh)" >&2; exit 1; }
out="$(mktemp -d)"; trap 'rm -rf "$out"' EXIT
for r in $(seq 1 "$rounds"); do
  "$boot" run --kernel "$kernel" --initrd "$initrd" --smp "$smp" --timeout 600 --args "sh=\"/bin/pi-bench 1\" poweroff" > "$out/c.$r" 2>&1 \
    || { echo "compare-pi: Cadence run $r failed" >&2; tail -20 "$out/c.$r" >&2; exit 1; }
  "$PEER_RUN" --linux "$linux" --smp "$smp" --file "$root/target/user/pi-bench" "/pi-bench 1" > "$out/l.$r" 2>&1 \
    || { echo "compare-pi: Linux run $r failed" >&2; tail -20 "$out/l.$r" >&2; exit 1; }
  echo "round $r: cadence $(grep -ho 'protocol=[a-z]* round=1 wait_us=[0-9]*' "$out/c.$r" | sed 's/ round=1//' | tr '\n' ' ')| linux $(grep -ho 'protocol=[a-z]* round=1 wait_us=[0-9]*' "$out/l.$r" | sed 's/ round=1//' | tr '\n' ' ')"
done
python3 - "$out" "$rounds" "$linux" <<'PY'
import re, statistics, sys
d, rounds, linux = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def waits(path, proto):
    return [int(x) for x in re.findall(rf"protocol={proto} round=\d+ wait_us=(\d+)", open(path, errors="replace").read())]
print(f"\n| FIFO 90 waiter's wait (us) | Cadence | Linux {linux} |")
print("|---|---|---|")
for proto in ["inherit", "none"]:
    c = [w for r in range(1, rounds + 1) for w in waits(f"{d}/c.{r}", proto)]
    l = [w for r in range(1, rounds + 1) for w in waits(f"{d}/l.{r}", proto)]
    print(f"| PTHREAD_PRIO_{proto.upper()} | {statistics.median(c):.0f} ({min(c)}-{max(c)}) | {statistics.median(l):.0f} ({min(l)}-{max(l)}) |")
print(f"\nmedians (ranges) of {rounds} boots each, alternating; critical section 5000 us of CPU time, hog 200 ms")
PY
