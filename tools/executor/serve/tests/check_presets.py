#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks what a real Prometheus scraped from `batching-executor serve --names PRESET` against
tokchron-report on serve's trace of the same run, through the queries of the server's own
Grafana dashboard where it publishes one (SGLang, TGI) and the natural PromQL over its families
where it does not (llama.cpp, trtllm-serve).

  check_presets.py --preset sglang|tgi|llamacpp|trtllm --prometheus HOST:PORT --job JOB
                   --trace SERVE_TRACE.jsonl --report PATH/tokchron-report --model NAME
                   [--service NAME] [--summary FILE]
  check_presets.py --preset dynamo|lmdeploy|otel --metrics SCRAPE.txt
                   --trace SERVE_TRACE.jsonl --report PATH/tokchron-report --model NAME

The second form reads one scrape of /metrics taken after the run's last request finished
(no Prometheus): every histogram's count, +Inf bucket and mean against tokchron-report, its
p50/p90/p99 inside their bucket bounds, the counters and gauges exactly.

Queries run at the time T of the job's last successful scrape; `$__rate_interval` (and the
natural queries' range) is a range w reaching back past the first scrape. serve was scraped
before its first request, so every counter's first sample in the range is 0 and Prometheus
extrapolates nothing: rate(x[w]) * w is x's total, and a dashboard's fixed ranges ([1m],
[10m]) give the same totals as long as the whole run fits in them (checked where a dashboard
has one; the span is printed).

Each preset's expected values come from tokchron-report (profile canonical) on the trace's
requests that the server's own rule counts, the records transformed where the server's
definition differs from the canonical one (each transform is stated where it is made). The
checks, each printed with its figures:
  * every dashboard query returns data, except the panels on what tokchron cannot know (engine
    batch internals, throughput gauges the engine computes), which must return none;
  * counts and token totals exactly; rate(x[w]) * w equal to the totals (relative 1e-9);
    means (sum / count) equal tokchron-report's (relative 1e-9);
  * every histogram_quantile is PromQL's interpolation of the scraped buckets and lies, with
    tokchron-report's exact percentile, inside the bucket bound (check_dashboard.py's
    `quantile_bound`: the exact quantile of classic buckets is only known to lie within the
    edges of the buckets around its rank);
  * llama.cpp's decode seconds counter equal to the trace's microseconds, its decode
    throughput gauge within the bounds the counters' deltas between consecutive scrapes give
    (the pairs around a scrape Prometheus failed are skipped: it restarted the window unseen),
    tokchron's outcome counter beside it equal to the trace's finish reasons.
With --summary, one line per compared quantile is appended to FILE (preset, family, q,
PromQL, tokchron-report, bound) for the stage's table. Exit 0 when every check passes, 1 when
one fails, 2 on a usage or setup error.
"""
import argparse
import copy
import json
import math
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..",
                                "examples", "server_integration"))
import check_dashboard as cd  # noqa: E402  (Prometheus, report, Checker, histogram checks)

# ------------------------------------------------------------------ the dashboards' queries

# SGLang: examples/monitoring/grafana/dashboards/json/sglang-dashboard.json in
# sgl-project/sglang at bac2cc6711e0342e25d27bbcdef773555ad402eb, every panel's expr (the
# instance and model_name template variables replaced).
SGLANG_DASHBOARD = [
    ("End-to-End Request Latency", "histogram_quantile(0.99, sum by (le) (rate(sglang:e2e_request_latency_seconds_bucket[$__rate_interval])))"),
    ("End-to-End Request Latency", "histogram_quantile(0.9, sum by (le) (rate(sglang:e2e_request_latency_seconds_bucket[$__rate_interval])))"),
    ("End-to-End Request Latency", "histogram_quantile(0.5, sum by (le) (rate(sglang:e2e_request_latency_seconds_bucket[$__rate_interval])))"),
    ("End-to-End Request Latency", "avg(rate(sglang:e2e_request_latency_seconds_sum[$__rate_interval]) /  rate(sglang:e2e_request_latency_seconds_count[$__rate_interval]))"),
    ("End-to-End Request Latency(s) Heatmap", 'sum(increase(sglang:e2e_request_latency_seconds_bucket{model_name=~"$model_name"}[$__rate_interval])) by (le)'),
    ("Time-To-First-Token Latency", "histogram_quantile(0.99, sum by (le) (rate(sglang:time_to_first_token_seconds_bucket[$__rate_interval])))"),
    ("Time-To-First-Token Latency", "histogram_quantile(0.9, sum by (le) (rate(sglang:time_to_first_token_seconds_bucket[$__rate_interval])))"),
    ("Time-To-First-Token Latency", "histogram_quantile(0.5, sum by (le) (rate(sglang:time_to_first_token_seconds_bucket[$__rate_interval])))"),
    ("Time-To-First-Token Latency", "avg(rate(sglang:time_to_first_token_seconds_sum[$__rate_interval]) /  rate(sglang:time_to_first_token_seconds_count[$__rate_interval]))"),
    ("Time-To-First-Token Seconds Heatmap", 'sum by(le) (increase(sglang:time_to_first_token_seconds_bucket{model_name=~"$model_name"}[$__rate_interval]))'),
    ("Num Running Requests", "sglang:num_running_reqs"),
    ("Token Generation Throughput (Tokens / S)", "sglang:gen_throughput"),
    ("Cache Hit Rate", "sglang:cache_hit_rate"),
    ("Number Queued Requests", "sglang:num_queue_reqs"),
]
# Panels on what the engine computes and tokchron's events cannot (docs/library/live-metrics.md).
SGLANG_NOT_EXPORTED = {"sglang:gen_throughput", "sglang:cache_hit_rate"}

# TGI: assets/tgi_grafana.json in huggingface/text-generation-inference at
# 3bc1cf873dea2b7a32b4b86e572c3159a46dbd9b, every panel's expr ($service: the scrape's
# `container` label).
_TGI_Q = "histogram_quantile({q}, sum by (le) (rate({f}_bucket{{container=\"$service\"{m}}}[10m])))"
TGI_DASHBOARD = (
    [("Time to first token", "(" + _TGI_Q.format(q=0.5, f="tgi_request_queue_duration", m="") + " * 1000) > 0"),
     ("Time to first token", "(" + _TGI_Q.format(q=0.5, f="tgi_batch_inference_duration", m=', method="prefill"') + " * 1000) > 0"),
     ("Decode per-token latency", "(" + _TGI_Q.format(q=0.5, f="tgi_batch_forward_duration", m=', method="decode"') + " * 1000)>0"),
     ("Throughput (generated tok/s)", 'sum((rate(tgi_request_generated_tokens_sum{container="$service"}[10m]) / rate(tgi_request_generated_tokens_count{container="$service"}[10m]))>0)')]
    + [(p, _TGI_Q.format(q=q, f=f, m="")) for p, f in [
        ("Number of tokens per prompt", "tgi_request_input_length"),
        ("Number of generated tokens per request", "tgi_request_generated_tokens")]
       for q in (0.5, 0.9, 0.99)]
    + [("Requests", 'sum(increase(tgi_request_success{container="$service"}[1m]))'),
       ("Requests", 'sum(increase(tgi_request_failure{container="$service"}[1m])) by (err)')]
    + [("Mean Time Per Token quantiles", _TGI_Q.format(q=q, f="tgi_request_mean_time_per_token_duration", m=""))
       for q in (0.5, 0.9, 0.99)]
    + [("Mean Time Per Token", 'sum(increase(tgi_request_mean_time_per_token_duration_bucket{container="$service"}[5m])) by (le)'),
       ("Number of replicas", 'count(tgi_request_count{container="$service"})'),
       ("Queue Size", 'sum(tgi_queue_size{container="$service"})'),
       ("Max tokens per batch", 'avg(tgi_batch_current_max_tokens{container="$service"})')]
    + [("Speculated Tokens", _TGI_Q.format(q=q, f="tgi_request_skipped_tokens", m="")) for q in (0.5, 0.9, 0.99)]
    + [("Prompt Tokens", _TGI_Q.format(q=q, f="tgi_request_input_length", m="")) for q in (0.5, 0.9, 0.99)]
    + [("Latency quantiles", _TGI_Q.format(q=q, f="tgi_request_duration", m="")) for q in (0.5, 0.9, 0.99)]
    + [("Batch Size", 'avg(tgi_batch_current_size{container="$service"})'),
       ("Concatenates", 'sum(increase(tgi_batch_concat{container="$service"}[1m])) by (reason)')]
    + [("Queue quantiles", _TGI_Q.format(q=q, f="tgi_request_queue_duration", m="")) for q in (0.5, 0.9, 0.99)]
    + [(title, _TGI_Q.format(q=q, f=f, m=f', method="{meth}"'))
       for title, f, meth in [("Prefill Quantiles", "tgi_batch_inference_duration", "prefill"),
                              ("Decode quantiles", "tgi_batch_inference_duration", "decode"),
                              ("Forward quantiles", "tgi_batch_forward_duration", "decode"),
                              ("Token Decode quantiles", "tgi_batch_decode_duration", "decode"),
                              ("Filter Batch quantiles", "tgi_batch_filter_duration", "decode"),
                              ("Batch Concat quantiles", "tgi_batch_concat_duration", "decode")]
       for q in (0.5, 0.9, 0.99)]
    + [(title, f'sum(increase({f}_bucket{{method="{meth}", container="$service"}}[5m])) by (le)')
       for title, f, meth in [("Prefill Latency", "tgi_batch_inference_duration", "prefill"),
                              ("Decode Latency", "tgi_batch_inference_duration", "decode"),
                              ("Forward Latency", "tgi_batch_forward_duration", "decode"),
                              ("Token Decode Latency", "tgi_batch_decode_duration", "decode"),
                              ("Filter Batch Latency", "tgi_batch_filter_duration", "decode"),
                              ("Batch Concat latency", "tgi_batch_concat_duration", "decode")]]
)
# The engine's batch internals and speculation: TGI's shards measure them, tokchron's request
# events cannot (docs/library/live-metrics.md); their panels must find no series.
TGI_NOT_EXPORTED = {"tgi_batch_inference_duration", "tgi_batch_forward_duration",
                    "tgi_batch_decode_duration", "tgi_batch_filter_duration",
                    "tgi_batch_concat_duration", "tgi_batch_concat", "tgi_batch_current_max_tokens",
                    "tgi_request_skipped_tokens"}

# llama.cpp and trtllm-serve publish no dashboard: the natural queries over their families.
TRTLLM_HISTOGRAMS = ["trtllm_time_to_first_token_seconds", "trtllm_e2e_request_latency_seconds",
                     "trtllm_time_per_output_token_seconds", "trtllm_request_queue_time_seconds",
                     "trtllm_request_prefill_time_seconds", "trtllm_request_decode_time_seconds",
                     "trtllm_request_inference_time_seconds"]
NATURAL_Q = "histogram_quantile({q}, sum by (le) (rate({f}_bucket[$__rate_interval])))"
NATURAL_MEAN = "sum(rate({f}_sum[$__rate_interval])) / sum(rate({f}_count[$__rate_interval]))"

# ------------------------------------------------------------------------ trace transforms

REASONS = ("stop", "length", "aborted", "error", "timed_out", "rejected")


def reason(r):
    return cd.reason_of(r)


def token_chunks(r):
    return [ch for ch in r["chunks"] if ch[1] > 0]


def output_tokens(r):
    return sum(ch[1] for ch in r["chunks"])


def first_token(r):
    t = token_chunks(r)
    return t[0][0] if t else None


def last_token(r):
    t = token_chunks(r)
    return t[-1][0] if t else None


def first_chunk_one_token(r):
    """SGLang's ITL gives no samples for the first output batch's extra tokens, canonical ITL
    gives k - 1 zeros: with the first token chunk cut to one token, canonical ITL is SGLang's."""
    r = copy.deepcopy(r)
    for ch in r["chunks"]:
        if ch[1] > 0:
            ch[1] = 1
            break
    return r


def tokens_from_schedule(r):
    """TGI's mean time per token is (last token - first scheduled) / N; canonical TPOT is
    (last token - first token) / (N - 1): with one more token at the first scheduling (and N
    counted from it) canonical TPOT is TGI's."""
    r = copy.deepcopy(r)
    r["chunks"].insert(0, [r["scheduled"], 1])
    r.pop("usage_output_tokens", None)
    r.pop("usage_source", None)  # a trace line has it only beside usage_output_tokens
    return r


def starting_at(r, start, end_at_last_token):
    """The record with its arrival (and send) moved to `start`, and with `end_at_last_token` its
    end at the last token: canonical TTFT and E2E then run from `start` (trtllm's executor
    arrival; the first scheduling for an inference time) to the first and the last token."""
    r = copy.deepcopy(r)
    r["arrival"] = r["send"] = start
    if r.get("queued") is not None and r["queued"] < start:
        r.pop("queued")
    if end_at_last_token and last_token(r) is not None:
        r["end"] = last_token(r)
        r["chunks"] = [ch for ch in r["chunks"] if ch[0] <= r["end"]]
    return r


# ----------------------------------------------------------------------------- the checks


class Run:
    def __init__(self, args, c, prom, w, window_ms, workdir):
        self.args, self.c, self.prom, self.w, self.window_ms = args, c, prom, w, window_ms
        self.workdir = workdir
        self.tag = f'job="{args.job}"'
        self.records = cd.read_trace(args.trace)
        self.compared = []  # (family, q, got, exact, lo, hi)
        self.n_reports = 0

    def report(self, records):
        """tokchron-report's canonical profile on `records`, each made a completed request (the
        selections above already chose the requests each family counts)."""
        self.n_reports += 1
        path = os.path.join(self.workdir, f"sel{self.n_reports}.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            for r in records:
                r = dict(r, ok=True)
                r.pop("finish_reason", None)
                r.pop("error", None)
                f.write(json.dumps(r) + "\n")
        return cd.report(self.args.report, path, "completed")["canonical"]

    def expand(self, expr):
        return (expr.replace("$__rate_interval", f"{self.window_ms}ms")
                .replace("$model_name", self.args.model).replace("$service", self.args.service))

    def dashboard(self, panels, not_exported):
        """Runs every panel query: data expected unless it names a family tokchron does not
        export (then none). Returns {expr: result}."""
        answers = {}
        print(f"--- the {len(panels)} queries of the dashboard, at T with range {self.window_ms}ms")
        for title, expr in panels:
            shown = " ".join(self.expand(expr).split())
            res = self.prom.query(self.expand(expr))
            answers[expr] = res
            skipped = [f for f in not_exported if f in expr]
            values = ", ".join(r["value"][1] for r in res[:3]) + (" ..." if len(res) > 3 else "")
            if skipped:
                self.c.ok(not res, f"[{title}] not exported ({skipped[0]}: what the engine "
                                   f"measures), no series: {shown}")
            else:
                self.c.ok(len(res) > 0, f"[{title}] {len(res)} series ({values}): {shown}")
        return answers

    def value_of(self, answers, expr):
        res = answers[expr]
        if len(res) != 1:
            raise cd.Failure(f"{expr}: {len(res)} series, expected 1")
        return float(res[0]["value"][1])

    def histogram(self, family, want, quantile_exprs=None):
        """Count, mean and +Inf exactly; each quantile query (q -> expr, the dashboard's or the
        natural one) within the bucket bound of tokchron-report's percentile."""
        def expr_of(q):
            e = (quantile_exprs or {}).get(q)
            return self.expand(e) if e else None
        got = cd.check_histogram(self.c, self.prom, expr_of if quantile_exprs else None, family,
                                 want, self.tag)
        self.compared += [(family,) + x for x in got]

    def counter(self, family, want, exact=True):
        got = self.prom.scalar(f"sum({family}{{{self.tag}}})")
        if exact:
            self.c.equal(got, want, family)
        else:
            self.c.close(got, want, family)
        self.c.close(self.prom.scalar(f"sum(rate({family}{{{self.tag}}}[{self.window_ms}ms]))") *
                     self.w, want, f"rate({family}[w]) x w")

    def gauge_idle(self, family, peak_bound=None):
        """A request gauge: 0 at the end (every request finished), peaked above 0 during the run
        (within `peak_bound` when given)."""
        self.c.equal(self.prom.scalar(f"sum({family}{{{self.tag}}})"), 0, f"{family} at the end")
        peak = self.prom.scalar(f"max_over_time({family}{{{self.tag}}}[{self.window_ms}ms])")
        self.c.ok(peak_bound is None or peak <= peak_bound,
                  f"{family} peaked at {peak:g} during the run (bound {peak_bound})")
        return peak

    def heatmap(self, answers, expr, family):
        """A heatmap panel (increase by le): every bucket equal to the scraped cumulative
        bucket (the series started at 0 within the range)."""
        got = {float(r["metric"]["le"]): float(r["value"][1]) for r in answers[expr]}
        want = dict(cd.buckets_of(self.prom, f"{family}_bucket{{{self.tag}}}"))
        self.c.ok(got == want, f"heatmap increase({family}_bucket) by le: {len(got)} buckets equal "
                               f"the scraped counts (+Inf {got.get(math.inf)})")


def check_sglang(run):
    recs = run.records
    # Inclusion scheduled: every request that reached the engine, whatever its outcome.
    sched = [r for r in recs if "scheduled" in r]
    canon = run.report(sched)
    itl = run.report([first_chunk_one_token(r) for r in sched])["metrics"]["itl"]
    answers = run.dashboard(SGLANG_DASHBOARD, SGLANG_NOT_EXPORTED)
    print("--- agreement with tokchron-report on the trace")

    def panel(family, q):
        return next((e for _, e in SGLANG_DASHBOARD
                     if e.startswith(f"histogram_quantile({q:g}, ") and family in e), None)
    for family, want in [("sglang:e2e_request_latency_seconds", canon["metrics"]["e2e"]),
                         ("sglang:time_to_first_token_seconds", canon["metrics"]["ttft"])]:
        run.histogram(family, want, {q: panel(family, q) for q in (0.5, 0.9, 0.99)})
        avg = next(e for _, e in SGLANG_DASHBOARD if e.startswith("avg(") and family in e)
        run.c.close(run.value_of(answers, avg), want["mean"], f"dashboard average of {family}")
        heat = next(e for _, e in SGLANG_DASHBOARD if "increase(" in e and family in e)
        run.heatmap(answers, heat, family)
    nat = lambda f: {q: NATURAL_Q.format(q=q, f=f) for q in (0.5, 0.9, 0.99)}
    run.histogram("sglang:inter_token_latency_seconds", itl, nat("sglang:inter_token_latency_seconds"))
    run.histogram("sglang:queue_time_seconds", canon["metrics"]["queue_time"],
                  nat("sglang:queue_time_seconds"))
    run.counter("sglang:prompt_tokens_total", sum(r.get("prompt_tokens", 0) for r in sched))
    run.counter("sglang:generation_tokens_total", sum(output_tokens(r) for r in sched))
    run.counter("sglang:num_requests_total", sum(1 for r in recs if reason(r) != "rejected"))
    run.counter("sglang:num_aborted_requests_total",
                sum(1 for r in recs if reason(r) in ("aborted", "timed_out")))
    run.c.equal(run.value_of(answers, "sglang:num_running_reqs"), 0, "dashboard running at the end")
    run.c.equal(run.value_of(answers, "sglang:num_queue_reqs"), 0, "dashboard queued at the end")
    run.c.ok(run.gauge_idle("sglang:num_running_reqs") > 0, "requests ran")
    run.gauge_idle("sglang:num_queue_reqs")


def check_tgi(run):
    recs = run.records
    succ = [r for r in recs if reason(r) in ("stop", "length")]
    canon = run.report(succ)
    per_token = run.report([tokens_from_schedule(r) for r in succ])["metrics"]["tpot"]
    inference = run.report([starting_at(r, r["scheduled"], True) for r in succ])["metrics"]["e2e"]
    # Prompt lengths at validation: every request that arrived with one (tokchron: arrive).
    arrived = run.report([r for r in recs if r.get("prompt_tokens") is not None])
    answers = run.dashboard(TGI_DASHBOARD, TGI_NOT_EXPORTED)
    print("--- agreement with tokchron-report on the trace")

    def panel(family, title=None):
        return {q: next(e for t, e in TGI_DASHBOARD if (title is None or t == title) and
                        e.startswith(f"histogram_quantile({q}, ") and f"{family}_bucket" in e)
                for q in (0.5, 0.9, 0.99)}
    run.histogram("tgi_request_duration", canon["metrics"]["e2e"], panel("tgi_request_duration"))
    run.histogram("tgi_request_queue_duration", canon["metrics"]["queue_time"],
                  panel("tgi_request_queue_duration", "Queue quantiles"))
    run.histogram("tgi_request_mean_time_per_token_duration", per_token,
                  panel("tgi_request_mean_time_per_token_duration"))
    run.histogram("tgi_request_inference_duration", inference)
    # Lengths: count and sum exactly, the dashboard's quantiles within the bucket bound.
    for family, want, title in [
            ("tgi_request_input_length", arrived["lengths"]["prompt"], "Number of tokens per prompt"),
            ("tgi_request_input_length", arrived["lengths"]["prompt"], "Prompt Tokens"),
            ("tgi_request_generated_tokens", canon["lengths"]["output"],
             "Number of generated tokens per request")]:
        run.histogram(family, want, panel(family, title))
    thr = next(e for _, e in TGI_DASHBOARD if e.startswith("sum((rate(tgi_request_generated"))
    run.c.close(run.value_of(answers, thr), canon["lengths"]["output"]["mean"],
                "dashboard 'Throughput' (generated tokens per successful request)")
    run.c.equal(run.value_of(answers, 'sum(increase(tgi_request_success{container="$service"}[1m]))'),
                len(succ), "dashboard increase(tgi_request_success[1m])")
    err_of = {"aborted": "dropped", "timed_out": "dropped", "error": "generation",
              "rejected": "overloaded"}
    want_err = {}
    for r in recs:
        if reason(r) in err_of:
            want_err[err_of[reason(r)]] = want_err.get(err_of[reason(r)], 0) + 1
    got_err = {x["metric"]["err"]: float(x["value"][1]) for x in
               answers['sum(increase(tgi_request_failure{container="$service"}[1m])) by (err)']}
    run.c.ok(all(got_err.get(k, 0) == v for k, v in want_err.items()) and
             all(v == want_err.get(k, 0) for k, v in got_err.items()),
             f"dashboard increase(tgi_request_failure[1m]) by err: {got_err} (trace: {want_err})")
    run.c.equal(run.value_of(answers, 'count(tgi_request_count{container="$service"})'), 1,
                "dashboard number of replicas")
    run.counter("tgi_request_count", len(recs))
    run.c.equal(run.value_of(answers, 'sum(tgi_queue_size{container="$service"})'), 0,
                "dashboard queue size at the end")
    run.c.equal(run.value_of(answers, 'avg(tgi_batch_current_size{container="$service"})'), 0,
                "dashboard batch size at the end")
    run.c.ok(run.gauge_idle("tgi_batch_current_size") > 0, "requests ran")
    heat = 'sum(increase(tgi_request_mean_time_per_token_duration_bucket{container="$service"}[5m])) by (le)'
    run.heatmap(answers, heat, "tgi_request_mean_time_per_token_duration")


def decode_us(r):
    """llama.cpp's decode time of a request with a token: max(1 us, last - first token) in
    whole microseconds (server-common.h `server_slot_stats::t_gen_us`). The trace's times are
    seconds printed to read back exactly from the server's nanoseconds, so the nanoseconds are
    recovered exactly and cut to microseconds as the recorder cuts them."""
    ns = round(last_token(r) * 1e9) - round(first_token(r) * 1e9)
    return max(1, ns // 1000)


def check_llamacpp(run):
    recs = run.records
    first = [r for r in recs if first_token(r) is not None]
    # Prompt tokens computed (the cached ones are not) and cached, at the first token.
    run.counter("llamacpp:prompt_tokens_total",
                sum(r.get("prompt_tokens", 0) - r.get("cached_prompt_tokens", 0) for r in first))
    cached = [r for r in first if "cached_prompt_tokens" in r]
    if cached:
        run.counter("llamacpp:prompt_tokens_cached_total",
                    sum(r["cached_prompt_tokens"] for r in cached))
    # Output tokens and decode time of every request with a token, whatever its outcome
    # (llama.cpp counts a slot's as it is released), in whole microseconds.
    run.counter("llamacpp:tokens_predicted_total", sum(output_tokens(r) for r in first))
    total_us = sum(decode_us(r) for r in first)
    got = run.prom.scalar(f"sum(llamacpp:tokens_predicted_seconds_total{{{run.tag}}})")
    run.c.ok(got == total_us / 1e6,
             f"llamacpp:tokens_predicted_seconds_total: {got!r} s, the trace's "
             f"{total_us} us over {len(first)} requests")
    # The decode throughput gauge: at each scrape, decode steps (N - 1 per request) over decode
    # time of the requests finished since the previous scrape. The steps are the tokens less one
    # per request with a token, which the finished-requests counter bounds: between two stored
    # scrapes, (dtokens - dfinished) / dseconds <= gauge <= dtokens / dseconds (equal when every
    # finished request had a token). serve restarts the gauge's window at every /metrics
    # answer, so a scrape Prometheus did not store (up == 0: it timed out, on a loaded machine)
    # restarted it unseen: the pair of stored scrapes around one is skipped, and the pair after.
    up = run.prom.query(f"up{{{run.tag}}}[{run.window_ms}ms]")
    failed = [float(t) for t, v in (up[0]["values"] if len(up) == 1 else []) if v == "0"]
    gauge, tokens, secs = ("llamacpp:predicted_tokens_seconds", "llamacpp:tokens_predicted_total",
                           "llamacpp:tokens_predicted_seconds_total")
    series = {}
    for f in (gauge, tokens, secs):
        res = run.prom.query(f"{f}{{{run.tag}}}[{run.window_ms}ms]")
        if len(res) != 1:
            raise cd.Failure(f"{f}: {len(res)} series")
        series[f] = {float(t): float(v) for t, v in res[0]["values"]}
    series["finished"] = {}  # every outcome's samples, summed per scrape
    for x in run.prom.query(f"tokchron_requests_total{{{run.tag}}}[{run.window_ms}ms]"):
        for t, v in x["values"]:
            series["finished"][float(t)] = series["finished"].get(float(t), 0.0) + float(v)
    stamps = sorted(series[gauge])
    bad, windows, skipped = [], 0, 0
    for i, (prev, t) in enumerate(zip(stamps, stamps[1:])):
        if any(t not in series[x] or prev not in series[x] for x in (tokens, secs, "finished")):
            continue
        if any((stamps[i - 1] if i else prev) < f < t for f in failed):
            skipped += 1
            continue
        dn = series[tokens][t] - series[tokens][prev]
        ds = series[secs][t] - series[secs][prev]
        dr = series["finished"][t] - series["finished"][prev]
        got = series[gauge][t]
        if dn == 0:
            ok = got == 0
        else:
            lo, hi = max(dn - dr, 0) / ds * (1 - 1e-9), dn / ds * (1 + 1e-9)
            ok = lo <= got <= hi
            windows += 1
        if not ok:
            bad.append((t, got, dn, dr, ds))
    run.c.ok(windows > 0 and not bad,
             f"{gauge}: at {len(stamps)} scrapes within (dtokens - dfinished, dtokens) over "
             f"dseconds since the previous one ({windows} windows with tokens; {skipped} pairs "
             f"around a failed scrape skipped; outside: {bad[:3]})")
    # Natural query: output tokens per second of decode, from the two counters' rates.
    q = (f"sum(rate(llamacpp:tokens_predicted_total{{{run.tag}}}[{run.window_ms}ms])) / "
         f"sum(rate(llamacpp:tokens_predicted_seconds_total{{{run.tag}}}[{run.window_ms}ms]))")
    got = run.prom.scalar(q)
    exact = sum(output_tokens(r) for r in first) / (total_us / 1e6)
    run.c.close(got, exact, "tokens per decode second, rate(tokens) / rate(seconds)")
    run.compared.append(("llamacpp:tokens_predicted/seconds", None, got, exact, exact, exact))
    # Outcome counters beside llama.cpp's families: every finished request, by reason.
    for why in REASONS:
        want = sum(1 for r in recs if reason(r) == why)
        got = run.prom.scalar(f'sum(tokchron_requests_total{{{run.tag},outcome="{why}"}})')
        run.c.equal(got, want, f'tokchron_requests_total{{outcome="{why}"}}')
    run.gauge_idle("llamacpp:requests_deferred")
    run.c.ok(run.gauge_idle("llamacpp:requests_processing") > 0, "requests ran")


def check_trtllm(run):
    recs = run.records
    # Only requests with a finish reason (stop, length, timeout) are logged.
    inc = [r for r in recs if reason(r) in ("stop", "length", "timed_out")]
    canon = run.report(inc)
    # TTFT and E2E from the executor's arrival (queued) to the first and the last token.
    from_exec = run.report([starting_at(r, r.get("queued", r.get("arrival", r["send"])), True)
                            for r in inc])
    inference = run.report([starting_at(r, r["scheduled"], True) for r in inc])["metrics"]["e2e"]
    # Values of 0 are not observed: the decode time and TPOT of answers whose tokens all came
    # at once (one-token answers among them).
    multi = run.report([r for r in inc if first_token(r) is not None and
                        last_token(r) > first_token(r)])
    wants = {
        "trtllm_time_to_first_token_seconds": from_exec["metrics"]["ttft"],
        "trtllm_e2e_request_latency_seconds": from_exec["metrics"]["e2e"],
        "trtllm_time_per_output_token_seconds": multi["metrics"]["tpot"],
        "trtllm_request_queue_time_seconds": canon["metrics"]["queue_time"],
        "trtllm_request_prefill_time_seconds": canon["metrics"]["prefill_time"],
        "trtllm_request_decode_time_seconds": multi["metrics"]["decode_time"],
        "trtllm_request_inference_time_seconds": inference,
    }
    print(f"--- natural queries (trtllm-serve publishes no dashboard), range {run.window_ms}ms")
    for family in TRTLLM_HISTOGRAMS:
        run.histogram(family, wants[family], {q: NATURAL_Q.format(q=q, f=family)
                                              for q in (0.5, 0.9, 0.99)})
        mean = run.prom.query(run.expand(NATURAL_MEAN.format(f=family)))
        if wants[family]["count"]:
            run.c.close(float(mean[0]["value"][1]), wants[family]["mean"], f"natural mean of {family}")
    by = {x["metric"]["finished_reason"]: float(x["value"][1]) for x in run.prom.query(
        f"sum by (finished_reason) (rate(trtllm_request_success_total{{{run.tag}}}[{run.window_ms}ms]))")}
    want = {"stop": 0, "length": 0, "timeout": 0}
    for r in inc:
        want[{"timed_out": "timeout"}.get(reason(r), reason(r))] += 1
    run.c.ok(all(abs(by.get(k, -1) * run.w - v) <= 1e-9 * max(v, 1) for k, v in want.items()),
             f"rate(trtllm_request_success_total[w]) x w by finished_reason: "
             f"{ {k: round(v * run.w, 6) for k, v in by.items()} } (trace: {want})")
    run.counter("trtllm_prompt_tokens_total", sum(r.get("prompt_tokens", 0) for r in inc))
    run.counter("trtllm_generation_tokens_total", sum(output_tokens(r) for r in inc))
    run.c.ok(run.gauge_idle("trtllm_num_requests_running") > 0, "requests ran")
    run.gauge_idle("trtllm_num_requests_waiting")


# ------------------------------------------- one scrape of /metrics, read directly (--metrics)


class Scrape:
    """The samples of one Prometheus text exposition (serve's /metrics after its last request
    finished): what Dynamo's, LMDeploy's and OpenTelemetry's presets are checked on, without a
    Prometheus (stage 44 pays seconds for them, not a Prometheus run each)."""

    LINE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$')
    LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')

    def __init__(self, text):
        self.samples, self.types = [], {}
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(" ", 3)
                self.types[name] = kind
            elif line and not line.startswith("#"):
                m = self.LINE.match(line)
                if not m:
                    raise cd.Failure(f"unparsed exposition line: {line}")
                labels = dict(self.LABEL.findall(m.group(2) or ""))
                self.samples.append((m.group(1), labels, float(m.group(3))))

    def total(self, name, **labels):
        """The sum of `name`'s samples whose labels include `labels`; None when it has none."""
        got = [v for n, ls, v in self.samples
               if n == name and all(ls.get(k) == w for k, w in labels.items())]
        return sum(got) if got else None

    def buckets(self, family):
        by = {}
        for n, ls, v in self.samples:
            if n == f"{family}_bucket":
                le = float(ls["le"])
                by[le] = by.get(le, 0.0) + v
        out = sorted(by.items())
        if not out or not math.isinf(out[-1][0]):
            raise cd.Failure(f"{family}: no +Inf bucket")
        return out


def direct_histogram(run, family, want):
    """A histogram of the scrape against tokchron-report's metric `want`: count and +Inf bucket
    exactly, buckets cumulative, mean (sum / count) to 1e-9, and report's p50, p90 and p99
    inside the bucket bound of their rank (cd.quantile_bound)."""
    s, c = run.prom, run.c
    c.ok(s.types.get(family) == "histogram", f"{family}: TYPE {s.types.get(family)}")
    count = s.total(f"{family}_count") or 0.0
    c.equal(count, want["count"], f"{family}_count")
    b = s.buckets(family)
    c.equal(b[-1][1], count, f"{family} +Inf bucket")
    c.ok(all(x[1] <= y[1] for x, y in zip(b, b[1:])), f"{family}: {len(b)} cumulative buckets")
    if not count:
        return
    c.close(s.total(f"{family}_sum") / count, want["mean"], f"{family} mean (sum / count)")
    for q in (0.5, 0.9, 0.99):
        lo, hi = cd.quantile_bound(q, b)
        exact = want[f"p{q * 100:g}"]
        c.ok(lo <= exact <= hi, f"{family} p{q * 100:g}: tokchron-report {exact:.6g} in the "
                                f"bucket bound [{lo:.6g}, {hi:.6g}]")


def direct_counter(run, family, want, **labels):
    got = run.prom.total(family, **labels)
    run.c.equal(-1 if got is None else got, want,
                family + ("{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"
                          if labels else ""))


# status and error_type of a request under the dynamo preset, by finish reason
# (live/presets.hpp dynamo_request_status, dynamo_error_types).
DYNAMO_OUTCOMES = {"stop": ("success", ""), "length": ("success", ""),
                   "aborted": ("error", "cancelled"), "error": ("error", "internal"),
                   "timed_out": ("error", "response_timeout"), "rejected": ("error", "overload")}


def check_dynamo(run):
    recs = run.records
    # Inclusion all: every request as it ends; TTFT and the prompt length at the first token.
    canon = run.report(recs)
    itl = run.report([first_chunk_one_token(r) for r in recs])["metrics"]["itl"]
    direct_histogram(run, "dynamo_frontend_request_duration_seconds", canon["metrics"]["e2e"])
    direct_histogram(run, "dynamo_frontend_time_to_first_token_seconds", canon["metrics"]["ttft"])
    direct_histogram(run, "dynamo_frontend_inter_token_latency_seconds", itl)
    started = [r for r in recs if first_token(r) is not None]
    direct_counter(run, "dynamo_frontend_input_sequence_tokens_count", len(started))
    direct_counter(run, "dynamo_frontend_input_sequence_tokens_sum",
                   sum(r.get("prompt_tokens", 0) for r in started))
    # The output length of the requests that produced a token (osl > 0).
    produced = [r for r in recs if output_tokens(r) > 0]
    direct_counter(run, "dynamo_frontend_output_sequence_tokens_count", len(produced))
    direct_counter(run, "dynamo_frontend_output_sequence_tokens_sum",
                   sum(output_tokens(r) for r in produced))
    direct_counter(run, "dynamo_frontend_output_tokens_total", sum(output_tokens(r) for r in recs))
    direct_counter(run, "dynamo_frontend_requests_started_total", len(recs))
    want = {}
    for r in recs:
        key = DYNAMO_OUTCOMES[reason(r)]
        want[key] = want.get(key, 0) + 1
    for (status, error_type) in sorted(set(DYNAMO_OUTCOMES.values())):
        direct_counter(run, "dynamo_frontend_requests_total", want.get((status, error_type), 0),
                       status=status, error_type=error_type)
    pairs = {(ls.get("status"), ls.get("error_type")) for n, ls, _ in run.prom.samples
             if n == "dynamo_frontend_requests_total"}
    run.c.ok(pairs == set(DYNAMO_OUTCOMES.values()),
             f"dynamo_frontend_requests_total (status, error_type) pairs: {sorted(pairs)}")
    aborted = sum(1 for r in recs if reason(r) == "aborted")
    direct_counter(run, "dynamo_frontend_disconnected_clients", aborted)
    direct_counter(run, "dynamo_frontend_model_cancellation_total", aborted)
    direct_counter(run, "dynamo_frontend_model_rejection_total",
                   sum(1 for r in recs if reason(r) == "rejected"))
    for g in ("dynamo_frontend_inflight_requests", "dynamo_frontend_active_requests",
              "dynamo_frontend_queued_requests"):
        direct_counter(run, g, 0)


def check_lmdeploy(run):
    recs = run.records
    sched = cd.members(recs, "scheduled")
    canon = run.report(sched)
    started = [r for r in recs if first_token(r) is not None]
    direct_histogram(run, "lmdeploy:time_to_first_token_seconds",
                     run.report(started)["metrics"]["ttft"])
    for family, metric in [("lmdeploy:e2e_request_latency_seconds", "e2e"),
                           ("lmdeploy:request_queue_time_seconds", "queue_time"),
                           ("lmdeploy:request_prefill_time_seconds", "prefill_time"),
                           ("lmdeploy:request_decode_time_seconds", "decode_time")]:
        direct_histogram(run, family, canon["metrics"][metric])
    # First scheduled to the last token: requests scheduled that produced a token.
    inference = run.report([starting_at(r, r["scheduled"], True) for r in sched
                            if "scheduled" in r and first_token(r) is not None])["metrics"]["e2e"]
    direct_histogram(run, "lmdeploy:request_inference_time_seconds", inference)
    # One sample per engine step after the first (vLLM's ITL): the gaps between token chunks,
    # so per request (chunks - 1) samples summing to last - first token.
    steps = sum(len(token_chunks(r)) - 1 for r in started)
    span = sum(last_token(r) - first_token(r) for r in started)
    direct_counter(run, "lmdeploy:time_per_output_token_seconds_count", steps)
    got = run.prom.total("lmdeploy:time_per_output_token_seconds_sum") or 0.0
    run.c.close(got, span, "lmdeploy:time_per_output_token_seconds_sum (last - first token)")
    direct_counter(run, "lmdeploy:request_prompt_tokens_count", len(sched))
    direct_counter(run, "lmdeploy:request_generation_tokens_sum",
                   sum(output_tokens(r) for r in sched))
    direct_counter(run, "lmdeploy:prompt_tokens_total",
                   sum(r.get("prompt_tokens", 0) for r in started))
    direct_counter(run, "lmdeploy:generation_tokens_total", sum(output_tokens(r) for r in recs))
    for g in ("lmdeploy:num_requests_running", "lmdeploy:num_requests_waiting"):
        direct_counter(run, g, 0)


# error.type of a failed request under the otel preset (live/presets.hpp otel_genai_error_types).
OTEL_ERROR_TYPES = {"aborted": "cancelled", "error": "_OTHER", "timed_out": "timeout",
                    "rejected": "rejected"}


def check_otel(run):
    recs = run.records
    # "For successful responses": stop and length.
    succ = [r for r in recs if reason(r) in ("stop", "length")]
    canon = run.report(succ)
    direct_histogram(run, "gen_ai_server_time_to_first_token_seconds", canon["metrics"]["ttft"])
    direct_histogram(run, "gen_ai_server_time_per_output_token_seconds", canon["metrics"]["tpot"])
    # Every finished request, arrival to finish; a failed one's under its error_type.
    duration = "gen_ai_server_request_duration_seconds"
    direct_histogram(run, duration, run.report(recs)["metrics"]["e2e"])
    for why, error_type in OTEL_ERROR_TYPES.items():
        n = sum(1 for r in recs if reason(r) == why)
        got = run.prom.total(f"{duration}_count", error_type=error_type)
        run.c.equal(0 if got is None else got, n, f'{duration}_count{{error_type="{error_type}"}}')
    types = {ls.get("error_type") for n, ls, _ in run.prom.samples if n.startswith(duration)}
    run.c.ok(types <= {None} | set(OTEL_ERROR_TYPES.values()), f"error_type values: {types}")
    labels = {ls.get("gen_ai_operation_name") for n, ls, _ in run.prom.samples
              if n.startswith("gen_ai_server_")}
    run.c.ok(labels == {"chat"}, f"gen_ai_operation_name on every point: {sorted(labels)}")


CHECKS = {"sglang": check_sglang, "tgi": check_tgi, "llamacpp": check_llamacpp,
          "trtllm": check_trtllm, "dynamo": check_dynamo, "lmdeploy": check_lmdeploy,
          "otel": check_otel}
DIRECT = {"dynamo", "lmdeploy", "otel"}  # checked on one scrape read directly (--metrics)


def main_direct(args):
    with open(args.metrics, encoding="utf-8") as f:
        scrape = Scrape(f.read())
    c = cd.Checker()
    with tempfile.TemporaryDirectory() as tmp:
        run = Run(args, c, scrape, 0.0, 0, tmp)
        by_reason = {}
        for r in run.records:
            by_reason[reason(r)] = by_reason.get(reason(r), 0) + 1
        print(f"{args.preset}: one scrape of {len(scrape.samples)} samples; trace: "
              f"{len(run.records)} requests, by finish reason {by_reason}")
        try:
            CHECKS[args.preset](run)
        except (cd.Failure, OSError, ValueError, KeyError, StopIteration, TypeError) as e:
            print(f"FAIL {type(e).__name__}: {e}")
            return 1
    print(f"{c.failures} check(s) failed")
    return 1 if c.failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", required=True, choices=sorted(CHECKS))
    ap.add_argument("--prometheus", help="HOST:PORT (the presets not in DIRECT)")
    ap.add_argument("--job", default="presets")
    ap.add_argument("--metrics", help="a scrape of /metrics after the run (the DIRECT presets)")
    ap.add_argument("--trace", required=True)
    ap.add_argument("--report", required=True, help="the tokchron-report binary")
    ap.add_argument("--model", required=True)
    ap.add_argument("--service", default="tokchron-serve", help="the scrape's container label")
    ap.add_argument("--summary", help="append the compared quantiles to this file")
    args = ap.parse_args()
    if (args.preset in DIRECT) != (args.metrics is not None) or \
            (args.preset not in DIRECT and args.prometheus is None):
        print(f"--preset {args.preset} takes " +
              ("--metrics FILE" if args.preset in DIRECT else "--prometheus HOST:PORT"))
        return 2
    if args.metrics:
        return main_direct(args)

    prom = cd.Prometheus(args.prometheus, args.job)
    up = prom.query(f'up{{job="{args.job}"}}[1h]')
    if len(up) != 1:
        print(f"no scrapes of job {args.job}: {up}")
        return 2
    stamps = [float(t) for t, v in up[0]["values"] if v == "1"]
    prom.time = stamps[-1] if stamps else None
    prom.spread(args.job, up[0]["values"])
    if len(stamps) < 3:
        print(f"fewer than 3 successful scrapes of job {args.job}")
        return 2
    first, last = stamps[0], stamps[-1]
    # A dashboard query over a fixed range ([1m], [5m], [10m]: TGI's; SGLang's use
    # $__rate_interval, the natural queries w) gives the run's totals only when the whole run fits
    # in it, 5 s kept for where the range's edge falls between scrapes. The run's span grows with
    # the machine's load (serve's sim engine sleeps each step in real time): measured in stage 44
    # on 2 cores, 15-18 s a preset at load average 20, and 74 s once with a two-job compile
    # beside it. So only a preset whose dashboard has a fixed range is held to it.
    fixed = [int(m) * 60 for _, e in {"sglang": SGLANG_DASHBOARD, "tgi": TGI_DASHBOARD}.get(
        args.preset, []) for m in re.findall(r"\[(\d+)m\]", e)]
    if fixed and last - first > min(fixed) - 5:
        print(f"the run spans {last - first:.1f} s: the dashboard's [{min(fixed) // 60}m] ranges "
              f"would not hold it (at most {min(fixed) - 5} s)")
        return 2
    prom.time = last
    window_ms = int(math.ceil((last - first) * 1000)) + 1000
    print(f"{args.preset}: {len(stamps)} scrapes from {first:.3f} to {last:.3f} (a span of "
          f"{last - first:.1f} s); queries at T = {last:.3f} with range {window_ms}ms")
    c = cd.Checker()
    with tempfile.TemporaryDirectory() as tmp:
        run = Run(args, c, prom, window_ms / 1000.0, window_ms, tmp)
        by_reason = {}
        for r in run.records:
            by_reason[reason(r)] = by_reason.get(reason(r), 0) + 1
        print(f"trace: {len(run.records)} requests, by finish reason {by_reason}")
        try:
            CHECKS[args.preset](run)
        except (cd.Failure, OSError, ValueError, KeyError, StopIteration) as e:
            print(f"FAIL {type(e).__name__}: {e}")
            return 1
    if args.summary:
        with open(args.summary, "a", encoding="utf-8") as f:
            for family, q, got, exact, lo, hi in run.compared:
                f.write(f"{args.preset}\t{family}\t{q}\t{got:.6g}\t{exact:.6g}\t{lo:.6g}\t{hi:.6g}\n")
    print(f"{c.failures} check(s) failed")
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
