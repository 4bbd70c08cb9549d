#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ctest's run of server-integration, without Prometheus: short runs, one per inclusion policy
(vLLM's names under `completed` and the default `scheduled`, tokchron's under `all`), each
scraped once over HTTP after the run and its final exposition (--dump-metrics: the text
tokchron::to_prometheus writes for a server's own GET /metrics) kept.

  scrape_test.py SERVER-INTEGRATION-BINARY WORKDIR [TOKCHRON-REPORT-BINARY]

Checked exactly, on the scheduled run's scrape: requests by finished_reason, rejections, prompt
and generation tokens, preemptions, the counts of the TTFT, ITL (one per step after the first)
and E2E histograms; E2E's sum within 1e-6 relative (prometheus-cpp prints it with 6 decimals);
the running and waiting gauges back at 0. With the report binary, on every run: the exposition
equals `tokchron-report --inclusion X` on the run's trace (check_dashboard.check_report_equals:
every histogram's count and every counter exactly, sums within the summation bound). Exit
status 0 or 1.
"""
import os
import re
import subprocess
import sys
import time
import urllib.request

from check_dashboard import VLLM_REASON, Checker, check_report_equals, read_trace, reason_of
from check_dashboard import report as run_report


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


def serve(binary, work, names, inclusion):
    """One short run; returns (the HTTP scrape, the dumped exposition, the trace path)."""
    d = os.path.join(work, f"{names}-{inclusion or 'default'}")
    os.makedirs(d, exist_ok=True)
    port_file, trace = os.path.join(d, "port"), os.path.join(d, "trace.jsonl")
    dump, log = os.path.join(d, "metrics.prom"), os.path.join(d, "server.log")
    for f in (port_file, trace, dump):
        if os.path.exists(f):
            os.remove(f)
    args = [binary, "--port", "0", "--port-file", port_file, "--requests", "200", "--threads",
            "3", "--rate", "2000", "--seed", "3", "--linger", "60", "--names", names, "--model",
            "m", "--trace-out", trace, "--dump-metrics", dump]
    if inclusion:
        args += ["--inclusion", inclusion]
    with open(log, "w") as out:
        server = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while "run done" not in open(log).read():
            if server.poll() is not None or time.time() > deadline:
                print(open(log).read())
                raise RuntimeError("the server did not finish its run")
            time.sleep(0.05)
        port = int(open(port_file).read())
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            scraped = parse_exposition(r.read().decode())
    finally:
        server.terminate()
        server.wait(timeout=30)
    with open(dump, encoding="utf-8") as f:
        dumped = parse_exposition(f.read())
    return scraped, dumped, trace


def check_scrape(c, scraped, records):
    """The scheduled run's HTTP scrape against the trace, with vLLM's names."""
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
    for name, value in sorted(want.items()):
        c.ok(get(name) == value, f"{name}: scraped {get(name)}, trace {value}")
    for reason, value in sorted(reasons.items()):
        got = get("vllm:request_success_total", finished_reason=reason)
        c.ok(got == value, f"vllm:request_success_total{{{reason}}}: scraped {got}, trace {value}")
    e2e = sum(r["end"] - r.get("arrival", r["send"]) for r in scheduled)
    got = get("vllm:e2e_request_latency_seconds_sum")
    c.ok(got is not None and abs(got - e2e) <= 1e-6 * e2e,
         f"vllm:e2e_request_latency_seconds_sum: scraped {got}, trace {e2e}")


def main():
    binary, work = sys.argv[1], sys.argv[2]
    report = sys.argv[3] if len(sys.argv) > 3 else None
    os.makedirs(work, exist_ok=True)
    c = Checker()
    # (names, --inclusion given to the server, the policy it then has)
    for names, given, policy in [("vllm", None, "scheduled"), ("vllm", "completed", "completed"),
                                 ("tokchron", "all", "all")]:
        print(f"--- --names {names} --inclusion {given or '(default)'}")
        try:
            scraped, dumped, trace = serve(binary, work, names, given)
        except RuntimeError as e:
            c.ok(False, str(e))
            continue
        records = read_trace(trace)
        print(f"{len(records)} requests")
        if given is None:
            check_scrape(c, scraped, records)
        if report is None:
            continue
        tag = {("model_name", "m")} | ({("engine", "0")} if names == "vllm" else set())

        def value(family, **labels):
            want = tag | set(labels.items())
            return sum(v for (n, ls), v in dumped.items() if n == family and want <= ls)

        # tokchron's writer prints 16 significant digits: half a unit of the 16th.
        check_report_equals(c, value, run_report(report, trace, policy), names, printed_rel=5e-16)
    if report is None:
        print("(no tokchron-report binary given: the report comparison was not run)")
    print(f"{c.failures} failure(s)")
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
