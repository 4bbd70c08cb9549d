# g++ and clang++, each under C++17 and C++20: build the test suite and the examples and run
# every test. The first build is optimised (as users run it) and also builds the benchmarks, the
# header-alone check and the CUDA backend (when nvcc is present); the others are unoptimised
# without debug info, which compiles fastest on a 2-core CI machine.
# clang++ with C++17 is stage 30's AddressSanitizer + UndefinedBehaviorSanitizer build: the same
# compiler and standard (-std=c++17, no extensions), the same warnings as errors, the same tests
# and examples, with the sanitizers on top; building it a second time here, unsanitized, would
# check nothing more (TOKCHRON_STAGES="10 30" runs the whole matrix).
# The trees are .ci/lib.sh's (tc_tree_args): -O2 without -DNDEBUG keeps assertions on in the tests.
# Each tree's tests run beside the next tree's build (tc_tests_start), the last tree's alone.
for tree in g++-c++17 clang++-c++20 g++-c++20; do
  echo "--- $tree: build"
  tc_build "$tree"
  tc_tests_wait
  tc_tests_start "$tree" --timeout 600
done
tc_tests_wait
# The benchmark binary runs (briefly) so it cannot rot.
"$(tc_dir g++-c++17)/bench/tokchron_bench" --benchmark_min_time=0.001 >/dev/null
