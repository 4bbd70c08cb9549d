#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The checks of .ci/stages/49-llama-cpp.sh against llama-server with tokchron in it
(standard library only).

  llama_check.py load  --url URL --out FILE      the paths tokchron-bench cannot drive: requests
                                                  whose `timings` it keeps, n > 1, streams the
                                                  client abandons, requests abandoned while they
                                                  wait for a slot, a prompt over the context
  llama_check.py window --url URL --tokchron-url URL2
                                                  one scrape window with no other scraper: both
                                                  /metrics, a few requests, both again; every
                                                  family both export equal, the decode rate
                                                  gauge included
  llama_check.py check --llama-metrics A --tokchron-metrics B --trace T --load FILE
                                                  every family both /metrics export equal after
                                                  the run; every request's tokchron record equal
                                                  to llama.cpp's `timings`; the trace's finish
                                                  reasons as the load made them
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


def get(url, path, timeout=30):
    host, port = url.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    conn.request("GET", path)
    resp = conn.getresponse()
    data = resp.read().decode("utf-8")
    conn.close()
    if resp.status != 200:
        sys.exit(f"llama_check.py: GET {url}{path}: HTTP {resp.status}")
    return data


def wait_idle(url, timeout=60):
    """Until no slot of llama-server is processing (its /slots, answered on the main loop after
    every release; never /metrics, which would restart the rate gauges' window)."""
    end = time.time() + timeout
    while time.time() < end:
        if not any(sl.get("is_processing") for sl in json.loads(get(url, "/slots"))):
            return
        time.sleep(0.05)
    sys.exit("llama_check.py: slots still processing")


def window(a):
    """Both /metrics read (each opens a new window of its rate gauges), then requests of at
    least two tokens each (one n = 2, one stream abandoned after a few tokens), then both read
    again: every family both export must be equal, the decode rate over the window included."""
    c = Checks()
    first = {"llama": parse_exposition(get(a.url, "/metrics")),
             "tokchron": parse_exposition(get(a.tokchron_url, "/metrics"))}
    for side, m in first.items():
        c.eq(f"{side} {RATE} before the window", m.get(RATE, {}).get(""), 0.0)
    cmpl = "/v1/completions"
    plan = []
    for i in range(a.requests):
        b = {"model": "m", "prompt": words(6 + 11 * i), "max_tokens": 2 + (i * 5) % 14,
             "stream": i % 2 == 0, "ignore_eos": True, "temperature": 1.0, "n": 2 if i == 3 else 1}
        plan.append((f"py-window-{i}", b))

    def worker(k):
        for j in range(k, len(plan), 2):
            rid, b = plan[j]
            status, _, err = request(a.url, cmpl, b, rid, b["stream"])
            if status != 200:
                c.failures.append(f"{rid}: HTTP {status} {err}")
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    b = {"model": "m", "prompt": words(9), "max_tokens": 400, "stream": True,
         "ignore_eos": True, "temperature": 1.0}
    request(a.url, cmpl, b, "py-window-abandoned", True, abandon_after=4)
    wait_idle(a.url)
    llama = parse_exposition(get(a.url, "/metrics"))
    tc = parse_exposition(get(a.tokchron_url, "/metrics"))
    compare_families(c, llama, tc, window=True)
    print(f"window: {a.requests + 1} requests (one n = 2, one abandoned); {c.count} families "
          f"compared, {len(c.failures)} differ; {RATE} {llama.get(RATE, {}).get('')}")
    for f in c.failures:
        print("  FAIL " + f)
    return 1 if c.failures else 0


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


RATE = "llamacpp:predicted_tokens_seconds"
# Every family this llama.cpp exports (tools/server/server-task.cpp
# `server_task_result_metrics::to_metrics`) and how it is compared (docs/library/live-metrics.md
# says why): "exact" equal; "decode" equal but for the one-token allowance below; "rate" the
# decode rate gauge, over the window since the previous /metrics call of each side, so equal
# only where no other scraper ran (the `window` check); "engine" not derivable from request
# events, so tokchron does not export it.
FAMILIES = {
    "llamacpp:prompt_tokens_total": "exact",
    "llamacpp:prompt_tokens_cached_total": "exact",
    "llamacpp:prompt_seconds_total": "engine",  # timed per decode batch
    "llamacpp:tokens_predicted_total": "exact",
    "llamacpp:tokens_predicted_seconds_total": "decode",
    "llamacpp:n_decode_total": "engine",
    "llamacpp:n_tokens_max": "engine",
    "llamacpp:spec_decode_num_draft_tokens_total": "engine",
    "llamacpp:spec_decode_num_accepted_tokens_total": "engine",
    "llamacpp:spec_decode_num_drafts_total": "engine",
    "llamacpp:spec_decode_num_accepted_tokens_per_pos_total": "engine",
    "llamacpp:prompt_tokens_seconds": "engine",  # per decode batch, as prompt_seconds_total
    RATE: "rate",
    "llamacpp:requests_processing": "exact",
    "llamacpp:requests_deferred": "exact",
    "llamacpp:n_busy_slots_per_decode": "engine",
}


def printed(v):
    """`v` as llama.cpp prints it: a std::stringstream's default, six significant digits (C's
    %g), so a value past six digits reads rounded there; tokchron prints 17."""
    return float(f"{v:.6g}")


def compare_families(c, llama, tc, window=False, one_token=0):
    """Every family both expositions have, by FAMILIES. `one_token`: requests with one output
    token in the compared span. llama.cpp's decode time of such a request is max(1 us, t_gen_last -
    t_prompt_last), two ggml_time_us() reads one after the other at its first token, where
    tokchron has 1 us: llama.cpp's total exceeds tokchron's only when the thread was descheduled
    between the two reads, by 1 us per microsecond boundary crossed. The allowance is 1 us per
    one-token request, on top of llama.cpp's rounding to six digits."""
    names = sorted(n for n in set(llama) | set(tc) if n.startswith("llamacpp:"))
    for name in names:
        how = FAMILIES.get(name)
        lv, tv = llama.get(name, {}).get(""), tc.get(name, {}).get("")
        if how is None:
            c.failures.append(f"{name}: not a family this check knows (add it to FAMILIES)")
        elif how == "engine":
            c.eq(f"{name} not exported by tokchron (the engine's)", tv, None)
        elif lv is None or tv is None:
            # llama.cpp's cached-prompt counter is written from the start, tokchron's once a
            # request reported its cached tokens: absent only while it would be 0.
            if name == "llamacpp:prompt_tokens_cached_total" and tv is None and lv == 0:
                continue
            c.failures.append(f"{name}: exported by {'llama.cpp' if lv is not None else 'tokchron'}"
                              " only")
        elif how == "rate" and not window:
            continue  # each side's window ends at its own last scrape: compared in `window`
        elif how == "decode" and printed(tv) != lv:
            tol = 0.5 * 10 ** (math.floor(math.log10(abs(lv))) - 5) if lv else 0.0
            c.count += 1
            if not -tol <= lv - tv <= tol + one_token * 1e-6:
                c.failures.append(f"{name}: tokchron {tv!r}, llama.cpp {lv!r}: beyond llama.cpp's "
                                  f"six digits and {one_token} us for {one_token} one-token "
                                  "requests")
        else:
            c.eq(name, printed(tv), lv)


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
    trace = read_trace(a.trace)
    one_token = sum(1 for r in trace.values() if record_times(r)[2] == 1)
    compare_families(c, llama, tc, one_token=one_token)
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
    p = sub.add_parser("window")
    p.add_argument("--url", required=True)
    p.add_argument("--tokchron-url", required=True)
    p.add_argument("--requests", type=int, default=8)
    p = sub.add_parser("check")
    p.add_argument("--llama-metrics", required=True)
    p.add_argument("--tokchron-metrics", required=True)
    p.add_argument("--trace", required=True)
    p.add_argument("--load", required=True)
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
    return {"window": window, "check": check, "prom": prom}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
