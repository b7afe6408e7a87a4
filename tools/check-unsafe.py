#!/usr/bin/env python3
"""Every `unsafe` in the tree is in the framework crate (part of `make lint`).

Checks, over the Rust sources outside kernel/framework/ (kernel/src, lib/, boot/, tests/):
no `unsafe` keyword in code (comments and strings aside), no `allow(unsafe_code)`; and that the
kernel crate's root says `#![deny(unsafe_code)]` and each host crate's root
`#![forbid(unsafe_code)]`. Prints each offence as `file:line: ...` and exits 1 if any.
(docs/design/layering.md says why the framework is the one home of `unsafe`.)
"""
import os
import re
import sys

from lintreport import finish

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TREES = ["kernel/src", "lib", "boot/src", "tests"]
ROOTS = {
    "kernel/src/main.rs": "#![deny(unsafe_code)]",
    "boot/src/lib.rs": "#![forbid(unsafe_code)]",
    "boot/src/main.rs": "#![forbid(unsafe_code)]",
    "tests/src/lib.rs": "#![forbid(unsafe_code)]",
}
UNSAFE = re.compile(r"\bunsafe\b")
STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def code_of(line):
    line = STRING.sub('""', line)
    i = line.find("//")
    return line if i < 0 else line[:i]


def main():
    errors = []
    for tree in TREES:
        for dirpath, _, files in os.walk(os.path.join(ROOT, tree)):
            if "/target" in dirpath:
                continue
            for f in sorted(files):
                if not f.endswith(".rs"):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, ROOT)
                with open(path, encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        code = code_of(line)
                        if "allow(unsafe_code)" in code:
                            errors.append(f"{rel}:{n}: allow(unsafe_code): unsafe code belongs in kernel/framework")
                        elif UNSAFE.search(code):
                            errors.append(f"{rel}:{n}: unsafe outside the framework crate: {line.strip()}")
    for rel, attr in ROOTS.items():
        with open(os.path.join(ROOT, rel), encoding="utf-8") as fh:
            if attr not in fh.read():
                errors.append(f"{rel}: missing {attr}")
    for lib in sorted(os.listdir(os.path.join(ROOT, "lib"))):
        rel = f"lib/{lib}/src/lib.rs"
        if os.path.exists(os.path.join(ROOT, rel)):
            with open(os.path.join(ROOT, rel), encoding="utf-8") as fh:
                if "#![forbid(unsafe_code)]" not in fh.read():
                    errors.append(f"{rel}: missing #![forbid(unsafe_code)]")
    return finish("check-unsafe", errors, "offence(s)", " (unsafe only in kernel/framework)")


if __name__ == "__main__":
    sys.exit(main())
