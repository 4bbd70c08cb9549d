#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that tokchron-bench's view of a run and `batching-executor serve`'s agree
(docs/tools/tokchron-bench.md, "Client and server agree"; CI stage 47-bench-sweep).

Inputs: tokchron-bench's report (`--format json --profile canonical`, one JSON document per
sweep point, each after a `== NAME = V ==` line), its traces (one per point), the server's trace and a scrape
of the server's /metrics with vLLM names, taken after the run. The server also saw `--aborted`
requests that a client abandoned mid-stream, and bad requests that must be in none of them.

Exact: requests (report = client traces = server trace - aborted = the /metrics counter by
finish reason), every client request joined to one server record by id, prompt and output
tokens per request (client usage = client chunks = server chunks) and in the report and the
counters, reasoning tokens (client reasoning chunks = server reasoning chunks = both usages, and
the report's sum) and cached prompt tokens (client usage = server), the histogram counts, and
every bucket's cumulative count against the server trace's values. The live metrics have no
reasoning or prefix-cache counter; `vllm:generation_tokens_total` includes reasoning tokens.

Bounded: each request's client TTFT (and E2E) exceeds the server's by d = the client's send lag
+ connect and request transfer + the answer's way back (its bytes written, the loopback, the
client's wake-up), and 0 <= d. When every paired value differs by d in [0, D], every order
statistic, and so every linear-interpolated quantile, of the client differs from the server's
by [0, D]: the report's quantiles are checked against the server trace's within [0, max d],
and the P90 of d less each request's own send lag (the client's wait to be scheduled, which it
measures and reports) must be within --bound-ms: a client that stamps late adds its delay to most
requests, while a machine that stalls the client for a moment adds it to the few requests whose
answers arrive then (the largest d is printed, never gated). A histogram's quantile is only known
to its bucket: the server trace's exact quantile must lie in the bucket that holds its rank.
"""
import argparse
import json
import math
import re
import sys
from collections import defaultdict

TOL = 2e-6  # trace times are written to the microsecond or better; differences of two


def fail(msg):
    print("check_sweep: FAIL: " + msg)
    sys.exit(1)


def read_trace(path):
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except ValueError as e:
                    fail(f"{path}:{n}: {e}")
    return out


def first_token_time(r):
    for c in r["chunks"]:
        if c[1] > 0:
            return c[0]
    return None


def tokens(r):
    return sum(c[1] for c in r["chunks"])


def linear_quantile(values, p):
    """numpy's default ('linear', h = (n - 1) p), as the canonical profile computes it."""
    v = sorted(values)
    h = (len(v) - 1) * p / 100.0
    lo = math.floor(h)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (h - lo) * (v[hi] - v[lo])


def read_report(path):
    """{point: the report's JSON object} from the blocks after each `== NAME = V ==` line."""
    points, name, text = {}, None, []

    def close():
        if name is not None:
            try:
                points[name] = json.loads("".join(text))
            except ValueError as e:
                fail(f"{path}: the report of point {name} is not JSON: {e}")

    for line in open(path):
        m = re.match(r"^== (\S+) = (\S+) ==$", line.rstrip("\n"))
        if m:
            close()
            name, text = m.group(2), []
        else:
            text.append(line)
    close()
    return points


def read_metrics(path):
    """{(name, labels frozenset): value} of the Prometheus text exposition."""
    out = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$", line.strip())
        if not m:
            fail(f"/metrics line not understood: {line!r}")
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def series(metrics, name, **want):
    """Values of `name` whose labels include `want`, summed over the other labels."""
    total, found = 0.0, False
    for (n, labels), v in metrics.items():
        if n == name and all((k, w) in labels for k, w in want.items()):
            total += v
            found = True
    if not found:
        fail(f"/metrics has no {name} {want}")
    return total


def buckets(metrics, name):
    """[(le, cumulative count)] of a histogram, summed over its other labels, by le."""
    acc = defaultdict(float)
    for (n, labels), v in metrics.items():
        if n == name + "_bucket":
            le = dict(labels)["le"]
            acc[math.inf if le == "+Inf" else float(le)] += v
    if not acc:
        fail(f"/metrics has no histogram {name}")
    return sorted(acc.items())


def check_histogram(metrics, name, values, what):
    b = buckets(metrics, name)
    count = series(metrics, name + "_count")
    if count != len(values) or b[-1][1] != len(values):
        fail(f"{name}: count {count:g} (+Inf bucket {b[-1][1]:g}), server trace {len(values)} {what}")
    for le, cum in b:  # exact: the live histogram saw the same values the trace holds
        n = sum(1 for v in values if v <= le + 1e-9)
        if n != cum:
            fail(f"{name}: bucket le={le:g} counts {cum:g}, the server trace has {n} {what} <= it")
    total = series(metrics, name + "_sum")
    if abs(total - sum(values)) > 1e-6 * max(1.0, len(values)):
        fail(f"{name}: sum {total:.6f} s, server trace {sum(values):.6f} s")
    # Each quantile of the trace lies in the bucket that holds its rank (what a histogram knows).
    for p in (50, 90, 99):
        rank = math.ceil(p / 100.0 * len(values))
        lo, hi = 0.0, math.inf
        for le, cum in b:
            if cum >= rank:
                hi = le
                break
            lo = le
        v = sorted(values)[rank - 1]
        if not lo - 1e-9 <= v <= hi + 1e-9:
            fail(f"{name}: P{p} of the server trace {v:.6f} s outside its bucket ({lo:g}, {hi:g}]")
    print(f"  {name}: {len(values)} samples, every bucket equals the server trace")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", required=True)
    ap.add_argument("--server-trace", required=True)
    ap.add_argument("--metrics", required=True)
    ap.add_argument("--client-traces", nargs="+", required=True)
    ap.add_argument("--id-prefix", default="chatcmpl-",
                    help="the server trace's id is this + the client's X-Request-Id")
    ap.add_argument("--aborted", type=int, default=0, help="streams a client abandoned")
    ap.add_argument("--expect-reasoning", action="store_true",
                    help="some request must stream reasoning")
    ap.add_argument("--expect-cached", action="store_true",
                    help="some request must report cached prompt tokens")
    ap.add_argument("--bound-ms", type=float, default=50.0,
                    help="the largest client - server TTFT/E2E difference accepted")
    a = ap.parse_args()

    report = read_report(a.report)
    server = read_trace(a.server_trace)
    metrics = read_metrics(a.metrics)
    by_id = {}
    for r in server:
        if r.get("id") in by_id:
            fail(f"the server trace has id {r.get('id')} twice")
        by_id[r.get("id")] = r

    # ---- requests, exactly
    clients = {}
    for path in a.client_traces:
        m = re.search(r"\.[a-z_-]+=([^/]+)\.jsonl$", path)
        if not m:
            fail(f"{path}: not a sweep point's trace (FILE.NAME=V.jsonl)")
        clients[m.group(1)] = read_trace(path)
    if sorted(clients) != sorted(report):
        fail(f"report points {sorted(report)}, client traces {sorted(clients)}")
    n_client = 0
    for v, recs in clients.items():
        rep = report[v]
        if rep.get("requests") != len(recs) or rep.get("failed") != 0:
            fail(f"point {v}: report says {rep.get('requests')} requests, {rep.get('failed')} "
                 f"failed; its trace has {len(recs)}")
        if not all(r.get("ok", True) for r in recs):
            fail(f"point {v}: a request failed: {[r.get('error') for r in recs if not r.get('ok', True)]}")
        n_client += len(recs)
    finished = defaultdict(int)
    for r in server:
        finished[r.get("finish_reason", "stop")] += 1
    if len(server) != n_client + a.aborted or finished.get("aborted", 0) != a.aborted:
        fail(f"server trace: {len(server)} requests ({dict(finished)}); the client sent "
             f"{n_client} and {a.aborted} were abandoned")
    counted = series(metrics, "vllm:request_success_total")
    if counted != len(server) or series(metrics, "vllm:request_success_total",
                                        finished_reason="abort") != a.aborted or \
            series(metrics, "vllm:request_success_total",
                   finished_reason="length") != n_client:
        fail(f"vllm:request_success_total {counted:g} (abort "
             f"{series(metrics, 'vllm:request_success_total', finished_reason='abort'):g}), server "
             f"trace {len(server)} ({dict(finished)})")
    print(f"  requests: report = client traces = {n_client}; server trace = /metrics = "
          f"{len(server)} ({a.aborted} aborted); the bad requests are in neither")

    # ---- tokens, exactly; and the per-request differences
    d_ttft, d_e2e, lags = [], [], []
    totals = defaultdict(int)
    for v, recs in clients.items():
        srv_ttft, srv_e2e, d_point = [], [], []
        point = defaultdict(int)
        for c in recs:
            s = by_id.get(a.id_prefix + str(c.get("id")))
            if s is None:
                fail(f"client request {c.get('id')} (point {v}) is not in the server trace")
            st, ct = tokens(s), sum(1 for ch in c["chunks"] if ch[1] > 0)
            if not (c.get("usage_output_tokens") == st == ct == s.get("usage_output_tokens")):
                fail(f"request {c['id']}: client usage {c.get('usage_output_tokens')}, client "
                     f"text chunks {ct}, server tokens {st} (usage {s.get('usage_output_tokens')})")
            if c.get("prompt_tokens") != s.get("prompt_tokens"):
                fail(f"request {c['id']}: prompt tokens {c.get('prompt_tokens')} (client), "
                     f"{s.get('prompt_tokens')} (server)")
            cr = sum(ch[1] for ch in c["chunks"] if len(ch) > 2 and ch[2] == "reasoning")
            sr = sum(ch[1] for ch in s["chunks"] if len(ch) > 2 and ch[2] == "reasoning")
            if not (cr == sr == c.get("usage_reasoning_tokens", 0) ==
                    s.get("usage_reasoning_tokens", 0)):
                fail(f"request {c['id']}: reasoning tokens: client chunks {cr}, usage "
                     f"{c.get('usage_reasoning_tokens')}; server chunks {sr}, usage "
                     f"{s.get('usage_reasoning_tokens')}")
            # vLLM (and serve) leave prompt_tokens_details out when nothing was cached.
            if c.get("cached_prompt_tokens", 0) != s.get("cached_prompt_tokens", 0):
                fail(f"request {c['id']}: cached prompt tokens {c.get('cached_prompt_tokens')} "
                     f"(client usage), {s.get('cached_prompt_tokens')} (server)")
            totals["reasoning"] += cr
            totals["cached"] += c.get("cached_prompt_tokens", 0)
            point["output"] += ct
            point["input"] += c.get("prompt_tokens", 0)
            point["reasoning"] += cr
            c_ttft = first_token_time(c) - c.get("arrival", c["send"])
            s_ttft = first_token_time(s) - s.get("arrival", s["send"])
            c_e2e = c["end"] - c.get("arrival", c["send"])
            s_e2e = s["end"] - s.get("arrival", s["send"])
            d_ttft.append(c_ttft - s_ttft)
            d_e2e.append(c_e2e - s_e2e)
            lags.append(c["send"] - c.get("arrival", c["send"]))
            d_point += [c_ttft - s_ttft, c_e2e - s_e2e]
            srv_ttft.append(s_ttft)
            srv_e2e.append(s_e2e)
        rep = report[v]
        for key, want in (("output_tokens", point["output"]), ("input_tokens", point["input"]),
                          ("reasoning_tokens", point["reasoning"])):
            if rep.get(key, 0) != want:
                fail(f"point {v}: the report's {key} {rep.get(key)}, the traces {want}")
        # The report's quantiles (the client's) against the server trace's, this point.
        dmax = max(d_point)
        for metric, values in (("ttft", srv_ttft), ("e2e", srv_e2e)):
            for p in (50, 90, 99):
                got = rep.get("metrics", {}).get(metric, {}).get(f"p{p}")
                if got is None:
                    fail(f"point {v}: the report has no {metric} p{p}")
                diff = got - linear_quantile(values, p)
                if not -TOL <= diff <= dmax + TOL:
                    fail(f"point {v}: report {metric} p{p} {got:.6f} s, server "
                         f"{linear_quantile(values, p):.6f} s: difference {diff * 1e3:.3f} ms "
                         f"outside [0, {dmax * 1e3:.3f}] ms")
    gen = series(metrics, "vllm:generation_tokens_total")
    prompt = series(metrics, "vllm:prompt_tokens_total")
    if gen != sum(tokens(r) for r in server):
        fail(f"vllm:generation_tokens_total {gen:g}, server trace {sum(tokens(r) for r in server)}")
    want_prompt = sum(r.get("prompt_tokens", 0) for r in server if first_token_time(r) is not None)
    if prompt != want_prompt:
        fail(f"vllm:prompt_tokens_total {prompt:g}, server trace {want_prompt}")
    if a.expect_reasoning and totals["reasoning"] == 0:
        fail("no request streamed reasoning")
    if a.expect_cached and totals["cached"] == 0:
        fail("no request reported cached prompt tokens")
    print(f"  tokens: output {gen:g}, prompt {prompt:g}: /metrics = server trace; per request "
          f"client usage = client chunks = server chunks; reasoning {totals['reasoning']} and "
          f"cached prompt {totals['cached']}: client = server = report")

    # ---- latency: histograms against the server trace; client - server within the bound
    started = [r for r in server if first_token_time(r) is not None]
    check_histogram(metrics, "vllm:time_to_first_token_seconds",
                    [first_token_time(r) - r.get("arrival", r["send"]) for r in started], "TTFTs")
    check_histogram(metrics, "vllm:e2e_request_latency_seconds",
                    [r["end"] - r.get("arrival", r["send"]) for r in server], "E2Es")
    lo = min(min(d_ttft), min(d_e2e))
    if lo < -TOL:
        fail(f"a client TTFT or E2E is {-lo * 1e6:.1f} us shorter than the server's")
    # The bound is on the way from the client's send to its receive stamps: each d less its own
    # request's send lag, the client's wait to be scheduled, which the client measures and
    # reports (its median, P99 and max every run) and which a starved machine stretches without
    # limit (65.8 ms in one run beside four builds). A stall of the client after the send (its
    # wake-up for the answer) is not measured, and stretches the few d whose answers arrive in
    # it (61.6 ms in one run at load 4): the bound holds the P90 of TTFT's and of E2E's, which a
    # client that stamps late moves, and the maximum is printed. The quantiles above keep the
    # whole d.
    less_lag = {"TTFT": sorted(x - l for x, l in zip(d_ttft, lags)),
                "E2E": sorted(x - l for x, l in zip(d_e2e, lags))}
    for name, v in less_lag.items():
        if linear_quantile(v, 90) > a.bound_ms * 1e-3:
            fail(f"client - server {name} less the send lag: P90 {linear_quantile(v, 90) * 1e3:.3f} "
                 f"ms, over the {a.bound_ms:g} ms bound (max {v[-1] * 1e3:.3f} ms)")
    q = sorted(d_ttft)
    print(f"  client - server TTFT: median {linear_quantile(q, 50) * 1e3:.3f} ms, P99 "
          f"{linear_quantile(q, 99) * 1e3:.3f} ms, max {q[-1] * 1e3:.3f} ms; E2E max "
          f"{max(d_e2e) * 1e3:.3f} ms; less each request's send lag (max {max(lags) * 1e3:.3f} ms): "
          + ", ".join(f"{n} P90 {linear_quantile(v, 90) * 1e3:.3f} ms, max {v[-1] * 1e3:.3f} ms"
                      for n, v in less_lag.items())
          + f" (bound on the P90s {a.bound_ms:g} ms); every report quantile within d")
    print("check_sweep: ok")


if __name__ == "__main__":
    main()
