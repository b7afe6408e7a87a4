#!/usr/bin/env python3
"""Per function, what one task switch costs under TCG, from tools/qemu-pageset.sh's output.

    tools/qemu-pageset.py KERNEL_ELF [--out DIR] [--top N] [--base HEX]

KERNEL_ELF must have its symbols (build with CARGO_PROFILE_RELEASE_STRIP=none). Prints the
averages per window (one CR3 write to the next: instructions, distinct code pages, data pages,
translation-block starts), the instructions that most often end a translation block and send
QEMU back to its main loop (sti, popf, iretq, wrmsr... counted per window), then the functions
by instructions per window, with the distinct blocks entered and code pages touched in each.
--base: where the PIE kernel runs (the bootloader maps it at 0xffff800000000000).
Last, the kernel's statics by accesses per window (the `word` records: which statics a switch
touches; tools/hot-layout.py packs them, and the hot functions, for the build: make hot-layout).
"""
import argparse, bisect, collections, os, subprocess, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument('kernel')
ap.add_argument('--out', default=os.path.join(root, 'target', 'qemu-pageset'))
ap.add_argument('--top', type=int, default=40)
ap.add_argument('--base', default='ffff800000000000')
a = ap.parse_args()
base = int(a.base, 16)
try:
    head = open(os.path.join(a.out, 'pageset.txt')).readline().split()
except OSError as e:
    sys.exit(f'qemu-pageset: {e} (run QEMU through tools/qemu-pageset.sh first)')
stats = dict(zip(head[0::2], head[1::2]))
nwin = int(stats.get('windows', 0))
if not nwin:
    sys.exit('qemu-pageset: no window recorded: ' + ' '.join(head))
print('per window (one CR3 write to the next), over %d windows:' % nwin)
print('  instructions %s, code pages %s, data pages %s, translation blocks entered %s' % (
    stats['insns'], stats['code_pages'], stats['data_pages'], stats['tb_starts']))

def text_symbols(*flags):
    out = subprocess.run(['nm', '-n', '-S', *flags, a.kernel], capture_output=True, text=True).stdout
    syms = []
    for line in out.splitlines():
        # address, size, type, name (demangled names hold spaces); assembly symbols have no size
        p = line.split(' ', 3)
        if len(p) >= 3 and len(p[1]) == 1 and p[1] in 'tTwW':
            syms.append((int(p[0], 16) + base, 0, line.split(' ', 2)[2]))
        elif len(p) == 4 and p[2] in 'tTwW':
            syms.append((int(p[0], 16) + base, int(p[1], 16), p[3]))
    return syms

# The same symbols twice, in the same order: mangled (what the linker sees, for --order) and
# demangled (for the table).
mangled, syms = text_symbols(), text_symbols('-C')
if not syms or len(syms) != len(mangled):
    sys.exit(f'qemu-pageset: no usable symbols in {a.kernel}')
addrs = [s for s, _, _ in syms]

def symbol(va):
    """The index of the function holding `va` (None: user code, or before the first)."""
    i = bisect.bisect_right(addrs, va) - 1
    return i if va >= base and i >= 0 else None

def name(i):
    return '(user)' if i is None else syms[i][2][:110]

# Instructions that end a translation block and return to QEMU's main loop, or call a helper.
ops = {}
dis = subprocess.run(['objdump', '-d', '--no-show-raw-insn', a.kernel], capture_output=True, text=True).stdout
for line in dis.splitlines():
    p = line.split('\t')
    if len(p) >= 2 and p[0].strip().endswith(':'):
        op = p[1].split()[0] if p[1].split() else ''
        operands = p[1].split()[-1].split(',')
        if op == 'mov' and len(operands) == 2 and operands[1].startswith('%cr'):
            op = 'mov-to-' + operands[1][1:]  # AT&T: the destination is last
        if op in ('sti', 'cli', 'popf', 'popfq', 'pushf', 'pushfq', 'iretq', 'sysretq', 'wrmsr', 'rdmsr', 'swapgs', 'hlt',
                  'fxsave64', 'fxrstor64', 'xsave64', 'xrstor64', 'rdtsc', 'rdtscp', 'invlpg') or op.startswith('mov-to-cr'):
            ops[int(p[0].strip()[:-1], 16) + base] = op

ins, blocks, pages, special = collections.Counter(), collections.Counter(), collections.defaultdict(set), collections.Counter()
for line in open(os.path.join(a.out, 'insns.txt')):
    kind, va, n = line.split()[:3]
    if kind == 'word':
        continue
    va, n = int(va, 16), int(n)
    i = symbol(va)
    if kind == 'in':
        ins[i] += n
        pages[i].add(va >> 12)
        if va in ops:
            special[ops[va]] += n
    else:
        blocks[i] += n
print('  ' + ', '.join('%s %.1f' % (op, n / nwin) for op, n in special.most_common()))
print('%9s %7s %5s  %s' % ('insns', 'blocks', 'pages', 'function'))
for i, n in ins.most_common(a.top):
    print('%9.0f %7.1f %5d  %s' % (n / nwin, blocks[i] / nwin, len(pages[i]), name(i)))

statics = [(int(p[0], 16), int(p[1], 16), p[3]) for p in (l.split(' ', 3) for l in
           subprocess.run(['nm', '-n', '-S', '-C', a.kernel], capture_output=True, text=True).stdout.splitlines())
           if len(p) == 4 and p[2] in 'dDbB']
starts = [s for s, _, _ in statics]
touched = collections.Counter()
for line in open(os.path.join(a.out, 'insns.txt')):
    if line.startswith('word '):
        _, va, n, _pc = line.split()
        off = int(va, 16) - base
        j = bisect.bisect_right(starts, off) - 1
        if j >= 0 and off < statics[j][0] + max(statics[j][1], 1):
            touched[j] += int(n)
if touched:
    print('%9s %9s  %s' % ('accesses', 'page', 'static'))
    for j, n in touched.most_common(a.top // 2):
        print('%9.1f %9x  %s' % (n / nwin, statics[j][0] >> 12 << 12, statics[j][2][:100]))
