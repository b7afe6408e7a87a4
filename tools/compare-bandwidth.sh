#!/usr/bin/env bash
# `make compare-bandwidth`: CFS bandwidth control on Cadence and on the Linux peer in one
# sitting, alternating boots: tests/user/bw-bench.c puts 4 spinners on 4 CPUs in a cgroup v2
# group with cpu.max "50000 100000" for 10 s and prints the group's share of one CPU by
# cpu.stat usage_usec, by the spinners' own CPU times and by their loop counts, with nr_periods,
# nr_throttled and throttled_usec. Prints every round's line and the medians per kernel.
#
#   tools/compare-bandwidth.sh [ROUNDS] [SMP] [LINUX]   (defaults: 3, 4,sockets=1,cores=2,threads=2, 6.1)
#
# What differs between the two sides: Linux hands runtime out from a per-group hrtimer at each
# period and to throttled queues in order (distribute_cfs_runtime); Cadence checks throttled
# queues at each CPU's tick (250 Hz) and refills the pool lazily at the first look after a
# boundary (sched::bandwidth). Linux has a vDSO, so the spinners' clock reads cost no system
# call there (their loop rate is higher). The loop-count share is only indicative under TCG:
# 4 vCPUs share 2 host cores, so a vCPU's speed depends on how many run at once.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds="${1:-3}"; smp="${2:-4,sockets=1,cores=2,threads=2}"; linux="${3:-6.1}"
boot="$root/target/release/cadence-boot"
kernel="${KERNEL:-$root/kernel/target/x86_64-unknown-none/release/cadence-kernel}"
initrd="$root/target/user/initramfs.cpio"
. "$root/tools/peer-env.sh"
peer_find || { echo "compare-bandwidth: no Linux peer (../shared/peer/run.sh)" >&2; exit 1; }
out="$(mktemp -d)"; trap 'rm -rf "$out"' EXIT
for r in $(seq 1 "$rounds"); do
  "$boot" run --kernel "$kernel" --initrd "$initrd" --smp "$smp" --timeout 600 --args "sh=\"/bin/bw-bench\" poweroff" > "$out/c.$r" 2>&1 \
    || { echo "compare-bandwidth: Cadence run $r failed" >&2; tail -20 "$out/c.$r" >&2; exit 1; }
  "$PEER_RUN" --linux "$linux" --smp "$smp" --file "$root/target/user/bw-bench" "/bw-bench" > "$out/l.$r" 2>&1 \
    || { echo "compare-bandwidth: Linux run $r failed" >&2; tail -20 "$out/l.$r" >&2; exit 1; }
  echo "round $r cadence: $(grep -h 'bw-bench: cpu.max' "$out/c.$r" | sed 's/^.*bw-bench: //')"
  echo "round $r linux:   $(grep -h 'bw-bench: cpu.max' "$out/l.$r" | sed 's/^.*bw-bench: //')"
done
python3 - "$out" "$rounds" "$linux" <<'PY'
import re, statistics, sys
d, rounds, linux = sys.argv[1], int(sys.argv[2]), sys.argv[3]
keys = ["usage_share", "cputime_share", "count_share", "nr_periods", "nr_throttled", "throttled_usec"]
def vals(side):
    out = {k: [] for k in keys}
    for r in range(1, rounds + 1):
        m = re.search(r"bw-bench: cpu\.max=.*", open(f"{d}/{side}.{r}", errors="replace").read())
        if not m:
            sys.exit(f"compare-bandwidth: no result line in {side}.{r}")
        for k in keys:
            out[k].append(float(re.search(rf"{k}=([0-9.]+)", m.group(0)).group(1)))
    return out
c, l = vals("c"), vals("l")
print(f"\n| cpu.max \"50000 100000\", 4 spinners, 10 s | Cadence | Linux {linux} |")
print("|---|---|---|")
for k in keys:
    fmt = (lambda v: f"{v:.3f}") if k.endswith("share") else (lambda v: f"{v:.0f}")
    print(f"| {k} | {fmt(statistics.median(c[k]))} ({fmt(min(c[k]))}-{fmt(max(c[k]))}) | {fmt(statistics.median(l[k]))} ({fmt(min(l[k]))}-{fmt(max(l[k]))}) |")
print(f"\nmedians (ranges) of {rounds} boots each, alternating; target share 0.500 +- 0.020")
PY
