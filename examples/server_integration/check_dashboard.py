#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks what a real Prometheus server scraped from server-integration against tokchron's own
reports of the same run's trace.

  check_dashboard.py --prometheus HOST:PORT --trace TRACE.jsonl --report PATH/tokchron-report
                     --names vllm|tokchron --model NAME [--inclusion completed|scheduled|all]
                     [--queries QUERIES.jsonl] [--server-log LOG] [--timeout S] [--capacity N]

It waits until the server's log says "run done" (the server has then been scraped after its
last request) and until Prometheus holds a successful scrape stamped after that; finds the
first and the last successful scrape of the job (and prints how many failed and how long the
longest took, beside the scrape timeout); and evaluates every query at the time T of the last
one with a range w that reaches back past the first one:

  * with --names vllm, every query of vLLM's example Grafana dashboard (--queries, extracted in
    tests/data/vllm_dashboard/), `$model_name` replaced by --model and `$__rate_interval` by w;
  * with --names tokchron, the same panels on tokchron's own names.

The server waits for scrapes before its first request, so every counter's first sample in the
range is 0 and its last is its total; Prometheus then extrapolates nothing (the range starts no
later than the first sample and ends at the last), and rate(x[w]) * w is x's exact total.

Checks (each printed with its figures):
  (a) every query returns data;
  (b) counts and token totals equal what the trace says, exactly; rates times w equal the totals
      (relative 1e-9: only floating-point rounding); means (sum / count) equal tokchron-report's
      means (relative 1e-9: the same samples summed in another order); each histogram_quantile
      lies within the bucket bound of tokchron-report's percentile (see `quantile_bound`).

  (c) `tokchron-report --inclusion X` on the trace equals /metrics (`check_report_equals`):
      every histogram's _count and every counter (tokens, requests by finish reason)
      exactly, every histogram's _sum within `sum_bound`.

Which requests each family counts follows the server's inclusion policy (--inclusion, the
server's own): tokchron-report applies the same rule (metrics/inclusion.hpp) with
`--inclusion X`. Exit status 0 when every check passes, 1 when one fails, 2 on a usage or
setup error.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request

REL = 1e-9  # floating-point rounding of sums and ratios (far above n * 2^-52 for n < 10^6)


class Failure(Exception):
    pass


# ---------------------------------------------------------------------------- Prometheus


class Prometheus:
    def __init__(self, hostport, job):
        self.base = f"http://{hostport}/api/v1/"
        self.job = job
        self.time = None  # evaluation time (Unix seconds)

    def _get(self, path, params):
        url = self.base + path + "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
        if body.get("status") != "success":
            raise Failure(f"Prometheus refused {params}: {body}")
        return body["data"]

    def query(self, expr):
        """The result of an instant query at self.time: a list of {metric, value|values}."""
        params = {"query": expr}
        if self.time is not None:
            params["time"] = f"{self.time:.3f}"
        return self._get("query", params)["result"]

    def spread(self, job, up_values):
        """The scrapes' measured spread, printed beside the scrape timeout it must stay within:
        how many of the job's scrapes up to self.time failed (up == 0: one that timed out stored
        nothing) and how long the longest one took. `up_values` are up's [time, value] pairs."""
        up_values = [(t, v) for t, v in up_values if self.time is None or float(t) <= self.time]
        failed = sum(1 for _, v in up_values if v == "0")
        longest = self.query(f'max_over_time(scrape_duration_seconds{{job="{job}"}}[1h])')
        timeout = re.search(r"scrape_timeout: (\S+)", self._get("status/config", {})["yaml"])
        print(f"scrape spread: {failed} of {len(up_values)} scrapes failed (up == 0); the longest "
              f"took {float(longest[0]['value'][1]) * 1000 if longest else float('nan'):.1f} ms "
              f"(scrape timeout {timeout.group(1) if timeout else 'unknown'})")

    def scalar(self, expr):
        """The one value of `expr` (a failure when it has none or several)."""
        res = self.query(expr)
        if len(res) != 1:
            raise Failure(f"{expr}: {len(res)} series, expected 1")
        return float(res[0]["value"][1])


# ------------------------------------------------------------------------- trace, report


def read_trace(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def reason_of(r):
    return r.get("finish_reason") or ("stop" if r.get("ok", True) else "error")


def report(binary, trace, inclusion):
    """`tokchron-report --inclusion INCLUSION` (profiles vllm and canonical) of the trace, by
    profile."""
    out = subprocess.run([binary, "--profile", "vllm,canonical", "--inclusion", inclusion,
                          "--format", "json", "--percentiles", "50,90,95,99", "--quiet", trace],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise Failure(f"tokchron-report on {trace}: exit {out.returncode}: {out.stderr}")
    return {p["profile"]: p for p in json.loads(out.stdout)}


def members(records, inclusion):
    """The records whose lengths the length histograms count under `inclusion`: the test's own
    reading of docs/library/live-metrics.md's table, an oracle beside the library's rule."""
    if inclusion == "completed":
        return [r for r in records if reason_of(r) in ("stop", "length")]
    if inclusion == "scheduled":
        return [r for r in records if "scheduled" in r or any(ch[1] > 0 for ch in r["chunks"])]
    return list(records)


# The exposition's family names, by --names: the histograms (with the report's value of each)
# and the counters.
HISTOGRAMS = {  # key: (vllm name, tokchron name)
    "e2e": ("vllm:e2e_request_latency_seconds", "tokchron_e2e_seconds"),
    "ttft": ("vllm:time_to_first_token_seconds", "tokchron_ttft_seconds"),
    "itl": ("vllm:inter_token_latency_seconds", "tokchron_itl_seconds"),
    "tpot": ("vllm:request_time_per_output_token_seconds", "tokchron_tpot_seconds"),
    "queue_time": ("vllm:request_queue_time_seconds", "tokchron_queue_seconds"),
    "prefill_time": ("vllm:request_prefill_time_seconds", "tokchron_prefill_seconds"),
    "decode_time": ("vllm:request_decode_time_seconds", "tokchron_decode_seconds"),
    "prompt": ("vllm:request_prompt_tokens", "tokchron_request_prompt_tokens"),
    "output": ("vllm:request_generation_tokens", "tokchron_request_output_tokens"),
}


def sum_bound(n, want, printed_rel, printed_abs):
    """How far a histogram's _sum may lie from the report's mean x count: the same n samples
    (each the same double: both sides convert the same nanosecond differences) summed in another
    order, each sum within (n - 1) units of rounding (2^-53) of the exact one, mean x count two
    more, a quotient (vLLM's TPOT) computed in another order two more per sample: (2 n + 4) 2^-53
    relative; plus how the exposition printed the sum (`printed_rel`, `printed_abs`)."""
    return ((2 * n + 4) * 2.0 ** -53 + printed_rel) * abs(want) + printed_abs


def check_report_equals(c, value, rep, names, printed_rel=0.0, printed_abs=0.0):
    """(c) The families /metrics exports against `tokchron-report --inclusion X`: `value(name,
    **labels)` is the scraped total of a family over the model's series. Counts and counters
    exactly; sums within `sum_bound`."""
    canon, vprof = rep["canonical"], rep["vllm"]
    vllm = names == "vllm"
    none = {"count": 0, "mean": None}
    for key, (vname, tname) in HISTOGRAMS.items():
        fam = vname if vllm else tname
        if key in ("prompt", "output"):
            d = canon["lengths"][key]
        elif key == "itl" and vllm:
            d = vprof["metrics"]["itl"]  # vLLM's ITL: one sample per chunk
        else:
            d = canon["metrics"].get(key, none)
        count, total = d["count"], (d["mean"] or 0.0) * d["count"]
        if key == "tpot" and vllm:  # vLLM's per-request TPOT: 0 for N <= 1, every request
            count = canon["metrics"]["e2e"]["count"]
        c.equal(value(fam + "_count"), count, f"{fam}_count = tokchron-report {key} count")
        got = value(fam + "_sum")
        bound = sum_bound(count, total, printed_rel, printed_abs)
        c.ok(abs(got - total) <= bound, f"{fam}_sum: {got!r} = tokchron-report's {total!r} "
                                        f"(within {bound:.3g})")
    prompt, output = ("vllm:prompt_tokens_total", "vllm:generation_tokens_total") if vllm else \
        ("tokchron_prompt_tokens_total", "tokchron_output_tokens_total")
    c.equal(value(prompt), canon["input_tokens"], f"{prompt} = tokchron-report input_tokens")
    c.equal(value(output), canon["output_tokens"], f"{output} = tokchron-report output_tokens")
    by = canon["requests_by_reason"]
    if vllm:
        want = {"stop": by["stop"], "length": by["length"], "error": by["error"],
                "abort": by["aborted"] + by["timed_out"], "repetition": 0}
        for k, n in want.items():
            c.equal(value("vllm:request_success_total", finished_reason=k), n,
                    f"vllm:request_success_total{{finished_reason=\"{k}\"}} = tokchron-report")
        c.equal(value("tokchron_rejected_requests_total"), by["rejected"],
                "tokchron_rejected_requests_total = tokchron-report requests_by_reason.rejected")
    else:
        for k, n in by.items():
            c.equal(value("tokchron_requests_total", outcome=k), n,
                    f"tokchron_requests_total{{outcome=\"{k}\"}} = tokchron-report")


# ----------------------------------------------------------------------------- checking


class Checker:
    def __init__(self):
        self.failures = 0

    def ok(self, cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            self.failures += 1
        return cond

    def equal(self, got, want, what):
        return self.ok(got == want, f"{what}: {got:g} (expected {want:g}, exactly)")

    def close(self, got, want, what, rel=REL):
        good = abs(got - want) <= rel * max(abs(want), 1e-300)
        return self.ok(good, f"{what}: {got:.9g} (expected {want:.9g}, relative {rel:g})")


def buckets_of(prom, series):
    """The cumulative bucket counts of a histogram series at T: [(le, count)] sorted by le."""
    res = prom.query(f"sum by(le) ({series})")
    out = sorted((float(r["metric"]["le"]), float(r["value"][1])) for r in res)
    if not out or not math.isinf(out[-1][0]):
        raise Failure(f"{series}: no +Inf bucket")
    return out


def promql_quantile(q, buckets):
    """PromQL's histogram_quantile on cumulative buckets, and the index of the bucket it used
    (Prometheus 2.42, promql/quantile.go bucketQuantile: rank q * total, the first bucket whose
    count reaches it, linear interpolation inside it; the lowest bucket starts at 0)."""
    total = buckets[-1][1]
    rank = q * total
    b = next(i for i, (_, c) in enumerate(buckets[:-1]) if c >= rank) if any(
        c >= rank for _, c in buckets[:-1]) else len(buckets) - 1
    if b == len(buckets) - 1:
        return buckets[-2][0], b
    lo = 0.0 if b == 0 else buckets[b - 1][0]
    below = 0.0 if b == 0 else buckets[b - 1][1]
    count = buckets[b][1] - below
    return lo + (buckets[b][0] - lo) * (rank - below) / count, b


def quantile_bound(q, buckets):
    """The interval that must hold the exact percentile of the samples the buckets counted.

    tokchron-report's percentile interpolates linearly between order statistics at position
    q (n - 1) (0-based): it lies between the samples of rank k - 1 and k + 1 (1-based), where
    k = ceil(q n) is the rank whose bucket PromQL interpolates in (bucket b: the first with
    cumulative count >= q n holds sample k). Sample k - 1 lies in b when b holds it, else in
    the nearest non-empty bucket below; sample k + 1 in b, else the nearest non-empty bucket
    above. The bound is [lower edge of the first, upper edge of the second]: one bucket's width
    on each side at most, derived from the edges alone."""
    n = buckets[-1][1]
    k = max(1, math.ceil(q * n))
    rank_bucket = lambda j: next(i for i, (_, c) in enumerate(buckets) if c >= j)
    lo_b = rank_bucket(max(1, k - 1))
    hi_b = rank_bucket(min(n, k + 1))
    lo = 0.0 if lo_b == 0 else buckets[lo_b - 1][0]
    return lo, buckets[hi_b][0]


def check_histogram(c, prom, expr_of, family, want, tag):
    """A latency histogram: count and mean exactly, the dashboard's quantiles within bounds.
    `want` is tokchron-report's metric (count, mean, p50, ...); `expr_of(q)` the dashboard's
    histogram_quantile query (None for families the dashboard has no quantile panel of).
    Returns the quantiles compared: [(q, PromQL's answer, tokchron-report's, bound low, high)]."""
    compared = []
    sel = f'{family}_bucket{{{tag}}}'
    count = prom.scalar(f"sum({family}_count{{{tag}}})")
    c.equal(count, want["count"], f"{family}_count")
    if want["count"] == 0:
        return compared
    total = prom.scalar(f"sum({family}_sum{{{tag}}})")
    c.close(total / count, want["mean"], f"{family} mean (sum / count)")
    buckets = buckets_of(prom, sel)
    c.equal(buckets[-1][1], want["count"], f"{family} +Inf bucket")
    for q in (0.5, 0.9, 0.95, 0.99):
        expr = expr_of(q) if expr_of is not None else None
        if expr is None:
            continue
        res = prom.query(expr)
        if not res:
            continue  # reported by the data check
        got = float(res[0]["value"][1])
        mine, _ = promql_quantile(q, buckets)
        c.close(got, mine, f"{family} q{q} is PromQL's interpolation of the buckets", 1e-6)
        lo, hi = quantile_bound(q, buckets)
        exact = want[f"p{q * 100:g}"]
        c.ok(lo <= exact <= hi and lo <= got <= hi,
             f"{family} q{q}: PromQL {got:.6g}, tokchron-report {exact:.6g}, bucket bound "
             f"[{lo:.6g}, {hi:.6g}] (difference {abs(got - exact):.3g})")
        compared.append((q, got, exact, lo, hi))
    return compared


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prometheus", required=True)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--report", required=True, help="the tokchron-report binary")
    ap.add_argument("--names", choices=["vllm", "tokchron"], default="vllm")
    ap.add_argument("--model", required=True)
    ap.add_argument("--inclusion", choices=["completed", "scheduled", "all"], default="scheduled",
                    help="the server's inclusion policy (default: the live metrics' default)")
    ap.add_argument("--queries", help="the dashboard's queries (JSON Lines)")
    ap.add_argument("--server-log", help="wait for 'run done' in this file")
    ap.add_argument("--job", default="server")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--capacity", type=float, help="the most requests the engine runs at once")
    args = ap.parse_args()

    deadline = time.time() + args.timeout
    done = time.time()  # without --server-log: the run is over when the checker starts
    if args.server_log:
        while "run done" not in open(args.server_log, encoding="utf-8", errors="replace").read():
            if time.time() > deadline:
                print(f"timed out waiting for 'run done' in {args.server_log}")
                return 2
            time.sleep(0.1)
        done = time.time()
    prom = Prometheus(args.prometheus, args.job)
    # Wait until Prometheus holds a successful scrape stamped after the run was seen done: it
    # read the final values, and Prometheus appends a target's scrapes in order, so every one
    # before it is stored too. Successful scrapes only (up == 1): one that failed stored nothing.
    while True:
        try:
            up = prom.query(f'up{{job="{args.job}"}}[1h]')
        except OSError:  # Prometheus still starting
            up = []
        stamps = [float(t) for t, v in up[0]["values"] if v == "1"] if len(up) == 1 else []
        if stamps and stamps[-1] > done:
            break
        if time.time() > deadline:
            print(f"timed out: no successful scrape of job {args.job} after the run ({up})")
            return 2
        time.sleep(0.2)
    first, last = stamps[0], stamps[-1]
    prom.time = last
    window_ms = int(math.ceil((last - first) * 1000)) + 1000
    w = window_ms / 1000.0
    print(f"scrapes: {len(stamps)} from {first:.3f} to {last:.3f}; queries at T = {last:.3f} "
          f"with range {window_ms}ms")
    prom.spread(args.job, up[0]["values"])

    c = Checker()
    try:
        return run_checks(c, prom, args, w, window_ms)
    except (Failure, OSError, ValueError, KeyError) as e:
        print(f"FAIL {e}")
        return 1


# The dashboard's families under --names tokchron (tokchron_live_options): the same panels.
TOKCHRON_NAMES = {
    "vllm:e2e_request_latency_seconds": "tokchron_e2e_seconds",
    "vllm:time_to_first_token_seconds": "tokchron_ttft_seconds",
    "vllm:time_per_output_token_seconds": "tokchron_itl_seconds",
    "vllm:prompt_tokens_total": "tokchron_prompt_tokens_total",
    "vllm:generation_tokens_total": "tokchron_output_tokens_total",
    "vllm:num_requests_running": "tokchron_requests_running",
    "vllm:num_requests_waiting": "tokchron_requests_waiting",
    "vllm:gpu_cache_usage_perc": "tokchron_kv_cache_usage_ratio",
    "vllm:request_prompt_tokens": "tokchron_request_prompt_tokens",
    "vllm:request_generation_tokens": "tokchron_request_output_tokens",
    "vllm:request_success_total": "tokchron_requests_total",
    "finished_reason": "outcome",
    "vllm:request_queue_time_seconds": "tokchron_queue_seconds",
    "vllm:request_prefill_time_seconds": "tokchron_prefill_seconds",
    "vllm:request_decode_time_seconds": "tokchron_decode_seconds",
    "vllm:request_max_num_generation_tokens": "tokchron_request_max_tokens",
}

# vLLM's finished_reason values (vllm/v1/engine/__init__.py FINISH_REASON_STRINGS) of the
# trace's finish reasons; a rejected request is not in vLLM's counter (tokchron counts it in
# tokchron_rejected_requests_total).
VLLM_REASON = {"stop": "stop", "length": "length", "aborted": "abort", "timed_out": "abort",
               "error": "error"}


def translate(expr, names):
    if names == "vllm":
        return expr
    for old in sorted(TOKCHRON_NAMES, key=len, reverse=True):
        expr = expr.replace(old, TOKCHRON_NAMES[old])
    return expr


def server_tally(log):
    """The engine's own tally of max_tokens (the trace does not hold it): (sum, count)."""
    m = re.search(r"max_tokens of scheduled requests: sum (\d+), count (\d+)", log)
    if not m:
        raise Failure("the server log has no max_tokens tally")
    return float(m.group(1)), float(m.group(2))


def run_checks(c, prom, args, w, window_ms):
    records = read_trace(args.trace)
    tag = f'model_name="{args.model}"'
    name = lambda vllm_name: translate(vllm_name, args.names)
    vllm = args.names == "vllm"
    # The requests each family counts, under the server's inclusion policy: tokchron-report
    # applies the same rule with --inclusion.
    rep = report(args.report, args.trace, args.inclusion)
    canon, vprof = rep["canonical"], rep["vllm"]
    included = members(records, args.inclusion)
    print(f"trace: {len(records)} requests, {len(included)} included under --inclusion "
          f"{args.inclusion}")

    # (a) every query returns data.
    queries = [json.loads(line) for line in open(args.queries, encoding="utf-8") if line.strip()]
    answers = {}
    print(f"--- (a) the {len(queries)} queries of the dashboard, at T with range {window_ms}ms")
    for q in queries:
        expr = translate(q["expr"], args.names).replace("$model_name", args.model)
        expr = expr.replace("$__rate_interval", f"{window_ms}ms")
        res = prom.query(expr)
        answers[q["expr"]] = res
        shown = " ".join(expr.split())
        values = ", ".join(f'{r["value"][1]}' for r in res[:3]) + (" ..." if len(res) > 3 else "")
        c.ok(len(res) > 0, f'[{q["panel"]} / {q["legend"]}] {len(res)} series ({values}): {shown}')

    def answer(fragment):
        """The one value of the dashboard query whose expr starts with `fragment`."""
        for q in queries:
            if q["expr"].startswith(fragment):
                res = answers[q["expr"]]
                if len(res) != 1:
                    raise Failure(f'{q["expr"]}: {len(res)} series, expected 1')
                return float(res[0]["value"][1])
        raise Failure(f"no dashboard query contains {fragment}")

    print("--- (b) agreement with tokchron-report on the trace")
    # Every counter's first sample in the range is 0 (scraped before the first request).
    firsts_nonzero = prom.query(
        f'{{__name__=~"{name("vllm:generation_tokens_total")}|{name("vllm:prompt_tokens_total")}'
        f'|{name("vllm:request_success_total")}|.*_seconds_count",{tag}}}[{window_ms}ms]')
    late = [s["metric"]["__name__"] for s in firsts_nonzero if float(s["values"][0][1]) != 0]
    c.ok(firsts_nonzero and not late,
         f"{len(firsts_nonzero)} counter series start at 0 in the range (none late: {late})")

    # Latency histograms: count, mean, the dashboard's quantiles.
    itl_want = vprof["metrics"]["itl"] if vllm else canon["metrics"]["itl"]
    for family, want, panel in [
        ("vllm:e2e_request_latency_seconds", canon["metrics"]["e2e"], True),
        ("vllm:time_to_first_token_seconds", canon["metrics"]["ttft"], True),
        ("vllm:time_per_output_token_seconds", itl_want, True),
        ("vllm:request_queue_time_seconds", canon["metrics"]["queue_time"], False),
        ("vllm:request_prefill_time_seconds", canon["metrics"]["prefill_time"], False),
        ("vllm:request_decode_time_seconds", canon["metrics"]["decode_time"], False),
    ]:
        fam = name(family)

        def expr_of(q, family=family):
            for d in queries:
                if d["expr"].startswith(f"histogram_quantile({q:g}, ") and family + "_bucket" in d["expr"]:
                    return translate(d["expr"], args.names).replace("$model_name", args.model) \
                        .replace("$__rate_interval", f"{window_ms}ms")
            return None

        check_histogram(c, prom, expr_of if panel else None, fam, want, tag)
        if panel:
            c.close(answer(f"rate({family}_sum"), want["mean"],  # rate(_sum) / rate(_count)
                    f"dashboard mean panel of {fam}")
        else:
            c.close(answer(f"rate({family}_sum") * w, want["mean"] * want["count"],
                    f"dashboard rate({fam}_sum) x range")
    if vllm:  # vLLM's per-request TPOT: 0 for one-token answers, so every included request
        fam = "vllm:request_time_per_output_token_seconds"
        c.equal(prom.scalar(f"sum({fam}_count{{{tag}}})"), canon["metrics"]["e2e"]["count"],
                f"{fam}_count (every included request)")
        c.close(prom.scalar(f"sum({fam}_sum{{{tag}}})"),
                canon["metrics"]["tpot"]["mean"] * canon["metrics"]["tpot"]["count"],
                f"{fam}_sum (tokchron's TPOT sum; one-token answers add 0)")
    else:
        check_histogram(c, prom, None, "tokchron_tpot_seconds", canon["metrics"]["tpot"], tag)

    # Token counters: exactly, and the dashboard's rates times the range.
    for family, want in [("vllm:prompt_tokens_total", canon["input_tokens"]),
                         ("vllm:generation_tokens_total", canon["output_tokens"])]:
        c.equal(prom.scalar(f"sum({name(family)}{{{tag}}})"), want, name(family))
        c.close(answer(f"rate({family}") * w, want, f"dashboard rate({name(family)}) x range")

    # Length histograms: count and sum, and every bucket of the dashboard's heatmap exactly.
    for family, key in [("vllm:request_prompt_tokens", "prompt"),
                        ("vllm:request_generation_tokens", "output")]:
        want = canon["lengths"][key]
        fam = name(family)
        c.equal(prom.scalar(f"sum({fam}_count{{{tag}}})"), want["count"], f"{fam}_count")
        c.close(prom.scalar(f"sum({fam}_sum{{{tag}}})"), want["mean"] * want["count"], f"{fam}_sum")
        res = next(answers[d["expr"]] for d in queries if family + "_bucket" in d["expr"])
        lengths = [r.get("prompt_tokens") if key == "prompt"
                   else sum(ch[1] for ch in r["chunks"]) for r in included]
        bad = []
        for r in res:
            le = float(r["metric"]["le"])
            exact = sum(1 for v in lengths if v is not None and v <= le)
            if float(r["value"][1]) != exact:
                bad.append((le, r["value"][1], exact))
        c.ok(res and not bad, f"dashboard increase({fam}_bucket): {len(res)} buckets equal the "
                              f"trace's counts (differing: {bad[:3]})")

    # Requests by finish reason (the dashboard's increase() per label value), rejections.
    by_reason = {}
    rejected = 0
    for r in records:
        why = reason_of(r)
        if vllm and why == "rejected":
            rejected += 1
            continue
        v = VLLM_REASON[why] if vllm else why
        by_reason[v] = by_reason.get(v, 0) + 1
    label = "finished_reason" if vllm else "outcome"
    res = next(answers[d["expr"]] for d in queries if "request_success_total" in d["expr"])
    got = {r["metric"].get(label): float(r["value"][1]) for r in res}
    for v, n in sorted(by_reason.items()):
        c.equal(got.get(v, -1), n, f"dashboard increase({name('vllm:request_success_total')}"
                                   f"{{{label}=\"{v}\"}})")
    c.ok(all(n == 0 or k in by_reason for k, n in got.items()),
         f"no other {label} value counts anything: {got}")
    if vllm:
        c.equal(prom.scalar(f"sum(tokchron_rejected_requests_total{{{tag}}})"), rejected,
                "tokchron_rejected_requests_total (vLLM does not count refused requests)")
    c.equal(prom.scalar(f'sum({"vllm:num_preemptions_total" if vllm else "tokchron_preemptions_total"}{{{tag}}})'),
            sum(len(r.get("preempted", [])) for r in records), "preemptions")

    print(f"--- (c) tokchron-report --inclusion {args.inclusion} equals /metrics")

    def value(family, **labels):
        sel = ",".join([tag] + [f'{k}="{v}"' for k, v in labels.items()])
        res = prom.query(f"sum({family}{{{sel}}})")
        return float(res[0]["value"][1]) if res else 0.0

    # prometheus-cpp's text serializer writes a sum with std::fixed at the stream's precision,
    # 6 decimals by default (core/src/text_serializer.cc, jupp0r/prometheus-cpp@0152d14): at
    # most half a unit of the sixth decimal (a release that sets a higher precision prints
    # closer); Prometheus keeps the double it parsed.
    check_report_equals(c, value, rep, args.names, printed_abs=5e-7)

    # What only the engine knows: max_tokens (its own tally), the KV cache (its block count).
    if args.server_log and args.inclusion == "scheduled":  # the engine tallies scheduled ones
        tally_sum, tally_count = server_tally(open(args.server_log, encoding="utf-8").read())
        fam = name("vllm:request_max_num_generation_tokens")
        c.equal(prom.scalar(f"sum({fam}_count{{{tag}}})"), tally_count, f"{fam}_count (engine tally)")
        c.close(answer("rate(vllm:request_max_num_generation_tokens_sum") * w, tally_sum,
                f"dashboard rate({fam}_sum) x range (engine tally)")

    # Gauges: back to 0 at the end; during the run within the engine's bounds.
    for family, top in [("vllm:num_requests_running", args.capacity),
                        ("vllm:num_requests_waiting", None),
                        ("vllm:gpu_cache_usage_perc", 1.0)]:
        fam = name(family)
        c.equal(answer(family), 0, f"dashboard {fam} at the end")
        peak = prom.scalar(f"max_over_time({fam}{{{tag}}}[{window_ms}ms])")
        c.ok(peak > 0 and (top is None or peak <= top),
             f"{fam} peaked at {peak:g} during the run (bound {top})")
    if vllm:
        c.ok(prom.scalar(f"max_over_time(vllm:kv_cache_usage_perc{{{tag}}}[{window_ms}ms])") ==
             prom.scalar(f"max_over_time(vllm:gpu_cache_usage_perc{{{tag}}}[{window_ms}ms])"),
             "vllm:gpu_cache_usage_perc is vllm:kv_cache_usage_perc (deprecated alias)")

    print(f"{c.failures} check(s) failed")
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
