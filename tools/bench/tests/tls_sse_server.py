#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A small OpenAI-style streaming server over TLS for tokchron-bench's TLS test (tls_check.sh).

Usage: tls_sse_server.py CERT KEY PORT_FILE HEADER_LOG
Listens on 127.0.0.1 (an ephemeral port, written to PORT_FILE) with Python's ssl module over
OpenSSL (TLS 1.3 and its session tickets, so a client can resume), answers every POST with a
chunked text/event-stream of max_tokens text chunks (the last with finish_reason "length"),
a usage chunk and [DONE], keeping the connection open when the request asks for keep-alive, and
appends every request's headers to HEADER_LOG."""
import http.server
import json
import ssl
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def chunk(self, data):
        payload = ("data: " + data + "\n\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
        self.wfile.flush()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        with open(sys.argv[4], "a", encoding="utf-8") as log:
            log.write("".join(f"{k}: {v}\n" for k, v in self.headers.items()) + "\n")
        n = int(body.get("max_tokens", 4))
        keep = self.headers.get("Connection", "").lower() == "keep-alive"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "keep-alive" if keep else "close")
        self.end_headers()
        for i in range(n):
            self.chunk(json.dumps({"choices": [{"index": 0, "text": " w",
                                                "finish_reason": "length" if i + 1 == n else None}]}))
        self.chunk(json.dumps({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": n}}))
        self.chunk("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.close_connection = not keep


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[1], sys.argv[2])
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    with open(sys.argv[3], "w", encoding="utf-8") as f:
        f.write(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    main()
