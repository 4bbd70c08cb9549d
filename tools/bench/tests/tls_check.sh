#!/bin/sh
# SPDX-License-Identifier: MIT
# tokchron-bench over TLS (ctest tokchron_bench.tls; docs/tools/tokchron-bench.md, "TLS"): against
# tls_sse_server.py (Python's ssl over OpenSSL, on 127.0.0.1) with a self-signed certificate made
# here by openssl. Checks: trusted with --ca-cert, every request completes, the handshakes are
# counted and some resume a session; without --ca-cert the certificate is refused with its
# reason; --tls-verify off takes it; a certificate for another name is refused (hostname
# mismatch), by name and by IP address; --header reaches the server; keep-alive reuses the TLS
# connection (one handshake per user). Skips (77) without openssl or python3.
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
pid=
serve() {  # serve CERT_NAME: starts the server, sets port
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -f "$dir/port"
  python3 "$here/tls_sse_server.py" "$dir/$1.pem" "$dir/$1.key" "$dir/port" "$dir/headers.log" &
  pid=$!
  i=0
  while [ ! -s "$dir/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  port=$(cat "$dir/port" 2>/dev/null) || { echo "the TLS server did not start"; exit 1; }
}
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null' EXIT
fail=0
run() {  # run NAME EXPECTED_EXIT URL ARGS...: runs 2 users, 6 requests of 3 tokens
  name=$1 want=$2 url=$3
  shift 3
  "$bench" --url "$url" --users 2 --max-requests 6 --output-len fixed:3 --prompt-len fixed:2 \
    --duration 30 --give-up 0 --profile canonical --format csv --progress never \
    --connect-timeout 5 --idle-timeout 10 "$@" >"$dir/$name.out" 2>"$dir/$name.err"
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

serve localhost
run trusted 0 "https://localhost:$port" --ca-cert "$dir/localhost.pem" --header 'X-Tenant: blue'
expect trusted "6 requests: 6 completed, 0 failed"
expect trusted "TLS handshake median"
grep -q "resumed a session" "$dir/trusted.err" && ! grep -q " 0 of 6 resumed" "$dir/trusted.err" ||
  { echo "trusted: no handshake resumed a session"; cat "$dir/trusted.err"; fail=1; }
grep -qx 'X-Tenant: blue' "$dir/headers.log" || { echo "--header did not reach the server"; fail=1; }
run by_ip 0 "https://127.0.0.1:$port" --ca-cert "$dir/localhost.pem"
run refused 1 "https://localhost:$port"
expect refused "TLS handshake: certificate verify failed: self-signed certificate (trust its issuer with --ca-cert FILE, or give --tls-verify off)"
expect refused "by kind: tls 6"
run unchecked 0 "https://localhost:$port" --tls-verify off
expect unchecked "--tls-verify off: the server's certificate and name are not checked"
run kept 0 "https://localhost:$port" --ca-cert "$dir/localhost.pem" --keep-alive on
expect kept "2 requests opened a connection"
serve other.example
run wrong_name 1 "https://localhost:$port" --ca-cert "$dir/other.example.pem"
expect wrong_name "certificate verify failed: hostname mismatch"
run wrong_ip 1 "https://127.0.0.1:$port" --ca-cert "$dir/other.example.pem"
expect wrong_ip "certificate verify failed: IP address mismatch"
[ "$fail" = 0 ] && echo "tokchron-bench over TLS: all checks passed"
exit "$fail"
