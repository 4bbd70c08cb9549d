#!/bin/sh
# docs/bad-input.md row H6: more connections than --max-connections. With --max-connections 2,
# two idle connections are held open; a third gets 503 with Retry-After and is closed without
# reaching the engine; once one idle connection closes, /metrics answers again and counts the
# refusal, and once the other closes /health answers. serve releases a closed connection when it
# sees the close, a moment later: each is polled for, with a 30 s deadline.
#   connection_cap.sh BATCHING_EXECUTOR WORKDIR        (exit 77: skipped without python3)
set -eu
serve_test_dir=$(dirname "$0")
. "$serve_test_dir/serve_test_lib.sh"
serve_test_begin "$1" "$2"
serve_test_start --hw h200 --max-connections 2
python3 - "$url" <<'PY'
import socket, sys, time, urllib.parse, urllib.request
url = sys.argv[1]
u = urllib.parse.urlparse(url)
def connect():
    s = socket.create_connection((u.hostname, u.port), timeout=10)
    return s
def get(s, path):
    s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path.encode())
    data = b""
    while True:
        b = s.recv(65536)
        if not b: return data.decode()
        data += b
a, b = connect(), connect()
time.sleep(0.3)  # both accepted
c = connect()
r = get(c, "/health")
assert r.startswith("HTTP/1.1 503"), r[:80]
assert "Retry-After: 1" in r and "too_many_connections" in r, r
def answered(path):
    """GET path until it is answered 200 (not 503), for at most 30 s: the answer."""
    t0 = time.time()
    while True:
        r = get(connect(), path)
        if r.startswith("HTTP/1.1 200"):
            return r
        assert time.time() - t0 < 30, "%s: a closed connection was not released within 30 s" % path
        time.sleep(0.1)
a.close()
r = answered("/metrics")
refused = [l for l in r.splitlines() if l.startswith("tokchron_serve_refused_connections_total")]
assert refused and int(refused[0].split()[-1]) >= 1, refused
print("refused past the cap with 503 + Retry-After;", refused[0])
b.close()
answered("/health")
print("/health answers")
PY
