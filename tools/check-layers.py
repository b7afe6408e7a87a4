#!/usr/bin/env python3
"""The kernel crate's layering check (part of `make lint`; docs/design/layering.md).

Every module of kernel/src belongs to a layer; code may use (`crate::X`) its own layer and the
layers below it, never one above. The framework crate is below every layer: it cannot name the
kernel at all (it is another crate), and its re-exports in main.rs (`crate::percpu`, ...) count
as the framework. Test code is exempt (a test may drive any layer): files named tests.rs,
*_tests.rs or under a tests/ directory, the fwtests/ directory, and `#[cfg(test)]` items.

Prints each upward use as `file:line: <layer> uses <module> (<its layer>)` and exits 1 if any.
"""
import os
import re
import sys

from lintreport import finish

# Lowest first. A module not listed is an error (a new module must be placed).
LAYERS = [
    ("framework", ["arch", "interrupts", "irqflags", "mm", "percpu", "platform", "smp", "sync", "time", "timer",
                   "klog", "kprint", "kprintln"]),
    ("sched", ["sched", "trace"]),
    ("drivers", ["drivers", "console"]),
    ("block", ["block"]),
    ("tty", ["tty"]),
    ("sysctl", ["sysctl"]),
    ("cmdline", ["cmdline"]),
    ("files", ["fs"]),
    ("process", ["process", "syscall"]),
    ("programs", ["shell", "bench", "chaos", "rtapp"]),
    ("boot", ["main", "testing", "upcalls", "fwtests", "ap_main", "BOOTLOADER_CONFIG"]),
]
LAYER_OF = {m: i for i, (_, mods) in enumerate(LAYERS) for m in mods}
NAME = [name for name, _ in LAYERS]

USE = re.compile(r"\bcrate::([A-Za-z_][A-Za-z0-9_]*)")
GROUP = re.compile(r"\bcrate::\{([^}]*)")


def strip_comments(line):
    # Drop `//` comments (doc comments included: intra-doc links are not dependencies); a `//`
    # inside a string literal is rare enough in this tree to ignore.
    i = line.find("//")
    return line if i < 0 else line[:i]


def test_file(rel):
    parts = rel.split(os.sep)
    base = parts[-1]
    return base == "tests.rs" or base.endswith("_tests.rs") or "tests" in parts[:-1] or parts[0] == "fwtests"


def code_lines(text):
    """(line number, code) of the lines outside `#[cfg(test)]` items."""
    lines = text.split("\n")
    skip_depth = None  # brace depth at which a cfg(test) item ends
    depth = 0
    pending_cfg_test = False
    for n, raw in enumerate(lines, 1):
        code = strip_comments(raw)
        stripped = code.strip()
        if skip_depth is None and stripped.startswith("#[cfg(test)]"):
            pending_cfg_test = True
            rest = stripped[len("#[cfg(test)]"):].strip()
            if not rest:
                continue
            stripped = rest
        opens, closes = code.count("{"), code.count("}")
        if pending_cfg_test and skip_depth is None:
            pending_cfg_test = False
            if opens > closes:
                skip_depth = depth
                depth += opens - closes
                continue
            # a one-line item (`#[cfg(test)] use ...;`, `mod tests;`): skip just it
            depth += opens - closes
            continue
        depth += opens - closes
        if skip_depth is not None:
            if depth <= skip_depth:
                skip_depth = None
            continue
        yield n, code


def module_of(rel):
    first = rel.split(os.sep)[0]
    return first[:-3] if first.endswith(".rs") else first


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernel", "src")
    root = os.path.normpath(sys.argv[1] if len(sys.argv) > 1 else root)
    errors = []
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith(".rs"):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            mod = module_of(rel)
            if mod not in LAYER_OF:
                errors.append(f"{rel}: module `{mod}` has no layer (add it to tools/check-layers.py and docs/design/layering.md)")
                continue
            if test_file(rel):
                continue
            mine = LAYER_OF[mod]
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            for n, code in code_lines(text):
                targets = [m.group(1) for m in USE.finditer(code)]
                for g in GROUP.finditer(code):
                    targets += [t.strip().split("::")[0] for t in g.group(1).split(",") if t.strip()]
                for target in targets:
                    if target == mod or target not in LAYER_OF:
                        continue
                    if LAYER_OF[target] > mine:
                        errors.append(f"kernel/src/{rel}:{n}: {NAME[mine]} layer uses crate::{target} ({NAME[LAYER_OF[target]]} layer)")
    return finish("check-layers", errors, "upward use(s); the layers are in docs/design/layering.md", "")


if __name__ == "__main__":
    sys.exit(main())
