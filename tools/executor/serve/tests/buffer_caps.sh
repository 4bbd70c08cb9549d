#!/bin/sh
# docs/bad-input.md row H9: the bytes one connection may make serve hold. With --max-header 1024
# --max-body 1024: a header over 1024 bytes gets 431 (header_too_large), a body over 1024 bytes
# 413 (body_too_large), both before the rest is read, and the connection is closed; a client
# that sends 200 KiB of pipelined bytes (past --max-body + 64 KiB) while its stream runs is
# dropped (read_buffer), its request aborted in the engine. /metrics counts each by reason, and
# a good request is served afterwards.
#   buffer_caps.sh BATCHING_EXECUTOR WORKDIR        (exit 77: skipped without python3)
set -eu
serve_test_dir=$(dirname "$0")
. "$serve_test_dir/serve_test_lib.sh"
serve_test_begin "$1" "$2"
serve_test_start --hw h200 --max-header 1024 --max-body 1024
python3 - "$url" "$serve_test_dir" <<'PY'
import json, socket, sys, time, urllib.parse, urllib.request
url = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from serve_client import closed_counts, reply
u = urllib.parse.urlparse(url)
def raw(data):
    s = socket.create_connection((u.hostname, u.port), timeout=20)
    try:
        s.sendall(data)
    except OSError:
        pass
    return reply(s).decode(errors="replace")
r = raw(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"p" * 2000 + b"\r\n\r\n")
assert r.startswith("HTTP/1.1 431 Request Header Fields Too Large"), r[:200]
assert json.loads(r.split("\r\n\r\n", 1)[1])["error"]["code"] == "header_too_large", r
print("a 2000-byte header: 431")
body = b'{"model":"tokchron-sim","prompt":"' + b"a " * 600 + b'"}'
r = raw(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
assert r.startswith("HTTP/1.1 413"), r[:200]
print("a %d-byte body: 413" % len(body))
# A stream, then pipelined junk past --max-body + 64 KiB: dropped, its request aborted.
s = socket.create_connection((u.hostname, u.port), timeout=20)
req = b'{"model":"tokchron-sim","prompt":"a b","max_tokens":3000,"ignore_eos":true,"stream":true}'
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(req) + req)
first = s.recv(4096)
assert first.startswith(b"HTTP/1.1 200"), first
try:
    s.sendall(b"x" * (200 * 1024))
except OSError:
    pass
t0 = time.time()
while True:
    m = urllib.request.urlopen(url + "/metrics", timeout=20).read().decode()
    closed = closed_counts(m)
    ab = [l for l in m.splitlines() if "request_success_total" in l and '"abort"' in l]
    if closed["read_buffer"] == 1 and ab and float(ab[0].split()[-1]) == 1:
        break
    assert time.time() - t0 < 60, ("not dropped within 60 s", closed, ab)
    time.sleep(0.1)
s.close()
print(closed)
assert closed["header_too_large"] == 1 and closed["body_too_large"] == 1, closed
good = urllib.request.Request(url + "/v1/completions", headers={"content-type": "application/json"},
    data=b'{"model":"tokchron-sim","prompt":"a b","max_tokens":5,"ignore_eos":true}')
assert json.loads(urllib.request.urlopen(good, timeout=20).read())["usage"]["completion_tokens"] == 5
print("pipelined bytes past the cap: dropped and aborted; a good request after: served")
PY
