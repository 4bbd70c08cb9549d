# Fuzzing: libFuzzer targets (clang -fsanitize=fuzzer,address,undefined, no recovery) for the
# trace reader, the SLO parsers, the log_histogram deserialiser and the request timeline's
# recording calls (random call sequences), each run for a bounded time from its seed corpus
# (tests/fuzz/corpus/<target>, plus tests/fuzz/regressions/<target>).
# A finding fails the stage; its input is printed (hex) and kept under $TOKCHRON_CI_BUILD/fuzz.
# Budget: about 6 minutes in all on 2 cores: 4 builds, two at a time, then the targets two at a
# time, each for a fixed number of runs capped at TOKCHRON_FUZZ_SECONDS (120 s).
tc_need_pkgs clang libclang-rt-14-dev nlohmann-json3-dev
fuzz_secs=${TOKCHRON_FUZZ_SECONDS:-120}
out=$TOKCHRON_CI_BUILD/fuzz
rm -rf "$out"
mkdir -p "$out"
src=$TOKCHRON_ROOT/tests/fuzz
targets=(trace_line slo log_histogram timeline_calls)
# A fixed seed and a fixed number of runs per target make CI reproducible: the same inputs are
# tried on every machine (the time limit only caps a slow machine). Explore with other seeds
# and longer runs by hand: ./fuzz_TARGET -seed=N -max_total_time=600 CORPUS...
# The counts are sized so that each target runs most of its time cap on one core of a CI runner
# (a run of trace_line reads a line through both parsers and replays it under 11 profiles,
# about 1600 runs/s on one loaded core;
# timeline_calls replays up to a few hundred calls, 12000-30000 runs/s; log_histogram about
# 13000 runs/s, slo about 5000 runs/s, measured with the other target of the pair running).
declare -A fuzz_runs=([trace_line]=250000 [slo]=400000 [log_histogram]=1500000
  [timeline_calls]=2000000)
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
  clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -fno-omit-frame-pointer -Wall -Wextra -Werror -I"$TOKCHRON_ROOT/include" \
    "$src/${1}_fuzz.cpp" -o "$out/fuzz_$1" >"$out/build_$1.log" 2>&1
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
