#!/bin/sh
# docs/bad-input.md row H5: a client that sends a streaming request and never reads. serve runs
# with --write-timeout 1 --max-buffered 8192; the client shrinks its receive buffer and reads
# nothing. It must be dropped (polled for with a 60 s deadline, which only catches a client never
# dropped): its request aborted in the engine and counted as an abort in /metrics, and, after
# shutdown, in the trace; a well-behaved request beside it succeeds.
#   never_read.sh BATCHING_EXECUTOR WORKDIR        (exit 77: skipped without python3)
set -eu
serve_test_dir=$(dirname "$0")
. "$serve_test_dir/serve_test_lib.sh"
serve_test_begin "$1" "$2"
serve_test_start --hw h200 --max-model-len 60000 --write-timeout 1 --max-buffered 8192 \
  --trace-out "$work/trace.jsonl"
python3 - "$url" <<'PY'
import json, socket, sys, time, urllib.parse, urllib.request
url = sys.argv[1]
u = urllib.parse.urlparse(url)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
s.connect((u.hostname, u.port))
body = b'{"model":"tokchron-sim","prompt":"a b","max_tokens":50000,"ignore_eos":true,"stream":true}'
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          b"Content-Length: %d\r\n\r\n" % len(body) + body)
good = urllib.request.Request(url + "/v1/completions", headers={"content-type": "application/json"},
    data=b'{"model":"tokchron-sim","prompt":"a b","max_tokens":20,"ignore_eos":true}')
answer = json.loads(urllib.request.urlopen(good, timeout=20).read())
assert answer["usage"]["completion_tokens"] == 20, answer
t0 = time.time()
while time.time() - t0 < 60:
    m = urllib.request.urlopen(url + "/metrics", timeout=20).read().decode()
    ab = [l for l in m.splitlines() if "request_success_total" in l and '"abort"' in l]
    if ab and float(ab[0].split()[-1]) == 1:
        print("the never-reading client was dropped after %.1f s: %s" % (time.time() - t0, ab[0]))
        break
    time.sleep(0.2)
else:
    sys.exit("the never-reading client was not dropped within 60 s")
PY
kill -INT "$pid"
wait "$pid"
trap - EXIT
python3 - "$work/trace.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
reasons = sorted(r.get("finish_reason") for r in rows)
assert reasons == ["aborted", "length"], reasons
print("trace:", reasons)
PY
