# Pictures (tools/plot/): installs gnuplot and Chromium from Debian's packages, runs the
# plotting library's tests with gnuplot required, renders every picture of the executor's sweep
# (batching-executor --plot) and of a trace (tokchron-report --slo --goodput --plot on the
# sweep's trace: the thresholds drawn), checks that the data files hold exactly the values the
# two tools printed (their --format json), and checks each index.html in headless Chromium:
# every image loaded, the screenshot not blank; the split pictures of tokchron-report join. A
# reasoning run's timeline is checked against its trace: the reasoning chunks drawn apart, in their
# colour, and TTFA in the spectrum.
# Reuses stage 10's g++ C++17 build when it is there (configured the same way otherwise).
tc_need_pkgs gnuplot-nox chromium python3 python3-pil fonts-dejavu-core
build=$(tc_dir g++-c++17)
tc_build g++-c++17 tokchron_plot_tests tokchron-report batching-executor
py=/usr/bin/python3  # Debian's, with python3-pil
check="$py $TOKCHRON_ROOT/tools/plot/check_plots.py"
out=$TOKCHRON_CI_BUILD/plots
rm -rf "$out"
mkdir -p "$out"

echo "--- plotting library tests (gnuplot required)"
TOKCHRON_PLOT_REQUIRE_GNUPLOT=1 "$build/tools/plot/tokchron_plot_tests"

echo "--- batching-executor --sweep --plot"
# The main job's sweep (.ci/main.sh), with the think times it compares cut to one.
sweep=(--backend sim --hw a10g --model llama2-7b --users 50 --prompt-len normal:300,90
       --output-len uniform:75,225 --duration 600 --warmup 60 --seed 1
       --slo 'p95(ttft)<1.5s' --slo 'p95(tpot)<100ms'
       --sweep think_time=none,exp:10 --sweep max_batch_size=8,16,32
       --sweep prefill_priority=off,always)
rc=0
"$build/tools/executor/batching-executor" "${sweep[@]}" \
  --format json --trace-out "$out/sweep-trace.jsonl" --plot "$out/sweep" >"$out/sweep.json" || rc=$?
[ $rc -eq 0 ] || [ $rc -eq 3 ] || { echo "batching-executor exited $rc"; exit 1; }
$check "$out/sweep" --screenshot "$out/sweep.png" --summary "$out/sweep.json" \
  --runs-field runs --label-field configuration --metrics-field summary.metrics \
  --expect latency_ttft latency_tpot latency_itl latency_e2e spectrum frontier timeline executor

echo "--- batching-executor --plot of a reasoning run with a shared prefix"
# A reasoning model's answers (40 % reasoning) behind a cached 256-token system prompt: the token
# timeline must draw the trace's reasoning chunks apart from the answer, the spectrum TTFA.
"$build/tools/executor/batching-executor" --backend sim --hw a10g --users 20 \
  --duration 120 --warmup 20 --seed 1 --reasoning-fraction 0.4 --shared-prefix 256 \
  --format json --trace-out "$out/reasoning-trace.jsonl" --plot "$out/reasoning" \
  >"$out/reasoning.json"
$check "$out/reasoning" --screenshot "$out/reasoning.png" --summary "$out/reasoning.json" \
  --runs-field runs --label-field configuration --metrics-field summary.metrics \
  --expect timeline spectrum latency_ttfa --reasoning-trace "$out/reasoning-trace.jsonl"

echo "--- tokchron-report --slo --goodput --plot on the sweep's first trace"
# With objectives and goodput limits: their thresholds are drawn (exit 3 or 4 is a verdict).
rc=0
"$build/tools/report/tokchron-report" --profile canonical,vllm,genai_perf,llmperf \
  --slo 'p95(ttft)<1.5s' --goodput ttft:1.5s,tpot:100ms \
  --format json --plot "$out/trace" "$out/sweep-trace-1.jsonl" >"$out/trace.json" || rc=$?
[ $rc -eq 0 ] || [ $rc -eq 3 ] || [ $rc -eq 4 ] || { echo "tokchron-report exited $rc"; exit 1; }
grep -q "SLO p95(ttft) < 1.5s" "$out/trace/latency_ttft.gp" || { echo "no SLO line drawn"; exit 1; }
$check "$out/trace" --screenshot "$out/trace.png" --summary "$out/trace.json" \
  --label-field profile \
  --expect latency_ttft latency_tpot latency_itl latency_e2e spectrum timeline

echo "--- tokchron-report join --plot (client and server traces split)"
"$build/tools/report/tokchron-report" join --plot "$out/join" \
  --server "$TOKCHRON_ROOT/tests/data/traces/join_server.jsonl" \
  "$TOKCHRON_ROOT/tests/data/traces/join_client.jsonl" >"$out/join.txt"
$check "$out/join" --screenshot "$out/join.png" --expect split_ttft split_e2e
