# Fuzzing: libFuzzer targets (clang -fsanitize=fuzzer,address,undefined, no recovery) for the
# trace reader, the SLO parsers, the log_histogram deserialiser, the request timeline's
# recording calls (random call sequences), tokchron-bench's SSE decoder and serve's request
# path (Beast's HTTP parser, serve's routing and body checks), each run for a bounded time from
# its seed corpus (tests/fuzz/corpus/<target>, plus tests/fuzz/regressions/<target>).
# A finding fails the stage; its input is printed (hex) and kept under $TOKCHRON_CI_BUILD/fuzz.
# Budget: about 6 minutes in all on a free 2-core machine: the builds two at a time, then the
# targets two at a time, each for a fixed number of runs from a fixed seed (below).
tc_need_pkgs clang libclang-rt-14-dev nlohmann-json3-dev libboost-dev
fuzz_secs=${TOKCHRON_FUZZ_SECONDS:-240}
out=$TOKCHRON_CI_BUILD/fuzz
rm -rf "$out"
mkdir -p "$out"
src=$TOKCHRON_ROOT/tests/fuzz
targets=(trace_line slo log_histogram timeline_calls sse_decoder serve_request)
# A target that tests code outside include/ compiles those sources with it (the same fuzz
# flags), with their folder on the include path.
declare -A fuzz_sources=([sse_decoder]=tools/bench/sse.cpp
  [serve_request]=tools/executor/serve/openai.cpp)
# A fixed seed and a fixed number of runs per target make the verdict reproducible: every
# machine tries the same inputs, however loaded it is. The time limit only guards against a
# target that has stopped making progress: a target that reaches it before its runs fails the
# stage (saying so), since it has then tried fewer inputs than the stage promises. At the rates
# measured on one core of a 2-core machine at load 12, with the other target of the pair
# running (the slowest case measured), the counts take 75-105 s each: trace_line (a line through both parsers and
# replayed under every profile) about 1600 runs/s, slo 5000, log_histogram 13000,
# timeline_calls 12000-30000, sse_decoder (a stream decoded cut and whole, its trace record
# checked) 1900, serve_request (a request parsed twice through Beast, its body checked) 1300;
# on a free core they end in about half that. The limit, 240 s, is 2.3 times the slowest
# target's loaded time (trace_line, 104 s). Explore with other seeds and longer runs by hand:
# ./fuzz_TARGET -seed=N -max_total_time=600 CORPUS...
declare -A fuzz_runs=([trace_line]=166000 [slo]=266000 [log_histogram]=1000000
  [timeline_calls]=1333000 [sse_decoder]=150000 [serve_request]=100000)
jobs=$(tc_jobs)

# Runs `$2 ...` for each target, at most `jobs` at a time; the targets whose command failed
# are left in the array named by $1.
run_batched() {
  local -n failed_targets=$1
  shift
  local -a running=() names=()
  local t i
  for t in "${targets[@]}"; do
    "$@" "$t" &
    running+=($!)
    names+=("$t")
    if [ "${#running[@]}" -ge "$jobs" ]; then
      wait "${running[0]}" || failed_targets+=("${names[0]}")
      running=("${running[@]:1}")
      names=("${names[@]:1}")
    fi
  done
  for i in "${!running[@]}"; do
    wait "${running[$i]}" || failed_targets+=("${names[$i]}")
  done
}

build_target() {
  local extra=()
  if [ -n "${fuzz_sources[$1]:-}" ]; then
    extra=("$TOKCHRON_ROOT/${fuzz_sources[$1]}" -I"$TOKCHRON_ROOT/$(dirname "${fuzz_sources[$1]}")")
  fi
  # serve's request parser names prompt blocks with the executor's core/kv_cache.hpp.
  [ "$1" = serve_request ] && extra+=(-I"$TOKCHRON_ROOT/tools/executor/core")
  clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -fno-omit-frame-pointer -Wall -Wextra -Werror -I"$TOKCHRON_ROOT/include" \
    "$src/${1}_fuzz.cpp" "${extra[@]}" -o "$out/fuzz_$1" >"$out/build_$1.log" 2>&1
}

fuzz_target() {
  local t=$1
  mkdir -p "$out/corpus_$t" "$out/artifacts_$t"
  local dict=()
  [ -f "$src/$t.dict" ] && dict=(-dict="$src/$t.dict")
  cd "$out" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "./fuzz_$t" "${dict[@]}" -seed=1 -runs="${fuzz_runs[$t]}" -max_total_time="$fuzz_secs" \
    -timeout=10 -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
    -artifact_prefix="$out/artifacts_$t/" \
    "$out/corpus_$t" "$src/corpus/$t" "$src/regressions/$t" >"$out/$t.log" 2>&1
}

echo "--- building fuzz targets (${jobs} at a time)"
build_failed=()
run_batched build_failed build_target
for t in "${build_failed[@]}"; do
  cat "$out/build_$t.log"
done
[ "${#build_failed[@]}" -eq 0 ] || exit 1

echo "--- fuzzing ${targets[*]} (${jobs} at a time, at most ${fuzz_secs} s each)"
fuzz_failed=()
run_batched fuzz_failed fuzz_target
failed=0
for t in "${targets[@]}"; do
  echo "--- $t"
  if [[ ! " ${fuzz_failed[*]} " =~ " $t " ]]; then
    grep -E "^stat::number_of_executed_units|^Done" "$out/$t.log" | tail -2 || true
    done_runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t.log" | tail -1)
    if [ "${done_runs:-0}" -lt "${fuzz_runs[$t]}" ]; then
      failed=1
      echo "TOO SLOW: $t stopped at the ${fuzz_secs} s limit after ${done_runs:-0} of" \
        "${fuzz_runs[$t]} runs (the verdict would cover fewer inputs than on other machines)"
    fi
  else
    failed=1
    echo "FINDING in $t:"
    grep -E "ERROR|property failed|runtime error|what\(\)|SUMMARY" "$out/$t.log" | head -20
    for f in "$out/artifacts_$t"/*; do
      [ -f "$f" ] || continue
      echo "input $f:"
      head -c 512 "$f" | od -A d -c | head -20
    done
    echo "add the input to tests/fuzz/regressions/$t/ once it is fixed"
  fi
done
exit $failed
