#!/usr/bin/env python3
"""The kernel's hot layout: kernel/hot.ld, from what a task switch touches under TCG.

    tools/hot-layout.py KERNEL_ELF [--out DIR] > kernel/hot.ld     (make hot-layout does it all)
    tools/hot-layout.py --check KERNEL_ELF [--script kernel/hot.ld]    (a step of make test)

Under TCG every CR3 write empties QEMU's soft TLB, so each page a switch touches afterwards
costs a page walk again; code spread over pages also breaks QEMU's block chaining (a direct
jump is chained only within a page). The first form reads tools/qemu-pageset.sh's counts
(DIR, default target/qemu-pageset: a `pipetest` run) and writes a linker script that puts
  - the functions run in at least 5% of the switch windows in `.text.hot` before `.text`
    (with the entry stubs, `.text.cadence_entry`, and the context switch,
    `.text.cadence_switch`), callees after their callers (`call_graph_order`): a direct call
    within a page is chained by QEMU, one across pages goes through a block lookup;
  - the statics of up to 8 KiB read or written in at least 5% of the windows in `.data.hot`,
    page-aligned, before `.data`: small ones first, hottest first.
The build links with it (kernel/build.rs); docs/results/2026-12-07-hot-layout.md measured it.

Sections are named after Rust's v0-mangled symbols, which hold each crate's hash (different in
each checkout) and back-references that move with it. So the script matches a symbol by its
path's identifiers in order, with wildcards between (`_R*14cadence_kernel*7process*10run_thread*`),
checked here to match the symbol it came from. --check fails if a pattern matches nothing in
KERNEL_ELF (a function or static renamed or gone): rerun `make hot-layout`.
"""
import argparse, bisect, collections, fnmatch, os, re, subprocess, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument('kernel')
ap.add_argument('--out', default=os.path.join(root, 'target', 'qemu-pageset'))
ap.add_argument('--check', action='store_true')
ap.add_argument('--script', default=os.path.join(root, 'kernel', 'hot.ld'))
ap.add_argument('--base', default='ffff800000000000', help='where the PIE kernel runs')
a = ap.parse_args()


def symbols(*flags):
    """(address, size, type, name) of every symbol, by address; the same order for any flags."""
    out = []
    for line in subprocess.run(['nm', '-n', '-S', *flags, a.kernel], capture_output=True, text=True, check=True).stdout.splitlines():
        p = line.split(' ', 3)
        if len(p) == 4 and len(p[2]) == 1:
            out.append((int(p[0], 16), int(p[1], 16), p[2], p[3]))
        elif len(p) >= 3 and len(p[1]) == 1:
            out.append((int(p[0], 16), 0, p[1], line.split(' ', 2)[2]))
    return out


mangled = symbols()
names = [s[3] for s in mangled]

if a.check:
    try:
        script = open(a.script).read()
    except OSError as e:
        sys.exit(f'hot-layout: {e}')
    stale = []
    for sec in re.findall(r'\*\(([^)]*)\)', script):
        pats = [p.split('.', 2)[2] for p in sec.split() if p.startswith(('.text.', '.data.'))]
        rust = [p for p in pats if p.startswith('_R')]
        if rust and not any(fnmatch.fnmatchcase(n, p) for p in rust for n in names):
            stale.append(rust[0])
    if stale:
        print('hot-layout: %s: %d pattern(s) match no symbol of %s (renamed or gone?); '
              'rerun `make hot-layout`:' % (os.path.relpath(a.script, root), len(stale), a.kernel), file=sys.stderr)
        for p in stale:
            print('  ' + p, file=sys.stderr)
        sys.exit(1)
    print('hot-layout: every pattern of %s matches' % os.path.relpath(a.script, root))
    sys.exit(0)

demangled = symbols('-C')
if len(demangled) != len(mangled):
    sys.exit('hot-layout: nm -C listed a different number of symbols')
readable = {m[3]: d[3] for m, d in zip(mangled, demangled)}
PRIMITIVES = set('u8 u16 u32 u64 u128 usize i8 i16 i32 i64 i128 isize bool char str f32 f64'.split())
KEYWORDS = set('as impl mut const dyn for unsafe extern fn'.split())


def pattern(name):
    """A wildcard pattern for v0-mangled `name` without its crate hashes, or None."""
    seen, parts = set(), []
    for ident in re.findall(r'[A-Za-z_][A-Za-z0-9_]*', readable[name]):
        if ident in KEYWORDS or ident in PRIMITIVES or ident in seen:
            continue  # a repeated path is a back-reference in the mangled name
        seen.add(ident)
        # v0 writes an identifier as its length, then `_` if it starts with `_` or a digit.
        parts.append(('%d_%s' if ident[0] == '_' else '%d%s') % (len(ident), ident))
    p = '_R*' + '*'.join(parts) + '*'
    return p if fnmatch.fnmatchcase(name, p) else None


try:
    head = open(os.path.join(a.out, 'pageset.txt')).readline().split()
    windows = int(dict(zip(head[0::2], head[1::2])).get('windows', 0))
except OSError as e:
    sys.exit(f'hot-layout: {e} (run QEMU through tools/qemu-pageset.sh first)')
if not windows:
    sys.exit('hot-layout: no window recorded')
base = int(a.base, 16)
funcs = [s for s in mangled if s[2] in 'tTwW']
fstart = [s[0] for s in funcs]
statics = [s for s in mangled if s[2] in 'dDbB']
sstart = [s[0] for s in statics]
ins, hot_data = collections.Counter(), collections.Counter()
for line in open(os.path.join(a.out, 'insns.txt')):
    kind, va, n = line.split()[:3]
    off, n = int(va, 16) - base, int(n)
    if kind == 'in' and off >= 0:
        i = bisect.bisect_right(fstart, off) - 1
        if i >= 0:
            ins[i] += n
    elif kind == 'word' and off >= 0:
        i = bisect.bisect_right(sstart, off) - 1
        if i >= 0 and off < statics[i][0] + max(statics[i][1], 1):
            hot_data[i] += n

hot = [i for i, n in ins.most_common() if n >= windows * 0.05]


def call_graph_order(hot):
    """`hot` reordered so that callees sit after their callers (lld's C3 ordering, simplified):
    each function, hottest first, joins the cluster of its most frequent caller while the
    cluster stays within a page; clusters then go hottest first. Weights are the executions of
    each direct call or jump site between two hot functions (tools/qemu-pageset.sh's counts)."""
    executed = {}
    for line in open(os.path.join(a.out, 'insns.txt')):
        kind, va, n = line.split()[:3]
        if kind == 'in':
            executed[int(va, 16) - base] = int(n)
    index = {funcs[i][0]: i for i in hot}
    dis = subprocess.run(['objdump', '-d', '--no-show-raw-insn', a.kernel], capture_output=True, text=True, check=True).stdout
    callers = collections.defaultdict(collections.Counter)
    for line in dis.splitlines():
        p = line.split('\t')
        if len(p) < 2 or not p[0].strip().endswith(':'):
            continue
        site = int(p[0].strip()[:-1], 16)
        f = p[1].split()
        if site not in executed or len(f) < 2 or not (f[0] == 'call' or f[0] == 'jmp') or '*' in f[1]:
            continue
        try:
            target = int(f[1], 16)
        except ValueError:
            continue
        i, j = bisect.bisect_right(fstart, site) - 1, index.get(target)
        if j is not None and i != j and funcs[i][0] in index:
            callers[j][i] += executed[site]
    cluster, of, size = {i: [i] for i in hot}, {i: i for i in hot}, {i: funcs[i][1] for i in hot}
    for f in hot:
        if not callers[f]:
            continue
        into, mine = of[callers[f].most_common(1)[0][0]], of[f]
        if into == mine or size[into] + size[mine] > 4096:
            continue
        cluster[into] += cluster.pop(mine)
        size[into] += size[mine]
        for x in cluster[into]:
            of[x] = into
    heat = {c: sum(ins[i] for i in members) for c, members in cluster.items()}
    return [i for c in sorted(cluster, key=lambda c: -heat[c]) for i in cluster[c]]


text, data, left = [], [], []
for i in call_graph_order(hot):
    name = funcs[i][3]
    p = pattern(name) if name.startswith('_R') else name if name.startswith(('mem', '__')) else None
    if p:
        text.append(p)
    elif not name.startswith('cadence_'):  # the entry stubs and the switch: their sections below
        left.append(readable[name])
for i, n in hot_data.most_common():
    size, name = statics[i][1], statics[i][3]
    if n < windows * 0.05 or size > 8192:
        continue
    p = pattern(name) if name.startswith('_R') else None
    if p:
        data.append((size > 1024, -n / windows, p, readable[name], size))
    else:
        left.append(readable[name])
data.sort()
print('/* The hot layout, written by tools/hot-layout.py from a `pipetest 20000 0 0` run under')
print(' * tools/qemu-pageset.sh (`make hot-layout`): what a task switch runs and touches, packed in')
print(' * few pages. Not listed (no pattern): %s */' % (', '.join(sorted(set(left))) or 'none'))
print('SECTIONS {\n  .text.hot : {')
for p in dict.fromkeys(text):
    print('    *(.text.%s)' % p)
print('    *(.text.cadence_entry)\n    *(.text.cadence_switch)\n  }\n} INSERT BEFORE .text;')
print('SECTIONS {\n  .data.hot ALIGN(4096) : {')
for _, heat, p, name, size in data:
    print('    *(.data.%s .bss.%s) /* %s: %d B, %.1f per switch */' % (p, p, name, size, -heat))
print('  }\n} INSERT BEFORE .data;')
print('%d functions, %d statics; not placed: %d' % (len(text), len(data), len(left)), file=sys.stderr)
