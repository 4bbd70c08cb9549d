#!/bin/sh
# docs/bad-input.md row H7: the time limits of reading a request. serve runs with
# --header-timeout 4 --body-timeout 4 --request-timeout 5 --idle-timeout 2. A header sent a byte
# at a time (slowloris), a whole header with a body trickled a byte at a time, and a header
# ended after 2.5 s then a trickled body each get 408 with the OpenAI error naming the limit
# (header_timeout, body_timeout, request_timeout) when that limit passes, not before, and are
# closed; a connection that sends nothing is closed after 2 s without an answer. /metrics counts
# each in tokchron_serve_closed_connections_total{reason}, a good request is served throughout,
# and nothing of the bad ones reaches the engine.
# Only the order of the limits decides, never how fast the machine runs: the third client's
# header ends 2.5 s after its first byte, 1.5 s inside each edge of the window (1 s, 4 s) in
# which the request limit (5 s) comes before the body limit (header end + 4 s) and the header
# limit (4 s) does not come at all. Each 408 must come at its limit, not before; the upper
# bounds (limit + 10 s) only catch a server that never answers.
#   slow_request.sh BATCHING_EXECUTOR WORKDIR        (exit 77: skipped without python3)
set -eu
serve_test_dir=$(dirname "$0")
. "$serve_test_dir/serve_test_lib.sh"
serve_test_begin "$1" "$2"
serve_test_start --hw h200 --header-timeout 4 --body-timeout 4 --request-timeout 5 \
  --idle-timeout 2
python3 - "$url" "$serve_test_dir" <<'PY'
import json, socket, sys, threading, time, urllib.parse, urllib.request
url = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from serve_client import closed_counts, reply
u = urllib.parse.urlparse(url)
head = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 60\r\n\r\n")
results = {}


def trickle(s, data, seconds, step=1):
    """Sends `data`, `step` bytes every 0.1 s, for at most `seconds`."""
    t0 = time.time()
    i = 0
    while time.time() - t0 < seconds and i < len(data):
        try:
            s.sendall(data[i:i + step])
        except OSError:
            return
        i += step
        time.sleep(0.1)

def client(name, header_s, body_s, whole_header=False):
    s = socket.create_connection((u.hostname, u.port), timeout=30)
    t0 = time.time()
    if whole_header:
        s.sendall(head)
    elif body_s:  # the header but its end at once, its end header_s seconds later
        s.sendall(head[:-4])
        time.sleep(header_s)
        s.sendall(head[-4:])
    else:  # never more than the header minus its end: it is never whole
        trickle(s, head[:-4], header_s)
    if body_s:
        trickle(s, b" " * 60, body_s)
    r = reply(s)
    results[name] = (time.time() - t0, r)

ts = [threading.Thread(target=client, args=a) for a in
      [("header", 10, 0), ("body", 0, 10, True), ("request", 2.5, 10)]]
def idle():
    s = socket.create_connection((u.hostname, u.port), timeout=30)
    t0 = time.time()
    r = reply(s)
    results["idle"] = (time.time() - t0, r)
ts.append(threading.Thread(target=idle))
for t in ts: t.start()
# Meanwhile the server serves.
good = urllib.request.Request(url + "/v1/completions", headers={"content-type": "application/json"},
    data=b'{"model":"tokchron-sim","prompt":"a b","max_tokens":5,"ignore_eos":true}')
answer = json.loads(urllib.request.urlopen(good, timeout=20).read())
assert answer["usage"]["completion_tokens"] == 5, answer
for t in ts: t.join()
for name, limit in [("header", 4), ("body", 4), ("request", 5)]:
    took, r = results[name]
    text = r.decode(errors="replace")
    assert text.startswith("HTTP/1.1 408 Request Timeout"), (name, text[:200])
    assert "Connection: close" in text, text
    err = json.loads(text.split("\r\n\r\n", 1)[1])["error"]
    assert err["code"] == name + "_timeout", err
    assert ("--%s-timeout of %d s" % (name, limit)) in err["message"], err
    # Not before the limit; the upper bound only catches a server that never answers.
    assert limit - 0.05 <= took <= limit + 10, (name, took)
    print("%s: 408 after %.2f s: %s" % (name, took, err["message"]))
took, r = results["idle"]
assert r == b"" and 1.95 <= took <= 2 + 10, (took, r)
print("idle: closed without an answer after %.2f s" % took)
m = urllib.request.urlopen(url + "/metrics", timeout=20).read().decode()
closed = closed_counts(m)
print(closed)
for reason in ("header_timeout", "body_timeout", "request_timeout", "idle_timeout"):
    assert closed[reason] == 1, (reason, closed)
for reason in ("write_timeout", "write_buffer", "client_gone", "bad_http"):
    assert closed[reason] == 0, (reason, closed)
ok = [l for l in m.splitlines() if "request_success_total" in l and not l.startswith("#")]
assert sum(float(l.split()[-1]) for l in ok) == 1, ok  # only the good request
PY
