// SPDX-License-Identifier: MIT
// What recording one sample costs when many threads record: tokchron's collector (per-thread
// shards; membarrier or seq_cst hand-over) against the single-writer log_histogram it wraps and
// a mutex-protected one, with 1 and 2 writer threads, and with a snapshot reader running.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "tokchron/collect/collector.hpp"
#include "tokchron/quantile/log_histogram.hpp"

namespace {
constexpr std::size_t kBatch = 256;  // samples per benchmark iteration

// Lognormal latencies (median 50 ms, sigma 0.5), fixed seed, shared read-only by all threads.
const std::vector<double>& samples() {
  static const std::vector<double> v = [] {
    std::mt19937_64 rng(42);
    std::lognormal_distribution<double> d(std::log(0.05), 0.5);
    std::vector<double> out(4096);
    for (double& x : out) x = d(rng);
    return out;
  }();
  return v;
}

template <class Add>
void run_batches(benchmark::State& state, Add&& add) {
  const std::vector<double>& v = samples();
  std::size_t at = (static_cast<std::size_t>(state.thread_index()) * 1024) % v.size();
  for (auto _ : state) {
    for (std::size_t i = 0; i < kBatch; ++i) {
      benchmark::DoNotOptimize(add(v[at]));
      at = (at + 1) & (v.size() - 1);
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kBatch));
}

tokchron::collector& shared_collector(tokchron::collector_sync sync) {
  static tokchron::collector automatic(tokchron::collector_sync::automatic);
  static tokchron::collector fences(tokchron::collector_sync::fences);
  return sync == tokchron::collector_sync::fences ? fences : automatic;
}

// A reader thread taking interval snapshots every `period` while a benchmark runs.
class snapshot_reader {
 public:
  snapshot_reader(tokchron::collector& c, std::chrono::microseconds period)
      : thread_([this, &c, period] {
          while (!stop_.load()) {
            benchmark::DoNotOptimize(c.snapshot().count());
            ++snapshots_;
            if (period.count() > 0) std::this_thread::sleep_for(period);
          }
        }) {}
  ~snapshot_reader() {
    stop_.store(true);
    thread_.join();
  }
  snapshot_reader(const snapshot_reader&) = delete;
  snapshot_reader& operator=(const snapshot_reader&) = delete;
  [[nodiscard]] std::uint64_t snapshots() const { return snapshots_; }

 private:
  std::atomic<bool> stop_{false};
  std::uint64_t snapshots_ = 0;
  std::thread thread_;
};
}  // namespace

// The floor: one thread, its own histogram, no synchronisation.
static void BM_collect_single_writer_log_histogram(benchmark::State& state) {
  tokchron::log_histogram h;
  run_batches(state, [&](double x) { return h.add(x); });
}
BENCHMARK(BM_collect_single_writer_log_histogram)->UseRealTime();

// One histogram shared behind a std::mutex (what prometheus-cpp does).
static void BM_collect_mutex_log_histogram(benchmark::State& state) {
  static std::mutex m;
  static tokchron::log_histogram h;
  run_batches(state, [&](double x) {
    std::lock_guard<std::mutex> lock(m);
    return h.add(x);
  });
}
BENCHMARK(BM_collect_mutex_log_histogram)->Threads(1)->Threads(2)->UseRealTime();

// The collector with the asymmetric (membarrier) hand-over.
static void BM_collect_collector_membarrier(benchmark::State& state) {
  tokchron::collector& c = shared_collector(tokchron::collector_sync::automatic);
  if (!c.asymmetric()) state.SkipWithError("membarrier unavailable here");
  auto w = c.make_writer();
  run_batches(state, [&](double x) { return w.add(x); });
}
BENCHMARK(BM_collect_collector_membarrier)->Threads(1)->Threads(2)->UseRealTime();

// The collector with seq_cst store + load in every call (the portable fallback).
static void BM_collect_collector_fences(benchmark::State& state) {
  tokchron::collector& c = shared_collector(tokchron::collector_sync::fences);
  auto w = c.make_writer();
  run_batches(state, [&](double x) { return w.add(x); });
}
BENCHMARK(BM_collect_collector_fences)->Threads(1)->Threads(2)->UseRealTime();

// The collector with one recording call per batch (`update`): a finished request's ITL samples
// recorded at once pay the hand-over once, so the per-sample cost is the estimator's.
static void BM_collect_collector_batched(benchmark::State& state) {
  tokchron::collector& c = shared_collector(tokchron::collector_sync::automatic);
  auto w = c.make_writer();
  const std::vector<double>& v = samples();
  std::size_t at = (static_cast<std::size_t>(state.thread_index()) * 1024) % v.size();
  for (auto _ : state) {
    const double* batch = &v[at];
    w.update([batch](tokchron::log_histogram& h) noexcept {
      for (std::size_t i = 0; i < kBatch; ++i) benchmark::DoNotOptimize(h.add(batch[i]));
    });
    at = (at + kBatch) & (v.size() - 1);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kBatch));
}
BENCHMARK(BM_collect_collector_batched)->Threads(1)->Threads(2)->UseRealTime();

// One writer while another thread takes a snapshot every range(0) us (0: back to back, the
// worst case: every snapshot issues a membarrier, i.e. an interrupt to the writer's core).
static void BM_collect_collector_with_reader(benchmark::State& state) {
  tokchron::collector c;
  auto w = c.make_writer();
  snapshot_reader reader(c, std::chrono::microseconds(state.range(0)));
  run_batches(state, [&](double x) { return w.add(x); });
  state.counters["snapshots"] = static_cast<double>(reader.snapshots());
}
BENCHMARK(BM_collect_collector_with_reader)->Arg(1000)->Arg(100)->Arg(0)->UseRealTime();

// The cost of one interval snapshot with 2 writers' shards holding data (lognormal, 1 %).
static void BM_collect_snapshot(benchmark::State& state) {
  tokchron::collector c;
  auto w1 = c.make_writer();
  auto w2 = c.make_writer();
  const std::vector<double>& v = samples();
  for (auto _ : state) {
    state.PauseTiming();
    for (double x : v) {
      w1.add(x);
      w2.add(x);
    }
    state.ResumeTiming();
    benchmark::DoNotOptimize(c.snapshot().count());
  }
}
BENCHMARK(BM_collect_snapshot);
