#!/usr/bin/env python3
"""Includes inside include/tokchron/ flow one way (CI stage 06).

LAYERS below is the library's layer order, lowest first, written here once. The README's flow
sentence ("Includes flow one way, lowest first: ...") must name the layers in this order; the
check reads it, so the README cannot drift from the code. A header may include headers of its own layer and of lower layers; an
include of a higher layer's header fails the check, and so does a header or folder under
include/tokchron/ that no layer names (a new folder takes its place in LAYERS first).

Usage: check_layers.py [ROOT]   (ROOT: the repository, default the current directory)
"""
import pathlib
import re
import sys

# Lowest first. An entry ending in "/" is a folder (everything below it); otherwise a file at
# the top of include/tokchron/. One line, one layer.
LAYERS = [
    ["version.hpp", "config.hpp"],  # the version and the build switches
    ["detail/"],  # tiny shared internals (atomics)
    ["clock.hpp"],  # clocks and time conversions
    ["quantile/"],  # estimators: exact, log histogram, windowed, P2
    ["timeline/"],  # one request's events
    ["metrics/"],  # the definitions: per-request metrics, profiles, run summaries
    ["collect/"],  # many writers' sharded collection
    ["sla/"],  # objectives, goodput, verdicts, capacity
    ["io/"],  # trace files
    ["exposition/"],  # the exposition format: snapshot data, bucket layouts
    ["live/"],  # a running server's live metrics
    ["export/"],  # writers and adaptors: Prometheus text, prometheus-cpp, OTLP, JSON, CSV
    ["distributions.hpp"],  # the aggregation model's entry point: every mode by name
    ["record.hpp", "record_instantiate.hpp"],  # the one-include recording front end
    ["testing.hpp"],  # scripted timelines for tests
    ["testing/"],  # doctest and Catch2 adaptors
    ["tokchron.hpp"],  # the umbrella
]
INCLUDE = re.compile(r'^\s*#\s*include\s*"tokchron/([^"]+)"', re.M)


def layer_of(rel):
    """The layer index of a path relative to include/tokchron/, or None."""
    for i, layer in enumerate(LAYERS):
        for entry in layer:
            if (entry.endswith("/") and rel.startswith(entry)) or rel == entry:
                return i
    return None


def name(i):
    return " ".join(LAYERS[i])


def readme_problems(root):
    """What is wrong with the README's flow sentence: a name that is no layer, or layers out of
    order. Each name is a layer's file without ".hpp" or its folder without "/" (either spelling),
    and the names must climb LAYERS; every layer but detail/ and the umbrella is named."""
    text = (root / "README.md").read_text(encoding="utf-8")
    m = re.search(r"Includes flow one way, lowest first:(.*?)(?:\(|;|\.\s)", text, re.S)
    if not m:
        return ["README.md: no sentence 'Includes flow one way, lowest first: ...'"]
    names = [n.strip() for n in m.group(1).replace("\n", " ").split(",") if n.strip()]
    out, seen, last = [], set(), -1
    for n in names:
        hits = [i for i, layer in enumerate(LAYERS) for e in layer
                if e in (n, n + ".hpp", n + "/")]
        if not hits:
            out.append(f"README.md: the flow sentence names '{n}', which is no layer")
            continue
        if min(hits) < last:
            out.append(f"README.md: the flow sentence puts '{n}' after a higher layer")
        last = max(last, max(hits))
        seen.update(hits)
    skip = {layer_of("detail/"), layer_of("tokchron.hpp")}
    for i in range(len(LAYERS)):
        if i not in seen and i not in skip:
            out.append(f"README.md: the flow sentence leaves out layer '{name(i)}'")
    return out


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    base = root / "include" / "tokchron"
    files = sorted(base.rglob("*.hpp"))
    bad = 0
    for problem in readme_problems(root):
        print(problem)
        bad += 1
    for f in files:
        rel = f.relative_to(base).as_posix()
        mine = layer_of(rel)
        if mine is None:
            print(f"include/tokchron/{rel}: in no layer (add its folder to LAYERS in {__file__})")
            bad += 1
            continue
        text = f.read_text(encoding="utf-8")
        for m in INCLUDE.finditer(text):
            target = m.group(1)
            theirs = layer_of(target)
            line = text.count("\n", 0, m.start()) + 1
            if theirs is None:
                print(f"include/tokchron/{rel}:{line}: includes tokchron/{target}, in no layer")
                bad += 1
            elif theirs > mine:
                print(f"include/tokchron/{rel}:{line}: includes tokchron/{target}: layer "
                      f"'{name(mine)}' is below '{name(theirs)}', so the include runs against the "
                      f"flow")
                bad += 1
    print(f"layer check: {len(files)} headers and the README's flow sentence, {bad} problems "
          f"({' < '.join(name(i) for i in range(len(LAYERS)))})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
