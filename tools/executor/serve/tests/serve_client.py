# SPDX-License-Identifier: MIT
"""What the serve test scripts (slow_request.sh, buffer_caps.sh, bad_crowd.py) share: raw
socket replies and the connection counters of serve's /metrics. Python standard library only."""
import socket


def reply(s, timeout=None):
    """Everything the server sends on socket `s` until it closes (or resets, or `timeout`
    seconds pass without a byte): bytes."""
    if timeout is not None:
        s.settimeout(timeout)
    data = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    except (socket.timeout, ConnectionResetError):
        pass
    return data


def closed_counts(metrics_text):
    """tokchron_serve_closed_connections_total of a /metrics text: {reason: count}."""
    return {l.split('"')[1]: float(l.split()[-1]) for l in metrics_text.splitlines()
            if l.startswith("tokchron_serve_closed_connections_total{")}
