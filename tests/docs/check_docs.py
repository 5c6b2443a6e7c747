#!/usr/bin/env python3
"""Checks the project's Markdown: docs/ARCHITECTURE.md is at most 400 lines (a newcomer reads it in an
hour), and every relative link in README.md, docs/ and perf/README.md names a file that exists and, with
a #fragment, a heading of that file (GitHub's anchor rule: lower case, punctuation other than '-' and '_'
dropped, spaces to '-', repeated headings numbered -1, -2, ...). Prints each broken link; exit 1 if any."""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
MAX_ARCHITECTURE_LINES = 400


def anchors(path):
    seen, out = {}, set()
    in_code = False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            in_code = not in_code
            continue
        m = None if in_code else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", lambda g: g.group(1) or "", m.group(1))
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def markdown_files():
    files = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "perf", "README.md")]
    for d, _, names in os.walk(os.path.join(ROOT, "docs")):
        files += [os.path.join(d, n) for n in names if n.endswith(".md")]
    return sorted(files)


def main():
    bad = []
    arch = os.path.join(ROOT, "docs", "ARCHITECTURE.md")
    lines = sum(1 for _ in open(arch, encoding="utf-8"))
    print(f"docs/ARCHITECTURE.md: {lines} lines (at most {MAX_ARCHITECTURE_LINES})")
    if lines > MAX_ARCHITECTURE_LINES:
        bad.append(f"docs/ARCHITECTURE.md has {lines} lines, more than {MAX_ARCHITECTURE_LINES}")
    cache = {}
    links = 0
    for f in markdown_files():
        text = open(f, encoding="utf-8").read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue
            links += 1
            path, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            rel = os.path.relpath(f, ROOT)
            if not os.path.exists(dest):
                bad.append(f"{rel}: link to {target}: no such file {os.path.relpath(dest, ROOT)}")
                continue
            if frag and dest.endswith(".md"):
                if dest not in cache:
                    cache[dest] = anchors(dest)
                if frag not in cache[dest]:
                    bad.append(f"{rel}: link to {target}: no heading with anchor #{frag}")
    print(f"{links} relative links checked")
    for b in bad:
        print("BROKEN " + b)
    print("docs ok" if not bad else f"{len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
