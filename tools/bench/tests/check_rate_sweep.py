#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks a `tokchron-bench --rate sweep` against `batching-executor serve` (sim backend in real
time) with the executor's own simulation of the same configuration, offline (stage 47;
docs/tools/tokchron-bench.md, "Rate sweep, steady state and repeated runs").

The sweep's throughput point (--users N, no think time, N above the batch limit so a request
always waits) must measure, over its steady-state window, the output tokens/s the executor
predicts for the same configuration and load, within

  - the window's resolution: the window counts token chunks by their time, so it can hold one
    engine step's tokens more or less at each end: 2 x max_batch_size tokens of the window's
    output tokens (e_res);
  - the sim's step jitter (a clipped Gaussian of 2 % per step, tools/executor): its mean over the
    window's steps, at three standard deviations, 3 x 0.02 / sqrt(steps) (e_jit);
  - below only, the real-time engine's overhead: serve sleeps until each step's modelled end and
    then does its bookkeeping, so a step lasts its modelled time plus the overhead, never less;
    at most --step-overhead-ms a step (the margin stated in the stage, measured on the loaded
    2-core machine) over the modelled step (the prediction's mean step): e_rt.

so  predicted (1 - e_res - e_jit - e_rt) <= measured <= predicted (1 + e_res + e_jit).

Its request rate likewise, e_res then the window's resolution in requests: its edges are each
the first end at or after an instant, so it holds whole batches when the bursts of ends at its
two edges are alike, and otherwise at most one batch less one request more or less:
(max_batch_size - 1) of the window's ended requests.

The sweep must also be GuideLLM's: the open-loop points' rates evenly spaced from the
synchronous point's measured rate to the throughput point's, the last one the throughput's
own; and no point may measure more than the predicted capacity (the upper bound above, with
e_rt added: a starved serve's late chunks written in a burst crowd a window as much).
"""
import argparse
import json
import math
import sys


def documents(path):
    # each point's document follows its "== rate = V ==" line
    text = "".join(l for l in open(path, encoding="utf-8") if not l.startswith("== "))
    dec = json.JSONDecoder()
    i, docs = 0, []
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return docs
        doc, i = dec.raw_decode(text, i)
        docs.append(doc)


def canonical(doc):
    """The canonical profile's summary of a tokchron-report JSON document (an object for one
    profile, an array for several)."""
    for p in doc if isinstance(doc, list) else [doc]:
        if isinstance(p, dict) and p.get("profile") == "canonical":
            return p
    raise SystemExit("no canonical profile in a report document")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sweep", required=True, help="tokchron-bench --rate sweep --format json")
    ap.add_argument("--predicted", required=True, help="batching-executor --format json")
    ap.add_argument("--max-batch", type=int, required=True)
    ap.add_argument("--points", type=int, required=True, help="--sweep-points")
    ap.add_argument("--step-overhead-ms", type=float, required=True)
    a = ap.parse_args()

    docs = [canonical(d) for d in documents(a.sweep)]
    labels = [d.get("sweep_point", {}).get("value") for d in docs]
    if labels[:2] != ["synchronous", "throughput"] or len(docs) != 2 + a.points:
        raise SystemExit(f"the sweep's points are {labels}, expected synchronous, throughput and "
                         f"{a.points} rates")
    windows = [d["steady_state"] for d in docs]
    for label, w in zip(labels, windows):
        if not w["length_s"] > 0 or w["request_rate"] is None:
            raise SystemExit(f"point {label}: no steady-state window: {w}")

    sync, most = windows[0]["request_rate"], windows[1]["request_rate"]
    expected = [sync + (most - sync) * i / a.points for i in range(1, a.points + 1)]
    for label, r in zip(labels[2:], expected):
        if not math.isclose(float(label), r, rel_tol=1e-5):
            raise SystemExit(f"rate point {label}: GuideLLM's spacing gives {r:.6g} "
                             f"(synchronous {sync:.6g}, throughput {most:.6g})")

    run = documents(a.predicted)[0]["runs"][0]
    predicted = canonical(run["summary"])
    p_tok = predicted["output_throughput"]
    p_req = predicted["request_throughput"]
    step_s = run["engine"]["simulated_seconds"] / run["engine"]["steps"]  # the mean step
    w = windows[1]
    m_tok = w["output_rate"]
    e_res = 2 * a.max_batch / w["output_tokens"]
    steps = w["length_s"] / step_s
    e_jit = 3 * 0.02 / math.sqrt(steps)
    e_rt = a.step_overhead_ms / 1e3 / step_s
    low, high = p_tok * (1 - e_res - e_jit - e_rt), p_tok * (1 + e_res + e_jit)
    print(f"synchronous {sync:.3f} req/s, throughput {most:.3f} req/s (steady state); rates "
          + ", ".join(labels[2:]))
    print(f"predicted by batching-executor: {p_tok:.1f} output tok/s, {p_req:.3f} req/s, "
          f"a step {step_s * 1e3:.2f} ms on average")
    print(f"measured at the throughput point: {m_tok:.1f} output tok/s, "
          f"{w['request_rate']:.3f} req/s over {w['length_s']:.3f} s ({w['output_tokens']} tokens)")
    print(f"ratio {m_tok / p_tok:.4f}; bounds [{low / p_tok:.4f}, {high / p_tok:.4f}] "
          f"(e_res {e_res:.4f}, e_jit {e_jit:.4f}, e_rt {e_rt:.4f})")
    ok = low <= m_tok <= high
    m_req = w["request_rate"]
    e_req = (a.max_batch - 1) / max(w["ended"], 1)
    r_low, r_high = p_req * (1 - e_req - e_jit - e_rt), p_req * (1 + e_req + e_jit)
    print(f"request rate ratio {m_req / p_req:.4f}; bounds [{r_low / p_req:.4f}, "
          f"{r_high / p_req:.4f}] (e_res {e_req:.4f}, {w['ended']} ended in the window)")
    ok = ok and r_low <= m_req <= r_high
    for label, win in zip(labels, windows):
        e = 2 * a.max_batch / max(win["output_tokens"], 1)
        # Above too, the real-time overhead: a starved serve writes a late step's chunks in a
        # burst, which crowds a window's chunk times (287.4 tok/s at a 10.5 req/s point, 5.3 %
        # over a capacity of 273.0, at load 20 beside four builds).
        cap = p_tok * (1 + e + 3 * 0.02 / math.sqrt(max(win["length_s"] / step_s, 1)) + e_rt)
        if win["output_rate"] > cap:
            print(f"point {label}: {win['output_rate']:.1f} output tok/s is over the predicted "
                  f"capacity {p_tok:.1f} (bound {cap:.1f})")
            ok = False
    if not ok:
        print("FAIL: the sweep's saturation point is not the executor's prediction")
        return 1
    print("ok: the sweep's throughput point is the executor's predicted capacity")
    return 0


if __name__ == "__main__":
    sys.exit(main())
