#!/bin/sh
# tokchron-bench --scrape against `batching-executor serve --names NAMES` (sim backend in real
# time): the change in serve's /metrics over the run, as the JSON report carries it, equals
# serve's own trace: requests finished, prompt and output tokens, TTFT and E2E observations.
# Usage: scrape_serve.sh EXECUTOR BENCH WORKDIR NAMES
set -eu
. "$(dirname "$0")/../../cli/serve_url.sh"
exe=$1 bench=$2 dir=$3 names=$4
mkdir -p "$dir"
rm -f "$dir/serve.out" "$dir/server.jsonl" "$dir/report.json" "$dir/report.txt"
n=20
"$exe" serve --port 0 --names "$names" --trace-out "$dir/server.jsonl" >"$dir/serve.out" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
url=$(serve_url "$dir/serve.out")
# Requests before the run: the scrape takes the change, not the totals.
"$bench" --url "$url" --endpoint chat --model tokchron-sim --rate 50 --duration 5 \
  --max-requests 3 --prompt-len 16 --output-len 4 --request-timeout 60 --profile canonical \
  --format csv --progress never >/dev/null
"$bench" --url "$url" --endpoint chat --model tokchron-sim --rate 20 --duration 10 \
  --max-requests $n --prompt-len uniform:10,100 --output-len uniform:5,20 --request-timeout 60 \
  --profile canonical --format json --progress never --id-prefix run- --scrape "$url/metrics" >"$dir/report.json"
# The table output prints the same change beside the client's counts.
"$bench" --url "$url" --endpoint chat --model tokchron-sim --rate 50 --duration 5 \
  --max-requests 2 --prompt-len 16 --output-len 4 --request-timeout 60 --profile canonical \
  --progress never --scrape "$url/metrics" >"$dir/report.txt"
grep -q "^  requests finished     2 (" "$dir/report.txt" ||
  { echo "table:"; cat "$dir/report.txt"; exit 1; }
kill -TERM $pid
wait $pid || true
trap - EXIT
python3 - "$dir/report.json" "$dir/server.jsonl" "$n" <<'PY'
import json, sys
report, trace, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
m = json.load(open(report))["server_metrics"]["recognised"]
lines = [json.loads(l) for l in open(trace)]
run = [r for r in lines if r["id"].startswith("chatcmpl-run-")]  # serve's id: its X-Request-Id
assert len(run) == n, len(run)
prompt = sum(r["prompt_tokens"] for r in run)
output = sum(r.get("usage_output_tokens", sum(c[1] for c in r["chunks"])) for r in run)
want = {"requests": n, "prompt_tokens": prompt, "output_tokens": output}
got = {k: m[k]["increase"] for k in want}
assert got == want, (got, want)
for h in ("ttft", "e2e"):
    assert m[h]["count"] == n, (h, m[h]["count"])
print("ok: /metrics changed by", got, "and", n, "TTFT and E2E observations")
PY
