#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Compiles the C++ code blocks of Markdown pages exactly as printed.

A compiled block is a fenced ```cpp block directly preceded by a line
    <!-- compile: program -->          the block is a whole translation unit
    <!-- compile: PARAMETERS -->       the block is a fragment: its #include lines go to file
                                       scope, the rest becomes the body of a function taking
                                       PARAMETERS (a C++ parameter list naming what the
                                       fragment uses but does not declare, e.g.
                                       `std::uint64_t prompt_tokens, std::uint32_t n`; `void`
                                       for none)
Each is compiled alone (-fsyntax-only, C++17, include/ on the path), so a snippet that needs a
header it does not include fails here.

    compile_snippets.py --cxx CXX --include DIR [--require N] PAGE.md...
--require N: fail unless at least N marked blocks were found over all pages (so removing the
markers cannot make the check pass vacuously). Exit status 0 when every block compiles.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

MARK = re.compile(r"^\s*<!--\s*compile:\s*(.*?)\s*-->\s*$")


def blocks(path):
    """(line number, marker argument, code) of each marked cpp block of a page."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    for i, line in enumerate(lines):
        m = MARK.match(line)
        if not m:
            continue
        if i + 1 >= len(lines) or lines[i + 1].strip() != "```cpp":
            out.append((i + 1, None, f"marker not followed by a ```cpp fence"))
            continue
        j = i + 2
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        out.append((i + 2, m.group(1), "\n".join(lines[i + 2 : j]) + "\n"))
    return out


def translation_unit(arg, code):
    if arg == "program":
        return code
    head = [l for l in code.split("\n") if l.lstrip().startswith("#include")]
    body = [l for l in code.split("\n") if not l.lstrip().startswith("#include")]
    params = "" if arg == "void" else arg
    return ("#include <cstdint>\n" + "\n".join(head) + "\n" +
            f"void tokchron_snippet({params}) {{\n" + "\n".join(body) + "\n}\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cxx", default="c++")
    ap.add_argument("--include", required=True)
    ap.add_argument("--require", type=int, default=1)
    ap.add_argument("pages", nargs="+")
    a = ap.parse_args()
    found, failed = 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for page in a.pages:
            for n, arg, code in blocks(page):
                found += 1
                if arg is None:
                    print(f"{page}:{n}: {code}")
                    failed += 1
                    continue
                src = os.path.join(tmp, f"snippet{found}.cpp")
                with open(src, "w", encoding="utf-8") as f:
                    f.write(translation_unit(arg, code))
                r = subprocess.run([a.cxx, "-std=c++17", "-fsyntax-only", "-I", a.include, src],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    failed += 1
                    print(f"{page}:{n}: the block does not compile as printed:\n{r.stderr}")
    if found < a.require:
        print(f"compile snippets: {found} marked block(s), at least {a.require} required")
        return 1
    print(f"compile snippets: {found} block(s) compiled, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
