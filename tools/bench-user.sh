#!/usr/bin/env bash
# `make bench-user`: the same user programs, same command lines, on Cadence and on the Linux
# peer in one sitting, alternating boots: a system-call round trip (getppid), fork+exit+wait,
# clock_gettime(CLOCK_MONOTONIC) (a system call on Cadence, the vDSO on Linux), and pipetest on one
# CPU (N 0 0) and across cores (N 0 2). Prints each round's figures, the
# medians and the ratios Cadence / Linux (lower is faster for Cadence).
#
#   tools/bench-user.sh [ROUNDS] [SMP] [LINUX]     (defaults: 3, 4,sockets=1,cores=2,threads=2, 6.12)
#
# What differs between the two sides: Linux answers getppid through its syscall entry with
# PTI and the other mitigations of a Debian kernel; Cadence has none. Both run the binaries of
# target/user (static glibc), from an initramfs, under the same QEMU flags (TCG).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds="${1:-3}"; smp="${2:-4,sockets=1,cores=2,threads=2}"; linux="${3:-6.12}"
boot="$root/target/release/cadence-boot"
kernel="${KERNEL:-$root/kernel/target/x86_64-unknown-none/release/cadence-kernel}"
initrd="$root/target/user/initramfs.cpio"
. "$root/tools/peer-env.sh"
peer_find || { echo "bench-user: no Linux peer (../shared/peer/run.sh)" >&2; exit 1; }
loops=20000
cmd="syscall-bench 100000; pipetest $loops 0 0; pipetest $loops 0 2"
out="$(mktemp -d)"; trap 'rm -rf "$out"' EXIT
figures() { # log -> "syscall_ns clock_ns fork_us same_us cross_us"
  local sys clock fork same cross
  sys=$(grep -m1 'getppid' "$1" | sed 's/.*getppid \([0-9.]*\) ns.*/\1/')
  clock=$(grep -m1 'clock_gettime' "$1" | sed 's/.*clock_gettime \([0-9.]*\) ns.*/\1/')
  fork=$(grep -m1 'fork+exit+wait' "$1" | sed 's/.*wait \([0-9.]*\) us.*/\1/')
  same=$(grep 'us per switch' "$1" | sed -n 1p | sed 's/.*, \([0-9.]*\) us per switch.*/\1/')
  cross=$(grep 'us per switch' "$1" | sed -n 2p | sed 's/.*, \([0-9.]*\) us per switch.*/\1/')
  echo "$sys $clock $fork $same $cross"
}
for r in $(seq 1 "$rounds"); do
  "$boot" run --kernel "$kernel" --initrd "$initrd" --smp "$smp" --timeout 600 --args "sh=\"$cmd\" poweroff" > "$out/c.$r" 2>&1 \
    || { echo "bench-user: Cadence run $r failed" >&2; tail -20 "$out/c.$r" >&2; exit 1; }
  "$PEER_RUN" --linux "$linux" --smp "$smp" --file "$root/target/user/syscall-bench" --file "$root/target/user/pipetest" \
    "cd / && PATH=/:\$PATH; $cmd" > "$out/l.$r" 2>&1 || { echo "bench-user: Linux run $r failed" >&2; tail -20 "$out/l.$r" >&2; exit 1; }
  echo "round $r: cadence $(figures "$out/c.$r") | linux $(figures "$out/l.$r")"
done
series=$(grep -m1 -o 'peer: [^ ]*' "$out/l.1" | cut -d' ' -f2 || true)
python3 - "$out" "$rounds" "$series" <<'PY'
import re, statistics, sys
d, rounds, series = sys.argv[1], int(sys.argv[2]), sys.argv[3] or "linux"
def figs(path):
    t = open(path, errors="replace").read()
    sys_ = float(re.search(r"getppid ([0-9.]+) ns", t).group(1))
    clock = float(re.search(r"clock_gettime ([0-9.]+) ns", t).group(1))
    fork = float(re.search(r"fork\+exit\+wait ([0-9.]+) us", t).group(1))
    sw = [float(x) for x in re.findall(r", ([0-9.]+) us per switch", t)]
    return [sys_, clock, fork, sw[0], sw[1]]
c = [figs(f"{d}/c.{r}") for r in range(1, rounds + 1)]
l = [figs(f"{d}/l.{r}") for r in range(1, rounds + 1)]
names = ["getppid round trip (ns)", "clock_gettime MONOTONIC (ns; Linux: vDSO)", "fork+exit+wait (us)", "pipetest N 0 0 (us/switch)", "pipetest N 0 2 (us/switch)"]
print(f"\n| benchmark | Cadence | Linux {series} | Cadence / Linux |")
print("|---|---|---|---|")
for i, n in enumerate(names):
    cm, lm = statistics.median(x[i] for x in c), statistics.median(x[i] for x in l)
    print(f"| {n} | {cm:.2f} | {lm:.2f} | {cm / lm:.2f} |")
print(f"\nmedians of {rounds} rounds, alternating boots")
PY
