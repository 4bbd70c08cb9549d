# Fuzzing: libFuzzer targets (clang -fsanitize=fuzzer,address,undefined, no recovery) for the
# trace reader, the SLO parsers and the log_histogram deserialiser, each run for a bounded time
# from its seed corpus (tests/fuzz/corpus/<target>, plus tests/fuzz/regressions/<target>).
# A finding fails the stage; its input is printed (hex) and kept under $TOKCHRON_CI_BUILD/fuzz.
# Budget: about 4 minutes in all (3 builds in parallel, then 3 x TOKCHRON_FUZZ_SECONDS).
need_pkgs clang libclang-rt-14-dev nlohmann-json3-dev
fuzz_secs=${TOKCHRON_FUZZ_SECONDS:-55}
out=$TOKCHRON_CI_BUILD/fuzz
rm -rf "$out"
mkdir -p "$out"
src=$TOKCHRON_ROOT/tests/fuzz
targets=(trace_line slo log_histogram)
# A fixed seed and a fixed number of runs per target make CI reproducible: the same inputs are
# tried on every machine (the time limit only caps a slow machine). Explore with other seeds
# and longer runs by hand: ./fuzz_TARGET -seed=N -max_total_time=600 CORPUS...
declare -A fuzz_runs=([trace_line]=200000 [slo]=200000 [log_histogram]=3000000)

echo "--- building fuzz targets"
pids=()
for t in "${targets[@]}"; do
  clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -fno-omit-frame-pointer -Wall -Wextra -Werror -I"$TOKCHRON_ROOT/include" \
    "$src/${t}_fuzz.cpp" -o "$out/fuzz_$t" >"$out/build_$t.log" 2>&1 &
  pids+=($!)
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { cat "$out/build_${targets[$i]}.log"; exit 1; }
done

failed=0
for t in "${targets[@]}"; do
  echo "--- fuzzing $t for ${fuzz_secs} s"
  mkdir -p "$out/corpus_$t" "$out/artifacts_$t"
  dict=()
  [ -f "$src/$t.dict" ] && dict=(-dict="$src/$t.dict")
  if (cd "$out" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
        "./fuzz_$t" "${dict[@]}" -seed=1 -runs="${fuzz_runs[$t]}" -max_total_time="$fuzz_secs" -timeout=10 -rss_limit_mb=2048 \
        -max_len=8192 -print_final_stats=1 -artifact_prefix="$out/artifacts_$t/" \
        "$out/corpus_$t" "$src/corpus/$t" "$src/regressions/$t" >"$out/$t.log" 2>&1); then
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
