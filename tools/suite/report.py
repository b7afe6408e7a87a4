#!/usr/bin/env python3
"""The table of `make suite` (tools/suite.sh) from the guests' outputs.

    report.py OUT SMP

Reads OUT/cadence.txt, OUT/linux.txt and OUT/linux-rt.txt: what tools/suite/guest.sh printed,
each program's output between `@@run NAME COMMAND` and `@@rc NAME STATUS`. Prints one markdown
row per program with each kernel's verdict and figures, the command lines, and the issue's
target (every verdict that passes on PREEMPT_RT passes on Cadence). The rules for pass are in
tools/suite.sh's header and docs/guide/benchmarks.md.

Exits 1, naming the program and the kernel, when a program printed nothing parseable: no
summary and no line at all, or no `@@rc` (the kernel stopped before the program ended).
"""
import os
import re
import sys

out, smp = sys.argv[1], sys.argv[2]
SIDES = (("cadence", "Cadence"), ("linux", "Linux"), ("linux-rt", "Linux PREEMPT_RT"))
RTT = ("deadline_test", "cyclicdeadline", "signaltest", "ptsematest", "sigwaittest", "pmqtest",
       "svsematest", "oslat")
# What each row's figures are.
FIGURES = {
    "deadline_test": "missed deadlines / missed periods / periods, all tasks; max_time µs",
    "cyclicdeadline": "max / avg µs (worst thread), cycles",
    "signaltest": "max / avg µs (worst thread), cycles",
    "ptsematest": "max / avg µs (worst pair)",
    "sigwaittest": "max / avg µs (worst pair)",
    "pmqtest": "max / avg µs (worst pair)",
    "svsematest": "max / avg µs (worst pair)",
    "oslat": "max / avg µs (worst CPU)",
}
RTAPP_FIGURES = "timed phases missed (slack < 0) / timed; wu_lat max µs; logs"
# A line that reads as the reason a program stopped.
ERROR_RE = re.compile(r"error|fail|could not|cannot|can't|unable|not implemented|no such|invalid|"
                      r"too short|denied|not supported|crit|usage|ENOSYS", re.I)


def parse(path):
    """{name: {"cmd": str, "lines": [...], "rc": int or None}}, the order, the uname, the CPU
    count the guest saw, and the kernel's last lines when it stopped before @@end."""
    runs, order, uname, cur, cpus, ended, tail = {}, [], None, None, None, False, []
    if not os.path.exists(path):
        return runs, order, uname, cpus, ["(no output file)"]
    for raw in open(path, errors="replace"):
        line = raw.rstrip("\n").rstrip("\r")
        m = re.match(r"^@@uname (\S+)", line)
        if m:
            uname = m.group(1)
            continue
        m = re.match(r"^@@ncpus (\d+)", line)
        if m:
            cpus = int(m.group(1))
            continue
        if line == "@@end":
            ended = True
        tail = (tail + [line])[-3:]
        m = re.match(r"^@@run (\S+) (.*)$", line)
        if m:
            cur = m.group(1)
            runs[cur] = {"cmd": m.group(2), "lines": [], "rc": None, "rtapp": None}
            order.append(cur)
            continue
        m = re.match(r"^@@rc (\S+) (-?\d+)", line)
        if m and m.group(1) in runs:
            runs[m.group(1)]["rc"] = int(m.group(2))
            cur = None
            continue
        m = re.match(r"^@@rtapp (.*)$", line)
        if m and cur:
            runs[cur]["rtapp"] = dict(kv.split("=", 1) for kv in m.group(1).split())
            continue
        if line.startswith("@@"):
            cur = None
            continue
        if cur:
            runs[cur]["lines"].append(line)
    return runs, order, uname, cpus, ([] if ended else tail)


def t_lines(lines):
    """cyclictest-style `T: n (tid) ... C: n Min: n Act: n Avg: n Max: n` lines."""
    res = []
    for l in lines:
        m = re.match(r"^T:\s*(\d+)\s.*C:\s*(\d+)\s+Min:\s*(-?\d+)\s+Act:\s*-?\d+\s+Avg:\s*(-?\d+)\s+Max:\s*(-?\d+)", l)
        if m:
            res.append(tuple(int(x) for x in m.groups()))
    return res


def pair_lines(lines):
    """`#1 -> #0, Min n, Cur n, Avg n, Max n` lines; (not yet ready) or Min -1: unmeasured."""
    res = []
    for l in lines:
        m = re.match(r"^#(\d+) -> #(\d+), Min\s+(-?\d+), Cur\s+-?\d+, Avg\s+(-?\d+), Max\s+(-?\d+)", l)
        if m:
            a, b, mn, avg, mx = (int(x) for x in m.groups())
            res.append((a, b, mn, avg, mx, mn >= 0))
        elif re.match(r"^#\d+ -> #\d+ \(not yet ready\)", l):
            res.append((0, 0, -1, 0, 0, False))
    return res


def reason(r):
    """The program's own line saying why it stopped, else its last line."""
    lines = [l.strip() for l in r["lines"] if l.strip()]
    for l in lines:
        if ERROR_RE.search(l):
            return l
    return lines[-1] if lines else ""


def judge(name, r, n):
    """(verdict: True/False/None (unparseable), figures text)."""
    if r is None:
        return None, "not run (the kernel stopped before it)"
    if r["rc"] is None:
        return None, "no exit status (the kernel stopped while it ran)"
    rc = r["rc"]
    lines = r["lines"]
    figs, ok = None, False
    if name == "deadline_test":
        blocks, miss_d, miss_p, periods, maxt = 0, 0, 0, 0, 0
        for l in lines:
            m = re.match(r"^missed deadlines\s*=\s*(\d+)", l)
            if m:
                blocks += 1
                miss_d += int(m.group(1))
            m = re.match(r"^missed periods\s*=\s*(\d+)", l)
            if m:
                miss_p += int(m.group(1))
            m = re.match(r"^nr_periods\s*:\s*(\d+)", l)
            if m:
                periods += int(m.group(1))
            m = re.match(r"^max_time:\s*(\d+)us", l)
            if m:
                maxt = max(maxt, int(m.group(1)))
        if blocks:
            figs = f"{miss_d} / {miss_p} / {periods}; {maxt}"
            ok = rc == 0 and blocks == n and miss_d == 0
            if blocks != n:
                figs += f" ({blocks} of {n} tasks)"
    elif name in ("cyclicdeadline", "signaltest"):
        t = t_lines(lines)
        if t:
            worst = max(t, key=lambda x: x[4])
            figs = f"{worst[4]} / {max(x[3] for x in t)}; C {min(x[1] for x in t)}–{max(x[1] for x in t)}"
            ok = rc == 0 and len(t) == n and all(x[1] > 0 for x in t)
            if len(t) != n:
                figs += f" ({len(t)} of {n} threads)"
            elif not all(x[1] > 0 for x in t):
                figs += " (a thread without cycles)"
    elif name in ("ptsematest", "sigwaittest", "pmqtest", "svsematest"):
        p = pair_lines(lines)
        if p:
            measured = [x for x in p if x[5]]
            if measured:
                figs = f"{max(x[4] for x in measured)} / {max(x[3] for x in measured)}"
            else:
                figs = "no pair measured"
            ok = rc == 0 and len(p) == n and len(measured) == n
            if len(measured) != n:
                figs += f" ({len(measured)} of {n} pairs measured)"
    elif name == "oslat":
        rows = {}
        for l in lines:
            m = re.match(r"^\s*(Minimum|Average|Maximum):\s+([-\d.\s]+)\(us\)", l)
            if m:
                rows[m.group(1)] = [float(x) for x in m.group(2).split()]
        if "Maximum" in rows:
            mx = rows["Maximum"]
            avg = rows.get("Average", [0])
            figs = f"{int(max(mx))} / {max(avg):.1f}"
            ok = rc == 0 and len(mx) > 0
    elif name.startswith("rt-app:"):
        a = r.get("rtapp")
        if a is not None:
            logs = int(a.get("logs", 0))
            figs = f"{a.get('missed', 0)} / {a.get('timed', 0)}; {a.get('wu_max', 0)}; {logs} logs"
            ok = rc == 0
    if figs is None:
        why = reason(r)
        if not why:
            return None, f"exit {rc}, printed nothing"
        return False, f"exit {rc}: `{why}`"
    if rc != 0:
        why = reason(r)
        figs = f"exit {rc}{': `' + why + '`' if why else ''}; {figs}"
    return ok, figs


data = {side: parse(os.path.join(out, f"{side}.txt")) for side, _ in SIDES}
ncpus = int(re.match(r"\d+", smp).group(0))
names = list(RTT)
for side, _ in SIDES:
    for nm in data[side][1]:
        if nm not in names:
            names.append(nm)
heads = []
for side, label in SIDES:
    uname = data[side][2]
    heads.append(f"Linux {uname}" if side != "cadence" and uname else label)

print(f"| program | figures | {' | '.join(heads)} |")
print("|---|---|" + "---|" * len(SIDES))
errors, verdicts, notes, rtapp_seen = [], {}, [], False
for side, label in SIDES:
    cpus, tail = data[side][3], data[side][4]
    if cpus is not None and cpus != ncpus:
        notes.append(f"{label} saw {cpus} CPUs, not the {ncpus} of -smp {smp}.")
    if tail:
        notes.append(f"{label} stopped before the script's end; its last lines: "
                     + " / ".join(f"`{l.strip()}`" for l in tail if l.strip()))
for nm in names:
    cells = []
    for side, label in SIDES:
        runs = data[side][0]
        ok, figs = judge(nm, runs.get(nm), ncpus)
        verdicts[(nm, side)] = ok
        if ok is None:
            errors.append(f"suite: {nm} on {label} printed nothing parseable: {figs} (see {out}/{side}.txt)")
            cells.append(f"**no result**: {figs}")
        else:
            cells.append(f"{'pass' if ok else '**fail**'}: {figs}")
    fig = FIGURES.get(nm, "")
    if nm.startswith("rt-app:"):
        fig = "as above" if rtapp_seen else RTAPP_FIGURES
        rtapp_seen = True
    print(f"| `{nm}` | {fig} | {' | '.join(cells)} |")

print()
for n in notes:
    print(n)
    print()
passed = {side: sum(1 for nm in names if verdicts[(nm, side)]) for side, _ in SIDES}
print("Passed: " + ", ".join(f"{label} {passed[side]} of {len(names)}" for side, label in SIDES) + ".")
worse = [nm for nm in names if verdicts[(nm, "linux-rt")] and not verdicts[(nm, "cadence")]]
print("Target (every verdict that passes on PREEMPT_RT passes on Cadence): "
      + ("met." if not worse else "not met: " + ", ".join(f"`{nm}`" for nm in worse) + "."))
dl = verdicts.get(("deadline_test", "cadence"))
print(f"deadline_test on Cadence (missed deadlines 0 within admission): {'met' if dl else 'not met'}.")
print()
print("Command lines (the same on every kernel):")
print()
cmds = {}
for side, _ in SIDES:
    for nm, r in data[side][0].items():
        cmds.setdefault(nm, r["cmd"])
for nm in names:
    if nm in cmds and not nm.startswith("rt-app:"):
        print(f"    {cmds[nm]}")
rtapps = [nm for nm in names if nm.startswith("rt-app:") and nm in cmds]
if rtapps:
    print(f"    rt-app /rtj-NAME.json    ({len(rtapps)} examples)")
for e in errors:
    print(e, file=sys.stderr)
sys.exit(1 if errors else 0)
