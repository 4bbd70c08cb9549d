#!/bin/sh
# docs/bad-input.md row H12: serve's trace survives a crash. serve answers 5 requests, one
# long stream is still running, and serve is killed with SIGKILL (as a crash ends it: no
# handler, no shutdown). The trace holds the 5 finished requests as whole JSON Lines, each with
# its clock anchor; only the request in flight is lost. Then a SIGTERM under the same load: the
# stream in flight is its last line, "aborted".
#   trace_on_crash.sh BATCHING_EXECUTOR WORKDIR        (exit 77: skipped without python3)
set -eu
serve_test_dir=$(dirname "$0")
. "$serve_test_dir/serve_test_lib.sh"
serve_test_begin "$1" "$2"
load() {
  python3 - "$url" "$work/streaming" <<'PY'
import http.client, json, sys, threading, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
def post(body):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request("POST", "/v1/completions", headers={"content-type": "application/json"},
              body=json.dumps(body))
    return c, c.getresponse()
for i in range(5):
    c, r = post({"model": "tokchron-sim", "prompt": "a b %d" % i, "max_tokens": 3})
    assert r.status == 200, r.status
    r.read()
# A long stream: its first event is read, then the script leaves it running.
c, r = post({"model": "tokchron-sim", "prompt": "x", "max_tokens": 3000, "ignore_eos": True,
             "stream": True})
r.readline()
open(sys.argv[2], "w").close()
try:
    r.read()  # held open until serve goes away
except Exception:
    pass
PY
}
# Starts the load in the background and waits until its stream is open.
start_load() {
  rm -f "$work/streaming"
  load &
  client=$!
  i=0
  while [ ! -f "$work/streaming" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
  [ -f "$work/streaming" ] || { echo "the load never got its stream open"; cat "$work/serve.log"; exit 1; }
}
check() {
  python3 - "$work/trace.jsonl" "$1" "$2" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
assert text.endswith("\n"), "the trace ends inside a line"
rows = [json.loads(l) for l in text.splitlines()]
want, last = int(sys.argv[2]), sys.argv[3]
assert len(rows) == want, f"{len(rows)} trace lines, expected {want}"
assert all("clock_wall_ns" in r for r in rows), "a line without its clock anchor"
reasons = [r["finish_reason"] for r in rows]
assert reasons[:5] == ["length"] * 5, reasons
if last != "-":
    assert reasons[-1] == last, reasons
print(f"trace: {len(rows)} whole lines, {reasons}")
PY
}

serve_test_start --hw a10g --trace-out "$work/trace.jsonl"
start_load
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
wait "$client" || true
check 5 -

serve_test_start --hw a10g --trace-out "$work/trace.jsonl"
start_load
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
wait "$client" || true
cat "$work/serve.log"
[ "$status" -eq 0 ] || { echo "serve exited with $status after SIGTERM"; exit 1; }
check 6 aborted
