// SPDX-License-Identifier: MIT
// The body of the batch-insert benchmarks that run in translation units of their own
// (batch_tu_bench.cpp with the default flags, batch_tu_native_bench.cpp with -march=native): a
// user's file calling `add(first, last)` and `add(x)` with raw pointers, where the compiler
// decides on its own how to compile the batch loop. Included once by each of those files, after
// they define TOKCHRON_BENCH_TU ("generic" or "native").
#ifndef TOKCHRON_BENCH_BATCH_TU_BODY_HPP
#define TOKCHRON_BENCH_BATCH_TU_BODY_HPP

#include <benchmark/benchmark.h>

#include <cstddef>
#include <string>
#include <vector>

#include "baseline/log_histogram_v0.hpp"
#include "bench_data.hpp"
#include "tokchron/quantile/log_histogram.hpp"

namespace {

// add(x) over the ring, one sample per iteration.
template <class H>
void tu_add_single(benchmark::State& state, int s) {
  const std::vector<double>& v = tokchron_bench::data(s);
  const double* p = v.data();
  H h;
  std::size_t i = 0;
  for (auto _ : state) {
    h.add(p[i]);
    i = (i + 1) & (tokchron_bench::ring - 1);
  }
  benchmark::DoNotOptimize(h);
  state.SetItemsProcessed(state.iterations());
}

// add(first, last) over 256-sample batches; time and items are per sample.
template <class H>
void tu_add_batch(benchmark::State& state, int s) {
  constexpr std::size_t batch = 256;
  const std::vector<double>& v = tokchron_bench::data(s);
  const double* p = v.data();
  H h;
  std::size_t i = 0;
  for (auto _ : state) {
    h.add(p + i, p + i + batch);
    i = (i + batch) & (tokchron_bench::ring - 1);
  }
  benchmark::DoNotOptimize(h);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(batch));
}

// Names: batch_tu/<generic|native>/<add_x|add_batch256>/<v0|now>/<shape>.
const bool registered = [] {
  for (int s : {tokchron_bench::lognormal, tokchron_bench::sorted}) {
    const std::string shape = tokchron_bench::shape_name(s);
    const std::string base = std::string("batch_tu/") + TOKCHRON_BENCH_TU + "/";
    benchmark::RegisterBenchmark((base + "add_x/now/" + shape).c_str(),
                                 tu_add_single<tokchron::log_histogram>, s);
    benchmark::RegisterBenchmark((base + "add_batch256/now/" + shape).c_str(),
                                 tu_add_batch<tokchron::log_histogram>, s);
    benchmark::RegisterBenchmark((base + "add_x/v0/" + shape).c_str(),
                                 tu_add_single<TOKCHRON_BENCH_V0_NAMESPACE::log_histogram>, s);
    benchmark::RegisterBenchmark((base + "add_batch256/v0/" + shape).c_str(),
                                 tu_add_batch<TOKCHRON_BENCH_V0_NAMESPACE::log_histogram>, s);
  }
  return true;
}();

}  // namespace

#endif  // TOKCHRON_BENCH_BATCH_TU_BODY_HPP
