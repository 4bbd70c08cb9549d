#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Small OpenAI-style streaming servers over TLS for tokchron-bench's TLS test (tls_check.sh).

Usage: tls_sse_server.py DIR PORTS_FILE HEADER_LOG
One process, one listener per peer below on 127.0.0.1 (ephemeral ports, written to PORTS_FILE
as "NAME PORT" lines once all listen), with Python's ssl module over OpenSSL (TLS 1.3 and its
session tickets, so a client can resume) and the certificates DIR/localhost.pem (key
DIR/localhost.key) and DIR/other.example.pem. A well-behaved peer answers every POST with a
chunked text/event-stream of max_tokens text chunks (the last with finish_reason "length"), a
usage chunk and [DONE], keeping the connection open when the request asks for keep-alive, and
appends the request's headers to HEADER_LOG.

  ok           well-behaved, certificate for localhost and 127.0.0.1
  reconnect    as ok, but closes each connection after its second answer (`Connection: close`
               in it), as nginx's keepalive_requests 2 does
  other        well-behaved, certificate for other.example only
  alert        localhost; after two chunks, a fatal alert record written on the raw socket
  garbage      localhost; after two chunks, an application-data record that cannot decrypt
  close_notify localhost; after two chunks, TLS's close_notify and a TCP close (a clean TLS
               end mid-stream)
  plain        no TLS at all: plain HTTP on a port the client takes for TLS
  silent       accepts connections and never sends a byte (the handshake never completes)"""
import http.server
import json
import os
import socket
import ssl
import sys
import threading
import time


def handler_for(mode):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def chunk(self, data):
            payload = ("data: " + data + "\n\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
            self.wfile.flush()

        def hostile(self):
            """The hostile peers' move after two chunks; True when the response ends there."""
            fd = self.connection.fileno()
            if mode == "alert":  # level fatal (2), internal_error (80), as a TLS 1.2 record
                os.write(fd, bytes([21, 3, 3, 0, 2, 2, 80]))
            elif mode == "garbage":  # application data (23) that no key decrypts
                os.write(fd, bytes([23, 3, 3, 0, 64]) + os.urandom(64))
            elif mode == "close_notify":
                try:  # sends close_notify, then waits for the client's, which it does not send
                    self.connection.unwrap()
                except (OSError, ssl.SSLError):
                    pass
            else:
                return False
            time.sleep(0.2)  # the client reads what was sent before the close
            self.close_connection = True
            return True

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            with open(sys.argv[3], "a", encoding="utf-8") as log:
                log.write("".join(f"{k}: {v}\n" for k, v in self.headers.items()) + "\n")
            n = int(body.get("max_tokens", 4))
            keep = self.headers.get("Connection", "").lower() == "keep-alive"
            if mode == "reconnect":
                self.answered = getattr(self, "answered", 0) + 1
                keep = keep and self.answered < 2
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "keep-alive" if keep else "close")
            self.end_headers()
            for i in range(n):
                if i == 2 and self.hostile():
                    return
                self.chunk(json.dumps({"choices": [{
                    "index": 0, "text": " w", "finish_reason": "length" if i + 1 == n else None}]}))
            self.chunk(json.dumps({"choices": [],
                                   "usage": {"prompt_tokens": 3, "completion_tokens": n}}))
            self.chunk("[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            self.close_connection = not keep

    return Handler


class TLSServer(http.server.ThreadingHTTPServer):
    """Each connection's handshake in its own thread, so that a client stuck in one never
    holds up the others."""
    daemon_threads = True
    context = None

    def finish_request(self, request, client_address):
        if self.context is not None:
            try:
                request = self.context.wrap_socket(request, server_side=True)
            except (OSError, ssl.SSLError):
                return
        try:
            self.RequestHandlerClass(request, client_address, self)
        finally:
            request.close()


def silent():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    held = []

    def hold():
        while True:
            held.append(s.accept()[0])

    threading.Thread(target=hold, daemon=True).start()
    return s.getsockname()[1]


def main():
    d = sys.argv[1]
    ports = {}
    for mode in ("ok", "reconnect", "other", "alert", "garbage", "close_notify", "plain"):
        server = TLSServer(("127.0.0.1", 0), handler_for(mode))
        if mode != "plain":
            name = "other.example" if mode == "other" else "localhost"
            server.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            server.context.load_cert_chain(f"{d}/{name}.pem", f"{d}/{name}.key")
        threading.Thread(target=server.serve_forever, daemon=True).start()
        ports[mode] = server.server_address[1]
    ports["silent"] = silent()
    with open(sys.argv[2] + ".tmp", "w", encoding="utf-8") as f:
        f.write("".join(f"{k} {v}\n" for k, v in ports.items()))
    os.rename(sys.argv[2] + ".tmp", sys.argv[2])
    threading.Event().wait()


if __name__ == "__main__":
    main()
