#!/usr/bin/env python3
"""A sampling profiler of the guest, through QEMU's gdbstub (works under TCG, which emulates no
performance counters, and sees code that runs with interrupts off, which no guest timer can).

    tools/guest-profile.py [-p PORT] [-r HZ] [-d SECS] [--after SECS] [--kernel ELF] [--lines]
                           [--callers SUBSTR]

Start QEMU with `-gdb tcp::PORT` (for `make run`: CADENCE_QEMU=tools/qemu-gdb.sh, which adds
`-gdb tcp::$GDB_PORT`, default 1234), then run this: every 1/HZ s it stops the machine
(gdbstub `^C`), reads each vCPU's `rip` and `eflags`, and lets it go on (`c`). The report
lists, for all vCPUs together, the functions with the most samples, split into samples with
interrupts on and off (`eflags.IF`), then the same per source line with `--lines` (needs a
kernel built with line tables:
`CARGO_PROFILE_RELEASE_DEBUG=line-tables-only CARGO_PROFILE_RELEASE_STRIP=none make kernel`).

Stopping the machine costs host time (~0.2 ms a sample) and the guest's clock runs on
meanwhile, so use this for *where* guest time goes, never for latency figures.
"""
import argparse
import bisect
import collections
import socket
import subprocess
import sys
import time


class Gdb:
    def __init__(self, port, wait_s):
        deadline = time.time() + wait_s
        while True:
            try:
                self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
                # Many tiny packets, each waiting for an answer: no Nagle delays.
                self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                break
            except OSError:
                if time.time() > deadline:
                    sys.exit(f"guest-profile: no gdbstub on port {port} after {wait_s} s")
                time.sleep(0.1)
        self.buf = b""
        # Acknowledged mode throughout: QEMU 7.2 ignores QStartNoAckMode before qSupported.
        self.ack = True
        # QEMU stops the machine when a debugger attaches: let it run again.
        self.send("?")
        self._read_packet()
        self.send("c")

    def _read_packet(self):
        while True:
            while b"$" not in self.buf or b"#" not in self.buf[self.buf.index(b"$"):]:
                chunk = self.s.recv(65536)
                if not chunk:
                    raise EOFError
                self.buf += chunk
            start = self.buf.index(b"$")
            end = self.buf.index(b"#", start)
            if len(self.buf) < end + 3:
                chunk = self.s.recv(65536)
                if not chunk:
                    raise EOFError
                self.buf += chunk
                continue
            data = self.buf[start + 1:end]
            self.buf = self.buf[end + 3:]
            if self.ack:
                self.s.sendall(b"+")
            return data.decode("latin-1")

    def send(self, data):
        pkt = data.encode("latin-1")
        self.s.sendall(b"$" + pkt + b"#%02x" % (sum(pkt) % 256))

    def cmd(self, data):
        """Sends a command and returns its reply, skipping stop replies (QEMU may send a
        second one after an interrupt). Not for commands whose reply is a stop reply."""
        self.send(data)
        while True:
            r = self._read_packet()
            if r[:1] not in ("T", "S"):
                return r

    def interrupt(self):
        self.s.sendall(b"\x03")
        while True:
            r = self._read_packet()
            if r[:1] in ("T", "S"):
                return r

    def threads(self):
        out = []
        r = self.cmd("qfThreadInfo")
        while r.startswith("m"):
            out += r[1:].split(",")
            r = self.cmd("qsThreadInfo")
        return out


def reg(hexle):
    return int.from_bytes(bytes.fromhex(hexle), "little")


def symbols(elf):
    out = subprocess.run(["nm", "-C", "--defined-only", elf], capture_output=True, text=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] in "tTwW":
            syms.append((int(parts[0], 16), parts[2]))
    syms.sort()
    return [a for a, _ in syms], [n for _, n in syms]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-p", "--port", type=int, default=1234)
    ap.add_argument("-r", "--rate", type=float, default=200, help="samples per second")
    ap.add_argument("-d", "--duration", type=float, default=5)
    ap.add_argument("--after", type=float, default=0, help="wait this long after connecting")
    ap.add_argument("--kernel", default="kernel/target/x86_64-unknown-none/release/cadence-kernel")
    ap.add_argument("--lines", action="store_true", help="also by source line (addr2line)")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--callers", metavar="SUBSTR",
                    help="for samples in functions whose name contains SUBSTR, also read the top of "
                         "the stack and report the callers found there (return addresses into "
                         "kernel text, a heuristic: identical generic code such as lock spins is "
                         "folded under one symbol, and this tells whose lock it was)")
    a = ap.parse_args()

    g = Gdb(a.port, 60)
    time.sleep(a.after)
    addrs, names = symbols(a.kernel)
    # The kernel is position-independent and linked at 0; the bootloader maps it at the base
    # of the higher half (its dynamic range starts there): symbol = rip - base.
    base = 0xFFFF_8000_0000_0000 if addrs and addrs[-1] < 1 << 47 else 0

    def name_of(rip):
        if rip < base:
            return "(below the kernel: bootloader or firmware)"
        i = bisect.bisect_right(addrs, rip - base) - 1
        return names[i] if i >= 0 else hex(rip)

    samples = collections.Counter()  # (rip, irqs_off) -> n
    stacks = collections.Counter()  # (caller names) -> n, for --callers
    text_end = addrs[-1] if addrs else 0
    per_cpu = collections.Counter()
    threads = None
    end = time.time() + a.duration
    n = 0
    try:
        while time.time() < end:
            g.interrupt()
            if threads is None:
                threads = g.threads()
            for i, t in enumerate(threads):
                g.cmd("Hg" + t)
                # `g`: rax..r15 (16 x 8 bytes), then rip (8) and eflags (4), little-endian hex.
                regs = g.cmd("g")
                rip, flags = reg(regs[256:272]), reg(regs[272:280])
                samples[(rip, not flags & 0x200)] += 1
                per_cpu[(i, not flags & 0x200)] += 1
                if a.callers and a.callers in name_of(rip):
                    rsp = reg(regs[112:128])
                    mem = g.cmd(f"m{rsp:x},80")
                    callers = []
                    if not mem.startswith("E"):
                        words = [reg(mem[k:k + 16]) for k in range(0, len(mem) - 15, 16)]
                        for w in words:
                            if base <= w <= base + text_end:
                                fn = name_of(w)
                                if fn != name_of(rip) and fn not in callers:
                                    callers.append(fn)
                            if len(callers) == 2:
                                break
                    stacks[tuple(callers)] += 1
            g.send("c")
            n += 1
            time.sleep(1 / a.rate)
    except EOFError:
        pass
    total = sum(samples.values())
    if total == 0:
        sys.exit("guest-profile: no samples")

    # The kernel is position-independent and linked at 0; the bootloader maps it at the base
    # of the higher half (its dynamic range starts there): symbol = rip - base.

    by_fn = collections.defaultdict(lambda: [0, 0])
    for (rip, off), c in samples.items():
        by_fn[name_of(rip)][off] += c
    cpus = len(threads or [])
    print(f"guest-profile: {n} stops x {cpus} vCPUs = {total} samples")
    for i in range(cpus):
        on, off = per_cpu[(i, False)], per_cpu[(i, True)]
        print(f"  cpu {i}: interrupts off in {off} of {on + off} samples ({100 * off / max(1, on + off):.1f}%)")
    print(f"{'samples':>8} {'%':>6} {'irqs off':>8}  function")
    for name, (on, off) in sorted(by_fn.items(), key=lambda kv: -sum(kv[1]))[: a.top]:
        print(f"{on + off:>8} {100 * (on + off) / total:>6.1f} {off:>8}  {name[:110]}")
    if a.callers:
        print(f"\n{'samples':>8}  callers of *{a.callers}* (nearest first, from the stack)")
        for callers, c in stacks.most_common(a.top):
            print(f"{c:>8}  {' <- '.join(x[:70] for x in callers) or '?'}")
    if a.lines:
        rips = sorted({r for r, _ in samples})
        # With inlining, an address's innermost line is often in `core` (an atomic, a slice
        # method): report the innermost frame that is Cadence's own code instead.
        res = subprocess.run(["addr2line", "-e", a.kernel, "-a", "-i"] + [hex(r - base) for r in rips if r >= base],
                             capture_output=True, text=True).stdout.splitlines()
        line_of, cur, frames = {}, None, []

        def own(frames):
            for f in frames:
                for root in ("/kernel/src/", "/lib/sched/src/", "/lib/trace/src/"):
                    if root in f:
                        return f.split(root)[-1].split(" (")[0]
            return frames[0].split("/")[-1] if frames else "?"
        for line in res + ["0x0"]:
            if line.startswith("0x"):
                if cur is not None:
                    line_of[cur + base] = own(frames)
                cur, frames = int(line, 16), []
            else:
                frames.append(line)
        by_line = collections.defaultdict(lambda: [0, 0])
        for (rip, off), c in samples.items():
            loc = line_of.get(rip, "?")
            by_line[loc][off] += c
        print(f"\n{'samples':>8} {'%':>6} {'irqs off':>8}  line")
        for loc, (on, off) in sorted(by_line.items(), key=lambda kv: -sum(kv[1]))[: a.top]:
            print(f"{on + off:>8} {100 * (on + off) / total:>6.1f} {off:>8}  {loc}")


if __name__ == "__main__":
    main()
