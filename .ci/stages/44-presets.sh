# The server presets of live_metrics (SGLang, TGI, llama.cpp, trtllm-serve;
# docs/library/live-metrics.md) against a real Prometheus (Debian's prometheus), and Dynamo's,
# LMDeploy's and OpenTelemetry's on one scrape read directly (run_direct below): promtool over
# each preset's golden exposition (tests/live/golden/), then for each preset
# `batching-executor serve --names PRESET` (sim backend in real time) on 127.0.0.1, scraped every
# 200 ms by a Prometheus with a temporary config and data dir, under a short tokchron-bench load
# and one stream its client abandons; check_presets.py answers the queries of the server's own
# Grafana dashboard (SGLang's, TGI's; the natural queries for llama.cpp and trtllm-serve, which
# publish none) through the Prometheus HTTP API and compares them with tokchron-report on serve's
# trace of the same run, quantiles within their bucket bound. Ends with a table of every compared
# quantile against its bound. Everything started here is stopped on exit, failure included.
tc_need_pkgs prometheus curl python3
tc_scratch  # $work, and $pids: stopped on exit

echo "--- promtool check metrics on each preset's golden exposition"
for p in sglang tgi llamacpp trtllm dynamo lmdeploy otel; do
  f=$TOKCHRON_ROOT/tests/live/golden/${p}_scripted.prom
  out=$(promtool check metrics <"$f" 2>&1 || true)
  # What the servers' own names draw (their outputs draw the same): ':' in SGLang's and
  # llama.cpp's (promtool reserves it for recording rules), TGI's counters without _total and
  # its counter tgi_request_count.
  other=$(grep -v -e "should not contain ':'" -e 'counter metrics should have "_total" suffix' \
    -e '^tgi_request_count non-histogram and non-summary metrics should not have "_count"' \
    <<<"$out" || true)
  [ -z "$other" ] || { echo "$f: $other"; exit 1; }
  lines=0
  [ -z "$out" ] || lines=$(wc -l <<<"$out")
  echo "ok $(basename "$f") ($lines lint lines, all on the server names)"
done

# Stage 10's build of serve, the load generator and the report (tc_release_tools).
tc_release_tools tokchron-report
checker=$TOKCHRON_ROOT/tools/executor/serve/tests/check_presets.py
summary=$work/quantiles.tsv

# promql PROM_PORT EXPR: the one value of an instant query as an integer; "none" when it has no
# result or Prometheus gave no answer (a gauge whose last scrape failed has none: not 0).
promql() {
  curl -fsS "http://127.0.0.1:$1/api/v1/query" --data-urlencode "query=$2" 2>/dev/null |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(int(float(r[0]["value"][1])) if r else "none")' \
      2>/dev/null || echo none
}

# scrapes PROM_PORT N: waits until Prometheus holds N successful scrapes of job presets, for at
# most 60 s (Prometheus' start included).
scrapes() {
  local n=none end=$((SECONDS + 60))
  while [ $SECONDS -lt $end ]; do
    n=$(promql "$1" 'sum_over_time(up{job="presets"}[1h])')
    [ "$n" != none ] && [ "$n" -ge "$2" ] && return 0
    sleep 0.2
  done
  echo "Prometheus holds $n scrapes after 60 s, expected $2"
  return 1
}

# The request gauges of each preset (running, waiting): idle when both read 0.
declare -A idle=(
  [sglang]='sglang:num_running_reqs + sglang:num_queue_reqs'
  [tgi]='tgi_batch_current_size + tgi_queue_size'
  [llamacpp]='llamacpp:requests_processing + llamacpp:requests_deferred'
  [trtllm]='trtllm_num_requests_running + trtllm_num_requests_waiting'
)

# serve_start PRESET DIR: serve under PRESET's names, at most 4 requests in a batch (the load
# queues, so queue times and the waiting gauge move), its trace in DIR/server.jsonl; sets the
# caller's `server` (its pid, appended to `pids`) and `base` (its URL).
serve_start() {
  "$bx" serve --host 127.0.0.1 --port 0 --hw h200 --served-model "tokchron/$1" --names "$1" \
    --max-batch-size 4 --trace-out "$2/server.jsonl" >"$2/serve.log" 2>&1 &
  server=$!
  pids+=("$server")
  base=$(tc_serve_url "$2/serve.log")
}
# serve_stop DIR: stops the caller's `server` (its trace written), failing on its exit status.
serve_stop() {
  kill -INT "$server"
  wait "$server" || { echo "serve exited with $?"; cat "$1/serve.log"; exit 1; }
}

# run_preset PRESET SEED: serve, Prometheus, load, stop serve (its trace), check.
run_preset() {
  local p=$1 seed=$2 d=$work/$1
  mkdir -p "$d"
  echo "--- serve --names $p, a Prometheus scraping it, a short load"
  local server base
  serve_start "$p" "$d"
  tc_prometheus "$d" presets "${base#http://}" container=tokchron-serve
  local prom=$prom_pid
  # Scraped before the first request: every counter's first sample in the range is 0.
  scrapes "$prom_port" 3 || { tail -n 20 "$d/prometheus.log"; exit 1; }
  # One stream its client abandons after 0.3 s (the server aborts it), while the load runs.
  (sleep 0.5; curl -sS -N --max-time 0.3 "$base/v1/completions" -H 'Content-Type: application/json' \
    -d "{\"model\":\"tokchron/$p\",\"prompt\":\"a long answer\",\"max_tokens\":4000,\"ignore_eos\":true,\"stream\":true}" \
    >/dev/null 2>&1 || true) &
  local abandon=$!
  pids+=("$abandon")
  "$bench" --url "$base" --endpoint chat --model "tokchron/$p" --rate 16 --duration 3 \
    --prompt-len uniform:16,512 --output-len uniform:1,48 --seed "$seed" --request-timeout 60 \
    --progress never --format json --trace-out "$d/client.jsonl" >"$d/report.json" \
    2>"$d/bench.err" || { echo "tokchron-bench exited with $?"; cat "$d/bench.err"; exit 1; }
  wait "$abandon" || true
  # Every request finished (the abandoned one aborted) as of a scrape, then two more scrapes;
  # then serve stops (SIGINT writes its trace): its last scrape holds the whole run.
  local busy=none end=$((SECONDS + 60)) held
  while [ $SECONDS -lt $end ]; do
    busy=$(promql "$prom_port" "${idle[$p]}")
    [ "$busy" = 0 ] && break
    sleep 0.2
  done
  [ "$busy" = 0 ] || { echo "after 60 s, requests still in flight: ${idle[$p]} = $busy"; exit 1; }
  held=$(promql "$prom_port" 'sum_over_time(up{job="presets"}[1h])')
  [ "$held" != none ] || { echo "Prometheus answers no scrape count"; exit 1; }
  scrapes "$prom_port" $((held + 2)) || exit 1
  serve_stop "$d"
  if ! python3 "$checker" --preset "$p" --prometheus "127.0.0.1:$prom_port" --job presets \
      --trace "$d/server.jsonl" --report "$report" --model "tokchron/$p" \
      --service tokchron-serve --summary "$summary"; then
    echo "--- --names $p failed; logs:"
    tail -n 20 "$d/serve.log" "$d/prometheus.log"
    exit 1
  fi
  kill "$prom" 2>/dev/null || true
  wait "$prom" 2>/dev/null || true
  pids=()  # serve, Prometheus and the abandoning client have stopped
}

run_preset sglang 21
run_preset tgi 22
run_preset llamacpp 23
run_preset trtllm 24

# The request gauges of the presets checked on one direct scrape (OpenTelemetry's has none).
declare -A busy_of=(
  [dynamo]='dynamo_frontend_inflight_requests'
  [lmdeploy]='lmdeploy:num_requests_running|lmdeploy:num_requests_waiting'
)

# run_direct PRESET SEED: serve under PRESET, a one-second load and (where the preset has an
# in-flight gauge) one stream its client abandons; one scrape of /metrics once every request
# finished (the gauges read 0; for otel, two scrapes 0.3 s apart equal); serve stopped (its
# trace); promtool on the scrape; check_presets.py --metrics on it. No Prometheus: a few
# seconds a preset.
run_direct() {
  local p=$1 seed=$2 d=$work/$1
  mkdir -p "$d"
  echo "--- serve --names $p, a one-second load, one scrape of /metrics read directly"
  local server base
  serve_start "$p" "$d"
  local abandon=
  if [ -n "${busy_of[$p]:-}" ]; then
    (sleep 0.3; curl -sS -N --max-time 0.3 "$base/v1/completions" -H 'Content-Type: application/json' \
      -d "{\"model\":\"tokchron/$p\",\"prompt\":\"a long answer\",\"max_tokens\":4000,\"ignore_eos\":true,\"stream\":true}" \
      >/dev/null 2>&1 || true) &
    abandon=$!
    pids+=("$abandon")
  fi
  "$bench" --url "$base" --endpoint chat --model "tokchron/$p" --rate 16 --duration 1 \
    --prompt-len uniform:16,512 --output-len uniform:1,48 --seed "$seed" --request-timeout 60 \
    --progress never --format json >"$d/report.json" 2>"$d/bench.err" ||
    { echo "tokchron-bench exited with $?"; cat "$d/bench.err"; exit 1; }
  [ -z "$abandon" ] || wait "$abandon" || true
  local end=$((SECONDS + 30)) prev= busy
  while :; do
    curl -fsS "$base/metrics" >"$d/metrics.txt"
    if [ -n "${busy_of[$p]:-}" ]; then
      busy=$(grep -E "^(${busy_of[$p]})(\{| )" "$d/metrics.txt" | awk '{s += $NF} END {print s + 0}')
      [ "$busy" = 0 ] && break
    else
      [ "$(cat "$d/metrics.txt")" = "$prev" ] && break
      prev=$(cat "$d/metrics.txt")
    fi
    [ $SECONDS -lt $end ] || { echo "--names $p: requests still in flight after 30 s"; exit 1; }
    sleep 0.3
  done
  serve_stop "$d"
  pids=()
  out=$(promtool check metrics <"$d/metrics.txt" 2>&1 || true)
  other=$(grep -v -e "should not contain ':'" <<<"$out" || true)
  [ -z "$other" ] || { echo "promtool on --names $p: $other"; exit 1; }
  python3 "$checker" --preset "$p" --metrics "$d/metrics.txt" --trace "$d/server.jsonl" \
    --report "$report" --model "tokchron/$p" ||
    { echo "--- --names $p failed; log:"; tail -n 20 "$d/serve.log"; exit 1; }
}

run_direct dynamo 25
run_direct lmdeploy 26
run_direct otel 27

echo "--- every compared quantile against its bound (preset, family, q, PromQL, tokchron-report,"
echo "    bound low, bound high; the exact value lies within the edges of the buckets around its rank)"
python3 - "$summary" <<'PY'
import sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1], encoding="utf-8")]
worst = {}
for p, fam, q, got, exact, lo, hi in rows:
    got, exact, lo, hi = map(float, (got, exact, lo, hi))
    width = hi - lo
    share = abs(got - exact) / width if width > 0 else 0.0
    print(f"{p:8} {fam:48} q{q:5} {got:12.6g} {exact:12.6g} [{lo:.6g}, {hi:.6g}] "
          f"error {abs(got - exact):.3g} = {share:.2f} of the bound's width")
    worst[p] = max(worst.get(p, 0.0), share)
for p, s in worst.items():
    print(f"{p}: largest error {s:.2f} of its bound's width (every one within its bound)")
PY
