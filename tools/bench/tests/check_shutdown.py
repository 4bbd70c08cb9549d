#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tokchron-bench against `batching-executor serve` stopped by SIGTERM mid-load (CI stage 47,
docs/tools/tokchron-bench.md "A server that shuts down"): the client's verdicts equal the
server's trace.

Every request the server's trace holds is in the client's trace (joined by id: the server's id
is PREFIX + the client's X-Request-Id) with the same finish reason (stop, length, aborted) and,
when it completed, the same token count; the client's counts by finish reason over those
requests equal the server's; the requests the server never recorded failed in the client with a
connection reason (connect, connection, ended_early: the server had stopped listening); the
shutdown cut some streams (aborted > 0) and some completed before it. Exits 1 naming the first
difference."""
import argparse
import collections
import json
import sys


def records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def reason(r):
    # The trace format's defaults: ok without a finish_reason is stop; not ok is error.
    return r.get("finish_reason", "stop" if r.get("ok", True) else "error")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--client", required=True)
    ap.add_argument("--server", required=True)
    ap.add_argument("--id-prefix", default="cmpl-")
    a = ap.parse_args()
    client = {r["id"]: r for r in records(a.client)}
    server = records(a.server)
    problems = []
    seen = set()
    for s in server:
        sid = s.get("id", "")
        if not sid.startswith(a.id_prefix):
            problems.append(f"server record {sid!r} does not start with {a.id_prefix!r}")
            continue
        cid = sid[len(a.id_prefix):]
        seen.add(cid)
        c = client.get(cid)
        if c is None:
            problems.append(f"request {cid}: in the server's trace ({reason(s)}), not the client's")
            continue
        if reason(c) != reason(s):
            problems.append(f"request {cid}: client {reason(c)} ({c.get('error', '')!r}), "
                            f"server {reason(s)}")
        if reason(s) in ("stop", "length"):
            ct = sum(ch[1] for ch in c["chunks"])
            st = sum(ch[1] for ch in s["chunks"])
            if ct != st:
                problems.append(f"request {cid}: client {ct} tokens, server {st}")
    unseen = collections.Counter()
    for cid, c in client.items():
        if cid in seen:
            continue
        err = c.get("error", "")
        kind = err.split(":")[0]
        if c.get("ok", True) or not (err.startswith("connect:") or err.startswith("read:")
                                     or err.startswith("write:")
                                     or err.startswith("the connection closed before")):
            problems.append(f"request {cid}: not in the server's trace, and the client says "
                            f"{reason(c)} {err!r}")
        unseen[kind] += 1
    both = collections.Counter(reason(client[s["id"][len(a.id_prefix):]]) for s in server
                               if s["id"][len(a.id_prefix):] in client)
    theirs = collections.Counter(reason(s) for s in server)
    print(f"server trace: {dict(theirs)}; the client on the same requests: {dict(both)}; "
          f"client requests the server never recorded: {dict(unseen)}")
    if both != theirs:
        problems.append(f"counts by finish reason differ: client {dict(both)}, "
                        f"server {dict(theirs)}")
    if theirs.get("aborted", 0) == 0:
        problems.append("the shutdown cut no stream (no aborted request in the server's trace)")
    if theirs.get("stop", 0) + theirs.get("length", 0) == 0:
        problems.append("no request completed before the shutdown")
    for p in problems[:20]:
        print("check_shutdown:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
