#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that the code blocks of a Markdown page that quote the server-integration example
are the example's code.

A quoting block is a fenced code block directly preceded by a line
    <!-- quote: examples/server_integration/engine.hpp#NAME -->
and the quoted region is the lines between `// [doc:NAME]` and `// [/doc:NAME]` in that file.
Block and region must be equal after removing their common indentation. Also checked: every
marker is paired, names are unique per file, and every region of the quoted files is quoted at
least once (so the page covers each recording call the example marks), and every alias a page's
code defines (`using reason = tc::finish_reason;`) is defined before a code block first uses it
(`reason::stop`): a reader meets the definition first.

    check_doc_quotes.py [--root DIR] [--update] PAGE.md...
Exit status 0 when everything agrees, 1 otherwise (each problem printed with file and line).
--update rewrites each quoting block with its region first (after an intended code change).
"""
import argparse
import os
import re
import sys
import textwrap

QUOTE = re.compile(r"^\s*<!--\s*quote:\s*(\S+?)#(\S+)\s*-->\s*$")
OPEN = re.compile(r"^\s*//\s*\[doc:([\w-]+)\]\s*$")
CLOSE = re.compile(r"^\s*//\s*\[/doc:([\w-]+)\]\s*$")


def regions(path, problems):
    """The marked regions of a source file: {name: (first line number, text)}."""
    out, start, name, body = {}, 0, None, []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m_open, m_close = OPEN.match(line), CLOSE.match(line)
            if m_open:
                if name is not None:
                    problems.append(f"{path}:{n}: [doc:{m_open.group(1)}] inside [doc:{name}]")
                name, start, body = m_open.group(1), n, []
            elif m_close:
                if name != m_close.group(1):
                    problems.append(f"{path}:{n}: [/doc:{m_close.group(1)}] closes nothing open")
                else:
                    if name in out:
                        problems.append(f"{path}:{n}: region {name} defined twice")
                    out[name] = (start, textwrap.dedent("".join(body)))
                name = None
            elif name is not None:
                body.append(line)
    if name is not None:
        problems.append(f"{path}:{start}: [doc:{name}] is never closed")
    return out


def quotes(page, problems):
    """The quoting blocks of a Markdown page: [(line number, file, name, text)]."""
    lines = open(page, encoding="utf-8").read().splitlines(keepends=True)
    out, i = [], 0
    while i < len(lines):
        m = QUOTE.match(lines[i])
        if not m:
            i += 1
            continue
        fence = re.match(r"^\s*(```|~~~)", lines[i + 1]) if i + 1 < len(lines) else None
        if not fence:
            problems.append(f"{page}:{i + 1}: a quote marker not followed by a code block")
            i += 1
            continue
        j = i + 2
        while j < len(lines) and not lines[j].lstrip().startswith(fence.group(1)):
            j += 1
        if j == len(lines):
            problems.append(f"{page}:{i + 2}: unterminated code block")
        out.append((i + 1, m.group(1), m.group(2), textwrap.dedent("".join(lines[i + 2:j]))))
        i = j + 1
    return out


def update(page, root):
    """Rewrites every quoting block of `page` with the region it names."""
    lines = open(page, encoding="utf-8").read().splitlines(keepends=True)
    out, i = [], 0
    while i < len(lines):
        out.append(lines[i])
        m = QUOTE.match(lines[i])
        fence = re.match(r"^\s*(```|~~~)", lines[i + 1]) if m and i + 1 < len(lines) else None
        if not fence:
            i += 1
            continue
        j = i + 2
        while j < len(lines) and not lines[j].lstrip().startswith(fence.group(1)):
            j += 1
        regs = regions(os.path.join(root, m.group(1)), [])
        body = regs[m.group(2)][1] if m.group(2) in regs else "".join(lines[i + 2:j])
        out.append(lines[i + 1])
        out.append(body)
        if j < len(lines):
            out.append(lines[j])
        i = j + 1
    with open(page, "w", encoding="utf-8") as f:
        f.write("".join(out))


USING = re.compile(r"\busing\s+(\w+)\s*=")
FENCE = re.compile(r"^\s*```")


def aliases_before_use(page, problems):
    """Every `using NAME = ...` in the page's code blocks comes before the first `NAME::`."""
    with open(page, encoding="utf-8") as f:
        lines = f.read().splitlines()
    code, inside = [], False
    for n, line in enumerate(lines, 1):
        if FENCE.match(line):
            inside = not inside
        elif inside:
            code.append((n, line))
    for n, line in code:
        for m in USING.finditer(line):
            name = m.group(1)
            use = re.compile(r"(?<![\w:])" + name + r"::")
            first = next((k for k, l in code if use.search(l)), None)
            if first is not None and first < n:
                problems.append(f"{page}:{first}: {name}:: is used before line {n} defines it")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=".", help="the repository root (paths are relative to it)")
    ap.add_argument("--update", action="store_true", help="rewrite the blocks from the sources")
    ap.add_argument("pages", nargs="+")
    args = ap.parse_args()
    if args.update:
        for page in args.pages:
            update(os.path.join(args.root, page), args.root)
    problems, files, used, count = [], {}, set(), 0
    for page in args.pages:
        for n, path, name, text in quotes(os.path.join(args.root, page), problems):
            count += 1
            full = os.path.join(args.root, path)
            if path not in files:
                if not os.path.isfile(full):
                    problems.append(f"{page}:{n}: quotes {path}, which does not exist")
                    files[path] = {}
                    continue
                files[path] = regions(full, problems)
            if name not in files[path]:
                problems.append(f"{page}:{n}: {path} has no region [doc:{name}]")
                continue
            used.add((path, name))
            start, region = files[path][name]
            if region != text:
                problems.append(f"{page}:{n}: the block quoting {path}#{name} differs from "
                                f"lines {start + 1}.. of {path}:\n--- doc\n{text}--- source\n"
                                f"{region}---")
    for page in args.pages:
        aliases_before_use(os.path.join(args.root, page), problems)
    for path, regs in files.items():
        for name, (start, _) in regs.items():
            if (path, name) not in used:
                problems.append(f"{path}:{start}: region {name} is quoted by no page")
    for p in problems:
        print(p)
    print(f"doc quotes: {count} block(s) checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
