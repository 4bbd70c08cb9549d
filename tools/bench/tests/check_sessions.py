#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tokchron-bench's multi-turn sessions against `batching-executor serve`
(docs/tools/workloads-sessions.md, "Checked against serve").

  check_sessions.py --server S --log L [--log L2 ...] [--report R] [--system SESSION=WORDS ...]

joins every turn of the session logs (--session-log: session, turn, request_id, user_words) to
serve's trace (id chatcmpl-REQUEST_ID, prompt_tokens as serve counted them: the whitespace-
separated words of every message; usage_output_tokens: the words it streamed) and checks, for
every session, exactly:
  - turn 1's prompt = its user message's words (+ the system message's, --system);
  - turn k's prompt = turn k-1's prompt + the reply serve streamed for turn k-1 + turn k's user
    message: the conversation grew by the live reply, not by anything else;
  - the reply the client kept (reply_words) is the reply serve streamed;
  - turns are numbered 1, 2, ... with no gap, every one completed, and the log's last turn of a
    session says how it ended, or a line of the session's own says the run's end cut it after
    the turns logged;
and with --report, that the JSON report's sessions counts agree with the log.
"""
import argparse
import collections
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--log", action="append", required=True)
    ap.add_argument("--report")
    ap.add_argument("--system", action="append", default=[])
    a = ap.parse_args()
    system = {}
    for s in a.system:
        name, words = s.rsplit("=", 1)
        system[name] = int(words)
    server = {}
    for line in open(a.server):
        r = json.loads(line)
        server[r["id"]] = r
    turns = collections.defaultdict(list)
    cut = {}  # sessions the run's end cut: their line without a turn
    logged = 0
    for path in a.log:
        for line in open(path):
            t = json.loads(line)
            if "turn" not in t:
                if t.get("session_end") != "cut":
                    bad_line = line.strip()[:200]
                    print(f"check_sessions: FAIL: a line without a turn that is no cut: {bad_line}")
                    sys.exit(1)
                cut[t["session"]] = t["turns"]
                continue
            turns[t["session"]].append(t)
            logged += 1
    bad = []
    checked = 0
    for session, ts in turns.items():
        ts.sort(key=lambda t: t["turn"])
        if [t["turn"] for t in ts] != list(range(1, len(ts) + 1)):
            bad.append(f"{session}: turns {[t['turn'] for t in ts]}")
            continue
        prev = None
        for t in ts:
            rec = server.get("chatcmpl-" + t["request_id"])
            if rec is None:
                bad.append(f"{session} turn {t['turn']}: {t['request_id']} not in serve's trace")
                break
            if not t["ok"] or not rec.get("ok", True):
                bad.append(f"{session} turn {t['turn']}: failed ({t.get('error')})")
                break
            out = rec["usage_output_tokens"]
            if t["reply_words"] != out:
                bad.append(f"{session} turn {t['turn']}: the client kept {t['reply_words']} "
                           f"words of reply, serve streamed {out}")
            if prev is None:
                want = t["user_words"] + system.get(session, 0)
                how = "its user message" + (" and the system message" if session in system else "")
            else:
                want = prev[0] + prev[1] + t["user_words"]
                how = (f"turn {t['turn'] - 1}'s prompt {prev[0]} + its reply {prev[1]} + "
                       f"the user message {t['user_words']}")
            if rec["prompt_tokens"] != want:
                bad.append(f"{session} turn {t['turn']}: serve counted {rec['prompt_tokens']} "
                           f"prompt tokens, expected {want} ({how})")
            prev = (rec["prompt_tokens"], out)
            checked += 1
        if session in cut:
            if ts[-1].get("session_end") is not None or cut[session] != len(ts):
                bad.append(f"{session}: cut after {cut[session]} turns, its log has "
                           f"{len(ts)}, the last saying {ts[-1].get('session_end')!r}")
        elif ts[-1].get("session_end") not in ("completed",):
            bad.append(f"{session}: its last turn says {ts[-1].get('session_end')!r}")
    if a.report:
        s = json.load(open(a.report))["sessions"]
        first = a.log[0]
        sessions = collections.Counter(
            t["session"] for t in map(json.loads, open(first)) if "turn" in t)
        n = sum(sessions.values())
        if s["started"] != len(sessions) or s["completed"] != len(sessions) or s["turns"] != n:
            bad.append(f"report: {s['started']} started, {s['completed']} completed, "
                       f"{s['turns']} turns; the log: {len(sessions)} sessions, {n} turns")
        rows = sum(r["summary"]["requests"] for r in s["by_turn"])
        if rows != n:
            bad.append(f"report: the by-turn rows hold {rows} requests, the log {n}")
        grew = [t for ts in turns.values() for t in ts if t["turn"] > 1]
        if not grew:
            bad.append("no session had a second turn")
    for b in bad[:20]:
        print("check_sessions:", b)
    if bad:
        print(f"check_sessions: {len(bad)} problems")
        sys.exit(1)
    print(f"ok: {len(turns)} sessions, {checked} turns: each prompt is the previous prompt, "
          "its live reply and the new user message, as serve counted them")


if __name__ == "__main__":
    main()
