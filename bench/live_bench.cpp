// SPDX-License-Identifier: MIT
// Live server metrics (live/): what streaming one request costs (arrive, scheduled, 64
// one-token chunks, finish) into live_metrics with vLLM's and tokchron's semantics, against the
// path it replaced in the prometheus-cpp adaptor (a request's timeline recorded, then
// serving_metrics::record under a std::mutex), with 1 and 2 recording threads; and what one
// scrape of 2000 requests costs.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "tokchron/export/prometheus.hpp"
#include "tokchron/export/serving_metrics.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/live/recorder.hpp"
#include "tokchron/live/scrape.hpp"
#include "tokchron/timeline/request_timeline.hpp"

namespace {
using mclock = tokchron::manual_clock;
constexpr int kTokens = 64;

mclock::time_point at_us(std::int64_t us) {
  return mclock::at(std::chrono::duration_cast<mclock::duration>(std::chrono::microseconds(us)));
}

// One request streamed through the live recorder's event calls.
template <class Metrics>
void stream_one(Metrics& m, tokchron::basic_live_request<mclock>& r, std::int64_t t0) {
  benchmark::DoNotOptimize(m.arrive(r, at_us(t0), {tokchron::live_series{}, 128, 0}));
  benchmark::DoNotOptimize(m.scheduled(r, at_us(t0 + 1000)));
  std::int64_t t = t0 + 50000;
  for (int k = 0; k < kTokens; ++k) benchmark::DoNotOptimize(m.chunk(r, at_us(t += 20000), 1));
  benchmark::DoNotOptimize(m.finish(r, at_us(t)));
}

// The shared metrics objects of the multi-threaded runs (one per benchmark, all threads).
tokchron::basic_live_metrics<mclock>& shared_vllm() {
  static tokchron::basic_live_metrics<mclock> m(tokchron::vllm_live_options("m", 4096));
  return m;
}
tokchron::basic_live_metrics<mclock>& shared_tokchron() {
  static tokchron::basic_live_metrics<mclock> m(tokchron::tokchron_live_options());
  return m;
}
struct locked_serving_metrics {
  std::mutex mutex;
  tokchron::serving_metrics metrics;
};
locked_serving_metrics& shared_locked() {
  static locked_serving_metrics m;
  return m;
}
}  // namespace

static void BM_live_stream_request_64_tokens(benchmark::State& state,
                                             tokchron::basic_live_metrics<mclock>& (*metrics)()) {
  auto& m = metrics();
  tokchron::basic_live_request<mclock> r;
  std::int64_t t0 = 0;
  for (auto _ : state) stream_one(m, r, t0 += 10000000);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(BM_live_stream_request_64_tokens, vllm, &shared_vllm)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_live_stream_request_64_tokens, tokchron, &shared_tokchron)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

// Baseline: the same request's timeline recorded by the thread, then serving_metrics::record
// under one mutex (the adaptor's path before live metrics).
static void BM_mutex_serving_metrics_request_64_tokens(benchmark::State& state) {
  auto& m = shared_locked();
  std::int64_t t0 = 0;
  for (auto _ : state) {
    tokchron::basic_request_timeline<mclock> tl;
    t0 += 10000000;
    benchmark::DoNotOptimize(tl.arrive(at_us(t0)));
    benchmark::DoNotOptimize(tl.scheduled(at_us(t0 + 1000)));
    std::int64_t t = t0 + 50000;
    for (int k = 0; k < kTokens; ++k) benchmark::DoNotOptimize(tl.chunk(at_us(t += 20000), 1));
    benchmark::DoNotOptimize(tl.finish(at_us(t)));
    tl.set_prompt_tokens(128);
    std::lock_guard<std::mutex> lock(m.mutex);
    benchmark::DoNotOptimize(m.metrics.record(tl));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_mutex_serving_metrics_request_64_tokens)->Threads(1)->Threads(2)->UseRealTime();

static void BM_live_vllm_scrape_prometheus_text(benchmark::State& state) {
  tokchron::basic_live_metrics<mclock> m(tokchron::vllm_live_options("m", 4096));
  tokchron::basic_live_request<mclock> r;
  for (int i = 0; i < 2000; ++i) stream_one(m, r, std::int64_t{i} * 10000000);
  std::string out;
  for (auto _ : state) {
    out.clear();
    tokchron::write_prometheus(out, tokchron::scrape(m));
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes"] = static_cast<double>(out.size());
}
BENCHMARK(BM_live_vllm_scrape_prometheus_text);
