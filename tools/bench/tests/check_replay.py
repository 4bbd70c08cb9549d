#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tokchron-bench --replay of a Mooncake trace against `batching-executor serve`
(docs/tools/tokchron-bench.md, "Trace replay").

  check_replay.py make OUT --requests N --rate R --seed S
      writes a Mooncake-format trace (JSON Lines: timestamp in ms, input_length, output_length,
      hash_ids) of N requests, Poisson arrivals at R a second: each prompt is ceil(input/512)
      blocks, as Mooncake's published traces have them; its leading blocks come from one of a few
      shared chains (a system prompt, a conversation's history), the rest are its own.

  check_replay.py check --trace T --client C --server S --bench-err E --id-prefix P
      joins the client's and the server's traces by id and checks that
      - every request of T was sent, completed, in T's order of time (ties in file order), each
        intended at its recorded time since the earliest (to the microsecond the trace keeps);
      - the send lag (send minus intended send) has P99 (nearest rank) under --lag-p99-ms;
      - the server counted each prompt at its recorded length (serve counts words) and sent the
        recorded output length (ignore_eos);
      - tokchron-bench printed the send lag and the prompts' shares;
      with --cached exact|bounded (and --block-size, serve's KV block size), serve's prefix cache
      against what T's hash_ids predict, computed here from T alone: a request's prompt is its
      blocks of 512 tokens named by hash_ids (tokchron-bench sends block h's words wherever h
      is), so its serve block j (tokens [16j, 16j + 16) for blocks of 16) holds the same tokens
      as another request's block j exactly when both are full and both prompts have the same
      hash_ids up to the 512-token block that holds it. serve caches a prompt's full blocks when
      it schedules them and admits requests in the order of their `scheduled` time (ties: their
      arrival), so a request's cached tokens are its longest run of leading blocks that a
      request admitted before it holds, never its last token (a multiple of the block size, at
      most the prompt's length - 1):
      - exact: serve's cached tokens (its trace's cached_prompt_tokens, and the client's, read
        from the answers' usage) equal that prediction for every request (a KV pool that holds
        every block: nothing is evicted, nothing preempted);
      - bounded: at most the prediction, a multiple of the block size, under the prompt's
        length (a small pool: blocks are evicted, requests may be preempted).
"""
import argparse
import json
import math
import random
import sys

BLOCK = 512  # Mooncake's block: one hash_ids entry


def make(a):
    rng = random.Random(a.seed)
    # Shared chains: 12 of 1 to 3 blocks (ids below 1000); each request's own blocks above.
    chains = [[c * 10 + k for k in range(rng.randint(1, 3))] for c in range(12)]
    own = 1000
    t = 0.0
    with open(a.out, "w") as f:
        for _ in range(a.requests):
            t += rng.expovariate(a.rate)
            n = rng.randint(1, 3)  # blocks of the prompt
            chain = rng.choice(chains)
            shared = chain[: rng.randint(0, min(n, len(chain)))]
            ids = shared + list(range(own, own + n - len(shared)))
            own += n - len(shared)
            # The last block partly filled, as in the published traces.
            length = (n - 1) * BLOCK + rng.randint(1, BLOCK)
            rec = {"timestamp": int(t * 1000), "input_length": length,
                   "output_length": rng.randint(1, 6), "hash_ids": ids}
            f.write(json.dumps(rec) + "\n")


def nearest_rank(xs, q):
    s = sorted(xs)
    return s[max(0, math.ceil(q * len(s)) - 1)]


def check(a):
    plan = []
    with open(a.trace) as f:
        for line in f:
            if line.strip():
                plan.append(json.loads(line))
    order = sorted(range(len(plan)), key=lambda i: (plan[i]["timestamp"], i))  # stable
    plan = [plan[i] for i in order]
    t0 = plan[0]["timestamp"]
    client = {}
    with open(a.client) as f:
        for line in f:
            r = json.loads(line)
            client[r["id"]] = r
    server = {}
    with open(a.server) as f:
        for line in f:
            r = json.loads(line)
            server[r["id"]] = r
    fails = []
    if len(client) != len(plan):
        fails.append(f"client trace has {len(client)} requests, the replay {len(plan)}")
    lags = []
    for i, q in enumerate(plan):
        rid = str(i)
        c = client.get(rid)
        s = server.get(a.id_prefix + rid)
        if c is None or s is None:
            fails.append(f"request {rid}: missing from the {'client' if c is None else 'server'} trace")
            continue
        if not c.get("ok", True) or c.get("error"):
            fails.append(f"request {rid} failed: {c.get('error')}")
        want = (q["timestamp"] - t0) / 1000 / a.speed
        if abs(c["arrival"] - want) > 1e-6:
            fails.append(f"request {rid}: intended at {c['arrival']} s, recorded {want} s")
        lags.append((c["send"] - c["arrival"]) * 1e3)
        if s.get("prompt_tokens") != q["input_length"]:
            fails.append(f"request {rid}: serve counted {s.get('prompt_tokens')} prompt tokens, "
                         f"recorded {q['input_length']}")
        out = s.get("usage_output_tokens", sum(ch[1] for ch in s["chunks"]))
        if out != q["output_length"]:
            fails.append(f"request {rid}: serve sent {out} tokens, recorded {q['output_length']}")
    cache_note = ""
    if a.cached:
        cache_note = check_cached(a, plan, client, server, fails)
    p50, p99 = nearest_rank(lags, 0.5), nearest_rank(lags, 0.99)
    if p99 >= a.lag_p99_ms:
        fails.append(f"send lag P99 {p99:.3f} ms, not under {a.lag_p99_ms} ms")
    err = open(a.bench_err).read()
    for want in ("tokchron-bench: send lag (each request's send minus its intended send): ",
                 "tokchron-bench: prompts: "):
        if want not in err:
            fails.append(f"tokchron-bench did not print '{want}'")
    if fails:
        print("\n".join(fails[:20]))
        if len(fails) > 20:
            print(f"... and {len(fails) - 20} more")
        return 1
    span = (plan[-1]["timestamp"] - t0) / 1000
    print(f"ok: {len(plan)} requests over {span:.1f} s replayed; send lag median {p50:.3f} ms, "
          f"P99 {p99:.3f} ms, max {max(lags):.3f} ms; prompts and outputs of the recorded "
          f"lengths{cache_note}")
    return 0


def check_cached(a, plan, client, server, fails):
    """Serve's cached tokens against the prediction from the trace's hash_ids (see the top)."""
    bs = a.block_size
    if BLOCK % bs:
        fails.append(f"--block-size {bs} does not divide Mooncake's block of {BLOCK}")
        return ""
    rows = []
    for i, q in enumerate(plan):
        s = server.get(a.id_prefix + str(i))
        if s is None or s.get("scheduled") is None:
            continue  # reported above
        rows.append((s["scheduled"], s.get("arrival", s["send"]), i, q, s))
    rows.sort(key=lambda r: (r[0], r[1]))
    seen = set()  # (hash_ids up to the 512-token block, serve block index) of admitted prompts
    predicted_total = served_total = exact = 0
    for _, _, i, q, s in rows:
        ids, n = q["hash_ids"], q["input_length"]
        keys = []
        for j in range(n // bs):  # full blocks
            m = j * bs // BLOCK
            keys.append((tuple(ids[: m + 1]), j) if m < len(ids) else None)
        hit = 0
        while hit < (n - 1) // bs and keys[hit] is not None and keys[hit] in seen:
            hit += 1
        want = hit * bs
        seen.update(k for k in keys if k is not None)
        got = s.get("cached_prompt_tokens", 0)
        c = client.get(str(i), {})
        got_client = c.get("cached_prompt_tokens", 0)
        predicted_total += want
        served_total += got
        if got_client != got:
            fails.append(f"request {i}: the client read {got_client} cached tokens, serve traced {got}")
        if a.cached == "exact":
            if s.get("preempted"):
                fails.append(f"request {i}: preempted in the exact case (the pool is too small)")
            if got != want:
                fails.append(f"request {i}: serve cached {got} prompt tokens, hash_ids predict {want}")
            exact += got == want
        elif got > want or got % bs or (got and got >= n):
            fails.append(f"request {i}: serve cached {got} prompt tokens: more than the {want} "
                         f"hash_ids allow, not a multiple of {bs}, or the whole prompt of {n}")
    if predicted_total == 0:
        fails.append("the trace predicts no cached token: nothing was checked")
    what = ("equal to the prediction" if a.cached == "exact"
            else "within the prediction's bounds")
    return (f"; cached prompt tokens {served_total} of {predicted_total} predicted "
            f"({100 * served_total / max(1, predicted_total):.1f}%), each {what}")


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("out")
    m.add_argument("--requests", type=int, required=True)
    m.add_argument("--rate", type=float, required=True)
    m.add_argument("--seed", type=int, default=1)
    c = sub.add_parser("check")
    for name in ("--trace", "--client", "--server", "--bench-err", "--id-prefix"):
        c.add_argument(name, required=True)
    c.add_argument("--speed", type=float, default=1)
    c.add_argument("--lag-p99-ms", type=float, default=5)
    c.add_argument("--cached", choices=("exact", "bounded"))
    c.add_argument("--block-size", type=int, default=16)
    a = p.parse_args()
    if a.cmd == "make":
        make(a)
        return 0
    return check(a)


if __name__ == "__main__":
    sys.exit(main())
