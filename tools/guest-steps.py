#!/usr/bin/env python3
"""Counts the guest's instructions per function over one stretch of execution, by single-
stepping it through QEMU's gdbstub: exact where `guest-profile.py` samples.

    tools/guest-steps.py --break 'PipeWriter>::write' [--passes 2] [--after S] [--kernel ELF]

Start QEMU with one vCPU and its gdbstub (`CADENCE_QEMU=tools/qemu-gdb.sh`, plus
`-icount shift=0` for a deterministic run), with a kernel built with symbols
(`CARGO_PROFILE_RELEASE_STRIP=none`). After `--after` seconds this stops the machine, runs
to the first function whose name ends with the `--break` text, then single-steps until
execution has entered it `--passes` more times, and prints the instructions executed per
function, most first. QEMU's single-step keeps interrupts and timers off, so the stretch is
the code path alone. Two runs of the same stretch (say, a pipe round trip in the root group
and in a nested group) compared line by line give the exact cost of a change of path.
Stepping costs ~0.5 ms an instruction: keep the stretch to tens of thousands.
"""
import argparse
import bisect
import collections
import importlib.util
import os
import time

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("guest_profile", os.path.join(here, "guest-profile.py"))
gp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-p", "--port", type=int, default=1234)
    ap.add_argument("--after", type=float, default=5, help="seconds to let the guest run first")
    ap.add_argument("--kernel", default="kernel/target/x86_64-unknown-none/release/cadence-kernel")
    ap.add_argument("--break", dest="brk", required=True, help="end of the name of the function that delimits the stretch")
    ap.add_argument("--passes", type=int, default=2, help="entries into that function the stretch spans")
    ap.add_argument("--max", type=int, default=200000, help="give up after this many instructions")
    a = ap.parse_args()

    addrs, names = gp.symbols(a.kernel)
    base = 0xFFFF_8000_0000_0000 if addrs and addrs[-1] < 1 << 47 else 0
    found = [x for x, n in zip(addrs, names) if n.endswith(a.brk)]
    if not found:
        raise SystemExit(f"guest-steps: no function ends with '{a.brk}' in {a.kernel}")
    target = found[0] + base

    def name_of(rip):
        i = bisect.bisect_right(addrs, rip - base) - 1
        return names[i] if i >= 0 and rip >= base else hex(rip)

    def wait_stop(g):
        while g._read_packet()[:1] not in ("T", "S"):
            pass

    g = gp.Gdb(a.port, 60)
    time.sleep(a.after)
    g.interrupt()
    g.cmd("Z0,%x,1" % target)
    g.send("c")
    wait_stop(g)
    g.cmd("z0,%x,1" % target)
    counts = collections.Counter()
    entries, n = 0, 0
    while entries <= a.passes and n < a.max:
        # `g`: rax..r15 (16 x 8 bytes), then rip, little-endian hex.
        rip = gp.reg(g.cmd("g")[256:272])
        if rip == target:
            entries += 1
            if entries > a.passes:
                break
        counts[name_of(rip)] += 1
        g.send("s")
        wait_stop(g)
        n += 1
    print(f"guest-steps: {n} instructions from one entry into ...{a.brk} to {a.passes} more"
          + ("" if entries > a.passes else f" (stopped at --max {a.max})"))
    for name, c in counts.most_common():
        print(f"{c:7d} {name}")
    g.send("c")


if __name__ == "__main__":
    main()
