// SPDX-License-Identifier: MIT
// Quantile estimators: insert (log_histogram, exact_quantiles, p2_quantiles) on lognormal and
// sorted data (one at a time and in batches), query, merge of 8 shards, serialise / deserialise,
// windowed insert. Inputs are generated before the timed loops. Insert benchmarks also report each
// estimator's worst relative error at P50 / P99 / P99.9 over 10^6 samples of the same data shape
// (counters err_p50 / err_p99 / err_p999, in percent), so speed and accuracy sit side by side.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "tokchron/clock.hpp"
#include "tokchron/quantile/exact.hpp"
#include "tokchron/quantile/log_histogram.hpp"
#include "tokchron/quantile/p2.hpp"
#include "tokchron/quantile/windowed.hpp"

namespace {
enum shape : int { lognormal = 0, sorted = 1 };
constexpr std::size_t ring = std::size_t{1} << 16;  // samples cycled through in timed loops

// Lognormal latencies (median 50 ms, sigma 0.5), as sketches.md measures; `sorted` ascending.
std::vector<double> make_data(int s, std::size_t n, std::uint64_t seed = 42) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> d(std::log(0.050), 0.5);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  if (s == sorted) std::sort(v.begin(), v.end());
  return v;
}
const std::vector<double>& data(int s) {
  static const std::vector<double> d[2] = {make_data(lognormal, ring), make_data(sorted, ring)};
  return d[s];
}

template <class E>
E make_estimator() {
  if constexpr (std::is_same_v<E, tokchron::p2_quantiles>)
    return tokchron::p2_quantiles{0.5, 0.9, 0.99, 0.999, 0.9999};
  else
    return E{};
}

// Worst relative error at P50 / P99 / P99.9 over 10^6 samples of the shape (once per run).
template <class E>
void report_error(benchmark::State& state, int s) {
  static double err[2][3] = {{-1, 0, 0}, {-1, 0, 0}};
  if (err[s][0] < 0) {
    const std::vector<double> v = make_data(s, 1000000, 7);
    E e = make_estimator<E>();
    tokchron::exact_quantiles<> x;
    for (double d : v) {
      e.add(d);
      x.add(d);
    }
    const double qs[3] = {0.5, 0.99, 0.999};
    for (int i = 0; i < 3; ++i)
      err[s][i] = std::fabs(*e.quantile(qs[i]) - *x.quantile(qs[i])) / *x.quantile(qs[i]) * 100;
  }
  state.counters["err_p50"] = err[s][0];
  state.counters["err_p99"] = err[s][1];
  state.counters["err_p999"] = err[s][2];
}

template <class E>
void BM_insert(benchmark::State& state) {
  const int s = static_cast<int>(state.range(0));
  const std::vector<double>& v = data(s);
  E e = make_estimator<E>();
  std::size_t i = 0;
  for (auto _ : state) {
    e.add(v[i]);
    i = (i + 1) & (ring - 1);
    if constexpr (std::is_same_v<E, tokchron::exact_quantiles<>>) {
      if (i == 0) e.clear();  // bounded memory; amortised over 65536 inserts
    }
  }
  benchmark::DoNotOptimize(e);
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(s == sorted ? "sorted" : "lognormal");
  report_error<E>(state, s);
}
BENCHMARK_TEMPLATE(BM_insert, tokchron::log_histogram)->Arg(lognormal)->Arg(sorted);
BENCHMARK_TEMPLATE(BM_insert, tokchron::exact_quantiles<>)->Arg(lognormal)->Arg(sorted);
BENCHMARK_TEMPLATE(BM_insert, tokchron::p2_quantiles)->Arg(lognormal)->Arg(sorted);

// The batch API: add(first, last) over 256-sample batches (a finished request's ITL samples, a
// per-thread buffer), bit-identical to 256 add(x) calls. Time and items are per sample.
void BM_insert_batch256(benchmark::State& state) {
  const int s = static_cast<int>(state.range(0));
  const std::vector<double>& v = data(s);
  constexpr std::size_t batch = 256;
  tokchron::log_histogram e;
  std::size_t i = 0;
  for (auto _ : state) {
    e.add(v.begin() + static_cast<std::ptrdiff_t>(i),
          v.begin() + static_cast<std::ptrdiff_t>(i + batch));
    i = (i + batch) & (ring - 1);
  }
  benchmark::DoNotOptimize(e);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(batch));
  state.SetLabel(s == sorted ? "sorted" : "lognormal");
}
BENCHMARK(BM_insert_batch256)->Arg(lognormal)->Arg(sorted);

template <class E>
void BM_query_p99(benchmark::State& state) {
  E e = make_estimator<E>();
  for (double x : make_data(lognormal, 1000000)) e.add(x);
  for (auto _ : state) benchmark::DoNotOptimize(e.quantile(0.99));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_TEMPLATE(BM_query_p99, tokchron::log_histogram);
BENCHMARK_TEMPLATE(BM_query_p99, tokchron::p2_quantiles);
BENCHMARK_TEMPLATE(BM_query_p99, tokchron::exact_quantiles<>);  // already sorted: O(1)

// Eight per-thread shards of 10^5 lognormal samples each, merged into a fresh histogram.
void BM_log_histogram_merge8(benchmark::State& state) {
  std::vector<tokchron::log_histogram> shards(8);
  for (std::size_t k = 0; k < shards.size(); ++k)
    for (double x : make_data(lognormal, 100000, 100 + k)) shards[k].add(x);
  for (auto _ : state) {
    tokchron::log_histogram m;
    for (const auto& s : shards) m.merge(s);
    benchmark::DoNotOptimize(m);
  }
  state.SetItemsProcessed(state.iterations() * 8);
}
BENCHMARK(BM_log_histogram_merge8)->Unit(benchmark::kMicrosecond);

void BM_log_histogram_serialize(benchmark::State& state) {
  tokchron::log_histogram h;
  for (double x : make_data(lognormal, 1000000)) h.add(x);
  std::vector<unsigned char> buf(h.serialized_size());
  for (auto _ : state) benchmark::DoNotOptimize(h.serialize_to(buf.data(), buf.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(buf.size()));
  state.counters["bytes"] = static_cast<double>(buf.size());
}
BENCHMARK(BM_log_histogram_serialize)->Unit(benchmark::kMicrosecond);

void BM_log_histogram_deserialize(benchmark::State& state) {
  tokchron::log_histogram h;
  for (double x : make_data(lognormal, 1000000)) h.add(x);
  const std::vector<unsigned char> buf = h.serialize();
  for (auto _ : state)
    benchmark::DoNotOptimize(tokchron::log_histogram::deserialize(buf.data(), buf.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(buf.size()));
}
BENCHMARK(BM_log_histogram_deserialize)->Unit(benchmark::kMicrosecond);

// windowed<log_histogram>: 60 s as 6 x 10 s, timestamps already read (1 ms apart), so slices
// roll over during the loop.
void BM_windowed_insert(benchmark::State& state) {
  using clock = tokchron::manual_clock;
  tokchron::windowed<tokchron::log_histogram, clock> w(std::chrono::seconds(60), 6, clock{});
  const std::vector<double>& v = data(lognormal);
  std::size_t i = 0;
  std::int64_t t = 0;
  for (auto _ : state) {
    w.add(clock::at(std::chrono::nanoseconds(t)), v[i]);
    i = (i + 1) & (ring - 1);
    t += 1000000;
  }
  benchmark::DoNotOptimize(w);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_windowed_insert);
}  // namespace
