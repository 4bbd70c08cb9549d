#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ctest's run of server-integration, without Prometheus: a short run, one scrape of /metrics
over HTTP once the run is done, and the scraped totals compared with the run's trace.

  scrape_test.py SERVER-INTEGRATION-BINARY WORKDIR

Checked exactly: requests by finished_reason, rejections, prompt and generation tokens,
preemptions, the counts of the TTFT, ITL (one per step after the first) and E2E histograms;
E2E's sum within 1e-6 relative (the trace prints times in seconds, the server sums
nanosecond differences); the running and waiting gauges back at 0. Exit status 0 or 1.
"""
import os
import re
import subprocess
import sys
import time
import urllib.request

from check_dashboard import VLLM_REASON, read_trace, reason_of


def parse_exposition(text):
    """{(name, frozenset(labels)): value} of a Prometheus text exposition."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([^\s{]+)(?:\{(.*)\})?\s+(\S+)$', line)
        if not m:
            raise ValueError(f"unparsable line: {line}")
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def main():
    binary, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    port_file, trace = os.path.join(work, "port"), os.path.join(work, "trace.jsonl")
    log = os.path.join(work, "server.log")
    for f in (port_file, trace):
        if os.path.exists(f):
            os.remove(f)
    with open(log, "w") as out:
        server = subprocess.Popen([binary, "--port", "0", "--port-file", port_file,
                                   "--requests", "200", "--threads", "3", "--rate", "2000",
                                   "--seed", "3", "--linger", "60", "--names", "vllm",
                                   "--model", "m", "--trace-out", trace],
                                  stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while "run done" not in open(log).read():
            if server.poll() is not None or time.time() > deadline:
                print(open(log).read())
                print("FAIL: the server did not finish its run")
                return 1
            time.sleep(0.05)
        port = int(open(port_file).read())
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            scraped = parse_exposition(r.read().decode())
    finally:
        server.terminate()
        server.wait(timeout=30)

    records = read_trace(trace)
    tag = {("model_name", "m"), ("engine", "0")}

    def get(name, **extra):
        return scraped.get((name, frozenset(tag | set(extra.items()))))

    want = {}
    reasons = {}
    rejected = 0
    for r in records:
        why = reason_of(r)
        if why == "rejected":
            rejected += 1
        else:
            reasons[VLLM_REASON[why]] = reasons.get(VLLM_REASON[why], 0) + 1
    scheduled = [r for r in records if "scheduled" in r]
    token_chunks = [[c for c in r["chunks"] if c[1] > 0] for r in records]
    want["vllm:generation_tokens_total"] = sum(c[1] for cs in token_chunks for c in cs)
    want["vllm:prompt_tokens_total"] = sum(r.get("prompt_tokens", 0)
                                           for r, cs in zip(records, token_chunks) if cs)
    want["vllm:num_preemptions_total"] = sum(len(r.get("preempted", [])) for r in records)
    want["vllm:time_to_first_token_seconds_count"] = sum(1 for cs in token_chunks if cs)
    want["vllm:inter_token_latency_seconds_count"] = sum(max(0, len(cs) - 1) for cs in token_chunks)
    want["vllm:e2e_request_latency_seconds_count"] = len(scheduled)
    want["tokchron_rejected_requests_total"] = rejected
    want["vllm:num_requests_running"] = 0
    want["vllm:num_requests_waiting"] = 0
    failures = 0
    for name, value in sorted(want.items()):
        got = get(name)
        good = got == value
        failures += not good
        print(f"{'ok  ' if good else 'FAIL'} {name}: scraped {got}, trace {value}")
    for reason, value in sorted(reasons.items()):
        got = get("vllm:request_success_total", finished_reason=reason)
        good = got == value
        failures += not good
        print(f"{'ok  ' if good else 'FAIL'} vllm:request_success_total{{{reason}}}: "
              f"scraped {got}, trace {value}")
    e2e = sum(r["end"] - r.get("arrival", r["send"]) for r in scheduled)
    got = get("vllm:e2e_request_latency_seconds_sum")
    good = got is not None and abs(got - e2e) <= 1e-6 * e2e
    failures += not good
    print(f"{'ok  ' if good else 'FAIL'} vllm:e2e_request_latency_seconds_sum: scraped {got}, "
          f"trace {e2e}")
    print(f"{len(records)} requests; {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
