#!/bin/sh
# tokchron-bench against `batching-executor serve` (sim backend in real time): a short open loop
# whose every request must succeed, counted the same by the client's report and the server's
# trace. Usage: against_serve.sh EXECUTOR BENCH WORKDIR
set -eu
. "$(dirname "$0")/../../cli/serve_url.sh"
exe=$1 bench=$2 dir=$3
mkdir -p "$dir"
rm -f "$dir/serve.out" "$dir/server.jsonl" "$dir/client.jsonl"
n=24
"$exe" serve --port 0 --max-requests $n --trace-out "$dir/server.jsonl" >"$dir/serve.out" 2>&1 &
pid=$!
url=$(serve_url "$dir/serve.out") || { kill $pid; exit 1; }
port=${url##*:}
"$bench" --url "http://127.0.0.1:$port" --endpoint chat --model tokchron-sim --rate 20 \
  --duration 10 --max-requests $n --prompt-len uniform:10,100 --output-len uniform:5,20 \
  --request-timeout 60 --profile canonical --format csv --progress never \
  --trace-out "$dir/client.jsonl" >"$dir/report.csv"
wait $pid
grep -q "^requests,$n\$" "$dir/report.csv" || { echo "report:"; cat "$dir/report.csv"; exit 1; }
grep -q "^failed,0\$" "$dir/report.csv" || { echo "report:"; cat "$dir/report.csv"; exit 1; }
[ "$(wc -l <"$dir/client.jsonl")" -eq $n ] && [ "$(wc -l <"$dir/server.jsonl")" -eq $n ] ||
  { echo "trace lines differ from $n"; exit 1; }
echo "ok: $n requests, client and server"
