#!/usr/bin/env bash
# Side by side with Linux: runs the same benchmarks on Cadence and on the Linux peer
# (../shared/peer: Debian 6.1 generic and PREEMPT_RT) under the same QEMU flags (TCG,
# -smp $SMP, -cpu max,vendor=GenuineIntel), one after the other in this sitting, and prints one
# table with Cadence/Linux ratios (< 1 means Cadence is faster / has lower latency).
#
#   tools/compare.sh            (make compare)
#   SMP=4,sockets=1,cores=2,threads=2 PEER=/tmp/peer LOOPS=2000 tools/compare.sh
#
# Benchmarks (kept short: a few seconds each):
#   pipe            Cadence `bench pipe` (2 tasks on 1 CPU, then on 2 cores) / Linux `pipetest` (unpinned)
#   hackbench       `hackbench -g 4 -l 50` (pipes, 160 tasks)
#   wakeup-latency  Cadence `bench wakeup-latency -d 3` (SCHED_OTHER, 1 ms period) /
#                   Linux `cyclictest -t1 -i1000` at SCHED_OTHER (the same measurement)
#   cyclic idle     `cyclictest -t4 -a -p90 -i1000 -l$LOOPS`, max/avg over the 4 threads
#   cyclic load     the same while `hackbench -g 4` runs in the background
# Raw outputs are kept in $OUT (default target/compare/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
SMP=${SMP:-4,sockets=1,cores=2,threads=2}
LOOPS=${LOOPS:-2000}
OUT=${OUT:-$root/target/compare}
PEER_RUN=${PEER_RUN:-$root/../shared/peer/run.sh}
[ -x "$PEER_RUN" ] || PEER_RUN=/work/shared/peer/run.sh
export PEER=${PEER:-/tmp/peer}
mkdir -p "$OUT"

cyc="-t4 -p90 -i1000 -l$LOOPS -a"
cadence_cmds="echo @@pipe; bench pipe -l 5000; echo @@hackbench; bench hackbench -g 4 -l 50; echo @@wakeup; bench wakeup-latency -d 3; echo @@cyclic-idle; bench cyclic $cyc; echo @@cyclic-load; bench hackbench -g 4 -l 1000000 &; sleep 500; bench cyclic $cyc"
linux_cmds="echo @@pipe; pipetest 5000; echo @@hackbench; hackbench -p -g 4 -l 50; echo @@wakeup; cyclictest -t1 -i1000 -l3000 -q; echo @@cyclic-idle; cyclictest -m -q $cyc; echo @@cyclic-load; hackbench -p -g 4 -l 1000000 >/dev/null 2>&1 & sleep 0.5; cyclictest -m -q $cyc; killall hackbench 2>/dev/null; true"

echo "compare: Cadence (smp $SMP) ..." >&2
make -s -C "$root" run SMP="$SMP" TIMEOUT=600 ARGS="run=\"$cadence_cmds\" poweroff" 2>&1 | tr -d '\r' > "$OUT/cadence.txt"
echo "compare: Linux generic ..." >&2
"$PEER_RUN" --smp "$SMP" "$linux_cmds" > "$OUT/linux.txt" 2>&1 || true
echo "compare: Linux PREEMPT_RT ..." >&2
"$PEER_RUN" --rt --smp "$SMP" "$linux_cmds" > "$OUT/linux-rt.txt" 2>&1 || true

python3 - "$OUT" "$SMP" <<'EOF'
import re, sys, datetime
out, smp = sys.argv[1], sys.argv[2]

def sections(path):
    sec, d = None, {}
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        m = re.match(r"^(?:cadence> )?@@(\S+)$", line.strip())
        if m:
            sec = m.group(1); d.setdefault(sec, []); continue
        if sec:
            d[sec].append(line)
    return d

def parse(path):
    s, r = sections(path), {}
    pipes = [float(m.group(1)) for l in s.get("pipe", []) for m in [re.search(r"pipetest: .* ([\d.]+) us per switch", l)] if m]
    if pipes:
        r["pipe1"] = pipes[0]
        r["pipe2"] = pipes[1] if len(pipes) > 1 else None
    for l in s.get("hackbench", []):
        m = re.match(r"Time: ([\d.]+)", l.strip())
        if m: r["hackbench"] = float(m.group(1))
    for l in s.get("wakeup", []):
        m = re.search(r"maximum latency: ([\d.]+)", l)
        if m: r["wmax"] = float(m.group(1))
        m = re.search(r"average latency: ([\d.]+)", l)
        if m: r["wavg"] = float(m.group(1))
        m = re.search(r"Avg:\s*(\d+) Max:\s*(\d+)", l)
        if m: r["wavg"], r["wmax"] = float(m.group(1)), float(m.group(2))
    for key in ("cyclic-idle", "cyclic-load"):
        rows = [re.search(r"C:\s*(\d+) Min:\s*(\d+) Act:\s*(\d+) Avg:\s*(\d+) Max:\s*(\d+)", l) for l in s.get(key, [])]
        rows = [m for m in rows if m]
        if rows:
            r[key + "-max"] = float(max(int(m.group(5)) for m in rows))
            tot = sum(int(m.group(1)) for m in rows)
            r[key + "-avg"] = sum(int(m.group(4)) * int(m.group(1)) for m in rows) / max(tot, 1)
    return r

c, l, rt = parse(f"{out}/cadence.txt"), parse(f"{out}/linux.txt"), parse(f"{out}/linux-rt.txt")
rows = [
    ("pipe, µs per switch (Cadence: 1 CPU)", "pipe1", "pipe1"),
    ("pipe, µs per switch (Cadence: 2 cores)", "pipe2", "pipe1"),
    ("hackbench -g 4 -l 50, s", "hackbench", "hackbench"),
    ("wakeup-latency avg, µs", "wavg", "wavg"),
    ("wakeup-latency max, µs", "wmax", "wmax"),
    ("cyclic idle avg, µs", "cyclic-idle-avg", "cyclic-idle-avg"),
    ("cyclic idle max, µs", "cyclic-idle-max", "cyclic-idle-max"),
    ("cyclic + hackbench avg, µs", "cyclic-load-avg", "cyclic-load-avg"),
    ("cyclic + hackbench max, µs", "cyclic-load-max", "cyclic-load-max"),
]
def f(v): return "n/a" if v is None else (f"{v:.3f}" if v < 10 else f"{v:.0f}")
def ratio(a, b): return "n/a" if a is None or not b else f"{a / b:.2f}"
print(f"Side by side with Linux, {datetime.date.today()} (QEMU TCG, -smp {smp}, -cpu max,vendor=GenuineIntel; "
      "times are emulated: compare the ratios)")
print()
print("| benchmark | Cadence | Linux 6.1 | Cadence/Linux | Linux 6.1 PREEMPT_RT | Cadence/RT |")
print("|---|---:|---:|---:|---:|---:|")
for name, ck, lk in rows:
    cv, lv, rv = c.get(ck), l.get(lk), rt.get(lk)
    print(f"| {name} | {f(cv)} | {f(lv)} | {ratio(cv, lv)} | {f(rv)} | {ratio(cv, rv)} |")
print()
print(f"raw outputs: {out}/cadence.txt, linux.txt, linux-rt.txt")
EOF
