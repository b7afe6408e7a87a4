#!/usr/bin/env python3
"""Compares what Linux 6.12 and Cadence show of one machine (the directories that
tools/topology-linux.sh and tools/topology-cadence.sh write), file by file:

  tools/topology-compare.py LINUX_DIR CADENCE_DIR [--name NAME] [--header]

Prints one Markdown table row: the topology, its CPUs, and for each view `equal` or the
number of lines that differ:
  domains  /proc/schedstat's domain lines: every CPU's domains and their spans (counters
           ignored: Cadence keeps none yet);
  flags    debugfs sched/domains/cpuN/domainM/{name,flags};
  groups   the sched_verbose log: every CPU's domains with their groups and balance masks
           (Linux's ` cap=N`, the groups' runtime capacity, removed);
  nodes    /sys/devices/system/node: node lists, CPUs per node, distances;
  lscpu    lscpu's CPU, thread, core, socket and NUMA lines;
  numactl  `numactl --hardware`'s node CPU lists and distance table (sizes and free memory
           differ by what each kernel uses itself, and are left out);
  touch    first touch: which node's free memory paid for 16 MiB touched from the first CPU
           of each node (tests/user/numa-touch.c's lines).
Differences are printed on stderr (the first 5 per view). Exit status 1 if any view differs.
"""
import re
import sys
from pathlib import Path


def lines(d: Path, name: str):
    p = d / name
    return p.read_text(errors="replace").splitlines() if p.exists() else None


def domains(ls):
    """schedstat: (cpu, 'domainK MASK') pairs."""
    out, cpu = [], None
    for l in ls:
        w = l.split()
        if w and w[0].startswith("cpu"):
            cpu = w[0]
        elif w and w[0].startswith("domain") and len(w) >= 2:
            out.append(f"{cpu} {w[0]} {w[1]}")
    return out


def groups(ls):
    return [re.sub(r" cap=\d+", "", l.rstrip()) for l in ls if l.strip()]


def numactl(ls):
    keep = []
    for l in ls:
        if re.match(r"available:|node \d+ cpus:|node distances:|node( +\d+)+ *$| *\d+:", l):
            keep.append(" ".join(l.split()))
    return keep


LSCPU_KEYS = ("CPU(s):", "On-line CPU(s) list:", "Thread(s) per core:", "Core(s) per socket:", "Socket(s):", "NUMA node")


def lscpu(ls):
    """lscpu's topology lines (counts, sockets, NUMA nodes), spacing normalised."""
    return [" ".join(l.split()) for l in ls if l.strip().startswith(LSCPU_KEYS)]


def compare(a, b):
    if a is None or b is None:
        return "missing", []
    if a == b:
        return "equal", []
    diffs = []
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else "<none>"
        y = b[i] if i < len(b) else "<none>"
        if x != y:
            diffs.append(f"line {i + 1}: linux {x!r} cadence {y!r}")
    return f"{len(diffs)} differ", diffs


def main():
    argv = sys.argv[1:]
    args, i = [], 0
    while i < len(argv):
        if argv[i] == "--name":
            i += 2
            continue
        if not argv[i].startswith("--"):
            args.append(argv[i])
        i += 1
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    linux, cadence = Path(args[0]), Path(args[1])
    name = sys.argv[sys.argv.index("--name") + 1] if "--name" in sys.argv else linux.name
    if "--header" in sys.argv:
        print("| topology | CPUs | domains | flags | groups | nodes | lscpu | numactl | touch |")
        print("|---|---|---|---|---|---|---|---|---|")
    # (view, file, what of it is compared)
    views = [
        ("domains", "schedstat.txt", domains),
        ("flags", "sched-domains.txt", list),
        ("groups", "sched-domains-dmesg.txt", groups),
        ("nodes", "node.txt", list),
        ("lscpu", "lscpu.txt", lscpu),
        ("numactl", "numactl-hardware.txt", numactl),
        ("touch", "numa-touch.txt", list),
    ]
    cells, bad = [], False
    def view_of(d, file, keep):
        ls = lines(d, file)
        return None if ls is None else keep(ls)

    for view, file, keep in views:
        verdict, diffs = compare(view_of(linux, file, keep), view_of(cadence, file, keep))
        cells.append(verdict)
        if verdict != "equal":
            bad = True
            for d in diffs[:5]:
                print(f"{name} {view}: {d}", file=sys.stderr)
    sched = lines(linux, "schedstat.txt") or []
    ncpus = sum(1 for l in sched if re.match(r"cpu\d+ ", l))
    print(f"| {name} | {ncpus} | " + " | ".join(cells) + " |")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
