# tokchron-bench against `batching-executor serve` on 127.0.0.1 (docs/tools/tokchron-bench.md, "Client
# and server agree"): a short open-loop sweep (three rates, 2 s each) with an objective, the
# answers a quarter reasoning and the prompts sharing a cached prefix, while bad requests and a
# client that disconnects mid-stream hit the same server. Then the client's report and traces,
# the server's trace and a scrape of its /metrics (vLLM names) must agree: request, token,
# reasoning-token and cached-token counts exactly, the histograms' buckets exactly with the
# server trace, and the latency quantiles within the client/server difference the page states
# (tools/bench/tests/check_sweep.py). The sweep must end with the capacity
# planner's pick. Everything started here is stopped on exit, failure included.
tc_need_pkgs curl python3
tc_scratch  # $work, and $pids: stopped on exit

tc_release_tools

echo "--- serve on 127.0.0.1 (sim h200 in real time, vLLM metric names, reasoning, prefix cache)"
"$bx" serve --host 127.0.0.1 --port 0 --hw h200 --served-model tokchron-sim --names vllm \
  --max-body 65536 --reasoning-fraction 0.25 --shared-prefix 32 --enable-prompt-tokens-details \
  --trace-out "$work/server.jsonl" >"$work/serve.log" 2>&1 &
server=$!
pids+=("$server")
base=$(tc_serve_url "$work/serve.log")

# While the sweep runs: four bad requests (each must get its status and the OpenAI error
# object) and one stream the client abandons after 1.5 s (the server must abort it).
misbehave() {
  local f=$work/misbehave
  sleep 1
  post() {  # post NAME EXPECTED_STATUS BODY_FILE
    local code
    code=$(curl -sS -o "$f.$1.body" -w '%{http_code}' "$base/v1/completions" \
      -H 'Content-Type: application/json' --data-binary "@$3")
    [ "$code" = "$2" ] && grep -q '"error"' "$f.$1.body" ||
      { echo "bad request $1: status $code, expected $2: $(head -c 300 "$f.$1.body")"; return 1; }
  }
  printf '{"model": "tokchron-sim", "prompt": ' >"$f.json.in"
  printf '{"model": "no-such-model", "prompt": "hi", "max_tokens": 4}' >"$f.model.in"
  printf '{"model": "tokchron-sim", "prompt": "hi", "max_tokens": -3}' >"$f.negative.in"
  head -c 70000 /dev/zero | tr '\0' 'a' | sed 's/^/{"model":"tokchron-sim","prompt":"/; s/$/"}/' \
    >"$f.large.in"
  post json 400 "$f.json.in" && post model 404 "$f.model.in" &&
    post negative 400 "$f.negative.in" && post large 413 "$f.large.in" || return 1
  # The disconnect: curl gives up 1.5 s into a 4000-token stream (exit 28, a timeout; the
  # stream takes tens of seconds, and 1.5 s leaves a loaded machine time for the first data).
  local rc=0
  curl -sS -N --max-time 1.5 "$base/v1/completions" -H 'Content-Type: application/json' \
    -H 'X-Request-Id: abandoned' -d \
    '{"model":"tokchron-sim","prompt":"a long answer","max_tokens":4000,"ignore_eos":true,"stream":true}' \
    >"$f.abandoned.sse" 2>/dev/null || rc=$?
  [ "$rc" = 28 ] && grep -q '^data: ' "$f.abandoned.sse" ||
    { echo "the abandoned stream: curl exit $rc, expected 28 after some data within 1.5 s"; return 1; }
  echo ok >"$f.done"
}
misbehave &
helper=$!
pids+=("$helper")

echo "--- tokchron-bench --sweep rate=5,10,20 (2 s each), chat, keep-alive, with an objective"
"$bench" --url "$base" --endpoint chat --model tokchron-sim --sweep rate=5,10,20 --duration 2 \
  --prompt-len uniform:16,256 --output-len uniform:8,32 --seed 11 --request-timeout 60 \
  --keep-alive on \
  --profile canonical --format json --slo 'p50(ttft) < 5s' --progress never \
  --trace-out "$work/client.jsonl" >"$work/report.json" 2>"$work/bench.err" ||
  { echo "tokchron-bench exited with $?"; cat "$work/bench.err" "$work/report.json"; exit 1; }
wait "$helper" || { echo "the bad requests or the disconnect went wrong"; exit 1; }
[ -f "$work/misbehave.done" ] || exit 1
# With --format json the planner's lines go to standard error, after the sweep.
cat "$work/bench.err"
grep -q '^  choice: #3 rate=20 at ' "$work/bench.err" ||
  { echo "the sweep does not end with the planner's pick of rate=20"; exit 1; }

echo "--- scrape /metrics, stop the server (SIGINT writes its trace) and compare"
curl -fsS "$base/metrics" >"$work/metrics.txt"
curl -fsS "$base/health" >/dev/null  # still serving after all of it
kill -INT "$server"
wait "$server" || { echo "serve exited with $?"; cat "$work/serve.log"; exit 1; }
pids=()
python3 "$TOKCHRON_ROOT/tools/bench/tests/check_sweep.py" \
  --report "$work/report.json" --server-trace "$work/server.jsonl" --metrics "$work/metrics.txt" \
  --id-prefix chatcmpl- --aborted 1 --expect-reasoning --expect-cached --client-traces "$work"/client.rate=*.jsonl

# A server that shuts down under load (docs/tools/tokchron-bench.md, "A server that shuts
# down"): serve gets SIGTERM 3 s into a run of 100 users; its streams in flight end with
# finish_reason abort. The client must count every one of them as failed (aborted), the
# completed ones as completed, and stop sending once the server is gone (--give-up: exit 6);
# tools/bench/tests/check_shutdown.py then joins both traces by id: the same finish reason
# for every request the server recorded, the same counts by finish reason, and only
# connection failures for the requests it never recorded.
echo "--- serve stopped by SIGTERM under tokchron-bench (100 users)"
"$bx" serve --host 127.0.0.1 --port 0 --hw h200 --served-model tokchron-sim \
  --trace-out "$work/shutdown-server.jsonl" >"$work/shutdown-serve.log" 2>&1 &
server=$!
pids+=("$server")
base=$(tc_serve_url "$work/shutdown-serve.log")
"$bench" --url "$base" --model tokchron-sim --users 100 --duration 30 --prompt-len fixed:32 \
  --output-len uniform:20,400 --seed 5 --request-timeout 60 --give-up 2 --progress never \
  --profile canonical --format csv --trace-out "$work/shutdown-client.jsonl" \
  >"$work/shutdown-report.csv" 2>"$work/shutdown-bench.err" &
client=$!
pids+=("$client")
sleep 3
kill -TERM "$server"
wait "$server" || { echo "serve exited with $? after SIGTERM"; cat "$work/shutdown-serve.log"; exit 1; }
rc=0
wait "$client" || rc=$?
cat "$work/shutdown-bench.err"
[ "$rc" = 6 ] || { echo "tokchron-bench exited with $rc, expected 6 (it stops once the server is gone)"; exit 1; }
python3 "$TOKCHRON_ROOT/tools/bench/tests/check_shutdown.py" \
  --client "$work/shutdown-client.jsonl" --server "$work/shutdown-server.jsonl" --id-prefix cmpl-

# Trace replay (docs/tools/tokchron-bench.md, "Trace replay"): a Mooncake-format trace of 2000
# requests at 200 a second (Poisson, 10 s; prompts of 1 to 3 blocks of 512 tokens, leading blocks
# shared between requests: 1.5 million prompt tokens) replayed at its recorded times against
# serve, whose sim accelerator has ten times an H200's compute and bandwidth so that it keeps up
# (an H200's sim serves about 40000 prompt tokens a second of llama2-7b: the requests would queue
# past --max-connections), and memory for every block of the trace (2e12 bytes: 3.4 million
# tokens of KV), so that its prefix cache evicts nothing. tools/bench/tests/check_replay.py joins
# both traces: every request intended at its recorded time, completed, its prompt counted by
# serve at its recorded length and its output of the recorded length; the send lag's P99 under
# 50 ms (measured 7.9-11.7 ms with keep-alive on the 2-core machine at load 10; on an idle
# machine see the page); and each request's cached tokens (serve's trace and the client's usage)
# exactly what the trace's hash_ids predict (--cached exact; docs/tools/executor.md, "Prefix
# caching"). Then half the trace again against a pool of 947 blocks (--sim memory=2.5e10: 15152
# tokens), where blocks are evicted (about 60 % of the predicted tokens are served): each
# request's cached tokens within the prediction's bounds.
replay() {  # replay NAME TRACE CACHED SERVE_ARGS...
  local name=$1 trace=$2 cached=$3
  shift 3
  "$bx" serve --host 127.0.0.1 --port 0 --hw h200 --served-model tokchron-sim \
    --max-batch-size 256 --max-num-batched-tokens 16384 --sim flops=1e16 --sim bandwidth=5e13 \
    --enable-prompt-tokens-details "$@" \
    --trace-out "$work/$name-server.jsonl" >"$work/$name-serve.log" 2>&1 &
  server=$!
  pids+=("$server")
  base=$(tc_serve_url "$work/$name-serve.log")
  "$bench" --url "$base" --model tokchron-sim --replay "$trace" --keep-alive on \
    --request-timeout 60 --progress never --profile canonical --format csv \
    --trace-out "$work/$name-client.jsonl" >"$work/$name-report.csv" 2>"$work/$name-bench.err" ||
    { echo "tokchron-bench exited with $?"; cat "$work/$name-bench.err"; return 1; }
  cat "$work/$name-bench.err"
  kill -INT "$server"
  wait "$server" || { echo "serve exited with $?"; cat "$work/$name-serve.log"; return 1; }
  pids=()
  python3 "$TOKCHRON_ROOT/tools/bench/tests/check_replay.py" check --trace "$trace" \
    --client "$work/$name-client.jsonl" --server "$work/$name-server.jsonl" \
    --bench-err "$work/$name-bench.err" --id-prefix cmpl- --lag-p99-ms 50 --cached "$cached"
}
echo "--- tokchron-bench --replay: 2000 Mooncake requests over 10 s against serve"
python3 "$TOKCHRON_ROOT/tools/bench/tests/check_replay.py" make "$work/mooncake.jsonl" \
  --requests 2000 --rate 200 --seed 3
replay replay "$work/mooncake.jsonl" exact --sim memory=2e12 || exit 1
echo "--- the first 1000 of them against a pool of 947 blocks (evictions)"
head -n 1000 "$work/mooncake.jsonl" >"$work/mooncake-half.jsonl"
replay small "$work/mooncake-half.jsonl" bounded --sim memory=2.5e10 || exit 1

# --rate sweep (docs/tools/tokchron-bench.md, "Rate sweep, steady state and repeated runs"):
# GuideLLM's sweep against serve on the sim's A10G with Llama-2-7B, max batch 8 (a decode step
# of about 31 ms), fixed prompts and outputs, 24 users at the throughput point (three times the
# batch, so a request always waits and the client's round trip never idles the engine), 5 s a
# point. tools/bench/tests/check_rate_sweep.py checks GuideLLM's spacing of the rates, and the
# throughput point's steady-state output tokens/s against batching-executor's own simulation of
# the same configuration and load (300 s, offline): within the window's resolution and the
# sim's jitter above and below, and below also the real-time engine's overhead, at most 3 ms a
# step: serve's steps measured 1.7 ms longer than modelled on average (its trace, and the two
# runs' ratios 0.947 and 0.949, before serve had a prefix cache) on the 2-core machine at load
# average 15; 3 ms is that with a margin of 1.8x. Each generated prompt is words of its own
# (no two share a block of 16 tokens), so serve's prefix cache serves none of them: its
# /metrics must count no hit, and the prediction computes every prompt whole.
# About 27 s wall and 1.5 s CPU.
echo "--- tokchron-bench --rate sweep against serve, and the executor's prediction"
sweep_cfg=(--hw a10g --model llama2-7b --max-batch-size 8)
sweep_load=(--prompt-len fixed:64 --output-len fixed:32)
"$bx" serve --host 127.0.0.1 --port 0 "${sweep_cfg[@]}" --served-model tokchron-sim --names vllm \
  >"$work/sweep-serve.log" 2>&1 &
server=$!
pids+=("$server")
base=$(tc_serve_url "$work/sweep-serve.log")
"$bench" --url "$base" --model tokchron-sim --rate sweep --sweep-points 2 --users 24 \
  --duration 5 "${sweep_load[@]}" --request-timeout 60 --profile canonical --format json \
  --goodput ttft:2s,tpot:100ms --progress never >"$work/rate-sweep.json" \
  2>"$work/rate-sweep.err" ||
  { echo "tokchron-bench exited with $?"; cat "$work/rate-sweep.err"; exit 1; }
cat "$work/rate-sweep.err"
curl -fsS "$base/metrics" >"$work/sweep-metrics.txt"
awk '/^vllm:prefix_cache_queries_total/ { q += $NF } /^vllm:prefix_cache_hits_total/ { h += $NF }
  END { printf "  serve'"'"'s prefix cache: %d of %d prompt tokens hit\n", h, q; exit !(q > 0 && h == 0) }' \
  "$work/sweep-metrics.txt" || { echo "the sweep's prompts share cached blocks"; exit 1; }
kill -INT "$server"
wait "$server" || { echo "serve exited with $?"; cat "$work/sweep-serve.log"; exit 1; }
pids=()
"$bx" --backend sim "${sweep_cfg[@]}" --users 24 --think-time none "${sweep_load[@]}" \
  --duration 300 --format json >"$work/rate-sweep-predicted.json"
python3 "$TOKCHRON_ROOT/tools/bench/tests/check_rate_sweep.py" --sweep "$work/rate-sweep.json" \
  --predicted "$work/rate-sweep-predicted.json" --max-batch 8 --points 2 --step-overhead-ms 3
