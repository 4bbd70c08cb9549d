#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A crowd of bad HTTP clients against `batching-executor serve` (docs/tools/serve.md), for the
soak test (.ci/stages/48-soak.sh). For --seconds it keeps these kinds going, each on its own
connections, and prints what each one saw as JSON on stdout:

  slow_headers  sends a request header a byte at a time and never ends it (serve: 408,
                closed_connections{reason="header_timeout"})
  slow_body     sends a whole header and trickles the body (408, reason "body_timeout")
  never_read    sends a streaming request and reads nothing past the status line, with a tiny
                receive buffer; waits until /metrics counts it dropped (reason "write_timeout"
                or "write_buffer"), then closes
  reset         reads the first event of a stream, then resets the connection (SO_LINGER 0:
                an RST) (reason "client_gone", an abort in the engine)
  flood         opens --flood connections at once, past --max-connections: the ones past the
                cap get 503 at once (refused_connections_total); the rest are closed idle

A connection of any kind that is answered 503 at once (a flood was filling the server) is
counted as refused, not as its kind. Only the Python standard library is used.

  bad_crowd.py --url http://127.0.0.1:PORT --seconds 60 --header-timeout 2 --body-timeout 3 \
      --flood 80 --flood-every 15
"""
import argparse
import json
import os
import select
import socket
import struct
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_client import reply  # noqa: E402

lock = threading.Lock()
tally = {k: 0 for k in ("slow_headers", "slow_body", "never_read", "reset", "flood_refused",
                        "flood_accepted", "refused")}
problems = []


def count(kind, n=1):
    with lock:
        tally[kind] += n


def problem(text):
    with lock:
        if len(problems) < 20:
            problems.append(text)


def connect(host, port, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(30)
    s.connect((host, port))
    return s


def refused_now(s):
    """True when the server answered 503 (too many connections) as soon as it accepted."""
    r, _, _ = select.select([s], [], [], 0.2)
    if not r:
        return False
    try:
        head = s.recv(4096, socket.MSG_PEEK)
    except ConnectionResetError:
        return False
    return head.startswith(b"HTTP/1.1 503")


def sent(s, data):
    """Sends `data`; False when the server has closed the connection (a 503 past the cap comes
    at once and closes it; a send after that can fail): the caller then reads what came."""
    try:
        s.sendall(data)
        return True
    except OSError:
        return False


def metric(host, port, name, labels=None):
    """The sum of a /metrics family's samples (with `labels` in the sample's labels)."""
    for _ in range(50):  # a flood may refuse this connection: try again
        try:
            s = connect(host, port)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            text = reply(s, 10).decode(errors="replace")
            s.close()
        except OSError:
            time.sleep(0.1)
            continue
        if not text.startswith("HTTP/1.1 200"):
            if text.startswith("HTTP/1.1 503"):
                count("refused")  # a flood filled the server: this poll is one of its refusals
            else:
                problem("/metrics got %r" % text[:80])
            time.sleep(0.2)
            continue
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name) and (line[len(name)] in " {"):
                if labels and not all(l in line for l in labels):
                    continue
                total += float(line.split()[-1])
        return total
    raise RuntimeError("/metrics did not answer")


STREAM = (b'{"model":"tokchron-sim","prompt":"a b c","max_tokens":%d,"ignore_eos":true,'
          b'"stream":true}')


def post_head(length):
    return (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % length)


def gave_way(s=None):
    """A crowd connection answered 503 (a flood was filling the server): counted as refused;
    a pause before the next, as the flood holds the server's connections a moment."""
    if s is not None:
        s.close()
    count("refused")
    time.sleep(0.2)


def settle(kind, answer, code):
    """Counts a slow client by what it got: 408 with `code` (its kind), or 503 (refused)."""
    if answer.startswith(b"HTTP/1.1 503"):
        gave_way()
    elif answer.startswith(b"HTTP/1.1 408") and code in answer:
        count(kind)
    else:
        problem("%s got %r" % (kind, answer[:80]))


def slow_headers(a, end):
    while time.time() < end:
        s = connect(a.host, a.port)
        head = post_head(40)
        t0 = time.time()
        i = 0
        refused = False
        # A byte every 0.2 s for 3/4 of the header limit, then nothing: never a whole header.
        while time.time() - t0 < 0.75 * a.header_timeout and i < len(head) - 4:
            if refused_now(s):
                refused = True
                break
            if not sent(s, head[i:i + 1]):
                break
            i += 1
            time.sleep(0.2)
        answer = b"HTTP/1.1 503" if refused else reply(s, a.header_timeout + 10)
        s.close()
        settle("slow_headers", answer, b"header_timeout")


def slow_body(a, end):
    while time.time() < end:
        s = connect(a.host, a.port)
        if not sent(s, post_head(1000)) or refused_now(s):
            settle("slow_body", reply(s, 5), b"body_timeout")
            s.close()
            continue
        t0 = time.time()
        # A 503 can come later than refused_now waits on a loaded machine: a failed send ends
        # the trickle and the answer read below says what the connection got.
        while time.time() - t0 < 0.75 * a.body_timeout and sent(s, b" "):
            time.sleep(0.2)
        answer = reply(s, a.body_timeout + 10)
        s.close()
        settle("slow_body", answer, b"body_timeout")


def never_read(a, end):
    dropped = ['tokchron_serve_closed_connections_total{reason="write_timeout"}',
               'tokchron_serve_closed_connections_total{reason="write_buffer"}']

    def drops():
        return sum(metric(a.host, a.port, d.split("{")[0], [d.split("{")[1][:-1]])
                   for d in dropped)

    while time.time() < end:
        before = drops()
        body = STREAM % a.never_read_tokens
        s = connect(a.host, a.port, rcvbuf=2048)
        s.sendall(post_head(len(body)) + body)
        status = b""
        while len(status) < 12:  # the status line's first bytes, nothing more
            b = s.recv(12 - len(status))
            if not b:
                break
            status += b
        if status.startswith(b"HTTP/1.1 503"):
            gave_way(s)
            continue
        if not status.startswith(b"HTTP/1.1 200"):
            problem("never_read got %r" % status)
            s.close()
            continue
        t0 = time.time()
        while drops() < before + 1 and time.time() - t0 < 60:
            time.sleep(0.25)
        if drops() < before + 1:
            problem("a never-reading client was not dropped within 60 s")
        else:
            count("never_read")
        s.close()


def reset(a, end):
    while time.time() < end:
        body = STREAM % 2000
        s = connect(a.host, a.port)
        s.sendall(post_head(len(body)) + body)
        data = b""
        while b"data: " not in data:
            b = s.recv(4096)
            if not b:
                break
            data += b
        if data.startswith(b"HTTP/1.1 503"):
            gave_way(s)
            continue
        if b"data: " not in data:
            problem("reset got %r" % data[:80])
            s.close()
            continue
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()  # an RST mid-stream
        count("reset")
        time.sleep(0.5)


def flood(a, end):
    time.sleep(a.flood_every / 2)
    while time.time() < end:
        socks = []
        for _ in range(a.flood):
            try:
                socks.append(connect(a.host, a.port))
            except OSError as e:
                problem("flood connect: %s" % e)
        # serve accepts in order and writes a refusal's 503 before it accepts the next
        # connection; the last socket is always refused (the flood alone holds more than
        # --max-connections), so once its 503 is here every earlier 503 is too.
        if socks and not select.select([socks[-1]], [], [], 30)[0]:
            problem("flood: its last connection had no 503 within 30 s")
        for s in socks:
            r, _, _ = select.select([s], [], [], 0)
            head = b""
            if r:
                try:
                    head = s.recv(4096)
                except ConnectionResetError:
                    head = b"reset"
            if head.startswith(b"HTTP/1.1 503"):
                count("flood_refused")
            elif head == b"":
                count("flood_accepted")
            else:
                problem("flood got %r" % head[:80])
            s.close()
        time.sleep(a.flood_every)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", required=True)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--header-timeout", type=float, required=True)
    p.add_argument("--body-timeout", type=float, required=True)
    p.add_argument("--never-read-tokens", type=int, default=4000)
    p.add_argument("--flood", type=int, default=80)
    p.add_argument("--flood-every", type=float, default=15)
    p.add_argument("--workers", type=int, default=3, help="connections of each slow kind")
    a = p.parse_args()
    u = urllib.parse.urlparse(a.url)
    a.host, a.port = u.hostname, u.port
    end = time.time() + a.seconds
    jobs = [slow_headers] * a.workers + [slow_body] * a.workers + [never_read, reset, flood]

    def run(job):
        try:
            job(a, end)
        except Exception as e:  # reported, and the crowd's exit code says so
            problem("%s: %r" % (job.__name__, e))

    threads = [threading.Thread(target=run, args=(j,)) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    json.dump({"sent": tally, "problems": problems}, sys.stdout)
    print()
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
