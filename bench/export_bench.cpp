// SPDX-License-Identifier: MIT
// Exporters: what a finished request costs to record into serving_metrics (7 log_histograms,
// per-token ITL), and what one scrape costs (snapshot with 7 x 321 classic buckets, then the
// Prometheus text).
#include <benchmark/benchmark.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "tokchron/export/prometheus.hpp"
#include "tokchron/export/serving_metrics.hpp"
#include "tokchron/timeline/request_timeline.hpp"

namespace {
using timeline = tokchron::basic_request_timeline<tokchron::manual_clock>;

std::vector<timeline> make_requests(int n, int tokens) {
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> ttft(std::log(0.2), 0.6), gap(std::log(0.02), 0.3);
  std::vector<timeline> v;
  tokchron::manual_clock clock;
  auto at = [](double s) {
    return tokchron::manual_clock::at(std::chrono::duration_cast<tokchron::manual_clock::duration>(
        std::chrono::duration<double>(s)));
  };
  for (int i = 0; i < n; ++i) {
    timeline tl(clock);
    tl.arrive(at(0));
    tl.scheduled(at(0.001));
    double t = 0.001 + ttft(rng);
    for (int k = 0; k < tokens; ++k) tl.chunk(at(t += k ? gap(rng) : 0), 1);
    tl.finish(at(t));
    v.push_back(std::move(tl));
  }
  return v;
}
}  // namespace

static void BM_serving_metrics_record_256_tokens(benchmark::State& state) {
  const auto reqs = make_requests(64, 256);
  tokchron::serving_metrics m;
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(m.record(reqs[i++ & 63]));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_serving_metrics_record_256_tokens);

static void BM_serving_metrics_scrape_prometheus_text(benchmark::State& state) {
  const auto reqs = make_requests(2000, 64);
  tokchron::serving_metrics m;
  for (const auto& tl : reqs) m.record(tl);
  std::string out;
  for (auto _ : state) {
    out.clear();
    tokchron::write_prometheus(out, m.snapshot());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(out.size()));
  state.counters["bytes"] = static_cast<double>(out.size());
}
BENCHMARK(BM_serving_metrics_scrape_prometheus_text);
