#!/usr/bin/env bash
# `make compare-inkernel`: Cadence's in-kernel benchmark tasks (kernel threads: `bench pipe`,
# `bench hackbench`, `bench cyclic`, ...) beside Linux 6.1's programs. `make compare` (tools/compare.sh)
# is the like-for-like comparison (the same binaries as processes on both kernels); this table
# stays to follow the scheduler without the system-call layer.
# Side by side with Linux: runs the same benchmarks on Cadence and on the Linux peer
# (../shared/peer: Debian 6.1 generic and PREEMPT_RT) under the same QEMU flags (TCG,
# -smp $SMP, -cpu max,vendor=GenuineIntel), one after the other in this sitting, and prints one
# table with Cadence/Linux ratios (< 1 means Cadence is faster / has lower latency).
#
#   tools/compare-inkernel.sh            (make compare-inkernel)
#   SMP=4,sockets=1,cores=2,threads=2 PEER=/tmp/peer LOOPS=2000 tools/compare-inkernel.sh
#
# Benchmarks (kept short: a few seconds each):
#   pipe            Cadence `bench pipe` (2 tasks on 1 CPU, then on 2 CPUs of different cores) /
#                   Linux `pipetest N 0 0` (both on CPU 0) and `pipetest N 0 X` (X on another core)
#   hackbench       `hackbench -g 4 -l 50` (pipes, 160 tasks)
#   wakeup-latency  Cadence `bench wakeup-latency -d 3` (SCHED_OTHER, 1 ms period) /
#                   Linux `cyclictest -t1 -i1000` at SCHED_OTHER (the same measurement)
#   cyclic idle     `cyclictest -tN -a -p90 -i1000 -l$LOOPS` (N = CPUs), max/avg over the threads
#   cyclic load     the same while `hackbench -g 4` runs in the background
#   traced          (the first $TRACED sittings, default 1) `cyclictest -tN -a -p90 -i1000 -l1000`
#                   while `hackbench -g 4 -l 300` runs, with the scheduler events recorded: Cadence's
#                   tracer (exported over COM2) and Linux's tracefs (sched_switch, sched_wakeup,
#                   sched_wakeup_new, sched_migrate_task, written to a scratch virtio disk after
#                   the run, with every thread's affinity as `# cadence-affinity:` lines). Both
#                   traces go through the
#                   same host analysis: `cadence-boot trace report` (RT wakeup->switch p50/p99/max,
#                   switches per second) and `cadence-boot trace check rt` (violations per traced
#                   second). Traces are kept as $OUT/<side>-N.trace.
# SITTINGS=n (default 1) runs each side n times, alternating Cadence, Linux, Linux PREEMPT_RT,
# and reports the median and the min-max range of every number; ratios are ratios of medians.
# A side that produced no number for a benchmark fails the command, naming it.
# Raw outputs are kept in $OUT (default target/compare/), one file per side and sitting.
# The Cadence runs get no virtio disk unless DISK=img is given.
# Pictures (cadence-boot plot, SVG): $OUT/cyclic-idle.svg and cyclic-load.svg (the cyclictest -h
# histograms of every sitting, per kernel) and wakeup-switch.svg (RT wakeup->switch from the
# traces), each kernel one series, log-log, as the share of its samples per bin.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
SMP=${SMP:-4,sockets=1,cores=2,threads=2}
LOOPS=${LOOPS:-2000}
SITTINGS=${SITTINGS:-1}
TRACED=${TRACED:-1}
OUT=${OUT:-$root/target/compare-inkernel}
. "$root/tools/peer-env.sh"
peer_find || PEER_RUN=$root/../shared/peer/run.sh
[[ "$SITTINGS" =~ ^[1-9][0-9]*$ ]] || { echo "compare: SITTINGS must be a positive number, got '$SITTINGS'" >&2; exit 2; }
[[ "$TRACED" =~ ^[0-9]+$ ]] || { echo "compare: TRACED must be a number of sittings, got '$TRACED'" >&2; exit 2; }
mkdir -p "$OUT"
if [ ! -e "$PEER/initrd.gz" ]; then
  echo "compare: building the Linux peer into $PEER (once) ..." >&2
  bash "$(dirname "$PEER_RUN")/build.sh" >&2
fi

ncpus=${SMP%%,*}
# The cross-core pipe partner: with 2 threads per core CPUs 0 and 1 are siblings (QEMU numbers
# threads first), so CPU 2 is on the other core; otherwise CPU 1 is.
if [[ "$SMP" == *threads=2* ]]; then other=2; else other=1; fi
# The cyclic runs also print cyclictest's -h histogram (1 µs buckets up to HIST_US; Linux's
# rows of zeros are filtered out on the peer, as Cadence leaves them out: the console is slow).
HIST_US=${HIST_US:-20000}
cyc="-t$ncpus -p90 -i1000 -l$LOOPS -a -h $HIST_US"
nozero='awk '"'"'{ if ($1 ~ /^[0-9][0-9][0-9][0-9][0-9][0-9]$/) { s = 0; for (i = 2; i <= NF; i++) s += $i; if (s == 0) next } print }'"'"
cadence_cmds="echo @@pipe; bench pipe -l 5000; echo @@hackbench; bench hackbench -g 4 -l 50; echo @@wakeup; bench wakeup-latency -d 3; echo @@cyclic-idle; bench cyclic $cyc; echo @@cyclic-load; bench hackbench -g 4 -l 1000000 &; sleep 0.5; bench cyclic $cyc"
# The traced run (see the header). Cadence: hrtick, IPI, timer and core-switch events off (the
# analysis does not use them), 10000 events per CPU (the COM2 export is ~1,000 events/s under TCG).
cadence_traced="echo @@traced; trace events sched_hrtick_start off; trace events ipi_raise off; trace events hrtimer_expire_entry off; trace events sched_core_switch off; trace start -b 10000; bench hackbench -g 4 -l 300 &; sleep 0.3; bench cyclic -t$ncpus -p90 -i1000 -l1000 -a -q; trace stop"
# Linux: 400 KiB of tracefs buffer per CPU; affinities read while cyclictest runs. The text goes
# to a scratch virtio disk (/dev/vda), not the console: Debian's PREEMPT_RT kernel stops serving
# the serial IRQ under this load ("irq 4: nobody cared"), which cut its traces short before.
# Tracing stops from an RT shell the moment cyclictest ends: a SCHED_OTHER shell could wait
# seconds behind hackbench, and the rings would fill with hackbench alone (it happened).
linux_traced='echo @@traced; T=/sys/kernel/tracing; echo 0 > $T/tracing_on; echo > $T/trace; echo 400 > $T/buffer_size_kb; for e in sched_switch sched_wakeup sched_wakeup_new sched_migrate_task; do echo 1 > $T/events/sched/$e/enable; done; echo 1 > $T/tracing_on; hackbench -p -g 4 -l 1000000 >/dev/null 2>&1 & sleep 0.3; (sleep 0.5; for t in /proc/[0-9]*/task/[0-9]*; do m=$(awk "/^Cpus_allowed:/{print \$2}" $t/status 2>/dev/null); [ -n "$m" ] && echo "# cadence-affinity: pid=${t##*/} mask=0x$m"; done > /tmp/aff) & a=$!; chrt -f 95 sh -c "cyclictest -m -q '"-t$ncpus -p90 -i1000 -l1000 -a"'; echo 0 > $T/tracing_on"; killall hackbench 2>/dev/null; wait $a; (cat /tmp/aff; cat $T/trace) > /dev/vda; sync; echo @@trace-dumped'
linux_cmds="echo @@pipe; pipetest 5000 0 0; pipetest 5000 0 $other; echo @@hackbench; hackbench -p -g 4 -l 50; echo @@wakeup; cyclictest -t1 -i1000 -l3000 -q; echo @@cyclic-idle; cyclictest -m -q $cyc | $nozero; echo @@cyclic-load; hackbench -p -g 4 -l 1000000 >/dev/null 2>&1 & sleep 0.5; cyclictest -m -q $cyc | $nozero; killall hackbench 2>/dev/null; true"

# A traced Linux run writes its trace to a scratch disk, FILE.img; cut_trace keeps the text
# (without the image's zero fill) as FILE.trace.
new_disk() { rm -f "$1.img" && truncate -s 64M "$1.img"; }
cut_trace() { if [[ -f "$1.img" ]]; then tr -d '\0' < "$1.img" > "$1.trace"; rm -f "$1.img"; fi; }
rm -f "$OUT"/*.trace
for ((i = 1; i <= SITTINGS; i++)); do
  c_cmds=$cadence_cmds; l_cmds=$linux_cmds; trace_arg=()
  if ((i <= TRACED)); then
    # Before the background hackbench of cyclic-load, which runs until poweroff.
    c_cmds=${cadence_cmds/echo @@cyclic-load;/$cadence_traced; echo @@cyclic-load;}
    l_cmds="$linux_cmds; $linux_traced"
    trace_arg=(TRACE="$OUT/cadence-$i.trace")
  fi
  echo "compare: sitting $i/$SITTINGS: Cadence (smp $SMP) ..." >&2
  make -s -C "$root" run DISK="${DISK:-none}" SMP="$SMP" TIMEOUT=900 "${trace_arg[@]}" ARGS="run=\"$c_cmds\" poweroff" 2>&1 | tr -d '\r' > "$OUT/cadence-$i.txt" \
    || echo "compare: the Cadence run of sitting $i failed (see $OUT/cadence-$i.txt)" >&2
  echo "compare: sitting $i/$SITTINGS: Linux generic ..." >&2
  traced=$((i <= TRACED)); disk=(); disk_rt=()
  if ((traced)); then
    new_disk "$OUT/linux-$i" && disk=(--disk "$OUT/linux-$i.img")
    new_disk "$OUT/linux-rt-$i" && disk_rt=(--disk "$OUT/linux-rt-$i.img")
  fi
  "$PEER_RUN" --smp "$SMP" "${disk[@]}" "$l_cmds" > "$OUT/linux-$i.txt" 2>&1 \
    || echo "compare: the Linux run of sitting $i failed (see $OUT/linux-$i.txt)" >&2
  echo "compare: sitting $i/$SITTINGS: Linux PREEMPT_RT ..." >&2
  "$PEER_RUN" --rt --smp "$SMP" "${disk_rt[@]}" "$l_cmds" > "$OUT/linux-rt-$i.txt" 2>&1 \
    || echo "compare: the Linux PREEMPT_RT run of sitting $i failed (see $OUT/linux-rt-$i.txt)" >&2
  if ((traced)); then cut_trace "$OUT/linux-$i"; cut_trace "$OUT/linux-rt-$i"; fi
done

python3 - "$OUT" "$SMP" "$SITTINGS" "$TRACED" "$root/target/release/cadence-boot" <<'EOF'
import os, re, subprocess, sys, datetime, statistics
out, smp, sittings, traced, tool = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
traced = min(traced, sittings)

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
        else:
            # cyclictest -h prints no T: lines: the histogram's footer has the same numbers
            # (cycles = binned samples + overflows).
            foot = {}
            for l in s.get(key, []):
                m = re.match(r"# (Total|Avg Latencies|Max Latencies|Histogram Overflows):((?: \d+)+)\s*$", l.strip())
                if m: foot[m.group(1)] = [int(x) for x in m.group(2).split()]
            if all(k in foot for k in ("Total", "Avg Latencies", "Max Latencies")):
                over = foot.get("Histogram Overflows", [0] * len(foot["Total"]))
                cycles = [t + o for t, o in zip(foot["Total"], over)]
                r[key + "-max"] = float(max(foot["Max Latencies"]))
                r[key + "-avg"] = sum(a * c for a, c in zip(foot["Avg Latencies"], cycles)) / max(sum(cycles), 1)
    trace = path[:-len(".txt")] + ".trace"
    if os.path.exists(trace) and os.path.getsize(trace) > 0:
        # The same host analysis for both kernels.
        rep = subprocess.run([tool, "trace", "report", trace], capture_output=True, text=True).stdout
        m = re.search(r"wakeup latency percentiles \(rt\): p50_ns=(\d+) p99_ns=(\d+) max_ns=(\d+)", rep)
        if m and int(m.group(3)) > 0:
            r["t-p50"], r["t-p99"], r["t-max"] = (int(m.group(k)) / 1000 for k in (1, 2, 3))
        m = re.search(r"switches: \d+ in [\d.]+ ms \((\d+) per second\)", rep)
        if m: r["t-sw"] = float(m.group(1))
        chk = subprocess.run([tool, "trace", "check", "rt", trace], capture_output=True, text=True).stdout
        m = re.search(r"rt check: violations=(\d+) checked_ns=(\d+)", chk)
        if m and int(m.group(2)) > 0:
            r["t-viol"] = int(m.group(1)) / (int(m.group(2)) / 1e9)
    return r

sides = {"Cadence": "cadence", "Linux 6.1": "linux", "Linux 6.1 PREEMPT_RT": "linux-rt"}
runs = {name: [parse(f"{out}/{stem}-{i}.txt") for i in range(1, sittings + 1)] for name, stem in sides.items()}

# Pictures: the cyclic histograms (every sitting summed per kernel) and the traced RT
# wakeup->switch distributions, drawn by `cadence-boot plot` into $OUT/*.svg.
def write_hists(stem, i):
    s, files = sections(f"{out}/{stem}-{i}.txt"), {}
    for key in ("cyclic-idle", "cyclic-load"):
        rows = [l for l in s.get(key, []) if l.startswith("# Histogram") or re.match(r"^\d{6} ", l)]
        if any(re.match(r"^\d{6} ", l) for l in rows):
            path = f"{out}/{stem}-{i}-{key}.hist"
            with open(path, "w") as fh:
                fh.write("\n".join(rows) + "\n")
            files[key] = path
    return files
pictures, plot_errors = [], []
hist_files = {name: [write_hists(stem, i) for i in range(1, sittings + 1)] for name, stem in sides.items()}
for key in ("cyclic-idle", "cyclic-load"):
    specs = [f"{name}=" + ",".join(h[key] for h in hs if key in h) for name, hs in hist_files.items() if any(key in h for h in hs)]
    if len(specs) < len(sides):
        plot_errors.append(f"{key}: a kernel printed no histogram")
        continue
    svg = f"{out}/{key}.svg"
    p = subprocess.run([tool, "plot", "cyclic", svg] + specs, capture_output=True, text=True)
    (pictures if p.returncode == 0 else plot_errors).append(svg if p.returncode == 0 else p.stderr.strip())
if traced:
    specs = []
    for name, stem in sides.items():
        traces = [f"{out}/{stem}-{i}.trace" for i in range(1, traced + 1) if os.path.exists(f"{out}/{stem}-{i}.trace") and os.path.getsize(f"{out}/{stem}-{i}.trace") > 0]
        if traces:
            specs.append(f"{name}=" + ",".join(traces))
    svg = f"{out}/wakeup-switch.svg"
    p = subprocess.run([tool, "plot", "wakeup", svg] + specs, capture_output=True, text=True)
    (pictures if p.returncode == 0 else plot_errors).append(svg if p.returncode == 0 else p.stderr.strip())
rows = [
    ("pipe same CPU, µs per switch", "pipe1"),
    ("pipe two cores, µs per switch", "pipe2"),
    ("hackbench -g 4 -l 50, s", "hackbench"),
    ("wakeup-latency avg, µs", "wavg"),
    ("wakeup-latency max, µs", "wmax"),
    ("cyclic idle avg, µs", "cyclic-idle-avg"),
    ("cyclic idle max, µs", "cyclic-idle-max"),
    ("cyclic + hackbench avg, µs", "cyclic-load-avg"),
    ("cyclic + hackbench max, µs", "cyclic-load-max"),
]
trace_rows = [
    ("traced: RT wakeup→switch p50, µs", "t-p50"),
    ("traced: RT wakeup→switch p99, µs", "t-p99"),
    ("traced: RT wakeup→switch max, µs", "t-max"),
    ("traced: rt check violations per s", "t-viol"),
    ("traced: switches per s", "t-sw"),
]
missing = [f"{name} sitting {i}: {label}"
           for name, rs in runs.items() for i, r in enumerate(rs, 1)
           for label, key in rows + (trace_rows if i <= traced else []) if r.get(key) is None]
if missing:
    for m in missing:
        print(f"compare: no number for {m}", file=sys.stderr)
    print(f"compare: FAILED: {len(missing)} benchmark results missing (raw outputs in {out})", file=sys.stderr)
    sys.exit(1)
def f(v): return f"{v:.3f}" if v < 10 else f"{v:.0f}"
def cell(vals):
    med = statistics.median(vals)
    return f(med) if len(vals) == 1 else f"{f(med)} ({f(min(vals))}–{f(max(vals))})"
def ratio(a, b): return "n/a" if not b else f"{a / b:.2f}"
print(f"In-kernel benchmark tasks beside Linux's programs, {datetime.date.today()} (QEMU TCG, -smp {smp}, -cpu max,vendor=GenuineIntel; "
      f"{sittings} sitting(s), median (min–max); times are emulated: compare the ratios)")
print()
print("| benchmark | Cadence | Linux 6.1 | Cadence/Linux | Linux 6.1 PREEMPT_RT | Cadence/RT |")
print("|---|---:|---:|---:|---:|---:|")
for label, key in rows + (trace_rows if traced else []):
    vals = {name: [r[key] for r in rs if key in r] for name, rs in runs.items()}
    med = {name: statistics.median(v) for name, v in vals.items()}
    print(f"| {label} | {cell(vals['Cadence'])} | {cell(vals['Linux 6.1'])} | {ratio(med['Cadence'], med['Linux 6.1'])} "
          f"| {cell(vals['Linux 6.1 PREEMPT_RT'])} | {ratio(med['Cadence'], med['Linux 6.1 PREEMPT_RT'])} |")
print()
print("What differs: Cadence's benchmark tasks are kernel threads (no system calls, no address-space "
      "switches), Linux's are processes. That favours Cadence in the pipe and hackbench rows (each "
      "round trip is system calls and switches); the cyclic and wakeup-latency rows measure "
      "timer-to-task latency, where both sides do comparable work per wakeup.")
if traced:
    print()
    print(f"The traced rows come from sitting(s) 1..{traced}, a separate run (cyclictest -l1000 under "
          "hackbench -g 4 -l 300) with the scheduler events recorded, through the same host analysis "
          "(cadence-boot trace report / trace check rt, bound 100 µs). Linux's RT tasks include its "
          "per-CPU kernel threads (PREEMPT_RT: ktimers, rcuc, irq threads); Linux emits sched_wakeup "
          "on the target CPU at enqueue, as Cadence does.")
print(f"raw outputs: {out}/cadence-N.txt, linux-N.txt, linux-rt-N.txt (N = 1..{sittings}), traces <side>-N.trace")
if pictures:
    print("pictures: " + ", ".join(pictures))
if plot_errors:
    for e in plot_errors:
        print(f"compare: plot failed: {e}", file=sys.stderr)
    sys.exit(1)
EOF
