#!/usr/bin/env python3
"""trace-gaps.py FILE [MIN_US...]: guest-wide silences in an ftrace text capture.

Prints, for each threshold (default 100, 250, 1000, 2000 us), how many gaps between
consecutive events of *any* CPU exceed it and their total length, then each CPU's longest
gap. Idle CPUs take the tick too, so a gap longer than the tick period on every CPU at once
is time the guest did not run (the host descheduled QEMU): the floor under `trace check rt`.
Usage: cadence-boot run ... --trace FILE --args 'run="...; trace dump" poweroff', then this.
"""
import re
import sys

EVENT = re.compile(r"\s*\S.*?\[(\d+)\]\s+\S+\s+([\d.]+):")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    limits = [float(x) for x in sys.argv[2:]] or [100, 250, 1000, 2000]
    events = []
    with open(sys.argv[1], errors="replace") as f:
        for line in f:
            m = EVENT.match(line)
            if m:
                events.append((float(m.group(2)), int(m.group(1))))
    if len(events) < 2:
        sys.exit("trace-gaps: fewer than two events")
    events.sort()
    span = events[-1][0] - events[0][0]
    gaps = [b[0] - a[0] for a, b in zip(events, events[1:])]
    print(f"events={len(events)} span_ms={span * 1e3:.1f}")
    for us in limits:
        big = [g for g in gaps if g > us * 1e-6]
        print(f"guest-wide gaps over {us:g} us: {len(big)}, total {sum(big) * 1e3:.1f} ms ({sum(big) * 100 / span:.0f}% of the span)")
    per_cpu = {}
    for t, cpu in events:
        per_cpu.setdefault(cpu, []).append(t)
    for cpu, ts in sorted(per_cpu.items()):
        longest = max((b - a for a, b in zip(ts, ts[1:])), default=0)
        print(f"cpu {cpu}: longest gap {longest * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
