#!/bin/bash
# An A/B of kernel builds on core scheduling's cost: boots each kernel in turn, ROUNDS times,
# at -smp 4,sockets=1,cores=2,threads=2, runs tests/user/coresched-bench (default
# `coresched-bench -d 2 -n 4 -r 2`; CMD overrides) and prints each boot's lines, then per kernel
# the medians over all its runs of each `on` run against the `off` and `pinned` runs beside it
# in the same boot, and of `on`'s forced idle. Save a kernel to compare with by copying
# kernel/target/x86_64-unknown-none/release/cadence-kernel away before rebuilding.
#
#   tools/coresched-ab.sh ROUNDS TAG=KERNEL [TAG=KERNEL...]
#   e.g. tools/coresched-ab.sh 4 before=/tmp/kernel-before after=kernel/target/x86_64-unknown-none/release/cadence-kernel
#
# Cadence only (Debian's Linux kernels have no CONFIG_SCHED_CORE); `make bench-coresched-user`
# adds `nosmt` and the Linux peer. Used for docs/results/2026-12-06-coresched-placement.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:?usage: tools/coresched-ab.sh ROUNDS TAG=KERNEL [TAG=KERNEL...]}
shift
(($# > 0)) || { echo "coresched-ab: name at least one TAG=KERNEL" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "coresched-ab: ROUNDS must be a positive number" >&2; exit 2; }
for cfg in "$@"; do
  [[ "$cfg" == *=* && -f "${cfg#*=}" ]] || { echo "coresched-ab: '$cfg' is not TAG=KERNEL with an existing kernel" >&2; exit 2; }
done
cmd=${CMD:-coresched-bench -d 2 -n 4 -r 2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 1; r <= rounds; r++)); do
  for cfg in "$@"; do
    tag=${cfg%%=*} kernel=${cfg#*=}
    "$root/target/release/cadence-boot" run --kernel "$kernel" --initrd "$root/target/user/initramfs.cpio" \
      --smp 4,sockets=1,cores=2,threads=2 --timeout "${TIMEOUT:-600}" --args "sh=\"$cmd\" poweroff" 2>&1 |
      tr -d '\r' | grep -a -E '^coresched: mode=' > "$out/$tag.$r" || true
    sed "s/^/$tag round $r: /" "$out/$tag.$r"
  done
done
python3 - "$out" "$@" <<'EOF'
import glob, re, statistics, sys
out, cfgs = sys.argv[1], sys.argv[2:]
line = re.compile(r"mode=(\w+) workload=(\S+) ops_per_s=(\d+) .*forced_idle_pct=([\d.]+)")
print("| kernel | `cpu` on / off | `pipe+cpu` on / off | `pipe+cpu` on / pinned | `pipe+cpu` forced idle | runs |")
print("|---|---:|---:|---:|---:|---:|")
for cfg in cfgs:
    tag = cfg.split("=", 1)[0]
    ratios = {"cpu": [], "pipe off": [], "pipe pinned": [], "pipe fi": []}
    for f in sorted(glob.glob(f"{out}/{tag}.*")):
        rows = [m for m in map(line.search, open(f, errors="replace")) if m]
        # coresched-bench prints each workload's modes in turn: off, on, pinned, off, on, ...
        for off, on, pinned in zip(rows[0::3], rows[1::3], rows[2::3]):
            if (off[1], on[1], pinned[1]) != ("off", "on", "pinned"):
                continue
            o, n, p = int(off[3]), int(on[3]), int(pinned[3])
            if on[2] == "cpu":
                ratios["cpu"].append(n / o)
            else:
                ratios["pipe off"].append(n / o)
                ratios["pipe pinned"].append(n / p)
                ratios["pipe fi"].append(float(on[4]))
    med = lambda v, fmt="%.2f": fmt % statistics.median(v) if v else "n/a"
    print(f"| {tag} | {med(ratios['cpu'])} | {med(ratios['pipe off'])} | {med(ratios['pipe pinned'])} | "
          f"{med(ratios['pipe fi'], '%.1f%%')} | {len(ratios['pipe pinned'])} |")
EOF
