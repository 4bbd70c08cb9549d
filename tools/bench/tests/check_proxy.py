#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tokchron-bench through nginx against `batching-executor serve` (CI stage 43-nginx-tls;
docs/tools/tokchron-bench.md, "Through a reverse proxy"): each client run's trace against the
server's trace, joined by id (the server's id is PREFIX + the client's X-Request-Id).

Usage: check_proxy.py --server TRACE --client NAME=TRACE:LOG ... [--direct NAME
       --unbuffered NAME --bound-ttft-ms MS --bound-tpot-ms MS] [--buffered NAME]

For every run (LOG is the run's standard error):
- every client request completed and joins one server record, with the same finish reason and
  the same token count (the sum of the client's token chunks = the server's);
- the client's merged-read line (`K of G gaps between token chunks ... fell inside one read`)
  equals its trace: K gaps of 0 among G gaps, and no line only when no gap is 0.
Per request it takes the TTFT excess (the client's TTFT from its send minus the server's from
its arrival: the way there and back) and the TPOT error (the client's (tN - t1)/(N - 1) minus
the server's: the change of the one-way delay between the first and the last token, over
N - 1). With --direct and --unbuffered: the unbuffered run's median TTFT excess is at most
--bound-ttft-ms over the direct run's, and its median |TPOT error| at most --bound-tpot-ms over
the direct run's. With --buffered: more than half that run's gaps fell inside one read (the
proxy released the events together) and the client's line says so, and with --direct and the
bounds, the buffered run is outside both (the bounds tell the two paths apart). Prints each run's numbers
as a JSON line; exits 1 naming each failure."""
import argparse
import json
import re
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


def tpot(chunks):
    n = sum(c[1] for c in chunks)
    return (chunks[-1][0] - chunks[0][0]) / (n - 1) if n > 1 else None


MERGED = re.compile(r"(\d+) of (\d+) gaps between token chunks \([0-9.]+%\) fell inside one read")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--client", action="append", required=True, help="NAME=TRACE:LOG")
    ap.add_argument("--id-prefix", default="cmpl-")
    ap.add_argument("--direct")
    ap.add_argument("--unbuffered")
    ap.add_argument("--buffered")
    ap.add_argument("--bound-ttft-ms", type=float)
    ap.add_argument("--bound-tpot-ms", type=float)
    a = ap.parse_args()
    server = {r["id"]: r for r in records(a.server)}
    problems = []
    stats = {}
    for spec in a.client:
        name, paths = spec.split("=", 1)
        path, log = paths.rsplit(":", 1)
        excess, tpot_err, zero, all_gaps, n = [], [], 0, 0, 0
        for c in records(path):
            n += 1
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
            ts = [x[0] for x in ct]
            zero += sum(1 for p, q in zip(ts, ts[1:]) if q == p)
            all_gaps += len(ts) - 1
            if tpot(ct) is not None:
                tpot_err.append(abs(tpot(ct) - tpot(st)))
        if n == 0 or not excess:
            problems.append(f"{name}: no request to compare")
            continue
        with open(log, encoding="utf-8") as f:
            m = MERGED.search(f.read())
        said = (int(m.group(1)), int(m.group(2))) if m else None
        if said is None and zero > 0:
            problems.append(f"{name}: {zero} gaps of 0 in the trace, and the client did not say "
                            "how many gaps fell inside one read")
        if said is not None and said != (zero, all_gaps):
            problems.append(f"{name}: the client says {said[0]} of {said[1]} gaps fell inside "
                            f"one read; its trace has {zero} gaps of 0 among {all_gaps}")
        st_ = {"run": name, "requests": n,
               "ttft_excess_ms_median": 1e3 * statistics.median(excess),
               "ttft_excess_ms_max": 1e3 * max(excess),
               "tpot_error_ms_median": 1e3 * statistics.median(tpot_err) if tpot_err else None,
               "tpot_error_ms_max": 1e3 * max(tpot_err) if tpot_err else None,
               "gaps_in_one_read": zero, "gaps": all_gaps}
        stats[name] = st_
        print(json.dumps(st_))
    if a.direct and a.unbuffered and a.direct in stats and a.unbuffered in stats:
        d, u = stats[a.direct], stats[a.unbuffered]
        if a.bound_ttft_ms is not None:
            more = u["ttft_excess_ms_median"] - d["ttft_excess_ms_median"]
            print(f"check_proxy: {a.unbuffered}: median TTFT excess {more:+.3f} ms against the "
                  f"direct run's (bound {a.bound_ttft_ms} ms)")
            if more > a.bound_ttft_ms:
                problems.append(f"{a.unbuffered}: median TTFT excess {more:.3f} ms over the "
                                f"direct run's, more than {a.bound_ttft_ms} ms")
        if a.bound_tpot_ms is not None and None not in (u["tpot_error_ms_median"],
                                                        d["tpot_error_ms_median"]):
            more = u["tpot_error_ms_median"] - d["tpot_error_ms_median"]
            print(f"check_proxy: {a.unbuffered}: median |TPOT error| {more:+.3f} ms against "
                  f"the direct run's (bound {a.bound_tpot_ms} ms)")
            if more > a.bound_tpot_ms:
                problems.append(f"{a.unbuffered}: median |TPOT error| "
                                f"{u['tpot_error_ms_median']:.3f} ms, the direct run's "
                                f"{d['tpot_error_ms_median']:.3f} ms: more than "
                                f"{a.bound_tpot_ms} ms over it")
    if a.direct and a.buffered and a.direct in stats and a.buffered in stats:
        # The bounds must tell the paths apart: the buffered path breaks both.
        d, b = stats[a.direct], stats[a.buffered]
        more = b["ttft_excess_ms_median"] - d["ttft_excess_ms_median"]
        if a.bound_ttft_ms is not None and more <= a.bound_ttft_ms:
            problems.append(f"{a.buffered}: median TTFT excess {more:.3f} ms over the direct "
                            f"run's, within the {a.bound_ttft_ms} ms bound: the bound does not "
                            "catch a buffering proxy here")
        if a.bound_tpot_ms is not None and None not in (b["tpot_error_ms_median"],
                                                        d["tpot_error_ms_median"]):
            more = b["tpot_error_ms_median"] - d["tpot_error_ms_median"]
            if more <= a.bound_tpot_ms:
                problems.append(f"{a.buffered}: median |TPOT error| {more:.3f} ms over the "
                                f"direct run's, within the {a.bound_tpot_ms} ms bound: the "
                                "bound does not catch a buffering proxy here")
    if a.buffered and a.buffered in stats:
        b = stats[a.buffered]
        if b["gaps"] == 0 or b["gaps_in_one_read"] * 2 <= b["gaps"]:
            problems.append(f"{a.buffered}: {b['gaps_in_one_read']} of {b['gaps']} gaps inside "
                            "one read: the buffering proxy did not merge the events")
    for p in problems[:20]:
        print("check_proxy:", p)
    if len(problems) > 20:
        print(f"check_proxy: ... and {len(problems) - 20} more")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
