#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tokchron-bench's resident memory at one request (docs/tools/tokchron-bench.md, "Memory"):
the client sends one streamed request to `batching-executor serve` (sim backend, real time) and
prints its default report; its peak resident set must stay under BOUND_KIB.

The peak is the kernel's high-water mark of the client's resident set, measured by the small
launcher PEAK_RSS (peak_rss.cpp): VmHWM in /proc/PID/status read every millisecond while it runs,
and the same counter at its exit as wait4 returns it (ru_maxrss, which no poll can miss). Each
run prints both; the verdict is on the larger. With --runs N it runs N times and prints the
spread (how the bound in the docs was measured).

Usage: resident_memory.py PEAK_RSS EXECUTOR BENCH WORKDIR BOUND_KIB [--runs N]
Exit codes: 0 within the bound, 1 over it or a run failed, 77 without /proc (not Linux)."""
import argparse
import os
import re
import subprocess
import sys
import time


def serve_port(log, proc):
    """The port `serve` printed ("listening on http://127.0.0.1:PORT"), waiting up to 30 s."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(log, encoding="utf-8", errors="replace") as f:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", f.read())
        if m:
            return m.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    with open(log, encoding="utf-8", errors="replace") as f:
        sys.stderr.write("serve did not start:\n" + f.read())
    return None


def one_run(probe, exe, bench, workdir, i):
    """(VmHWM polled, ru_maxrss) of one client run in KiB, or None when it failed."""
    log = os.path.join(workdir, f"serve{i}.out")
    with open(log, "w", encoding="utf-8") as out:
        server = subprocess.Popen([exe, "serve", "--port", "0", "--max-requests", "1"],
                                  stdout=out, stderr=subprocess.STDOUT)
    try:
        port = serve_port(log, server)
        if port is None:
            return None
        report = os.path.join(workdir, f"report{i}.txt")
        with open(report, "w", encoding="utf-8") as out:
            run = subprocess.run(
                [probe, bench, "--url", f"http://127.0.0.1:{port}", "--model", "tokchron-sim",
                 "--users", "1", "--max-requests", "1", "--prompt-len", "fixed:100",
                 "--output-len", "fixed:50", "--request-timeout", "60", "--progress", "never"],
                stdout=out, stderr=subprocess.STDOUT, check=False, timeout=90)
        with open(report, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if run.returncode != 0:
            sys.stderr.write(f"run {i}: tokchron-bench exited {run.returncode}:\n{text}")
            return None
        if not re.search(r"^requests\s+1\b", text, re.M) or not re.search(
                r"^failed\s+0\b", text, re.M):
            sys.stderr.write(f"run {i}: the report does not show one request, none failed:\n"
                             + text)
            return None
        m = re.search(r"^vmhwm_polled_kib=(\d+) peak_kib=(\d+) launcher_kib=(\d+)$", text, re.M)
        if not m:
            sys.stderr.write(f"run {i}: no measurement from {probe}:\n{text}")
            return None
        polled, peak, launcher = (int(g) for g in m.groups())
        if peak <= launcher:
            sys.stderr.write(f"run {i}: the client's peak ({peak} KiB) is not above the "
                             f"launcher's ({launcher} KiB): it cannot be told apart\n")
            return None
        return polled, peak
    finally:
        if server.poll() is None:
            server.terminate()
        server.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("peak_rss")
    ap.add_argument("executor")
    ap.add_argument("bench")
    ap.add_argument("workdir")
    ap.add_argument("bound_kib", type=int)
    ap.add_argument("--runs", type=int, default=1)
    a = ap.parse_args()
    if not os.path.exists("/proc/self/status"):
        print("skipped: no /proc")
        return 77
    os.makedirs(a.workdir, exist_ok=True)
    peaks = []
    for i in range(a.runs):
        got = one_run(a.peak_rss, a.executor, a.bench, a.workdir, i)
        if got is None:
            return 1
        polled, peak = got
        print(f"run {i}: VmHWM polled {polled} KiB, at exit (ru_maxrss) {peak} KiB")
        peaks.append(max(polled, peak))
    print(f"peak resident set over {len(peaks)} run(s): min {min(peaks)} KiB, "
          f"max {max(peaks)} KiB; bound {a.bound_kib} KiB")
    if max(peaks) > a.bound_kib:
        print(f"FAIL: tokchron-bench held {max(peaks)} KiB at one request, over the bound of "
              f"{a.bound_kib} KiB (docs/tools/tokchron-bench.md, Memory)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
