#!/usr/bin/env bash
# `make compare-autogroup`: seed 001 as written and the autogroup experiment from user space on
# Cadence and on the Linux peer in one sitting: tests/scripts/seed-001.sh (the seed's four lines
# verbatim), then tests/scripts/autogroup-exp.sh with autogroup on, off, and Lennart's way (a
# hog pinned to CPU 0 beside 10 spinners started in another session; the hog's share of CPU 0
# and a SCHED_OTHER cyclictest's wakeup latency on CPU 0). Prints each round's lines and a table
# of medians.
#
#   tools/compare-autogroup.sh [ROUNDS] [SMP] [LINUX]   (defaults: 3, 4,sockets=1,cores=2,threads=2, 6.1)
#
# What differs between the two sides: Cadence boots with `autogroup=session` (one autogroup per
# setsid(), Linux's rule; its default is one per tty); Linux 6.1's fair class is CFS, Cadence's
# is EEVDF (Linux 6.6+); Cadence's group shares use the instantaneous queued weight, Linux's the
# PELT average. The same busybox, cyclictest and scripts on both.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds="${1:-3}"; smp="${2:-4,sockets=1,cores=2,threads=2}"; linux="${3:-6.1}"
boot="$root/target/release/cadence-boot"
kernel="${KERNEL:-$root/kernel/target/x86_64-unknown-none/release/cadence-kernel}"
initrd="$root/target/user/initramfs.cpio"
. "$root/tools/peer-env.sh"
peer_find || { echo "compare-autogroup: no Linux peer (../shared/peer/run.sh)" >&2; exit 1; }
out="$(mktemp -d)"; trap 'rm -rf "$out"' EXIT
script='sh /bin/seed-001.sh; for m in on off lennart; do sh /bin/autogroup-exp.sh $m; done'
for r in $(seq 1 "$rounds"); do
  "$boot" run --kernel "$kernel" --initrd "$initrd" --smp "$smp" --timeout 600 --args "autogroup=session sh=\"$script\" poweroff" > "$out/c.$r" 2>&1 \
    || { echo "compare-autogroup: Cadence run $r failed" >&2; tail -20 "$out/c.$r" >&2; exit 1; }
  "$PEER_RUN" --linux "$linux" --smp "$smp" --file "$root/tests/scripts/seed-001.sh" --file "$root/tests/scripts/autogroup-exp.sh" \
    "mkdir -p /bin && cp /seed-001.sh /autogroup-exp.sh /bin/ && $script" > "$out/l.$r" 2>&1 \
    || { echo "compare-autogroup: Linux run $r failed" >&2; tail -20 "$out/l.$r" >&2; exit 1; }
  for side in c l; do
    [ "$side" = c ] && name=cadence || name=linux
    grep -h -E 'seed-001:|autogroup-exp:' "$out/$side.$r" | sed "s/^.*\(seed-001:\|autogroup-exp:\)/round $r $name: \1/"
  done
done
python3 - "$out" "$rounds" "$linux" <<'PY'
import re, statistics, sys
d, rounds, linux = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def rows(side):
    res = {}
    for r in range(1, rounds + 1):
        for m in re.finditer(r"autogroup-exp: mode=(\w+) hog_share=([0-9.]+) latency_us min=(\d+) avg=(\d+) max=(\d+)", open(f"{d}/{side}.{r}", errors="replace").read()):
            res.setdefault(m.group(1), []).append((float(m.group(2)), int(m.group(4)), int(m.group(5))))
    return res
c, l = rows("c"), rows("l")
print(f"\n| setup | hog's share of CPU 0: Cadence | Linux {linux} | cyclictest avg/max us: Cadence | Linux {linux} |")
print("|---|---|---|---|---|")
med = lambda xs, i: statistics.median(x[i] for x in xs) if xs else float("nan")
for mode in ["on", "off", "lennart"]:
    cm, lm = c.get(mode, []), l.get(mode, [])
    print(f"| {mode} | {med(cm,0):.2f} | {med(lm,0):.2f} | {med(cm,1):.0f}/{med(cm,2):.0f} | {med(lm,1):.0f}/{med(lm,2):.0f} |")
print(f"\nmedians of {rounds} boots each, alternating; hog pinned to CPU 0, 10 spinners in another session")
PY
