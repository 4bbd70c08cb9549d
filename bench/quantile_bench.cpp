// SPDX-License-Identifier: MIT
// Quantile estimators: insert (log_histogram, the same behind a Boost.Accumulators
// accumulator_set, exact_quantiles, p2_quantiles) on lognormal,
// sorted, bimodal and Pareto data (one at a time and in batches), query, merge of 8 shards,
// serialise / deserialise, windowed insert. Inputs are generated before the timed loops. Insert
// benchmarks also report each estimator's worst relative error at P50 / P99 / P99.9 over 10^6
// samples of the same data shape (counters err_p50 / err_p99 / err_p999, in percent), so speed
// and accuracy sit side by side. `tokchron_v0::log_histogram` is the baseline, tokchron's first
// log_histogram (bench/baseline/log_histogram_v0.hpp), timed next to today's so that every
// change is a ratio in one run (bench/ratios.py prints them).
#include <benchmark/benchmark.h>
#include <boost/accumulators/accumulators.hpp>
#include <boost/accumulators/statistics/stats.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "baseline/log_histogram_v0.hpp"
#include "bench_data.hpp"
#include "tokchron/clock.hpp"
#include "tokchron/quantile/accumulators.hpp"
#include "tokchron/quantile/exact.hpp"
#include "tokchron/quantile/log_histogram.hpp"
#include "tokchron/quantile/p2.hpp"
#include "tokchron/quantile/windowed.hpp"

namespace {
using tokchron_bench::bimodal;
using tokchron_bench::data;
using tokchron_bench::lognormal;
using tokchron_bench::make_data;
using tokchron_bench::pareto;
using tokchron_bench::ring;
using tokchron_bench::shape_name;
using tokchron_bench::sorted;
using v0_histogram = tokchron_v0::log_histogram;

// A Boost.Accumulators user's log_histogram (quantile/accumulators.hpp): the samples go in
// through the accumulator_set, and Boost's own quantile extractor reads them back.
class accumulator_set_histogram {
 public:
  void add(double x) { acc_(x); }
  [[nodiscard]] std::optional<double> quantile(double q) const {
    return boost::accumulators::quantile(acc_, boost::accumulators::quantile_probability = q);
  }

 private:
  boost::accumulators::accumulator_set<
      double, boost::accumulators::stats<tokchron::accumulators::tag::log_histogram_quantile>>
      acc_;
};

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
  static double err[4][3] = {{-1, 0, 0}, {-1, 0, 0}, {-1, 0, 0}, {-1, 0, 0}};
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
  state.SetLabel(shape_name(s));
  report_error<E>(state, s);
}
BENCHMARK_TEMPLATE(BM_insert, tokchron::log_histogram)
    ->Arg(lognormal)
    ->Arg(sorted)
    ->Arg(bimodal)
    ->Arg(pareto);
BENCHMARK_TEMPLATE(BM_insert, v0_histogram)->Arg(lognormal)->Arg(sorted)->Arg(bimodal)->Arg(pareto);
BENCHMARK_TEMPLATE(BM_insert, accumulator_set_histogram)
    ->Arg(lognormal)
    ->Arg(sorted)
    ->Arg(bimodal)
    ->Arg(pareto);
BENCHMARK_TEMPLATE(BM_insert, tokchron::exact_quantiles<>)->Arg(lognormal)->Arg(sorted);
BENCHMARK_TEMPLATE(BM_insert, tokchron::p2_quantiles)->Arg(lognormal)->Arg(sorted);

// The batch API: add(first, last) over 256-sample batches (a finished request's ITL samples, a
// per-thread buffer), bit-identical to 256 add(x) calls. Time and items are per sample.
template <class E>
void BM_insert_batch256(benchmark::State& state) {
  const int s = static_cast<int>(state.range(0));
  const std::vector<double>& v = data(s);
  constexpr std::size_t batch = 256;
  E e;
  std::size_t i = 0;
  for (auto _ : state) {
    e.add(v.begin() + static_cast<std::ptrdiff_t>(i),
          v.begin() + static_cast<std::ptrdiff_t>(i + batch));
    i = (i + batch) & (ring - 1);
  }
  benchmark::DoNotOptimize(e);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(batch));
  state.SetLabel(shape_name(s));
}
BENCHMARK_TEMPLATE(BM_insert_batch256, tokchron::log_histogram)
    ->Arg(lognormal)
    ->Arg(sorted)
    ->Arg(bimodal)
    ->Arg(pareto);
BENCHMARK_TEMPLATE(BM_insert_batch256, v0_histogram)
    ->Arg(lognormal)
    ->Arg(sorted)
    ->Arg(bimodal)
    ->Arg(pareto);

template <class E>
void BM_query_p99(benchmark::State& state) {
  E e = make_estimator<E>();
  for (double x : make_data(lognormal, 1000000)) e.add(x);
  for (auto _ : state) benchmark::DoNotOptimize(e.quantile(0.99));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_TEMPLATE(BM_query_p99, tokchron::log_histogram);
BENCHMARK_TEMPLATE(BM_query_p99, v0_histogram);
BENCHMARK_TEMPLATE(BM_query_p99, accumulator_set_histogram);
BENCHMARK_TEMPLATE(BM_query_p99, tokchron::p2_quantiles);
BENCHMARK_TEMPLATE(BM_query_p99, tokchron::exact_quantiles<>);  // already sorted: O(1)

// Other probabilities (in parts per 10^4) on the same 10^6 lognormal samples: the cost of a
// quantile for any q.
template <class E>
void BM_query(benchmark::State& state) {
  E e;
  for (double x : make_data(lognormal, 1000000)) e.add(x);
  const double q = static_cast<double>(state.range(0)) / 10000.0;
  for (auto _ : state) benchmark::DoNotOptimize(e.quantile(q));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_TEMPLATE(BM_query, tokchron::log_histogram)->Arg(100)->Arg(5000)->Arg(9000)->Arg(9990);
BENCHMARK_TEMPLATE(BM_query, v0_histogram)->Arg(100)->Arg(5000)->Arg(9000)->Arg(9990);

// Eight per-thread shards of 10^5 lognormal samples each, merged into a fresh histogram.
template <class E>
void BM_log_histogram_merge8(benchmark::State& state) {
  std::vector<E> shards(8);
  for (std::size_t k = 0; k < shards.size(); ++k)
    for (double x : make_data(lognormal, 100000, 100 + k)) shards[k].add(x);
  for (auto _ : state) {
    E m;
    for (const auto& s : shards) m.merge(s);
    benchmark::DoNotOptimize(m);
  }
  state.SetItemsProcessed(state.iterations() * 8);
}
BENCHMARK_TEMPLATE(BM_log_histogram_merge8, tokchron::log_histogram)->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_log_histogram_merge8, v0_histogram)->Unit(benchmark::kMicrosecond);

// What a histogram of 10^6 samples of each shape holds, before (v0) and after: bytes of the
// object and its counters (memory_bytes(), heap included), serialised bytes, and the error
// counters. Times one memory_bytes() call; the counters are the point.
template <class E>
void BM_footprint(benchmark::State& state) {
  const int s = static_cast<int>(state.range(0));
  E e;
  for (double x : make_data(s, 1000000, 7)) e.add(x);
  for (auto _ : state) benchmark::DoNotOptimize(e.memory_bytes());
  state.counters["memory_bytes"] = static_cast<double>(e.memory_bytes());
  state.counters["serialized_bytes"] = static_cast<double>(e.serialized_size());
  state.SetLabel(shape_name(s));
  report_error<E>(state, s);
}
BENCHMARK_TEMPLATE(BM_footprint, tokchron::log_histogram)
    ->Arg(lognormal)
    ->Arg(bimodal)
    ->Arg(pareto);
BENCHMARK_TEMPLATE(BM_footprint, v0_histogram)->Arg(lognormal)->Arg(bimodal)->Arg(pareto);

template <class E>
void BM_log_histogram_serialize(benchmark::State& state) {
  E h;
  for (double x : make_data(lognormal, 1000000)) h.add(x);
  std::vector<unsigned char> buf(h.serialized_size());
  for (auto _ : state) benchmark::DoNotOptimize(h.serialize_to(buf.data(), buf.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(buf.size()));
  state.counters["bytes"] = static_cast<double>(buf.size());
}
BENCHMARK_TEMPLATE(BM_log_histogram_serialize, tokchron::log_histogram)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_log_histogram_serialize, v0_histogram)->Unit(benchmark::kMicrosecond);

template <class E>
void BM_log_histogram_deserialize(benchmark::State& state) {
  E h;
  for (double x : make_data(lognormal, 1000000)) h.add(x);
  const std::vector<unsigned char> buf = h.serialize();
  for (auto _ : state) benchmark::DoNotOptimize(E::deserialize(buf.data(), buf.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(buf.size()));
}
BENCHMARK_TEMPLATE(BM_log_histogram_deserialize, tokchron::log_histogram)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_log_histogram_deserialize, v0_histogram)->Unit(benchmark::kMicrosecond);

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
