// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_COLLECT_DISTRIBUTIONS_HPP
#define TOKCHRON_COLLECT_DISTRIBUTIONS_HPP

/// \file
/// `basic_distributions`: the one aggregation model's core. Distributions of per-request
/// metrics over many requests are a family of estimators, one per `metric_id` of the metric
/// table (metrics/metric_table.hpp), plus the counters of the requests behind them (by finish
/// reason, tokens, preemptions). This header is the single-writer mode: standard library only,
/// no `<thread>` or `<mutex>`. The other modes hold the same family: the sharded many-writer
/// mode (`basic_collector<basic_distributions<E>>`, collect/collector.hpp) and the
/// labelled-live mode (`live_metrics`); tokchron/distributions.hpp names all three and says
/// which to prefer when (docs/library/concurrency.md).
///
/// The model follows prometheus-cpp's registry -> family -> metric: a `basic_distributions`
/// (the registry of one mode) holds one family per metric_id, each an estimator. The
/// single-writer exporters are this core with a view on top: `serving_metrics`
/// (export/serving_metrics.hpp) and `slo_distributions` (sla/evaluator.hpp) derive from it.
///
/// \code
///   tokchron::basic_distributions<> d;             // log_histogram per metric, every metric
///   d.record(timeline);                            // each finished request, noexcept
///   auto p99 = d[tokchron::metric_id::ttft].quantile(0.99);
/// \endcode

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "tokchron/clock.hpp"
#include "tokchron/config.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/metrics/fluidity.hpp"
#include "tokchron/metrics/metric_table.hpp"
#include "tokchron/quantile/detail/capabilities.hpp"
#include "tokchron/quantile/estimator.hpp"
#include "tokchron/quantile/log_histogram.hpp"
#include "tokchron/timeline/event.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// Mode tags of the aggregation model (`distributions<Mode, E>`, tokchron/distributions.hpp).
/// One thread records; snapshot, merge and read while nobody records: `basic_distributions`.
struct single_writer {};
/// Many threads record, each into its own shard, without contending; interval snapshots are
/// lossless: `basic_collector<basic_distributions<E>>` (collect/collector.hpp).
struct sharded {};
/// A running server's live, labelled metrics, scraped at any time: `live_metrics`
/// (live/recorder.hpp).
struct labelled_live {};

/// The type of mode `Mode` over estimator `Estimator`: specialised next to each mode's type.
template <class Mode, class Estimator>
struct distributions_mode;

/// Whose samples `basic_distributions::record` takes.
enum class sampled_requests : std::uint8_t {
  /// Every finished request's (what a server exports: failures have latencies too).
  finished,
  /// Successful requests' only (stop or length; `request_metrics::counted`): failures are
  /// counted, not sampled, as the public tools leave them out of latency statistics.
  succeeded,
};

/// What a `basic_distributions` records from a request.
struct distributions_options {
  /// The metrics recorded, indexed by `metric_id` (every metric by default).
  std::array<bool, metric_count> metrics = all_metrics();
  /// Whose samples are recorded.
  sampled_requests requests = sampled_requests::succeeded;
  /// The fluidity-index is recorded (when `metrics` has it) only under deadlines.
  std::optional<fluidity_deadlines> fluidity;

  /// Whether metric `m` is recorded.
  [[nodiscard]] constexpr bool records(metric_id m) const noexcept {
    if (m == metric_id::fluidity && !fluidity) return false;
    return metrics[static_cast<std::size_t>(m)];
  }

  /// The metrics a server exports (`metric_info::served`) of every finished request:
  /// `serving_metrics`.
  [[nodiscard]] static distributions_options served() noexcept {
    distributions_options o;
    for (const auto& m : metric_table) o.metrics[static_cast<std::size_t>(m.id)] = m.served;
    o.requests = sampled_requests::finished;
    return o;
  }
  /// Every metric of successful requests, fluidity under `deadlines` when given:
  /// `slo_distributions`.
  [[nodiscard]] static distributions_options slo(
      std::optional<fluidity_deadlines> deadlines = std::nullopt) noexcept {
    distributions_options o;
    o.fluidity = deadlines;
    return o;
  }

 private:
  static constexpr std::array<bool, metric_count> all_metrics() noexcept {
    std::array<bool, metric_count> a{};
    for (auto& x : a) x = true;
    return a;
  }
};

/// Counters of the requests behind a `basic_distributions`.
struct request_counts {
  /// Finished timelines recorded, by finish reason (a `request_metrics` carries none).
  std::array<std::uint64_t, finish_reason_count> by_reason{};
  std::uint64_t succeeded = 0;   ///< requests recorded that succeeded (or counted)
  std::uint64_t failed = 0;      ///< finished requests recorded that did not
  std::uint64_t unfinished = 0;  ///< timelines refused because they had not finished
  std::uint64_t output_tokens = 0, prompt_tokens = 0, preemptions = 0;

  /// Adds `o`'s counts.
  void merge(const request_counts& o) noexcept {
    for (std::size_t i = 0; i < by_reason.size(); ++i) by_reason[i] += o.by_reason[i];
    succeeded += o.succeeded;
    failed += o.failed;
    unfinished += o.unfinished;
    output_tokens += o.output_tokens;
    prompt_tokens += o.prompt_tokens;
    preemptions += o.preemptions;
  }
  /// Whether every count is equal.
  friend bool operator==(const request_counts& a, const request_counts& b) noexcept {
    return a.by_reason == b.by_reason && a.succeeded == b.succeeded && a.failed == b.failed &&
           a.unfinished == b.unfinished && a.output_tokens == b.output_tokens &&
           a.prompt_tokens == b.prompt_tokens && a.preemptions == b.preemptions;
  }
  friend bool operator!=(const request_counts& a, const request_counts& b) noexcept {
    return !(a == b);
  }
  /// True when nothing was counted.
  [[nodiscard]] bool empty() const noexcept { return *this == request_counts{}; }
};

/// Distributions of per-request metrics over many requests, single writer: one `Estimator`
/// per `metric_id` (every one a copy of a prototype: its configuration, e.g. a histogram's
/// scale) and the requests' counts. `record(timeline)` adds a finished request's canonical
/// metrics (`canonical_metrics`), per-token ITL and per-chunk ICL samples (timelines that keep
/// chunks) and fluidity (under deadlines), as `distributions_options` select. Recording is
/// noexcept: a sample the estimator refuses is counted in its `rejected()`.
///
/// Memory: `metric_count` estimators. Thread safety: one writer; read, merge or copy while
/// nobody writes. Many writers: `basic_collector<basic_distributions<E>>` (the sharded mode),
/// whose shards are these and whose snapshots return one.
template <class Estimator = log_histogram>
class basic_distributions {
  static_assert(is_quantile_estimator_v<Estimator>, "Estimator must meet the estimator contract");

 public:
  using estimator_type = Estimator;
  using value_type = typename Estimator::value_type;

  /// Every metric of successful requests, into default-constructed estimators.
  basic_distributions() = default;
  /// Records what `options` selects, into copies of `prototype` (its samples kept: pass an
  /// empty one). Throws std::invalid_argument for fluidity deadlines that are not positive and
  /// finite.
  explicit basic_distributions(const distributions_options& options,
                               const Estimator& prototype = Estimator())
      : options_(options) {
    if (options_.fluidity) detail::check_deadlines(*options_.fluidity);
    for (auto& e : e_) e = prototype;
  }

  // --- recording -------------------------------------------------------------------------

  /// Records a finished request (see the class comment). An unfinished one is refused: false,
  /// counted in `counts().unfinished`. A failed one under `sampled_requests::succeeded` is only
  /// counted (true).
  template <class Timeline>
  bool record(const Timeline& tl) noexcept {
    if (!tl.finished()) {
      ++counts_.unfinished;
      return false;
    }
    const request_metrics m = canonical_metrics(tl);
    const auto reason = tl.reason();
    ++counts_.by_reason[static_cast<std::size_t>(reason ? *reason : finish_reason::error)];
    count_tokens(m);
    const bool ok = tl.succeeded();
    if (ok)
      ++counts_.succeeded;
    else
      ++counts_.failed;
    if (!ok && options_.requests == sampled_requests::succeeded) return true;
    add_values(m);
    if constexpr (Timeline::store_type::keeps_chunks) add_chunk_samples(tl);
    return true;
  }
  /// Records one request's metrics: its canonical metrics (`canonical_metrics`), or the request
  /// as a profile saw it (`evaluate(profile, timeline, ...)`). One that does not count
  /// (`request_metrics::counted`) is a failure. A per-request ITL is not recorded (ITL is
  /// pooled per chunk or token: `add(metric_id::itl, gap)`), nor ICL or fluidity, which need
  /// the chunks.
  void record(const request_metrics& m) noexcept {
    count_tokens(m);
    if (m.counted())
      ++counts_.succeeded;
    else
      ++counts_.failed;
    if (m.counted() || options_.requests == sampled_requests::finished) add_values(m);
  }

  /// Adds one sample of `metric` (whether or not the options select it).
  bool add(metric_id metric, double x) noexcept { return (*this)[metric].add(value(x)); }
  /// Adds `count` equal samples of `metric` (one run where the estimator stores runs, as
  /// exact_quantiles does: memory bounded by the calls, not the count).
  bool add(metric_id metric, double x, std::uint64_t count) noexcept {
    return add_run((*this)[metric], value(x), count);
  }

  // --- reading ---------------------------------------------------------------------------

  /// The distribution of metric `m` (empty for one that is not recorded).
  [[nodiscard]] const Estimator& operator[](metric_id m) const noexcept {
    return e_[static_cast<std::size_t>(m)];
  }
  [[nodiscard]] Estimator& operator[](metric_id m) noexcept {
    return e_[static_cast<std::size_t>(m)];
  }
  /// The requests' counts.
  [[nodiscard]] const request_counts& counts() const noexcept { return counts_; }
  /// Finished timelines recorded that ended for `r`.
  [[nodiscard]] std::uint64_t requests(finish_reason r) const noexcept {
    return counts_.by_reason[static_cast<std::size_t>(r)];
  }
  /// What is recorded.
  [[nodiscard]] const distributions_options& recording() const noexcept { return options_; }
  /// Whether fluidity is recorded.
  [[nodiscard]] bool records_fluidity() const noexcept {
    return options_.records(metric_id::fluidity);
  }

  /// Samples held, over every metric.
  [[nodiscard]] std::uint64_t count() const noexcept {
    return total([](const Estimator& e) noexcept { return e.count(); });
  }
  /// Samples refused, over every metric.
  [[nodiscard]] std::uint64_t rejected() const noexcept {
    return total([](const Estimator& e) noexcept { return e.rejected(); });
  }
  /// True when nothing was recorded or counted (a sharded snapshot skips such shards).
  [[nodiscard]] bool empty() const noexcept {
    return count() == 0 && rejected() == 0 && counts_.empty();
  }

  // --- combining -------------------------------------------------------------------------

  /// Adds `other`'s samples and counts (lossless for estimators that merge losslessly at the
  /// same configuration). Needs a mergeable estimator. Strong guarantee on std::bad_alloc.
  void merge(const basic_distributions& other) {
    static_assert(is_mergeable_estimator_v<Estimator>, "merge needs a mergeable estimator");
    auto merged = e_;
    for (std::size_t i = 0; i < merged.size(); ++i) merged[i].merge(other.e_[i]);
    e_ = std::move(merged);
    counts_.merge(other.counts_);
  }
  /// Empties every distribution and counter, keeping the options and the estimators'
  /// configuration. noexcept when the estimator's clear() is.
  void clear() noexcept(noexcept(std::declval<Estimator&>().clear())) {
    for (auto& e : e_) e.clear();
    counts_ = request_counts{};
  }

 private:
  template <class F>
  std::uint64_t total(F per_estimator) const noexcept {
    std::uint64_t n = 0;
    for (const auto& e : e_) n += static_cast<std::uint64_t>(per_estimator(e));
    return n;
  }
  static value_type value(double x) noexcept { return static_cast<value_type>(x); }
  static bool add_run(Estimator& e, value_type x, std::uint64_t count) noexcept {
    if constexpr (detail::has_add_count<Estimator>::value) {
      return e.add(x, count);
    } else {
      bool ok = true;
      for (std::uint64_t i = 0; i < count; ++i) ok = e.add(x) && ok;
      return ok;
    }
  }
  void count_tokens(const request_metrics& m) noexcept {
    counts_.output_tokens += m.output_tokens;
    counts_.prompt_tokens += m.prompt_tokens ? *m.prompt_tokens : 0;
    counts_.preemptions += m.preemptions;
  }
  void add_values(const request_metrics& m) noexcept {
    for_each_metric_value(m, [&](metric_id k, double x) {
      // a per-request ITL is not a pooled sample
      if (k != metric_id::itl && options_.records(k)) (void)add(k, x);
    });
  }
  template <class Timeline>
  void add_chunk_samples(const Timeline& tl) noexcept {
    if (options_.records(metric_id::itl)) {
      auto& itl = (*this)[metric_id::itl];
      for_each_itl_per_token(
          tl, [&](auto gap, std::uint64_t n) { (void)add_run(itl, value(to_seconds(gap)), n); });
    }
    if (options_.records(metric_id::icl)) {
      auto& icl = (*this)[metric_id::icl];
      for_each_itl_per_chunk(tl, [&](auto gap) { (void)icl.add(value(to_seconds(gap))); });
    }
    if (options_.records(metric_id::fluidity)) {
      fluidity_counter c(*options_.fluidity);
      if (detail::for_each_token_chunk_gap(tl,
                                           [&](std::uint32_t k, double gap) { c.tokens(k, gap); }))
        (void)(*this)[metric_id::fluidity].add(value(c.result().index()));
    }
  }

  distributions_options options_;
  std::array<Estimator, metric_count> e_;
  request_counts counts_;
};

/// The single-writer mode.
template <class Estimator>
struct distributions_mode<single_writer, Estimator> {
  using type = basic_distributions<Estimator>;
};

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_COLLECT_DISTRIBUTIONS_HPP
