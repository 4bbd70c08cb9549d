// SPDX-License-Identifier: MIT
#include "report/summaries.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <thread>

namespace tokchron_report {
namespace {

/// Runs a summary's tasks on `threads` threads, this one among them: each takes the next task
/// until none is left. A thread that cannot start leaves its share to the others. Empty for one
/// thread (the library then runs the tasks in order).
tc::task_executor thread_executor(unsigned threads) {
  if (threads <= 1) return {};
  return [threads](std::size_t count, const std::function<void(std::size_t)>& task) {
    std::atomic<std::size_t> next{0};
    auto work = [&]() noexcept {
      for (std::size_t i; (i = next.fetch_add(1)) < count;) task(i);
    };
    std::vector<std::thread> pool;
    try {
      const std::size_t workers = std::min<std::size_t>(threads, count);
      pool.reserve(workers - 1);
      for (std::size_t t = 1; t < workers; ++t) pool.emplace_back(work);
    } catch (...) {  // fewer threads: the started ones and this one take every task
    }
    work();
    for (auto& t : pool) t.join();
  };
}

using summaries = tc::multi_profile_summarizer<tc::trace_timeline>;

/// The summarizer of the selected profiles (durations from `s`).
summaries make_summaries(const report_settings& s) {
  tc::summary_options o;
  o.percentiles = s.percentiles;
  o.gpus = s.gpus;
  o.duration = s.duration;
  o.keep_requests = s.keep_requests;
  std::vector<tc::summary_options> each;
  each.reserve(s.profiles.size());
  for (const tc::profile* p : s.profiles) {
    o.inclusion = s.inclusion_for(*p);
    each.push_back(o);
  }
  return summaries(s.profiles, std::move(each), thread_executor(s.threads));
}

/// The summaries of `sums` (consumed). A vLLM result file's duration applies unless --duration
/// was given; the traces' earliest `benchmark_start` starts every profile's duration that
/// measures from it.
std::vector<tc::run_summary> finish_summaries(summaries& sums, const report_settings& s,
                                              const input_stats& stats) {
  if (!s.duration && stats.duration) sums.set_duration(*stats.duration);
  if (stats.benchmark_start) sums.set_benchmark_start(tc::trace_time(*stats.benchmark_start));
  return sums.take_summaries();
}

}  // namespace

std::vector<tc::run_summary> summarize_files(const std::vector<std::string>& files,
                                             const std::string& kind, const report_settings& s,
                                             input_stats& stats) {
  read_options ro(kind);
  ro.max_line_bytes = s.max_line_bytes;
  auto sums = make_summaries(s);
  if (s.threads <= 1) {
    stats = read_inputs(files, ro, [&](tc::trace_timeline&& tl) { sums.add(tl); });
    return finish_summaries(sums, s, stats);
  }
  // Two threads: the reader also evaluates up to three of the profiles that keep one value per
  // request (the cheaper ones); this thread evaluates the rest, the pooled-ITL profiles among
  // them (they share their samples, so they stay together). Three balances the two on the
  // 100k x 150 trace: each then waits for the other on fewer than a tenth of the batches.
  constexpr std::size_t reader_share = 3;
  std::vector<summaries::summarizer*> on_reader, on_consumer;
  for (std::size_t i = 0; i < sums.size(); ++i) {
    const bool cheap = !tc::pools_samples(sums[i].profile_used().itl);
    (cheap && on_reader.size() < reader_share ? on_reader : on_consumer).push_back(&sums[i]);
  }
  stats = read_inputs_pipelined(
      files, ro,
      [&](tc::trace_timeline&& tl) {
        for (auto* sum : on_consumer) sum->add(tl);
      },
      [&](const tc::trace_timeline& tl) {
        for (auto* sum : on_reader) sum->add(tl);
      });
  return finish_summaries(sums, s, stats);
}

std::vector<tc::run_summary> summarize_all(const loaded_inputs& in, const report_settings& s) {
  auto sums = make_summaries(s);
  for (const auto& tl : in.timelines) sums.add(tl);
  return finish_summaries(sums, s, in);
}

}  // namespace tokchron_report
