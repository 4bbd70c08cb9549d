// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_METRICS_DISTRIBUTION_HPP
#define TOKCHRON_METRICS_DISTRIBUTION_HPP

/// \file
/// The statistics of one metric's samples over a run (`distribution`), computed exactly under a
/// profile's percentile method: count, mean, median, std, min, max and percentiles. Order
/// statistics come from a radix selection (`detail::select_ranks`, O(n)), never a full sort.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/metrics/builtin_profiles.hpp"
#include "tokchron/metrics/detail/select_ranks.hpp"
#include "tokchron/quantile/exact.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// Runs of equal samples: (value, count), the compact form of many equal samples.
using sample_runs = std::vector<std::pair<double, std::uint64_t>>;

/// One requested percentile and its value (empty when there are no samples).
struct percentile_value {
  double percent;  ///< e.g. 99.9
  std::optional<double> value;
};

/// Runs `count` independent tasks: calls `task(i)` once for each i in [0, count), on whatever
/// threads it likes, in any order, and returns when every call has returned. Each call touches
/// only its own data, so tasks may run concurrently; none throws. tokchron starts no thread: a
/// caller that wants the work of a summary spread over threads passes one of these (a pool it
/// owns, `std::async`, an engine's worker queue). Empty: the tasks run in order on the calling
/// thread.
using task_executor =
    std::function<void(std::size_t count, const std::function<void(std::size_t)>& task)>;

/// The statistics of one metric over a run. Units: seconds for latencies, tokens/s for rates,
/// tokens for lengths. Without samples `count` is 0 and every value is empty. `stddev` is empty
/// when the profile's tool reports no std, or when count <= ddof.
struct distribution {
  std::uint64_t count = 0;
  /// Requests the profile's rule refused: MLPerf's N = 1 for TPOT; for the user rate
  /// (tokens/s), completed requests without a rate: zero E2E latency or no output tokens (or
  /// no TPOT under a 1/TPOT rule).
  std::uint64_t invalid = 0;
  std::optional<double> mean, median, stddev, min, max;
  std::vector<percentile_value> percentiles;
  /// The mean follows the tool's arithmetic (`tool_arithmetic`: MLPerf's truncated int64 ns,
  /// gptManagerBenchmark's float ms) and differs from the exact mean.
  bool mean_by_tool = false;
  /// The tool prints the median as the mean and the mean as the median
  /// (`profile::swaps_mean_median_e2e`), and the two differ.
  bool mean_median_swapped = false;

  /// The value at `percent` if it was requested.
  [[nodiscard]] std::optional<double> at(double percent) const noexcept {
    for (const auto& p : percentiles)
      if (p.percent == percent) return p.value;
    return std::nullopt;
  }
};

namespace detail {

/// The mean of seconds `v` (in insertion order) as a tool with arithmetic `a` computes it: an
/// int64 ns sum divided by the size_t count (C++'s usual conversions make the sum unsigned, so a
/// negative sum wraps, and the quotient is stored back in an int64), or a float ms sum over the
/// float count. Empty for double arithmetic or no samples.
[[nodiscard]] inline std::optional<double> tool_mean_of(const std::vector<double>& v,
                                                        tool_arithmetic a) noexcept {
  if (v.empty() || a == tool_arithmetic::double_seconds) return std::nullopt;
  if (a == tool_arithmetic::int64_ns) {
    std::uint64_t sum = 0;  // two's complement: the int64 sum's bits
    for (double x : v) sum += static_cast<std::uint64_t>(std::llround(x * 1e9));
    const std::uint64_t q = sum / static_cast<std::uint64_t>(v.size());
    std::int64_t m = 0;
    std::memcpy(&m, &q, sizeof m);  // the int64 the tool stores
    return static_cast<double>(m) / 1e9;
  }
  float sum = 0.F;
  for (double x : v) sum += static_cast<float>(x * 1e3);
  return static_cast<double>(sum / static_cast<float>(v.size())) / 1e3;
}

/// GuideLLM's statistics of samples `v` (weight 1 each) and `runs` (value, weight), as
/// `DistributionSummary.from_values` computes them (guidellm src/guidellm/schemas/statistics.py,
/// vllm-project/guidellm@ee7a77457ba6): sorted, equal values merged, zero weights dropped,
/// probabilities w / sum(w); mean = sum(x p), std = sqrt(sum((x - mean)^2 p)); a percentile is the
/// first value whose cumulative probability, summed in order in double, reaches q
/// (`np.searchsorted(cdf, q, side="left")`, so a float cumsum just below q moves it one up);
/// the count is the sum of the weights. O((n + r) log(n + r)).
[[nodiscard]] inline distribution guidellm_distribution(const std::vector<double>& v,
                                                        const sample_runs* runs,
                                                        const std::vector<double>& percentiles) {
  std::vector<std::pair<double, double>> xw;  // (value, weight)
  xw.reserve(v.size() + (runs ? runs->size() : 0));
  for (double x : v) xw.emplace_back(x, 1.0);
  double count = static_cast<double>(v.size());
  if (runs)
    for (const auto& [x, c] : *runs) {
      xw.emplace_back(x, static_cast<double>(c));
      count += static_cast<double>(c);
    }
  std::sort(xw.begin(), xw.end(),
            [](const auto& a, const auto& b) { return order_key(a.first) < order_key(b.first); });
  std::vector<std::pair<double, double>> pdf;  // distinct values with a positive weight
  for (const auto& [x, w] : xw) {
    if (!pdf.empty() && pdf.back().first == x)
      pdf.back().second += w;
    else
      pdf.emplace_back(x, w);
  }
  pdf.erase(std::remove_if(pdf.begin(), pdf.end(), [](const auto& e) { return !(e.second > 0); }),
            pdf.end());
  distribution d;
  d.count = static_cast<std::uint64_t>(std::llround(count));
  d.percentiles.reserve(percentiles.size());
  double total = 0;
  for (const auto& e : pdf) total += e.second;
  std::vector<double> cdf(pdf.size());
  double mean = 0, acc = 0;
  for (std::size_t i = 0; i < pdf.size(); ++i) {
    const double prob = pdf[i].second / total;
    acc += prob;
    cdf[i] = acc;
    mean += pdf[i].first * prob;
  }
  auto at = [&](double q) -> std::optional<double> {
    if (pdf.empty()) return std::nullopt;
    const auto i =
        static_cast<std::size_t>(std::lower_bound(cdf.begin(), cdf.end(), q) - cdf.begin());
    return pdf[std::min(i, pdf.size() - 1)].first;
  };
  // The tool's probabilities are literals (0.001 ... 0.999); pc / 100 is the same double for each
  // but 99.9.
  auto prob_of = [](double pc) { return pc == 99.9 ? 0.999 : pc / 100.0; };
  for (double pc : percentiles) d.percentiles.push_back(percentile_value{pc, at(prob_of(pc))});
  if (pdf.empty()) return d;
  double var = 0;
  for (const auto& e : pdf) var += (e.first - mean) * (e.first - mean) * (e.second / total);
  d.mean = mean;
  d.median = at(0.5);
  d.stddev = std::sqrt(var);
  d.min = pdf.front().first;
  d.max = pdf.back().first;
  return d;
}

/// The statistics of a distribution: `count` samples whose ascending order statistics are
/// `sorted[i]` (an iterator, or anything with operator[]), with `mean` and `stddev` known.
template <class Sorted>
[[nodiscard]] distribution distribution_from(std::uint64_t count, std::optional<double> mean,
                                             std::optional<double> stddev, const Sorted& sorted,
                                             const profile& p,
                                             const std::vector<double>& percentiles) {
  distribution d;
  d.count = count;
  d.percentiles.reserve(percentiles.size());
  const auto n = static_cast<std::size_t>(count);
  auto at = [&](double q) -> std::optional<double> {
    if (n == 0) return std::nullopt;
    return sorted_quantile(sorted, n, q, p.percentile_method);
  };
  for (double pc : percentiles) d.percentiles.push_back(percentile_value{pc, at(pc / 100.0)});
  if (n == 0) return d;
  d.mean = mean;
  d.median = at(0.5);
  if (p.std_ddof) d.stddev = stddev;
  d.min = static_cast<double>(sorted[0]);
  d.max = static_cast<double>(sorted[static_cast<std::ptrdiff_t>(n - 1)]);
  return d;
}

/// Stands in for sorted samples while `distribution_from` runs once to learn which ranks it
/// reads (appended to `ranks`; every value read is 0).
struct rank_recorder {
  std::vector<std::size_t>* ranks;
  double operator[](std::ptrdiff_t i) const {
    ranks->push_back(static_cast<std::size_t>(i));
    return 0.0;
  }
};

/// The order statistics found by `select_ranks`, read by rank (recorded ranks only).
struct selected_ranks {
  const std::vector<std::size_t>* ranks;  // ascending, unique
  const std::vector<double>* values;
  double operator[](std::ptrdiff_t i) const noexcept {
    const auto it = std::lower_bound(ranks->begin(), ranks->end(), static_cast<std::size_t>(i));
    return (*values)[static_cast<std::size_t>(it - ranks->begin())];
  }
};
}  // namespace detail

/// The statistics of the samples held in `q` under `p`'s percentile method and std ddof; for a
/// latency (`latency`), the mean in `p`'s tool arithmetic (`distribution::mean_by_tool`).
[[nodiscard]] inline distribution make_distribution(const exact_quantiles<double>& q,
                                                    const profile& p,
                                                    const std::vector<double>& percentiles,
                                                    bool latency = false) {
  if (p.guidellm_statistics)
    return detail::guidellm_distribution(q.samples(), &q.runs(), percentiles);
  std::optional<double> sd;
  if (p.std_ddof) sd = q.stddev(*p.std_ddof);
  struct by_rank {  // the order statistics, runs (`add(x, count)`) included
    const exact_quantiles<double>* q;
    double operator[](std::ptrdiff_t i) const noexcept {
      return q->at_rank(static_cast<std::uint64_t>(i));
    }
  };
  // The tool's mean sums in insertion order: before the order statistics sort the samples.
  const auto m = latency ? detail::tool_mean_of(q.samples(), p.arithmetic) : std::nullopt;
  distribution d = detail::distribution_from(q.count(), q.mean(), sd, by_rank{&q}, p, percentiles);
  if (m && d.mean && *m != *d.mean) {
    d.mean = m;
    d.mean_by_tool = true;
  }
  return d;
}

namespace detail {
/// One distribution to compute: its samples (consumed), profile, percentiles and destination.
struct distribution_job {
  std::vector<double>* samples;
  const profile* p;
  const std::vector<double>* percentiles;
  distribution* out;
  /// Further samples as runs of equal values (value, count), or null: a k-token chunk's k
  /// per-token ITL samples are one run, so memory is O(chunks), not O(tokens).
  const sample_runs* runs = nullptr;
  /// A latency whose mean follows the profile's `tool_arithmetic`.
  bool tool_mean = false;
  /// Swap the mean and the median, as the tool prints them (`swaps_mean_median_e2e`).
  bool swap_mean_median = false;
};

/// Whether two jobs' runs are the same (null and empty are the same).
[[nodiscard]] inline bool same_runs(const sample_runs* a, const sample_runs* b) noexcept {
  const bool ea = !a || a->empty(), eb = !b || b->empty();
  if (ea || eb) return ea && eb;
  return a == b || *a == *b;
}

/// The statistics of `v` plus the runs `runs` (each value repeated its count): exact order
/// statistics (a sort of the n + r distinct entries, O((n + r) log(n + r)) time and memory,
/// independent of the counts), the mean summed as the samples then each run's value x count,
/// the std in two passes.
inline void weighted_statistics(const std::vector<double>& v, const sample_runs& runs,
                                std::uint64_t& count, std::optional<double>& mean,
                                std::vector<std::size_t>& ranks, std::vector<double>& values) {
  count = v.size();
  double sum = 0;
  for (double x : v) sum += x;
  for (const auto& [x, c] : runs) {
    count += c;
    sum += x * static_cast<double>(c);
  }
  mean = count ? std::optional<double>(sum / static_cast<double>(count)) : std::nullopt;
  std::vector<std::pair<double, std::uint64_t>> blocks;
  blocks.reserve(v.size() + runs.size());
  for (double x : v) blocks.emplace_back(x, 1);
  blocks.insert(blocks.end(), runs.begin(), runs.end());
  std::sort(blocks.begin(), blocks.end(),
            [](const auto& a, const auto& b) { return order_key(a.first) < order_key(b.first); });
  values.resize(ranks.size());
  std::size_t b = 0;
  std::uint64_t below = 0;                          // samples in blocks before b
  for (std::size_t i = 0; i < ranks.size(); ++i) {  // ranks ascending
    while (below + blocks[b].second <= ranks[i]) below += blocks[b++].second;
    values[i] = blocks[b].first;
  }
}
/// The std (ddof) of `v` and `runs` around `mean`; empty when count <= ddof.
[[nodiscard]] inline std::optional<double> weighted_stddev(const std::vector<double>& v,
                                                           const sample_runs& runs, double mean,
                                                           std::uint64_t count, unsigned ddof) {
  if (count <= ddof) return std::nullopt;
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  for (const auto& [x, c] : runs) ss += static_cast<double>(c) * (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(count - ddof));
}

/// Computes every job's distribution. Jobs whose samples are identical (several profiles often
/// agree on a metric's samples) share one selection. Frees the samples. With an `executor`, the
/// distinct sample sets are its tasks (the largest first); the results do not depend on how it
/// runs them. Throws the first task's std::bad_alloc (by task order) after every task has ended.
inline void run_distribution_jobs(std::vector<distribution_job>& jobs,
                                  const task_executor& executor = {}) {
  // Group the jobs by identical samples.
  std::vector<std::vector<std::size_t>> groups;
  std::vector<bool> grouped(jobs.size(), false);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (grouped[i]) continue;
    const std::vector<double>& v = *jobs[i].samples;
    std::vector<std::size_t> group{i};
    for (std::size_t j = i + 1; j < jobs.size(); ++j) {
      const std::vector<double>& w = *jobs[j].samples;
      if (!grouped[j] && w.size() == v.size() && same_runs(jobs[i].runs, jobs[j].runs) &&
          (&w == &v || v.empty() ||
           std::memcmp(v.data(), w.data(), v.size() * sizeof(double)) == 0)) {
        group.push_back(j);
        grouped[j] = true;
      }
    }
    groups.push_back(std::move(group));
  }
  std::stable_sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) {
    return jobs[a.front()].samples->size() > jobs[b.front()].samples->size();
  });
  auto run_group = [&jobs](const std::vector<std::size_t>& group) {
    exact_quantiles<double> q;  // count, mean and std, without sorting
    q.assign(std::move(*jobs[group.front()].samples));
    const std::vector<double>& v = q.samples();
    const sample_runs* runs = jobs[group.front()].runs;
    const bool weighted = runs && !runs->empty();
    std::uint64_t count = q.count();
    std::optional<double> mean = q.mean();
    if (weighted)
      for (const auto& r : *runs) count += r.second;
    std::vector<std::size_t> ranks;  // the order statistics every job reads
    for (std::size_t j : group)
      (void)distribution_from(count, std::nullopt, std::nullopt, rank_recorder{&ranks}, *jobs[j].p,
                              *jobs[j].percentiles);
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    std::vector<double> values(ranks.size());
    if (weighted)
      weighted_statistics(v, *runs, count, mean, ranks, values);
    else
      select_ranks(v.data(), v.size(), ranks.data(), values.data(), ranks.size());
    const selected_ranks sorted{&ranks, &values};
    std::vector<std::pair<unsigned, std::optional<double>>> stddevs;  // by ddof
    for (std::size_t j : group) {
      const profile& p = *jobs[j].p;
      std::optional<double> sd;
      if (p.std_ddof) {
        auto it = std::find_if(stddevs.begin(), stddevs.end(),
                               [&](const auto& e) { return e.first == *p.std_ddof; });
        if (it == stddevs.end())
          it = stddevs.insert(
              stddevs.end(),
              {*p.std_ddof, !weighted ? q.stddev(*p.std_ddof)
                            : mean    ? weighted_stddev(v, *runs, *mean, count, *p.std_ddof)
                                      : std::nullopt});
        sd = it->second;
      }
      const std::uint64_t invalid = jobs[j].out->invalid;
      *jobs[j].out = p.guidellm_statistics
                         ? guidellm_distribution(v, runs, *jobs[j].percentiles)
                         : distribution_from(count, mean, sd, sorted, p, *jobs[j].percentiles);
      distribution& d = *jobs[j].out;
      d.invalid = invalid;
      if (jobs[j].tool_mean && !weighted) {
        const auto m = tool_mean_of(v, p.arithmetic);
        if (m && d.mean && *m != *d.mean) {
          d.mean = m;
          d.mean_by_tool = true;
        }
      }
      if (jobs[j].swap_mean_median && d.mean && d.median && *d.mean != *d.median) {
        std::swap(d.mean, d.median);
        d.mean_median_swapped = true;
      }
      std::vector<double>().swap(*jobs[j].samples);
    }
  };
  if (!executor || groups.size() <= 1) {
    for (const auto& g : groups) run_group(g);
    return;
  }
  // Each task keeps its own failure: no two tasks write the same object.
  std::vector<std::exception_ptr> failures(groups.size());
  executor(groups.size(), [&](std::size_t g) noexcept {
    TOKCHRON_TRY { run_group(groups[g]); }
    TOKCHRON_CATCH_ALL { failures[g] = std::current_exception(); }
  });
#if TOKCHRON_HAS_EXCEPTIONS
  for (const auto& f : failures)
    if (f) std::rethrow_exception(f);
#endif
}
}  // namespace detail

/// The statistics of `samples` (consumed) under `p`'s percentile method and std ddof; for a
/// latency (`latency`), the mean in `p`'s tool arithmetic.
[[nodiscard]] inline distribution make_distribution(std::vector<double> samples, const profile& p,
                                                    const std::vector<double>& percentiles,
                                                    bool latency = false) {
  distribution d;
  std::vector<detail::distribution_job> job{{&samples, &p, &percentiles, &d}};
  job.front().tool_mean = latency;
  detail::run_distribution_jobs(job);
  return d;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_METRICS_DISTRIBUTION_HPP
