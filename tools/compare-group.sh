#!/usr/bin/env bash
# Group-scheduling overhead side by side with Linux (make compare-group): the same-CPU pipe
# ping-pong in the root group and inside a two-level nested group, alternating, 5 rounds each,
# medians per switch, on Cadence (`bench pipe -g`: kernel tasks, groups /pipe-outer/pipe-inner)
# and on the Linux peer (Debian 6.1 generic: `pipetest N 1 1`, two processes on CPU 1, in the
# root cgroup and in /outer/inner with the cpu controller on, cgroup v2; autogroup is off there)
# under the same QEMU flags, one after the other. Prints one `pipe-group:` line per kernel:
#   pipe-group: kernel=<cadence|linux> root_us=<n> nested_us=<n> overhead_pct=<n>
#
#   SMP=2 tools/compare-group.sh        (default SMP=4,sockets=1,cores=2,threads=2)
#   LOOPS=100000 LINUX_LOOPS=20000 PEER=/tmp/peer
# What differs: Cadence's two tasks are kernel threads (no system calls, no address-space
# switch); Linux's are processes doing read/write system calls, so its switch costs several
# times more and the same per-level work is a smaller share of it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
SMP=${SMP:-4,sockets=1,cores=2,threads=2}
LOOPS=${LOOPS:-100000}
LINUX_LOOPS=${LINUX_LOOPS:-20000}
OUT=${OUT:-$root/target/compare-group}
. "$root/tools/peer-env.sh"
peer_find || PEER_RUN=$root/../shared/peer/run.sh
for n in "$LOOPS" "$LINUX_LOOPS"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "compare-group: LOOPS and LINUX_LOOPS must be positive numbers, got '$n'" >&2; exit 2; }
done
mkdir -p "$OUT"
if [ ! -e "$PEER/initrd.gz" ]; then
  echo "compare-group: building the Linux peer into $PEER (once) ..." >&2
  bash "$(dirname "$PEER_RUN")/build.sh" >&2
fi
KERNEL=${KERNEL:-$root/kernel/target/x86_64-unknown-none/release/cadence-kernel}
BOOT=${BOOT:-$root/target/release/cadence-boot}

"$BOOT" run --kernel "$KERNEL" --smp "$SMP" --timeout 900 --args "run=\"bench pipe -g -l $LOOPS\" poweroff" > "$OUT/cadence.txt" 2>&1 || true
line=$(grep -m1 '^pipe-group:' "$OUT/cadence.txt" || true)
[ -n "$line" ] || { echo "compare-group: Cadence printed no pipe-group line (see $OUT/cadence.txt)" >&2; exit 1; }
echo "${line/pipe-group:/pipe-group: kernel=cadence}"

cg=/sys/fs/cgroup
PEER_TIMEOUT=1200 "$PEER_RUN" --smp "$SMP" "mount -t cgroup2 none $cg && echo +cpu > $cg/cgroup.subtree_control \
  && mkdir -p $cg/outer && echo +cpu > $cg/outer/cgroup.subtree_control && mkdir -p $cg/outer/inner || echo 'cgroup setup failed'
for r in 1 2 3 4 5; do
  echo \$\$ > $cg/cgroup.procs; echo 'round root'; pipetest $LINUX_LOOPS 1 1
  echo \$\$ > $cg/outer/inner/cgroup.procs; echo 'round nested'; pipetest $LINUX_LOOPS 1 1
done" > "$OUT/linux.txt" 2>&1 || true
python3 - "$OUT/linux.txt" <<'EOF'
import re, statistics, sys
vals = {"root": [], "nested": []}
where = None
for l in open(sys.argv[1]):
    m = re.match(r"round (root|nested)", l)
    if m:
        where = m.group(1)
    m = re.search(r"([\d.]+) us per switch", l)
    if m and where:
        vals[where].append(float(m.group(1)))
        where = None
if len(vals["root"]) != 5 or len(vals["nested"]) != 5:
    sys.exit(f"compare-group: the peer gave {len(vals['root'])} root and {len(vals['nested'])} nested rounds, 5 each expected (see {sys.argv[1]})")
r, n = statistics.median(vals["root"]), statistics.median(vals["nested"])
print(f"pipe-group: kernel=linux root_us={r:.2f} nested_us={n:.2f} overhead_pct={(n / r - 1) * 100:.1f}")
EOF
