#!/bin/sh
# docs/bad-input.md row H4: serve's shutdown under signals. Three long streams are open when
# SIGINT arrives; once their clients have read them to the end (the first signal was handled),
# a second SIGINT inside the graceful shutdown (--shutdown-grace-ms 30000, so that it always
# falls inside on a loaded machine) stops serve at once. Then: serve has exited (status 0), said
# so, counted the cut streams, and its trace is whole JSON Lines (every line parses, one per
# request, each aborted); no .partial file is left. Each wait has a 30 s deadline.
#   second_signal.sh BATCHING_EXECUTOR WORKDIR        (exit 77: skipped without python3)
set -eu
serve_test_dir=$(dirname "$0")
. "$serve_test_dir/serve_test_lib.sh"
serve_test_begin "$1" "$2"
serve_test_start --hw a10g --trace-out "$work/trace.jsonl" --shutdown-grace-ms 30000
python3 - "$url" "$work/streams.ok" <<'PY' &
import http.client, sys, threading, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
opened = threading.Barrier(4)
def stream():
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request("POST", "/v1/completions", headers={"content-type": "application/json"},
              body='{"model":"tokchron-sim","prompt":"a b","max_tokens":3000,'
                   '"ignore_eos":true,"stream":true}')
    r = c.getresponse()
    r.readline()  # the first event: the stream is open
    opened.wait()
    try:
        r.read()
    except Exception:
        pass
ts = [threading.Thread(target=stream) for _ in range(3)]
for t in ts: t.start()
opened.wait()
open(sys.argv[2], "w").close()
for t in ts: t.join()
PY
client=$!
deadline=$(($(date +%s) + 30))
while [ ! -f "$work/streams.ok" ] && [ "$(date +%s)" -lt $deadline ]; do sleep 0.1; done
[ -f "$work/streams.ok" ] || { echo "the streams did not open within 30 s"; cat "$work/serve.log"; exit 1; }
kill -INT "$pid"
# Two signals sent before the first is delivered would be one: the second waits until the
# streams have ended, which only the first signal's shutdown does.
deadline=$(($(date +%s) + 30))
while kill -0 "$client" 2>/dev/null && [ "$(date +%s)" -lt $deadline ]; do sleep 0.1; done
kill -0 "$client" 2>/dev/null && { echo "the streams did not end within 30 s of SIGINT"; exit 1; }
kill -INT "$pid"
status=0
wait "$pid" || status=$?
wait "$client" || true
cat "$work/serve.log"
[ "$status" -eq 0 ] || { echo "serve exited with $status"; exit 1; }
grep -q "second signal, stopping now" "$work/serve.log" || { echo "no second-signal line"; exit 1; }
grep -q "3 of 3 requests were cut" "$work/serve.log" || { echo "the cut streams were not counted"; exit 1; }
[ ! -e "$work/trace.jsonl.partial" ] || { echo "a .partial trace was left"; exit 1; }
python3 - "$work/trace.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 3, f"{len(rows)} trace lines, expected 3"
assert all(r.get("finish_reason") == "aborted" for r in rows), [r.get("finish_reason") for r in rows]
print("trace: 3 whole lines, each aborted")
PY
