#!/bin/sh
# tokchron-report join on real traces: tokchron-bench against `batching-executor serve` (sim
# backend in real time) on loopback, then the client and server traces joined by request id.
# Every request must match (the X-Request-Id the client sends is the server's trace id), the
# clocks are related by the traces' anchors, and no part is negative beyond the stated clock
# error. Two clients run at the same time, as two hosts would, each with its own --id-prefix:
# join matches every request of both, and the report aligns the two client traces.
# Usage: join_serve.sh EXECUTOR BENCH REPORT WORKDIR
set -eu
. "$(dirname "$0")/../../cli/serve_url.sh"
exe=$1 bench=$2 report=$3 dir=$4
mkdir -p "$dir"
rm -f "$dir"/*.jsonl "$dir"/*.out "$dir"/*.json "$dir"/*.csv
n=20
"$exe" serve --port 0 --max-requests $((2 * n)) --trace-out "$dir/server.jsonl" \
  >"$dir/serve.out" 2>&1 &
pid=$!
url=$(serve_url "$dir/serve.out") || { kill $pid; exit 1; }
port=${url##*:}
run_client() {  # $1: trace file, $2: the endpoint, $3: the id prefix
  "$bench" --url "http://127.0.0.1:$port" --endpoint "$2" --id-prefix "$3" \
    --model tokchron-sim --rate 20 --duration 10 --max-requests $n --prompt-len uniform:10,100 \
    --output-len uniform:5,20 --request-timeout 60 --profile canonical --format csv --progress never \
    --trace-out "$1" >"$1.csv"
}
run_client "$dir/client_a.jsonl" chat host-a/ &
a=$!
run_client "$dir/client_b.jsonl" completions host-b/
wait $a
wait $pid
# Both clients number their requests from 0; their prefixes keep the ids apart (serve names
# them chatcmpl-host-a/N and cmpl-host-b/N), so the whole server trace joins with both.
for f in client_a client_b; do
  [ "$(grep -c '"id":"host-' "$dir/$f.jsonl")" = $n ] || { echo "$f: ids without prefix"; exit 1; }
done
"$report" join --format json --server "$dir/server.jsonl" "$dir/client_a.jsonl" \
  "$dir/client_b.jsonl" >"$dir/join.json" 2>"$dir/join.err" || { cat "$dir/join.err"; exit 1; }
for want in "\"matched\": $((2 * n))" '"client_only": 0' '"server_only": 0' \
  '"duplicate_ids": 0' '"failed": 0' "\"split\": $((2 * n))" '"source": "anchors"' \
  '"beyond_error": 0'; do
  grep -q "$want" "$dir/join.json" || { echo "join: no $want"; cat "$dir/join.json"; exit 1; }
done
if grep -q '"beyond_error": [1-9]' "$dir/join.json"; then
  echo "join: a part is negative beyond the clock error"; cat "$dir/join.json"; exit 1
fi
# The parts add up: mean client TTFT = mean to_server + mean server_ttft + mean ttft_return.
"$report" join --format csv --server "$dir/server.jsonl" "$dir/client_a.jsonl" \
  "$dir/client_b.jsonl" >"$dir/join.csv"
awk -F, '$1 != "part" { mean[$1] = $3 }
  END { d = mean["client_ttft"] - mean["to_server"] - mean["server_ttft"] - mean["ttft_return"]
        e = mean["client_e2e"] - mean["to_server"] - mean["server_e2e"] - mean["e2e_return"]
        if (d < -1e-9 || d > 1e-9 || e < -1e-9 || e > 1e-9) { print "parts do not add up"; exit 1 }
        printf "join: mean client TTFT %.3f ms = %.3f to the server + %.3f server + %.3f back\n",
               mean["client_ttft"] * 1e3, mean["to_server"] * 1e3, mean["server_ttft"] * 1e3,
               mean["ttft_return"] * 1e3 }' "$dir/join.csv"
# Two client processes (each its own monotonic zero) on one timeline: every request counted,
# the alignment stated.
"$report" --format json "$dir/client_a.jsonl" "$dir/client_b.jsonl" >"$dir/both.json" \
  2>"$dir/both.err" || { cat "$dir/both.err"; exit 1; }
grep -q "\"completed\": $((2 * n))" "$dir/both.json" || { cat "$dir/both.json"; exit 1; }
grep -q '"clock_alignment"' "$dir/both.json" || { echo "no clock_alignment"; exit 1; }
grep -q "clock alignment: 2 hosts" "$dir/both.err" || { cat "$dir/both.err"; exit 1; }
echo "ok: $((2 * n)) requests of two clients joined; the two clients aligned"
