// SPDX-License-Identifier: MIT
// What recording a request costs beyond the clock read: a timeline with the full and the
// streaming store, times passed in (the clock already read) and read by the timeline.
#include <benchmark/benchmark.h>

#include <chrono>

#include "tokchron/timeline/request_timeline.hpp"

namespace {
constexpr int kTokens = 256;

template <class Timeline>
void record_request(Timeline& tl, typename Timeline::time_point t0) {
  using namespace std::chrono_literals;
  tl.arrive(t0);
  tl.scheduled(t0 + 1ms);
  for (int i = 0; i < kTokens; ++i) tl.chunk(t0 + 10ms + i * 1ms, 1);
  tl.finish(t0 + 300ms);
}
}  // namespace

static void BM_timeline_full_store_given_times(benchmark::State& state) {
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    tokchron::request_timeline tl;
    tl.store().reserve(kTokens);
    record_request(tl, t0);
    benchmark::DoNotOptimize(tl.output_tokens());
  }
  state.SetItemsProcessed(state.iterations() * (kTokens + 3));
}
BENCHMARK(BM_timeline_full_store_given_times);

static void BM_timeline_streaming_store_given_times(benchmark::State& state) {
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    tokchron::streaming_request_timeline<> tl;
    record_request(tl, t0);
    benchmark::DoNotOptimize(tl.output_tokens());
  }
  state.SetItemsProcessed(state.iterations() * (kTokens + 3));
}
BENCHMARK(BM_timeline_streaming_store_given_times);

static void BM_timeline_streaming_store_reads_clock(benchmark::State& state) {
  for (auto _ : state) {
    tokchron::streaming_request_timeline<> tl;
    tl.arrive();
    for (int i = 0; i < kTokens; ++i) tl.chunk(1);
    tl.finish();
    benchmark::DoNotOptimize(tl.output_tokens());
  }
  state.SetItemsProcessed(state.iterations() * (kTokens + 2));
}
BENCHMARK(BM_timeline_streaming_store_reads_clock);
