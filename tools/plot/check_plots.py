#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks a `--plot DIR` directory (CI stage 50-plots):

  * every picture (NAME.gp) was rendered to a non-empty NAME.svg and a non-blank NAME.png;
  * headless Chromium loads DIR/index.html and every <img> on it loads (the page's own script
    writes "pictures loaded: K of N" into the DOM; --dump-dom reads it);
  * a headless Chromium screenshot of the page is not blank (many colours, not all background);
  * with --summary: the data files hold exactly the values the CLI printed in its JSON summary
    (<metrics>.<m>.pNN for ttft, tpot, itl, e2e and, when drawn, ttfa, matched to the data
    columns by run label);
  * with --reasoning-trace TRACE.jsonl: the token timeline draws reasoning apart from the answer:
    each drawn request's reasoning chunks in timeline.dat (kind 1) are its "reasoning" chunks in
    the trace (times and tokens), its reasoning span ends at its first answer chunk, the script
    plots them in the reasoning colour, and the rendered PNG has pixels of that colour.

Usage: check_plots.py DIR --screenshot OUT.png [--summary FILE.json [--label-field profile]
       [--runs-field runs] [--metrics-field summary.metrics]] [--expect NAME ...]
       [--reasoning-trace TRACE.jsonl]
Needs Debian's chromium and python3-pil. Exits non-zero with a message on the first failure.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

from PIL import Image

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def fail(msg):
    print("check_plots: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def chromium(args, timeout=120):
    exe = os.environ.get("CHROMIUM", "chromium")
    with tempfile.TemporaryDirectory(prefix="tokchron-chromium-") as profile:
        cmd = [exe] + CHROMIUM_FLAGS + ["--user-data-dir=" + profile] + args
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    if r.returncode != 0:
        fail("chromium exited %d: %s" % (r.returncode, r.stderr.decode(errors="replace")[-2000:]))
    return r.stdout.decode(errors="replace")


def not_blank(path, min_colours, min_ink):
    """The share of pixels unlike the most common colour, and the number of colours."""
    img = Image.open(path).convert("RGB")
    colours = img.getcolors(maxcolors=1 << 24)
    colours.sort(reverse=True)
    total = img.width * img.height
    ink = 1.0 - colours[0][0] / total
    if len(colours) < min_colours or ink < min_ink:
        fail("%s looks blank: %d colours, %.2f%% of pixels differ from the background"
             % (path, len(colours), ink * 100))
    return len(colours), ink


def read_dat(path):
    """The header labels and rows of a latency_<m>.dat file."""
    labels, rows = None, []
    with open(path) as f:
        for line in f:
            if line.startswith("# percent"):
                labels = shlex.split(line[1:])[2:]
            elif line.strip() and not line.startswith("#"):
                rows.append(line.split())
    if labels is None:
        fail(path + " has no header")
    return labels, rows


def field(obj, path):
    for part in path.split("."):
        obj = obj[part]
    return obj


def check_summary(d, summary_path, label_field, runs_field, metrics_field):
    with open(summary_path) as f:
        doc = json.load(f)
    if runs_field:
        doc = field(doc, runs_field)
    runs = doc if isinstance(doc, list) else [doc]
    compared = 0
    for metric in ("ttft", "tpot", "itl", "e2e", "ttfa"):
        path = os.path.join(d, "latency_%s.dat" % metric)
        if not os.path.exists(path):
            continue
        labels, rows = read_dat(path)
        by_percent = {float(r[0]): r for r in rows}
        for run in runs:
            label = str(run[label_field])
            if label not in labels:
                fail("%s has no column for %r (columns: %s)" % (path, label, labels))
            col = 2 + labels.index(label)
            stats = field(run, metrics_field)[metric]
            for key, want in stats.items():
                m = re.fullmatch(r"p(\d+(?:\.\d+)?)", key)
                if not m or want is None:
                    continue
                row = by_percent.get(float(m.group(1)))
                if row is None:
                    fail("%s has no row for %s" % (path, key))
                got = float(row[col])
                if got != want and abs(got - want) > 1e-12 * max(abs(want), 1e-300):
                    fail("%s %s %s: data file %r, printed summary %r"
                         % (path, label, key, got, want))
                compared += 1
    if compared == 0:
        fail("no printed percentile was compared with the data files")
    print("check_plots: %d printed percentiles equal the data files" % compared)


REASONING_RGB = (0x8E, 0x44, 0xAD)  # tools/plot/common.hpp reasoning_color


def read_blocks(path):
    """The data blocks of a gnuplot data file (separated by two blank lines), as rows."""
    blocks, cur, blank = [], [], 0
    with open(path) as f:
        for line in f:
            if not line.strip():
                blank += 1
                if blank == 2:
                    blocks.append(cur)
                    cur = []
                continue
            blank = 0
            if not line.startswith("#"):
                cur.append(line.split())
    blocks.append(cur)
    return blocks


def check_reasoning(d, trace_path):
    """The timeline's reasoning drawing matches the trace's reasoning chunks."""
    trace = {}
    with open(trace_path) as f:
        for line in f:
            if line.strip():
                rec = json.loads(line)
                trace[str(rec.get("id"))] = rec
    gp = open(os.path.join(d, "timeline.gp"), encoding="utf-8").read()
    m = re.search(r"set ytics \((.*)\)\n", gp)
    if not m:
        fail("timeline.gp has no row labels")
    rows = {}
    for label, row in re.findall(r"'((?:[^']|'')*)' (\d+)", m.group(1)):
        idm = re.search(r"\(([^()]*)\): \d+ tokens", label)
        if idm:  # the executor names its requests "request N"; the trace's id is N
            rid = idm.group(1)
            rows[int(row)] = rid[len("request "):] if rid.startswith("request ") else rid
    spans, chunks = read_blocks(os.path.join(d, "timeline.dat"))[:2]
    drawn = 0
    for row, rid in sorted(rows.items()):
        rec = trace.get(rid)
        if rec is None:
            fail("timeline row %d names request %r, which is not in %s" % (row, rid, trace_path))
        t0 = rec.get("arrival", rec["send"])
        want = [(round(c[0] - t0, 9), c[1]) for c in rec["chunks"]
                if len(c) > 2 and c[2] == "reasoning" and c[1] > 0]
        got = [(round(float(c[1]), 9), int(c[2])) for c in chunks
               if c[0] == str(row) and c[3] == "1"]
        if [g[1] for g in got] != [w[1] for w in want] or any(
                abs(g[0] - w[0]) > 1e-6 for g, w in zip(got, want)):
            fail("timeline row %d (%s): reasoning chunks %s, the trace has %s"
                 % (row, rid, got[:5], want[:5]))
        answers = [c[0] - t0 for c in rec["chunks"]
                   if c[1] > 0 and (len(c) < 3 or c[2] == "text")]
        span = [s for s in spans if s[0] == str(row) and s[3] == "5"]
        if want and answers and want[0][0] < answers[0]:
            if len(span) != 1 or abs(float(span[0][2]) - answers[0]) > 1e-6:
                fail("timeline row %d (%s): the reasoning span %s does not end at the first "
                     "answer token (%.6f s)" % (row, rid, span, answers[0]))
        drawn += len(got)
    if drawn == 0:
        fail("the timeline draws no reasoning chunk (is the run's --reasoning-fraction 0?)")
    spectrum = open(os.path.join(d, "spectrum.gp"), encoding="utf-8").read()
    if "'latency_ttfa.dat'" not in spectrum or "TTFA" not in spectrum:
        fail("spectrum.gp does not draw the time to first answer token")
    if "reasoning token chunk" not in gp or "#8e44ad" not in gp:
        fail("timeline.gp does not plot reasoning chunks in the reasoning colour")
    img = Image.open(os.path.join(d, "timeline.png")).convert("RGB")
    purple = sum(n for n, c in img.getcolors(maxcolors=1 << 24)
                 if all(abs(a - b) <= 8 for a, b in zip(c, REASONING_RGB)))
    if purple < 50:
        fail("timeline.png has %d pixels of the reasoning colour" % purple)
    print("check_plots: the timeline draws %d reasoning chunks of %d requests as the trace has "
          "them (%d reasoning-coloured pixels)" % (drawn, len(rows), purple))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--summary")
    ap.add_argument("--label-field", default="profile")
    ap.add_argument("--runs-field", help="where the list of runs is (e.g. runs)")
    ap.add_argument("--metrics-field", default="metrics", help="a run's metrics (summary.metrics)")
    ap.add_argument("--expect", nargs="*", default=[], help="pictures that must be present")
    ap.add_argument("--reasoning-trace", help="the trace the timeline's reasoning must match")
    a = ap.parse_args()
    d = os.path.abspath(a.dir)
    index = os.path.join(d, "index.html")
    if not os.path.isfile(index):
        fail(index + " is missing")
    names = sorted(f[:-3] for f in os.listdir(d) if f.endswith(".gp"))
    if not names:
        fail("no gnuplot script in " + d)
    for e in a.expect:
        if e not in names:
            fail("picture %s is missing (have: %s)" % (e, ", ".join(names)))
    for n in names:
        svg, png = os.path.join(d, n + ".svg"), os.path.join(d, n + ".png")
        if not os.path.isfile(svg) or os.path.getsize(svg) < 1000:
            fail(svg + " is missing or empty")
        not_blank(png, 16, 0.01)
    html = open(index, encoding="utf-8").read()
    imgs = len(re.findall(r"<img ", html))
    if imgs != len(names):
        fail("index.html shows %d images for %d pictures" % (imgs, len(names)))

    dom = chromium(["--dump-dom", "file://" + index])
    m = re.search(r"pictures loaded: (\d+) of (\d+)", dom)
    if not m:
        fail("the page's image check did not run (no 'pictures loaded' in the DOM)")
    ok, total = int(m.group(1)), int(m.group(2))
    if total != len(names) or ok != total:
        fail("Chromium loaded %d of %d images (%d pictures): %s"
             % (ok, total, len(names), dom[m.start():m.start() + 300]))
    print("check_plots: Chromium loaded all %d images of index.html" % total)

    chromium(["--screenshot=" + os.path.abspath(a.screenshot), "--window-size=1280,2000",
              "file://" + index])
    colours, ink = not_blank(a.screenshot, 64, 0.03)
    print("check_plots: screenshot %s: %d colours, %.1f%% non-background"
          % (a.screenshot, colours, ink * 100))

    if a.summary:
        check_summary(d, a.summary, a.label_field, a.runs_field, a.metrics_field)
    if a.reasoning_trace:
        check_reasoning(d, a.reasoning_trace)
    print("check_plots: %s OK (%s)" % (d, ", ".join(names)))


if __name__ == "__main__":
    main()
