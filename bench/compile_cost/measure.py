#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Compile cost per translation unit of tokchron's recording header and of its umbrella header.

Compiles each probe in this folder with `CXX -O2 -std=c++17 -c` (CXX defaults to g++) and
reports, for each:
  - with --instructions, the instructions the compiler, the assembler and the driver execute
    (valgrind's cachegrind without cache simulation, summed over the processes; `-pipe`, so no
    temporary file name enters the count): one compilation per probe, the same count on every
    run of the same tree whatever else the machine does;
  - otherwise CPU seconds (user + system of the compiler and the assembler it runs), the
    minimum over --runs compilations, the probes taking turns (baseline, record, ... then
    again);
  - preprocessed lines (`CXX -E`, line markers included, as `wc -l` counts them);
  - the standard headers it reaches (`CXX -H`), as the top-level names of the C++ library's
    include directory (`chrono`, `vector`, ...).

Probes:
  baseline         baseline.cpp: <chrono> <vector> <string> <optional> and an empty main
  timeline+calls   timeline.cpp: request_timeline.hpp + canonical.hpp and the timeline calls
  record.hpp       record_include.cpp: tokchron/record.hpp included, nothing called
  record.hpp+calls record.cpp: tokchron/record.hpp and a server's recording calls (timeline
                   and live metrics, once per event), header-only (every call compiled here)
  separate+calls   record.cpp with -DTOKCHRON_SEPARATE_INSTANTIATION: the same calls in the
                   documented mode for hot files, where the default instantiations are compiled
                   once, in the one file of the program that includes record_instantiate.hpp
  instances        instances.cpp: record_instantiate.hpp, the one file per program that the
                   separate mode needs (its cost is paid once, not per hot file)
  umbrella+calls   record.cpp with -DTOKCHRON_COMPILE_COST_UMBRELLA: tokchron/tokchron.hpp

Why the minimum: a compilation does the same work every time, and whatever else the machine
does (other processes, cache and TLB misses, frequency changes) can only add CPU time to it,
never take any away. The minimum of N runs is therefore the estimate nearest the true cost, and
it only moves down as N grows. Taking turns makes a lasting disturbance (a parallel build) hit
every probe alike instead of one probe's runs.

Compile time is not a runtime micro-benchmark: it is a property of the compiler reading the
headers, so it is measured by running the compiler, not with Google Benchmark.

Why instructions for the check: CPU time moves between machines and runs by more than any margin
that would still notice the header growing (the same tree read 4.72x and 4.84x the baseline on
one idle machine), so a ceiling on it gives a verdict that depends on the run. The instruction
count of a compilation depends only on the compiler, its input and its arguments: a ceiling on
it gives the same verdict on every run of the same tree, and it tracks CPU time closely for a
compiler (the two ratios are printed side by side in docs/testing.md).

--check (which needs --instructions) exits 1 when record.hpp reaches a standard header that
neither the baseline reaches nor allowed_headers.txt lists, or any header of FORBIDDEN; or when
the record.hpp probe costs more than --max-ratio times the baseline's instructions, the
record.hpp+calls probe more than --max-calls-ratio times, or the separate+calls probe more than
--max-separate-ratio times. Without --all, --instructions counts only the probes the check
needs (the others cost about 22 baselines under valgrind, the checked ones 8).
"""

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
INCLUDE = os.path.join(ROOT, "include")

# Never in the recording header, whatever the baseline reaches: streams, threads and locks.
FORBIDDEN = {
    "iostream", "istream", "ostream", "sstream", "fstream", "iomanip", "streambuf", "locale",
    "thread", "mutex", "shared_mutex", "condition_variable", "future", "regex", "filesystem",
}

PROBES = [
    ("baseline", "baseline.cpp", []),
    ("timeline+calls", "timeline.cpp", []),
    ("record.hpp", "record_include.cpp", []),
    ("record.hpp+calls", "record.cpp", []),
    ("separate+calls", "record.cpp", ["-DTOKCHRON_SEPARATE_INSTANTIATION"]),
    ("instances", "instances.cpp", ["-DTOKCHRON_SEPARATE_INSTANTIATION"]),
    ("umbrella+calls", "record.cpp", ["-DTOKCHRON_COMPILE_COST_UMBRELLA"]),
]
UMBRELLA = "umbrella+calls"


def compile_flags(cxx, src, extra):
    return [cxx, "-O2", "-std=c++17", "-I", INCLUDE] + extra + [os.path.join(HERE, src)]


def cpu_seconds(cmd):
    """User + system CPU seconds of `cmd` and every process it waited for."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit("compile failed: %s\n%s" % (" ".join(cmd), err.decode(errors="replace")))
    return usage.ru_utime + usage.ru_stime


def instructions(cmd):
    """Instructions executed by `cmd` and every process it starts (valgrind cachegrind)."""
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "log")
        run = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                              "--cachegrind-out-file=/dev/null", "--trace-children=yes",
                              "--log-file=" + log] + cmd,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        with open(log, errors="replace") as f:
            text = f.read()
    if run.returncode != 0:
        sys.exit("compile failed under valgrind: %s\n%s%s" %
                 (" ".join(cmd), run.stderr.decode(errors="replace"), text))
    counts = [int(m.replace(",", "")) for m in re.findall(r"I\s+refs:\s+([\d,]+)", text)]
    if not counts:
        sys.exit("valgrind printed no instruction count for: %s\n%s" % (" ".join(cmd), text))
    return sum(counts)


def preprocessed_lines(cxx, src, extra):
    out = subprocess.run(compile_flags(cxx, src, extra) + ["-E"], check=True,
                         stdout=subprocess.PIPE).stdout
    return out.count(b"\n")


# A header of the C++ standard library: a file directly in a directory named
# .../c++/<version>/ (libstdc++: /usr/include/c++/12/chrono), without an extension.
STD_HEADER = re.compile(r"/c\+\+/(?:v\d+|\d+[^/]*)/([a-z_]+)$")


def std_headers(cxx, src, extra):
    run = subprocess.run(compile_flags(cxx, src, extra) + ["-H", "-E", "-o", os.devnull],
                         check=True, stderr=subprocess.PIPE, text=True)
    found = set()
    for line in run.stderr.splitlines():
        m = re.match(r"^\.+ (.*)$", line)
        if not m:
            continue
        h = STD_HEADER.search(os.path.normpath(m.group(1)))
        if h:
            found.add(h.group(1))
    return found


def read_allowed():
    allowed = set()
    with open(os.path.join(HERE, "allowed_headers.txt")) as f:
        for line in f:
            name = line.split("#", 1)[0].strip()
            if name:
                allowed.add(name)
    return allowed


CHECKED = ("record.hpp", "record.hpp+calls", "separate+calls")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cxx", default=os.environ.get("CXX") or "g++")
    ap.add_argument("--instructions", action="store_true",
                    help="count instructions under valgrind (one run per probe, exact) instead "
                    "of timing CPU seconds")
    ap.add_argument("--all", action="store_true",
                    help="with --instructions, count the instances and umbrella probes too")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="with --instructions, probes counted at once (counts do not depend on it)")
    ap.add_argument("--runs", type=int, default=7, help="timed compilations of each small probe")
    ap.add_argument("--umbrella-runs", type=int, default=3,
                    help="timed compilations of the umbrella probe (it costs about 10x the others)")
    ap.add_argument("--check", action="store_true",
                    help="apply the include and ratio checks (needs --instructions)")
    ap.add_argument("--max-ratio", type=float, default=1.3,
                    help="limit of record.hpp (included, nothing called) / baseline")
    ap.add_argument("--max-calls-ratio", type=float, default=1.3,
                    help="limit of record.hpp+calls / baseline")
    ap.add_argument("--max-separate-ratio", type=float, default=1.3,
                    help="limit of separate+calls / baseline (the documented mode for hot files)")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    if args.check and not args.instructions:
        ap.error("--check gives verdicts on instruction counts only: add --instructions "
                 "(CPU seconds vary between runs by more than the ceilings' margins)")

    version = subprocess.run([args.cxx, "--version"], check=True, stdout=subprocess.PIPE,
                             text=True).stdout.splitlines()[0]
    start = time.monotonic()
    if args.instructions:
        probes = [p for p in PROBES
                  if args.all or p[0] == "baseline" or p[0] in CHECKED]
        cmds = [compile_flags(args.cxx, src, extra) + ["-pipe", "-c", "-o", os.devnull]
                for _, src, extra in probes]
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            counts = list(pool.map(instructions, cmds))
        cost = {p[0]: c for p, c in zip(probes, counts)}
    else:
        probes = PROBES
        times = {name: [] for name, _, _ in PROBES}
        for r in range(max(args.runs, args.umbrella_runs)):
            for name, src, extra in PROBES:
                limit = args.umbrella_runs if name == UMBRELLA else args.runs
                if r < limit:
                    times[name].append(cpu_seconds(
                        compile_flags(args.cxx, src, extra) + ["-c", "-o", os.devnull]))
        cost = {name: min(t) for name, t in times.items()}
    rows = []
    headers = {}
    for name, src, extra in PROBES:
        headers[name] = std_headers(args.cxx, src, extra)
        row = {"probe": name, "lines": preprocessed_lines(args.cxx, src, extra),
               "std_headers": len(headers[name])}
        if name in cost:
            row["instructions" if args.instructions else "cpu_s"] = cost[name]
        if not args.instructions:
            row["cpu_s_max"] = max(times[name])
            row["runs"] = len(times[name])
        rows.append(row)
    base = rows[0]
    key = "instructions" if args.instructions else "cpu_s"
    for row in rows:
        if key in row:
            row["ratio"] = row[key] / base[key]
        row["lines_ratio"] = row["lines"] / base["lines"]

    print("compile cost per translation unit: %s -O2 -std=c++17 -c (%s)" % (args.cxx, version))
    if args.instructions:
        print("instructions = executed by the driver, compiler and assembler (valgrind "
              "cachegrind), one run: exact")
        print("%-17s %15s %11s %7s %12s" %
              ("probe", "instructions", "prepr.lines", "ratio", "std headers"))
        for row in rows:
            if "ratio" in row:
                print("%-17s %15d %11d %6.2fx %12d" % (row["probe"], row["instructions"],
                                                       row["lines"], row["ratio"],
                                                       row["std_headers"]))
            else:
                print("%-17s %15s %11d %7s %12d" % (row["probe"], "(not counted)", row["lines"],
                                                    "", row["std_headers"]))
    else:
        print("CPU s = min of user+sys over the runs (the max shows the noise)")
        print("%-17s %8s %8s %5s %11s %7s %12s" %
              ("probe", "CPU s", "max s", "runs", "prepr.lines", "ratio", "std headers"))
        for row in rows:
            print("%-17s %8.3f %8.3f %5d %11d %6.2fx %12d" %
                  (row["probe"], row["cpu_s"], row["cpu_s_max"], row["runs"], row["lines"],
                   row["ratio"], row["std_headers"]))
    extra_headers = sorted(headers["record.hpp+calls"] - headers["baseline"])
    print("standard headers record.hpp adds to the baseline's: " + (" ".join(extra_headers) or
                                                                     "none"))
    umbrella_extra = sorted(headers[UMBRELLA] - headers["record.hpp+calls"])
    print("standard headers the umbrella adds to record.hpp's: " + " ".join(umbrella_extra))
    print("(measured in %.0f s)" % (time.monotonic() - start))

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"compiler": version, "measure": key, "rows": rows,
                       "record_extra_headers": extra_headers,
                       "umbrella_extra_headers": umbrella_extra}, f, indent=2)

    if not args.check:
        return 0
    failed = False
    allowed = read_allowed() | headers["baseline"]
    for name in CHECKED:
        bad = sorted(headers[name] & FORBIDDEN)
        if bad:
            print("FAIL: %s reaches %s (streams, threads and locks stay out of the recording "
                  "header)" % (name, " ".join(bad)))
            failed = True
        outside = sorted(headers[name] - allowed - FORBIDDEN)
        if outside:
            print("FAIL: %s reaches %s, outside the baseline's headers and "
                  "bench/compile_cost/allowed_headers.txt" % (name, " ".join(outside)))
            failed = True
    by_name = {row["probe"]: row for row in rows}
    for name, limit in (("record.hpp", args.max_ratio),
                        ("record.hpp+calls", args.max_calls_ratio),
                        ("separate+calls", args.max_separate_ratio)):
        row = by_name[name]
        if row["ratio"] > limit:
            print("FAIL: %s executes %.3fx the baseline's compiler instructions (%d / %d), "
                  "above %.2fx" % (name, row["ratio"], row[key], base[key], limit))
            failed = True
    if not failed:
        print("OK: record.hpp reaches only allowed standard headers; with the recording calls "
              "it executes %.3fx the baseline's compiler instructions with separate "
              "instantiation (limit %.2fx), %.3fx header-only (limit %.2fx); included alone "
              "%.3fx (limit %.2fx)" %
              (by_name["separate+calls"]["ratio"], args.max_separate_ratio,
               by_name["record.hpp+calls"]["ratio"], args.max_calls_ratio,
               by_name["record.hpp"]["ratio"], args.max_ratio))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
