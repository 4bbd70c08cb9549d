# g++ and clang++, each under C++17 and C++20: build the test suite and the examples and run
# every test. The first build is optimised (as users run it) and also builds the benchmarks, the
# header-alone check and the CUDA backend (when nvcc is present); the others are unoptimised
# without debug info, which compiles fastest on a 2-core CI machine.
# clang++ with C++17 is stage 30's AddressSanitizer + UndefinedBehaviorSanitizer build: the same
# compiler and standard (-std=c++17, no extensions), the same warnings as errors, the same tests
# and examples, with the sanitizers on top; building it a second time here, unsanitized, would
# check nothing more (TOKCHRON_STAGES="10 30" runs the whole matrix).
for cfg in "g++ 17 Release ON" "clang++ 20 Debug OFF" "g++ 20 Debug OFF"; do
  read -r cxx std type full <<<"$cfg"
  dir=$TOKCHRON_CI_BUILD/$cxx-c++$std
  echo "--- $cxx -std=c++$std ($type)"
  configure_build "$dir" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_STANDARD="$std" \
    -DCMAKE_CXX_STANDARD_REQUIRED=ON -DCMAKE_CXX_EXTENSIONS=OFF -DCMAKE_BUILD_TYPE="$type" \
    -DCMAKE_CXX_FLAGS_RELEASE="-O2" -DCMAKE_CXX_FLAGS_DEBUG="-O0" \
    -DTOKCHRON_BUILD_BENCHMARKS="$full" -DTOKCHRON_HEADER_ALONE="$full" -DTOKCHRON_CUDA="$full"
  # -O2 without -DNDEBUG keeps assertions on in the tests.
  (cd "$dir" && ctest --output-on-failure -j "$(tc_jobs)" --timeout 600)
done
# The benchmark binary runs (briefly) so it cannot rot.
"$TOKCHRON_CI_BUILD/g++-c++17/bench/tokchron_bench" --benchmark_min_time=0.001 >/dev/null
