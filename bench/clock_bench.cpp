// SPDX-License-Identifier: MIT
// The floor every recording call sits on: reading a clock.
#include <benchmark/benchmark.h>

#include <chrono>

#include "tokchron/clock.hpp"

static void BM_steady_clock_now(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(std::chrono::steady_clock::now());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_steady_clock_now);

static void BM_tsc_clock_now(benchmark::State& state) {
  tokchron::tsc_clock::calibrate();
  for (auto _ : state) benchmark::DoNotOptimize(tokchron::tsc_clock::now());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_tsc_clock_now);
