# g++ and clang++, each under C++17 and C++20: build everything (tests, header-alone check,
# examples, benchmarks) and run the test suite. The first build is optimised (as users run it).
for cfg in "g++ 17 Release" "clang++ 20 Release" "g++ 20 Debug" "clang++ 17 Debug"; do
  read -r cxx std type <<<"$cfg"
  dir=$TOKCHRON_CI_BUILD/$cxx-c++$std
  echo "--- $cxx -std=c++$std ($type)"
  configure_build "$dir" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_STANDARD="$std" \
    -DCMAKE_CXX_STANDARD_REQUIRED=ON -DCMAKE_CXX_EXTENSIONS=OFF -DCMAKE_BUILD_TYPE="$type" \
    -DCMAKE_CXX_FLAGS_RELEASE="-O2" # keep assertions on in the tests
  (cd "$dir" && ctest --output-on-failure -j "$(tc_jobs)" --timeout 600)
done
# The benchmark binary runs (briefly) so it cannot rot.
"$TOKCHRON_CI_BUILD/g++-c++17/bench/tokchron_bench" --benchmark_min_time=0.01 >/dev/null
