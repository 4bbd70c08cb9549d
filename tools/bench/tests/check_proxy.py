#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tokchron-bench through nginx against `batching-executor serve` (CI stage 49-nginx-tls;
docs/tools/tokchron-bench.md, "Through a reverse proxy"): each client run's trace against the
server's trace, joined by id (the server's id is PREFIX + the client's X-Request-Id).

For every run: every client request completed and joins one server record, with the same
finish reason and the same token count (the client's token chunks = the server's). Per request
it takes the client's TTFT from its send minus the server's from its arrival (the way there and
back: the connect, TLS, the proxy, the client's read) and the client's mean gap between token
chunks minus the server's (what the path did to the gaps), and the share of the client's gaps
that are 0 (events it read together). Prints them per run as JSON lines; with --bound-ttft-ms
and --bound-gap-ms it checks that the run named --unbuffered stays within those bounds of the
run named --direct (the median TTFT excess, the median gap difference), and with --buffered
that the run had more than half its gaps inside one read. Exits 1 naming each failure."""
import argparse
import json
import statistics
import sys


def records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def reason(r):
    return r.get("finish_reason", "stop" if r.get("ok", True) else "error")


def tokens(r):
    return [c for c in r["chunks"] if (c[2] if len(c) > 2 else "text") in ("text", "reasoning")
            and c[1] > 0]


def gaps(ts):
    return [b - a for a, b in zip(ts, ts[1:])]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--client", action="append", required=True, help="NAME=TRACE")
    ap.add_argument("--id-prefix", default="cmpl-")
    ap.add_argument("--direct")
    ap.add_argument("--unbuffered")
    ap.add_argument("--buffered")
    ap.add_argument("--bound-ttft-ms", type=float)
    ap.add_argument("--bound-gap-ms", type=float)
    a = ap.parse_args()
    server = {r["id"]: r for r in records(a.server)}
    problems = []
    stats = {}
    for spec in a.client:
        name, path = spec.split("=", 1)
        excess, gap_diff, zero, all_gaps = [], [], 0, 0
        for c in records(path):
            s = server.get(a.id_prefix + c["id"])
            if s is None:
                problems.append(f"{name}: request {c['id']} is not in the server's trace")
                continue
            if not c.get("ok", True) or reason(c) != reason(s):
                problems.append(f"{name}: request {c['id']}: client {reason(c)} "
                                f"{c.get('error', '')!r}, server {reason(s)}")
                continue
            ct, st = tokens(c), tokens(s)
            if sum(x[1] for x in ct) != sum(x[1] for x in st):
                problems.append(f"{name}: request {c['id']}: client {sum(x[1] for x in ct)} "
                                f"tokens, server {sum(x[1] for x in st)}")
                continue
            if not ct or not st:
                continue
            excess.append((ct[0][0] - c["send"]) - (st[0][0] - s.get("arrival", s["send"])))
            cg, sg = gaps([x[0] for x in ct]), gaps([x[0] for x in st])
            zero += sum(1 for g in cg if g == 0)
            all_gaps += len(cg)
            if cg and sg:
                gap_diff.append(statistics.mean(cg) - statistics.mean(sg))
        if not excess:
            problems.append(f"{name}: no request to compare")
            continue
        st_ = {"run": name, "requests": len(excess),
               "ttft_excess_ms_median": 1e3 * statistics.median(excess),
               "ttft_excess_ms_max": 1e3 * max(excess),
               "gap_diff_ms_median": 1e3 * statistics.median(gap_diff) if gap_diff else None,
               "zero_gaps": zero, "gaps": all_gaps}
        stats[name] = st_
        print(json.dumps(st_))
    if a.direct and a.unbuffered and a.direct in stats and a.unbuffered in stats:
        d, u = stats[a.direct], stats[a.unbuffered]
        if a.bound_ttft_ms is not None:
            more = u["ttft_excess_ms_median"] - d["ttft_excess_ms_median"]
            if more > a.bound_ttft_ms:
                problems.append(f"{a.unbuffered}: median TTFT excess {more:.2f} ms over the "
                                f"direct run's, more than {a.bound_ttft_ms} ms")
        if a.bound_gap_ms is not None and u["gap_diff_ms_median"] is not None:
            if abs(u["gap_diff_ms_median"] - d["gap_diff_ms_median"]) > a.bound_gap_ms:
                problems.append(f"{a.unbuffered}: median gap difference "
                                f"{u['gap_diff_ms_median']:.3f} ms against the direct run's "
                                f"{d['gap_diff_ms_median']:.3f} ms, more than "
                                f"{a.bound_gap_ms} ms apart")
    if a.buffered and a.buffered in stats:
        b = stats[a.buffered]
        if b["gaps"] == 0 or b["zero_gaps"] * 2 <= b["gaps"]:
            problems.append(f"{a.buffered}: {b['zero_gaps']} of {b['gaps']} gaps inside one "
                            "read: the buffering proxy did not merge the events")
    for p in problems[:20]:
        print("check_proxy:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
