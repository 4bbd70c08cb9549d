// SPDX-License-Identifier: MIT
// SLA evaluation costs: recording a finished request into an online monitor (the per-request
// hot path), judging a percentile objective, and the binomial bound search behind it.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <random>

#include "tokchron/sla/evaluator.hpp"
#include "tokchron/sla/monitor.hpp"

namespace {
tokchron::request_metrics sample_request(std::mt19937_64& rng) {
  std::lognormal_distribution<double> d(-2.0, 0.5);
  tokchron::request_metrics m;
  m.succeeded = true;
  m.ttft = d(rng);
  m.tpot = d(rng) / 10;
  m.e2e = *m.ttft + 100 * *m.tpot;
  return m;
}
}  // namespace

// One finished request into a monitor of "p95(ttft) < 1.5s, p95(tpot) < 100ms" over 1 min and
// 5 min windows plus the SRE workbook's three burn rules (6 window lengths per metric).
static void BM_sla_monitor_record(benchmark::State& state) {
  tokchron::manual_clock clock;
  tokchron::slo_monitor<tokchron::manual_clock>::options opt;
  opt.windows = {std::chrono::minutes(1), std::chrono::minutes(5)};
  opt.rules = tokchron::sre_burn_rules();
  tokchron::slo_monitor<tokchron::manual_clock> mon(
      tokchron::sla::parse("p95(ttft) < 1.5s, p95(tpot) < 100ms"), opt, clock);
  std::mt19937_64 rng(1);
  tokchron::request_metrics reqs[256];
  for (auto& r : reqs) r = sample_request(rng);
  std::size_t i = 0;
  for (auto _ : state) {
    clock.advance(std::chrono::milliseconds(10));
    mon.record(reqs[i++ & 255]);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_sla_monitor_record);

// Judging p99 on n exact samples (sorted once, outside the loop): bounds, misses, verdict.
static void BM_sla_evaluate_p99_exact(benchmark::State& state) {
  tokchron::exact_quantiles<> e;
  std::mt19937_64 rng(2);
  std::lognormal_distribution<double> d(-2.0, 0.5);
  for (std::int64_t i = 0; i < state.range(0); ++i) e.add(d(rng));
  (void)e.quantile(0.5);
  const auto o = tokchron::objective::parse("p99(ttft) < 1s");
  for (auto _ : state) benchmark::DoNotOptimize(tokchron::evaluate(o, e));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_sla_evaluate_p99_exact)->Arg(1000)->Arg(100000)->Arg(10000000);

// The order-statistic ranks alone (two binary searches over binomial tails).
static void BM_sla_quantile_bound_ranks(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(tokchron::quantile_bound_ranks(n, 0.99, 0.95));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_sla_quantile_bound_ranks)->Arg(1000)->Arg(100000)->Arg(10000000);

// Parsing an objective (the CLI's and the fuzzer's entry point).
static void BM_sla_parse_objective(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(tokchron::parse_objective("p99.9(tpot) <= 200ms"));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_sla_parse_objective);
