#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The checks of .ci/stages/49-llama-cpp.sh against llama-server with tokchron in it
(standard library only).

  llama_check.py load  --url URL --out FILE      the paths tokchron-bench cannot drive: requests
                                                  whose `timings` it keeps, n > 1, streams the
                                                  client abandons, requests abandoned while they
                                                  wait for a slot, a prompt over the context
  llama_check.py check --llama-metrics A --tokchron-metrics B --trace T --load FILE
                                                  every family both /metrics export equal; every
                                                  request's tokchron record equal to llama.cpp's
                                                  `timings`; the trace's finish reasons as the
                                                  load made them
  llama_check.py prom  --prometheus HOST:PORT --llama-metrics A --tokchron-metrics B
                       --llama-instance I --tokchron-instance J
                                                  Prometheus' last sample of every family equal
                                                  to what curl read
"""
import argparse
import http.client
import json
import math
import socket
import sys
import threading
import time

# --- load ----------------------------------------------------------------------------------


def words(n):
    return " ".join(["the"] * n)


def request(url, path, body, rid, stream, abandon_after=None, timeout=120):
    """One request; returns (status, events or body, error). With abandon_after=k the client
    closes the connection after k streamed events (0: before any)."""
    host, port = url.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    payload = json.dumps(body)
    conn.request("POST", path, payload, {"Content-Type": "application/json", "X-Request-Id": rid})
    if abandon_after == 0:
        conn.sock.shutdown(socket.SHUT_RDWR)
        conn.close()
        return None, [], "abandoned before a slot"
    resp = conn.getresponse()
    if resp.status != 200:
        data = resp.read().decode("utf-8", "replace")
        conn.close()
        return resp.status, data, None
    if not stream:
        data = json.loads(resp.read())
        conn.close()
        return 200, data, None
    events = []
    buf = b""
    while True:
        line = resp.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            break
        events.append(json.loads(data))
        if abandon_after is not None and len(events) >= abandon_after:
            conn.sock.shutdown(socket.SHUT_RDWR)
            conn.close()
            return 200, events, "abandoned mid-stream"
    conn.close()
    return 200, events, None


def timings_of(status, got, stream):
    """{choice index: timings} from a response (each choice's final chunk or object)."""
    out = {}
    if status != 200:
        return out
    items = got if stream else [got]
    for ev in items:
        t = ev.get("timings")
        if t is None:
            continue
        idx = 0
        if ev.get("choices"):
            idx = ev["choices"][0].get("index", 0)
        elif "index" in ev:
            idx = ev["index"]
        out[idx] = t
    return out


def load(a):
    records = []
    lock = threading.Lock()

    def keep(rec):
        with lock:
            records.append(rec)

    chat = "/v1/chat/completions"
    cmpl = "/v1/completions"

    def body(endpoint, prompt_words, max_tokens, stream, n=1, ignore_eos=True):
        b = {"model": "m", "max_tokens": max_tokens, "stream": stream, "n": n,
             "ignore_eos": ignore_eos, "temperature": 1.0}
        if endpoint == chat:
            b["messages"] = [{"role": "user", "content": words(prompt_words)}]
        else:
            b["prompt"] = words(prompt_words)
        return b

    # 1. Requests whose timings are kept: 4 threads, each a closed loop over its share.
    plan = []
    for i in range(a.timed):
        endpoint = chat if i % 2 else cmpl
        stream = i % 3 != 0
        n = 1
        if i % 10 == 4:
            n = 2
        elif i % 10 == 9:
            n = 3
        max_tokens = 1 + (i * 7) % 24  # includes one-token answers
        prompt = 4 + (i * 37) % 160
        ignore = i % 4 != 1  # some may stop on EOS
        plan.append((f"py-{i}", endpoint, body(endpoint, prompt, max_tokens, stream, n, ignore),
                     stream, n))

    def worker(k):
        for j in range(k, len(plan), 4):
            rid, endpoint, b, stream, n = plan[j]
            status, got, err = request(a.url, endpoint, b, rid, stream)
            keep({"id": rid, "kind": "timed", "n": n, "stream": stream, "status": status,
                  "error": err, "timings": timings_of(status, got, stream)})

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()

    # 2. Streams their client abandons after a few events (the slot is released on cancel).
    for i in range(a.abandon):
        rid = f"py-abandon-{i}"
        status, _, err = request(a.url, chat, body(chat, 20 + i, 400, True), rid, True,
                                 abandon_after=2 + i)
        keep({"id": rid, "kind": "abandoned_stream", "n": 1, "status": status, "error": err})

    # 3. Requests abandoned while they wait for a slot: every slot busy with a long answer,
    # then requests that go away before a slot frees.
    long_ids = [f"py-long-{i}" for i in range(a.slots)]
    longs = []
    for rid in long_ids:
        t = threading.Thread(target=lambda r=rid: keep(
            {"id": r, "kind": "long", "n": 1,
             "status": request(a.url, cmpl, body(cmpl, 8, a.long_tokens, False), r, False)[0]}))
        t.start()
        longs.append(t)
    time.sleep(1.0)  # the long ones hold every slot
    for i in range(a.waiting):
        rid = f"py-waiting-{i}"
        status, _, err = request(a.url, chat, body(chat, 10, 16, True), rid, True,
                                 abandon_after=0)
        keep({"id": rid, "kind": "abandoned_waiting", "n": 1, "status": status, "error": err})
    for t in longs:
        t.join()

    # 4. One prompt over the context: refused.
    status, got, _ = request(a.url, chat, body(chat, a.over_context_words, 8, True),
                             "py-over-context", True)
    keep({"id": "py-over-context", "kind": "over_context", "n": 1, "status": status,
          "body": got if isinstance(got, str) else ""})

    with open(a.out, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    bad = [r for r in records if r["kind"] == "timed" and r["status"] != 200]
    if bad:
        sys.exit(f"llama_check.py: {len(bad)} timed requests failed, e.g. {bad[0]}")
    print(f"load: {len(records)} requests ({a.timed} timed, {a.abandon} abandoned mid-stream, "
          f"{a.waiting} abandoned waiting, 1 over the context)")


# --- check ---------------------------------------------------------------------------------


def parse_exposition(text):
    """{family name: {label string: value}} of a Prometheus text exposition."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_labels, value = line.rsplit(" ", 1)
        if "{" in name_labels:
            name, labels = name_labels.split("{", 1)
            labels = "{" + labels
        else:
            name, labels = name_labels, ""
        out.setdefault(name, {})[labels] = float(value)
    return out


def read_trace(path):
    recs = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if line:
                r = json.loads(line)
                if r["id"] in recs:
                    sys.exit(f"llama_check.py: {path}:{n}: id {r['id']} twice")
                recs[r["id"]] = r
    return recs


class Checks:
    def __init__(self):
        self.failures = []
        self.count = 0

    def eq(self, what, got, want, tol=0.0):
        self.count += 1
        ok = got == want if tol == 0 else (got is not None and want is not None
                                           and abs(got - want) <= tol)
        if not ok:
            self.failures.append(f"{what}: tokchron {got!r}, llama.cpp {want!r}")
        return ok


# The families tokchron's preset exports that llama.cpp computes the same way from request
# events (docs/library/live-metrics.md lists why each of the others is left out).
def compare_families(c, llama, tc, names):
    for name in names:
        lv, tv = llama.get(name), tc.get(name)
        if lv is None or tv is None:
            c.failures.append(f"{name}: exported by {'llama.cpp' if lv is not None else 'tokchron'}"
                              " only")
            continue
        c.eq(name, tv.get(""), lv.get(""))


def finish_of(r):
    """A trace record's finish reason (the writer leaves out `finish_reason` for `stop`)."""
    return r.get("finish_reason") or ("stop" if r.get("ok") else "error")


def record_times(r):
    """(prefill s, decode s, output tokens, prompt tokens, cached) of a trace record."""
    chunks = [ch for ch in r.get("chunks", []) if len(ch) < 3 or ch[2] == "text"]
    n = sum(ch[1] for ch in chunks)
    prefill = chunks[0][0] - r["scheduled"] if chunks and "scheduled" in r else None
    decode = chunks[-1][0] - chunks[0][0] if chunks else None
    return prefill, decode, n, r.get("prompt_tokens"), r.get("cached_prompt_tokens", 0)


def check(a):
    c = Checks()
    llama = parse_exposition(open(a.llama_metrics, encoding="utf-8").read())
    tc = parse_exposition(open(a.tokchron_metrics, encoding="utf-8").read())
    both = sorted(set(llama) & set(tc))
    print(f"families in both expositions: {', '.join(both)}")
    compare_families(c, llama, tc, a.family)
    trace = read_trace(a.trace)
    loads = [json.loads(line) for line in open(a.load, encoding="utf-8") if line.strip()]
    # Times in the trace are seconds since the server's time 0, printed to read back exactly;
    # a difference of two is exact to about 1e-14 s at these magnitudes, and llama.cpp's
    # milliseconds are whole microseconds / 1000: equal within 1e-9 s.
    tol = 1e-9
    compared = 0
    for r in loads:
        rid = r["id"]
        if r["kind"] == "timed":
            for idx in range(r["n"]):
                tid = rid if idx == 0 else f"{rid}#{idx}"
                if tid not in trace:
                    c.failures.append(f"{tid}: not in the server trace")
                    continue
                t = r["timings"].get(str(idx))
                rec = trace[tid]
                c.eq(f"{tid} finish", finish_of(rec) in ("stop", "length"), True)
                if t is None:
                    continue  # llama.cpp returned no timings for this choice
                prefill, decode, n, prompt, cached = record_times(rec)
                compared += 1
                c.eq(f"{tid} output tokens", n, t["predicted_n"])
                c.eq(f"{tid} prompt tokens", prompt, t["prompt_n"] + t["cache_n"])
                if idx == 0:
                    c.eq(f"{tid} cached prompt tokens", cached, t["cache_n"])
                else:
                    c.eq(f"{tid} cached prompt tokens (shared with its parent)", cached, prompt)
                c.eq(f"{tid} prefill", prefill, t["prompt_ms"] / 1e3, tol)
                if n >= 2:
                    c.eq(f"{tid} decode", decode, t["predicted_ms"] / 1e3, tol)
                    c.eq(f"{tid} TPOT", decode / (n - 1), t["predicted_per_token_ms"] / 1e3, tol)
                else:
                    # One token: tokchron's decode is 0; llama.cpp's is the gap between its two
                    # reads of the clock at that token, at least 1 us, and its TPOT 0.
                    c.eq(f"{tid} decode (one token)", decode, 0.0)
                    c.eq(f"{tid} llama.cpp TPOT (one token)", 0.0, t["predicted_per_token_ms"])
        elif r["kind"] in ("abandoned_stream", "abandoned_waiting"):
            rec = trace.get(rid)
            if c.eq(f"{rid} in the trace", rec is not None, True):
                c.eq(f"{rid} finish", finish_of(rec), "aborted")
        elif r["kind"] == "over_context":
            rec = trace.get(rid)
            c.eq(f"{rid} HTTP status", r["status"], 400)
            if c.eq(f"{rid} in the trace", rec is not None, True):
                c.eq(f"{rid} finish", finish_of(rec), "rejected")
        elif r["kind"] == "long":
            rec = trace.get(rid)
            if c.eq(f"{rid} in the trace", rec is not None, True):
                c.eq(f"{rid} finish", finish_of(rec), "length")
    misuse = tc.get("tokchron_misuse_total", {}).get("", 0.0)
    c.eq("tokchron_misuse_total", misuse, 0.0)
    unfinished = [k for k, v in trace.items() if v.get("error", "").startswith("unfinished")]
    c.eq("requests finished only by their recorder's destructor", unfinished, [])
    print(f"per request: {compared} responses' timings compared with the trace "
          f"(prefill, decode, TPOT within {tol} s; token counts exactly)")
    print(f"checks: {c.count}, failed: {len(c.failures)}")
    for f in c.failures[:40]:
        print("  FAIL " + f)
    return 1 if c.failures else 0


# --- prom ----------------------------------------------------------------------------------


def prom(a):
    c = Checks()
    curl = {"llama": parse_exposition(open(a.llama_metrics, encoding="utf-8").read()),
            "tokchron": parse_exposition(open(a.tokchron_metrics, encoding="utf-8").read())}
    inst = {"llama": a.llama_instance, "tokchron": a.tokchron_instance}
    for side in ("llama", "tokchron"):
        for name in a.family:
            want = curl[side].get(name, {}).get("")
            if want is None:
                continue
            q = f'{name}{{instance="{inst[side]}"}}'
            conn = http.client.HTTPConnection(*a.prometheus.split(":"), timeout=10)
            conn.request("GET", "/api/v1/query?query=" + urlquote(q))
            res = json.loads(conn.getresponse().read())["data"]["result"]
            got = float(res[0]["value"][1]) if res else None
            c.eq(f"Prometheus {q}", got, want, 0.0 if want is None or not math.isfinite(want)
                 else abs(want) * 1e-12)
    print(f"Prometheus against curl: {c.count} series compared, {len(c.failures)} differ")
    for f in c.failures:
        print("  FAIL " + f)
    return 1 if c.failures else 0


def urlquote(s):
    from urllib.parse import quote
    return quote(s, safe="")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("load")
    p.add_argument("--url", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--timed", type=int, default=40)
    p.add_argument("--abandon", type=int, default=4)
    p.add_argument("--waiting", type=int, default=3)
    p.add_argument("--slots", type=int, default=4)
    p.add_argument("--long-tokens", type=int, default=300)
    p.add_argument("--over-context-words", type=int, default=5000)
    p = sub.add_parser("check")
    p.add_argument("--llama-metrics", required=True)
    p.add_argument("--tokchron-metrics", required=True)
    p.add_argument("--trace", required=True)
    p.add_argument("--load", required=True)
    p.add_argument("--family", action="append", default=[])
    p = sub.add_parser("prom")
    p.add_argument("--prometheus", required=True)
    p.add_argument("--llama-metrics", required=True)
    p.add_argument("--tokchron-metrics", required=True)
    p.add_argument("--llama-instance", required=True)
    p.add_argument("--tokchron-instance", required=True)
    p.add_argument("--family", action="append", default=[])
    a = ap.parse_args()
    if a.cmd == "load":
        load(a)
        return 0
    return check(a) if a.cmd == "check" else prom(a)


if __name__ == "__main__":
    sys.exit(main())
