# The server integration against a real Prometheus (Debian's prometheus, prometheus-cpp-dev,
# nlohmann-json3-dev): docs/library/server-integration.md's code blocks are the example's code; then
# examples/server_integration's fake engine serves its live metrics through prometheus-cpp's
# Exposer on 127.0.0.1 while a real Prometheus (temporary config and data dir, 200 ms scrapes)
# scrapes it, and check_dashboard.py runs every query of vLLM's example Grafana dashboard
# (tests/data/vllm_dashboard/) and compares the answers with tokchron-report on the run's
# trace, and checks that `tokchron-report --inclusion X` on the trace equals /metrics (every
# histogram's count and sum, token counters, requests by finish reason). Once per inclusion
# policy: --names vllm under the default (scheduled; the whole dashboard), --names tokchron under
# all, and --names vllm under completed (smaller runs). Everything started here is stopped on
# exit, failure included.
tc_need_pkgs prometheus prometheus-cpp-dev nlohmann-json3-dev python3
tc_scratch  # $work, and $pids: stopped on exit
ex=$TOKCHRON_ROOT/examples/server_integration

echo "--- docs/library/server-integration.md quotes the example's code"
python3 "$ex/check_doc_quotes.py" --root "$TOKCHRON_ROOT" docs/library/server-integration.md

# server-integration and tokchron-report in stage 10's optimised tree (configured again, it finds
# the prometheus-cpp that stage 40 installed; tokchron-report is an up-to-date check there).
dir=$(tc_dir g++-c++17)
tc_build g++-c++17 server-integration tokchron-report
server=$dir/examples/server_integration/server-integration
report=$dir/tools/report/tokchron-report

# run_case NAMES INCLUSION THREADS ARGS...: the server (--names NAMES, --inclusion INCLUSION
# unless it is "default", THREADS workers of 16 requests, ARGS), a Prometheus scraping it, then
# the checker.
run_case() {
  local names=$1 inclusion=$2 threads=$3; shift 3
  local d=$work/$names-$inclusion
  mkdir -p "$d"
  local given=()
  [ "$inclusion" = default ] || given=(--inclusion "$inclusion")
  echo "--- server-integration --names $names ${given[*]} --threads $threads $* and Prometheus"
  "$server" --port 0 --port-file "$d/port" --names "$names" --model "tokchron/$names" "${given[@]}" \
    --threads "$threads" --max-batch 16 --seed 7 --wait-scrapes 5 --linger 600 \
    --trace-out "$d/trace.jsonl" "$@" >"$d/server.log" 2>&1 &
  pids+=($!)
  local spid=$!
  local end=$((SECONDS + 30))
  while [ ! -s "$d/port" ] && [ $SECONDS -lt $end ]; do sleep 0.1; done
  [ -s "$d/port" ] || { echo "server-integration wrote no port within 30 s"; cat "$d/server.log"; exit 1; }
  tc_prometheus "$d" server "127.0.0.1:$(cat "$d/port")"
  local ppid=$prom_pid
  if ! python3 "$ex/check_dashboard.py" --prometheus "127.0.0.1:$prom_port" --names "$names" \
      --model "tokchron/$names" --inclusion "${inclusion/default/scheduled}" \
      --trace "$d/trace.jsonl" --report "$report" \
      --server-log "$d/server.log" --queries "$TOKCHRON_ROOT/tests/data/vllm_dashboard/queries.jsonl" \
      --timeout 180 --capacity $((threads * 16)); then
    echo "--- --names $names failed; logs:"
    tail -n 20 "$d/server.log" "$d/prometheus.log"
    exit 1
  fi
  kill "$spid" "$ppid" 2>/dev/null || true
  wait "$spid" "$ppid" 2>/dev/null || true
  pids=()  # both stopped: nothing for the exit trap to kill
}

# vLLM's names: 1500 requests, 10 ms steps (inter-token latencies across vLLM's ITL buckets, which
# start at 10 ms), 8 workers: about 10 s of serving. tokchron's names and the completed policy:
# smaller runs.
run_case vllm default 8 --requests 1500 --step-ms 10
run_case tokchron all 4 --requests 600 --step-ms 2
run_case vllm completed 4 --requests 400 --step-ms 2
