#!/bin/sh
# SPDX-License-Identifier: MIT
# tokchron-bench over TLS (ctest tokchron_bench.tls; docs/tools/tokchron-bench.md, "TLS"): against
# tls_sse_server.py (Python's ssl over OpenSSL, on 127.0.0.1) with a self-signed certificate made
# here by openssl. Checks: trusted with --ca-cert, every request completes, the handshakes and
# the resumed ones are counted; without --ca-cert the certificate is refused with its
# reason; --tls-verify off takes it; a certificate for another name is refused (hostname
# mismatch), by name and by IP address; --header reaches the server; keep-alive reuses the TLS
# connection (one handshake per user). Hostile peers: plaintext HTTP on the TLS port, a peer that
# never answers the handshake, a fatal alert, a record that does not decrypt and a clean TLS
# close mid-stream: each request fails with its reason and kind, counted, within the limits
# (no hang). Resumption: at most one full handshake per user, with a connection per request and
# with kept-alive connections the server closes. A run whose requests all failed exits 5
# (exit_failed_requests: the report was written). Skips (77) without openssl or python3.
# Usage: tls_check.sh TOKCHRON_BENCH DIR
set -u
bench=$1 dir=$2
command -v openssl >/dev/null 2>&1 || { echo "openssl not found: skipped"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir" || exit 1
cert() {  # cert NAME SUBJECT_ALT_NAMES
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=$1" -addext "subjectAltName=$2" -keyout "$dir/$1.key" -out "$dir/$1.pem" \
    2>/dev/null || { echo "openssl could not make a certificate"; exit 1; }
}
cert localhost DNS:localhost,IP:127.0.0.1
cert other.example DNS:other.example
python3 "$here/tls_sse_server.py" "$dir" "$dir/ports" "$dir/headers.log" &
pid=$!
trap 'kill "$pid" 2>/dev/null' EXIT
i=0
while [ ! -s "$dir/ports" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$dir/ports" ] || { echo "the TLS servers did not start"; exit 1; }
port_of() { sed -n "s/^$1 //p" "$dir/ports"; }
fail=0 connect_timeout=5 users=2 requests=6
run() {  # run NAME EXPECTED_EXIT URL ARGS...: runs $users users, $requests requests of 3 tokens
  # (the connect and handshake limit: $connect_timeout s)
  name=$1 want=$2 url=$3
  shift 3
  "$bench" --url "$url" --users "$users" --max-requests "$requests" --output-len fixed:3 \
    --prompt-len fixed:2 \
    --duration 30 --give-up 0 --profile canonical --format csv --progress never \
    --connect-timeout "$connect_timeout" --idle-timeout 10 "$@" >"$dir/$name.out" 2>"$dir/$name.err"
  rc=$?
  if [ "$rc" != "$want" ]; then
    echo "$name: exit $rc, expected $want"
    cat "$dir/$name.err"
    fail=1
  fi
}
expect() {  # expect NAME TEXT: the run's standard error holds TEXT
  grep -qF -- "$2" "$dir/$1.err" || { echo "$1: standard error lacks '$2'"; cat "$dir/$1.err"; fail=1; }
}

port=$(port_of ok)
run trusted 0 "https://localhost:$port" --ca-cert "$dir/localhost.pem" --header 'X-Tenant: blue'
expect trusted "6 requests: 6 completed, 0 failed"
expect trusted "TLS handshake median"
# Resumption: a TLS 1.3 ticket arrives after its handshake, in the connection's first read, and
# every connection opened after some connection read one offers it (a copy the client keeps, so
# no connection's end can spoil it). The 2 users' first handshakes start together, before any
# ticket: at most 2 of the 6 are full.
resumed_at_least() {  # resumed_at_least NAME N HANDSHAKES
  r=$(sed -n "s/.* \([0-9]*\) of $3 resumed a session.*/\1/p" "$dir/$1.err")
  [ -n "$r" ] && [ "$r" -ge "$2" ] ||
    { echo "$1: ${r:-no count of} resumed handshakes of $3, expected at least $2"; cat "$dir/$1.err"; fail=1; }
}
resumed_at_least trusted 4 6
grep -qx 'X-Tenant: blue' "$dir/headers.log" || { echo "--header did not reach the server"; fail=1; }
run by_ip 0 "https://127.0.0.1:$port" --ca-cert "$dir/localhost.pem"
run refused 5 "https://localhost:$port"
expect refused "TLS handshake: certificate verify failed: self-signed certificate (trust its issuer with --ca-cert FILE, or give --tls-verify off)"
expect refused "by kind: tls 6"
run unchecked 0 "https://localhost:$port" --tls-verify off
expect unchecked "--tls-verify off: the server's certificate and name are not checked"
run kept 0 "https://localhost:$port" --ca-cert "$dir/localhost.pem" --keep-alive on
expect kept "2 requests opened a connection"
# One user, one request at a time: every handshake but the first resumes, with a connection per
# request and with kept-alive connections the server closes after their second answer
# (`Connection: close`, as nginx's keepalive_requests 2): requests 1, 3 and 5 connect.
users=1
run sequential 0 "https://localhost:$port" --ca-cert "$dir/localhost.pem"
expect sequential "TLS handshake median"
resumed_at_least sequential 5 6
run reconnect 0 "https://localhost:$(port_of reconnect)" --ca-cert "$dir/localhost.pem" --keep-alive on
expect reconnect "3 requests opened a connection"
resumed_at_least reconnect 2 3
users=2
port=$(port_of other)
run wrong_name 5 "https://localhost:$port" --ca-cert "$dir/other.example.pem"
expect wrong_name "certificate verify failed: hostname mismatch"
run wrong_ip 5 "https://127.0.0.1:$port" --ca-cert "$dir/other.example.pem"
expect wrong_ip "certificate verify failed: IP address mismatch"
# Hostile peers: every request fails with its reason, counted by kind; none hangs (the run's
# limits: --connect-timeout 5 bounds the handshake, --idle-timeout 10 the stream).
run plain 5 "https://localhost:$(port_of plain)" --ca-cert "$dir/localhost.pem"
expect plain "TLS handshake: wrong version number"
expect plain "by kind: tls 6"
connect_timeout=1
run silent 5 "https://localhost:$(port_of silent)" --ca-cert "$dir/localhost.pem"
connect_timeout=5
expect silent "TLS handshake timeout (1 s)"
expect silent "by kind: timeout 6"
for mode in alert garbage close_notify; do
  run $mode 5 "https://localhost:$(port_of $mode)" --ca-cert "$dir/localhost.pem"
  expect $mode "6 requests: 0 completed, 6 failed"
done
expect alert "TLS, during read:"
expect alert "by kind: tls 6"
expect garbage "TLS, during read:"
expect garbage "by kind: tls 6"
expect close_notify "the connection closed before [DONE]"
[ "$fail" = 0 ] && echo "tokchron-bench over TLS: all checks passed"
exit "$fail"
