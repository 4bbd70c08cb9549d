# tokchron-bench over TLS through a real reverse proxy (docs/tools/tokchron-bench.md, "Through a
# reverse proxy"): Debian's nginx, started here on 127.0.0.1 with a self-signed certificate made
# here by openssl, terminates TLS and proxies to `batching-executor serve` (sim backend in real
# time), once with proxy_buffering off and once with it on. Three runs of the same closed-loop
# workload (direct over plain HTTP, through nginx unbuffered, through nginx buffered), then
# tools/bench/tests/check_proxy.py against serve's trace: every request completed with the
# server's finish reason and token count through both; unbuffered, the client's TTFT and gaps
# stay within the bounds below of the direct run's; buffered, most gaps fell inside one read
# and the client says so (its merged-read count, not zero gaps). A certificate the client does
# not trust is refused with its reason (exit 5: the report written, every request failed), and
# taken with --tls-verify off. About 45 s.
tc_need_pkgs nginx openssl python3 curl
tc_scratch  # $work, and $pids: stopped on exit

tc_release_tools

# The bounds on the unbuffered path against the direct run (check_proxy.py): what nginx may add
# to the median TTFT excess (client TTFT from its send minus serve's from the arrival) and to the
# median |TPOT error| (client TPOT minus serve's). They hold a path that forwards each event as
# it comes; a buffering proxy breaks both (measured through the buffered path below: +600 to
# +750 ms of TTFT excess, 12 to 14 ms of TPOT error, the whole stream in one read). The hop
# itself costs about 1 ms on idle cores, but on the shared 2-core machine at a load of 14, with
# the stage under nice 19, three runs measured +13, +64 and +77 ms of TTFT excess and +0.28 to
# +0.33 ms of TPOT error: the bounds are about 3 times the worst of those.
bound_ttft_ms=250
bound_tpot_ms=1

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

echo "--- serve on 127.0.0.1 (sim h200 in real time)"
"$bx" serve --host 127.0.0.1 --port 0 --hw h200 --served-model tokchron-sim \
  --trace-out "$work/server.jsonl" >"$work/serve.log" 2>&1 &
server=$!
pids+=("$server")
base=$(tc_serve_url "$work/serve.log")
upstream=${base#http://}

# A free port for nginx: bind 0, read it, release it (nginx cannot report an ephemeral port).
port=$(tc_free_port)
mkdir -p "$work/nginx"
cat >"$work/nginx/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  upstream serve { server $upstream; keepalive 16; }
  server {
    listen 127.0.0.1:$port ssl;
    server_name localhost;
    ssl_certificate $work/cert.pem;
    ssl_certificate_key $work/key.pem;
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_read_timeout 60s;
    location /unbuffered/ { proxy_pass http://serve/; proxy_buffering off; }
    location /buffered/ {
      proxy_pass http://serve/;
      proxy_buffering on;
      proxy_buffer_size 64k;
      proxy_buffers 8 64k;
      proxy_busy_buffers_size 128k;
    }
  }
}
CONF
echo "--- nginx on 127.0.0.1:$port (TLS, proxy_buffering off and on)"
nginx -p "$work/nginx" -e "$work/nginx/error.log" -c "$work/nginx/nginx.conf" \
  -g 'daemon off; user root;' \
  >"$work/nginx/stdout.log" 2>&1 &
pids+=("$!")
for _ in $(seq 50); do
  curl -s -o /dev/null --cacert "$work/cert.pem" "https://localhost:$port/unbuffered/health" && break
  sleep 0.2
done
curl -fsS -o /dev/null --cacert "$work/cert.pem" "https://localhost:$port/unbuffered/health" ||
  { echo "nginx did not come up"; cat "$work/nginx/error.log" "$work/nginx/stdout.log"; exit 1; }

# The same closed-loop workload for every run: 4 users, 48 requests, 48 tokens each, on
# kept-alive connections (4 handshakes a TLS run, each reported; the medians compare the paths,
# not the handshakes, which the client reports apart).
load=(--model tokchron-sim --users 4 --max-requests 48 --duration 60 --prompt-len fixed:64
      --output-len fixed:48 --seed 3 --request-timeout 60 --give-up 10 --progress never
      --profile canonical --format csv --keep-alive on)
bench_run() {  # bench_run NAME URL ARGS...
  local name=$1 url=$2
  shift 2
  echo "--- tokchron-bench: $name"
  "$bench" --url "$url" "${load[@]}" --id-prefix "$name-" --trace-out "$work/$name.jsonl" "$@" \
    >"$work/$name.csv" 2>"$work/$name.err" ||
    { echo "tokchron-bench ($name) exited with $?"; cat "$work/$name.err"; exit 1; }
  cat "$work/$name.err"
}
bench_run direct "$base"
bench_run unbuffered "https://localhost:$port/unbuffered" --ca-cert "$work/cert.pem"
bench_run buffered "https://localhost:$port/buffered" --ca-cert "$work/cert.pem"
grep -q "TLS handshake median" "$work/unbuffered.err" ||
  { echo "the TLS run does not report its handshakes"; exit 1; }

echo "--- a certificate the client does not trust: refused with its reason, or taken when told"
rc=0
"$bench" --url "https://localhost:$port/unbuffered" --model tokchron-sim --users 1 \
  --max-requests 2 --output-len fixed:2 --give-up 0 --progress never >/dev/null \
  2>"$work/refused.err" || rc=$?
[ "$rc" = 5 ] && grep -q "TLS handshake: certificate verify failed: self-signed certificate" \
  "$work/refused.err" || { echo "the untrusted certificate was not refused (exit $rc)"; cat "$work/refused.err"; exit 1; }
"$bench" --url "https://localhost:$port/unbuffered" --model tokchron-sim --users 1 \
  --max-requests 2 --output-len fixed:2 --give-up 0 --progress never --tls-verify off \
  >/dev/null 2>"$work/unchecked.err" || { echo "--tls-verify off: exit $?"; cat "$work/unchecked.err"; exit 1; }

echo "--- stop serve (SIGINT writes its trace) and compare"
kill -INT "$server"
wait "$server" || { echo "serve exited with $?"; cat "$work/serve.log"; exit 1; }
python3 "$TOKCHRON_ROOT/tools/bench/tests/check_proxy.py" --server "$work/server.jsonl" \
  --client direct="$work/direct.jsonl:$work/direct.err" \
  --client unbuffered="$work/unbuffered.jsonl:$work/unbuffered.err" \
  --client buffered="$work/buffered.jsonl:$work/buffered.err" --direct direct \
  --unbuffered unbuffered --buffered buffered --bound-ttft-ms "$bound_ttft_ms" \
  --bound-tpot-ms "$bound_tpot_ms"
