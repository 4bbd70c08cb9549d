# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer (the property test of
# random recording-call sequences, the memory-bound test and the fuzz replays among them: docs/
# bad-input.md rows T4, M1), the concurrency tests
# (doctest test suite "concurrency", and tokchron-report's pipelined reader) under ThreadSanitizer, both with -fno-sanitize-recover so any
# finding fails; the recording and estimator headers built with -fno-exceptions; and the public
# headers compiled by nvcc when it is present.
san=$(tc_dir asan-ubsan)
echo "--- clang++ ASan+UBSan: every test"
# clang++ under strict C++17: this is also stage 10's clang++ C++17 configuration.
tc_build asan-ubsan
# The tests run beside the TSan build (.ci/lib.sh, tc_tests_start).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
tc_tests_start asan-ubsan --timeout 900
unset ASAN_OPTIONS UBSAN_OPTIONS

tsan=$(tc_dir tsan)
echo "--- clang++ TSan: build the concurrency tests"
tc_build tsan tokchron_tests tokchron_report_tests
tc_tests_wait
echo "--- clang++ TSan: the concurrency tests"
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" "$tsan/tests/tokchron_tests" -ts=concurrency
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  "$tsan/tools/report/tokchron_report_tests" -tc="*pipelined*"

echo "--- -fno-exceptions: recording and estimator headers"
c++ -std=c++17 -O1 -fno-exceptions -Wall -Wextra -Werror -I"$TOKCHRON_ROOT/include" \
  "$TOKCHRON_ROOT/tests/no_exceptions/main.cpp" -o "$TOKCHRON_CI_BUILD/no_exceptions"
printf '#include "tokchron/tokchron.hpp"\nint main() {}\n' >"$TOKCHRON_CI_BUILD/umbrella_noexc.cpp"
c++ -std=c++17 -fno-exceptions -fsyntax-only -Wall -Wextra -Wpedantic -Werror -I"$TOKCHRON_ROOT/include" \
  "$TOKCHRON_CI_BUILD/umbrella_noexc.cpp"
echo "the umbrella header compiles with -fno-exceptions"
"$TOKCHRON_CI_BUILD/no_exceptions"

nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
if [ -x "$nvcc" ]; then
  echo "--- nvcc: the umbrella header in a CUDA translation unit"
  printf '#include "tokchron/tokchron.hpp"\n__global__ void k(int* p) { *p = 1; }\nint main() { tokchron::request_timeline tl; tl.arrive(); return tl.misuse_count(); }\n' \
    >"$TOKCHRON_CI_BUILD/nvcc_headers.cu"
  "$nvcc" -std=c++17 -I"$TOKCHRON_ROOT/include" -c "$TOKCHRON_CI_BUILD/nvcc_headers.cu" \
    -o "$TOKCHRON_CI_BUILD/nvcc_headers.o"
  echo "nvcc compiled the public headers"
else
  echo "--- nvcc not found ($nvcc): skipping the CUDA header check"
fi
