#!/usr/bin/env python3
"""check-doc-links.py [ROOT]: the documentation's links, checked.

Starting from README.md, follows every relative markdown link (inline `[text](target)`,
images, and reference definitions `[id]: target`) through the markdown files it reaches, and
fails when

  * a relative link in README.md or in any docs/**/*.md points at a file that does not exist,
    or at a heading (`file.md#anchor`) that the file does not have;
  * a file under docs/ is not reachable from README.md by such links (a page nobody can find).

Links to other sites (http:, https:, mailto:) are not followed. Code (fenced blocks, indented
blocks, `code spans`) is not read for links. Exit status 0 when everything holds, 1 otherwise,
with one line per problem. Meant to run from `make lint`; it needs only Python 3.
"""
import os
import re
import sys
import unicodedata
from collections import deque

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
START = "README.md"

INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
CODESPAN = re.compile(r"(`+)(.+?)\1", re.S)
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def paragraphs(text):
    """Yields the prose paragraphs of a markdown text: fenced and indented code left out."""
    fenced = False
    para = []
    for line in text.split("\n"):
        if line.lstrip().startswith("```") or line.lstrip().startswith("~~~"):
            fenced = not fenced
            if para:
                yield "\n".join(para)
                para = []
            continue
        if fenced:
            continue
        if not line.strip():
            if para:
                yield "\n".join(para)
                para = []
            continue
        para.append(line)
    if para:
        yield "\n".join(para)


def is_code_block(para):
    # An indented code block: every line indented by 4 or more (list continuations use less,
    # and a code block inside a list item is indented more than its item: still code).
    return all(l.startswith("    ") or l.startswith("\t") for l in para.split("\n")) and not para.lstrip().startswith(("-", "*", "|"))


def links(text):
    for para in paragraphs(text):
        if is_code_block(para):
            continue
        prose = CODESPAN.sub("", para)
        for m in INLINE.finditer(prose):
            yield m.group(1).strip("<>")
        for line in prose.split("\n"):
            m = REFDEF.match(line)
            if m:
                yield m.group(1).strip("<>")


def slug(heading):
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    out = []
    for ch in text.lower():
        if ch == " ":
            out.append("-")
        elif ch in "-_" or unicodedata.category(ch)[0] in "LN":
            out.append(ch)
    return "".join(out)


def anchors(path):
    seen = {}
    result = set()
    fenced = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            m = None if fenced else HEADING.match(line.rstrip("\n"))
            if m:
                s = slug(m.group(2))
                n = seen.get(s, 0)
                seen[s] = n + 1
                result.add(s if n == 0 else f"{s}-{n}")
    return result


def main():
    problems = []
    reached = set()
    start = os.path.join(ROOT, START)
    if not os.path.isfile(start):
        print(f"check-doc-links: {START} not found under {ROOT}", file=sys.stderr)
        return 1
    queue = deque([start])
    read = set()
    anchor_cache = {}
    docs = os.path.join(ROOT, "docs")
    # Every markdown file under docs/ is checked for broken links, reached or not.
    all_docs = []
    for d, _, files in os.walk(docs):
        for name in files:
            all_docs.append(os.path.join(d, name))
    to_check = [start] + [p for p in all_docs if p.endswith(".md")]

    def check(page, follow):
        rel_page = os.path.relpath(page, ROOT)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for target in links(text):
            if EXTERNAL.match(target):
                continue
            path, _, anchor = target.partition("#")
            dest = page if not path else os.path.normpath(os.path.join(os.path.dirname(page), path))
            if not dest.startswith(ROOT + os.sep) and dest != ROOT:
                problems.append(f"{rel_page}: link '{target}' leaves the repository")
                continue
            if not os.path.exists(dest):
                problems.append(f"{rel_page}: broken link '{target}' (no {os.path.relpath(dest, ROOT)})")
                continue
            if anchor and dest.endswith(".md") and os.path.isfile(dest):
                if dest not in anchor_cache:
                    anchor_cache[dest] = anchors(dest)
                if anchor.lower() not in anchor_cache[dest]:
                    problems.append(f"{rel_page}: link '{target}': {os.path.relpath(dest, ROOT)} has no heading '#{anchor}'")
            if follow:
                reached.add(dest)
                if dest.endswith(".md") and os.path.isfile(dest) and dest not in read:
                    read.add(dest)
                    queue.append(dest)

    read.add(start)
    reached.add(start)
    while queue:
        check(queue.popleft(), True)
    for page in to_check:
        if page not in read:
            check(page, False)
    for path in sorted(all_docs):
        if path not in reached:
            problems.append(f"{os.path.relpath(path, ROOT)}: not reachable by links from {START}")

    pages = len([p for p in reached if p.endswith(".md")])
    if problems:
        for p in problems:
            print(f"check-doc-links: {p}", file=sys.stderr)
        print(f"check-doc-links: FAILED: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"check-doc-links: ok: {len(all_docs)} files under docs/, all reachable from {START} ({pages} markdown pages read); no broken links")
    return 0


if __name__ == "__main__":
    sys.exit(main())
