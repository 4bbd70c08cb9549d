// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXPORT_SERVING_METRICS_HPP
#define TOKCHRON_EXPORT_SERVING_METRICS_HPP

/// \file
/// `serving_metrics`: what a server exports about the requests it finished (the canonical
/// latency distributions as mergeable `log_histogram`s, and request/token counters), and its
/// `metrics_snapshot` for the Prometheus writers.
///
/// \code
///   tokchron::serving_metrics m;                  // tokchron_* names, exponential buckets
///   m.record(timeline);                           // each finished request, noexcept
///   std::string text = tokchron::to_prometheus(m.snapshot());
/// \endcode

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "tokchron/collect/distributions.hpp"
#include "tokchron/config.hpp"
#include "tokchron/export/conversions.hpp"
#include "tokchron/exposition/buckets.hpp"
#include "tokchron/exposition/snapshot_data.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/metrics/metric_table.hpp"
#include "tokchron/quantile/log_histogram.hpp"
#include "tokchron/timeline/event.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// The metrics `serving_metrics` keeps a histogram of: the rows of metric_table marked
/// `served` (the latencies vLLM exports as histograms), in table order.
using serving_metric = metric_id;
/// The number of served metrics.
inline constexpr std::size_t serving_metric_count =
    detail::count_metrics([](const metric_info& m) { return m.served; });

/// Family names; `outcome_label` names the finish reason on the requests counter.
struct serving_metric_names {
  /// The histogram family of each served metric (indexed by `metric_id`; the others unused):
  /// by default "tokchron_" + its Prometheus stem + "_seconds" (`prometheus_name`).
  std::array<std::string, metric_count> histograms = prometheus_names("tokchron_");
  std::string requests = name(live_source::requests, false),
              output_tokens = name(live_source::generation_tokens, false),
              prompt_tokens = name(live_source::prompt_tokens, false),
              preemptions = name(live_source::preemptions, false);
  std::string outcome_label = std::string(live_reason_label_tokchron);

  /// The histogram family name of metric `m`.
  [[nodiscard]] std::string& operator[](metric_id m) noexcept {
    return histograms[static_cast<std::size_t>(m)];
  }
  [[nodiscard]] const std::string& operator[](metric_id m) const noexcept {
    return histograms[static_cast<std::size_t>(m)];
  }

  /// vLLM's names (`metric_info::vllm_name`: `vllm:time_to_first_token_seconds`, ...,
  /// `vllm:request_success_total` labelled `finished_reason`) over tokchron's canonical
  /// definitions (per-token ITL, tokchron's finish-reason values). For vLLM's own semantics
  /// (per-step ITL, vLLM's finish reasons, counters that move per chunk, gauges) use
  /// `live_metrics` with `vllm_live_options` (live/presets.hpp, docs/library/live-metrics.md).
  [[nodiscard]] static serving_metric_names vllm() {
    serving_metric_names n;
    for (const auto& m : metric_table)
      if (m.served) n[m.id] = std::string(m.vllm_name);
    n.requests = name(live_source::requests, true);
    n.output_tokens = name(live_source::generation_tokens, true);
    n.prompt_tokens = name(live_source::prompt_tokens, true);
    n.preemptions = name(live_source::preemptions, true);
    n.outcome_label = std::string(live_reason_label_vllm);
    return n;
  }

 private:
  // The one list of these spellings: live/presets.hpp's `live_family_names`.
  static std::string name(live_source source, bool vllm) {
    const live_family_name& f = live_family_name_of(source);
    return std::string(vllm ? f.vllm : f.tokchron);
  }
  static std::array<std::string, metric_count> prometheus_names(std::string_view prefix) {
    std::array<std::string, metric_count> a;
    for (const auto& m : metric_table)
      if (m.served) a[static_cast<std::size_t>(m.id)] = prometheus_name(m.id, prefix);
    return a;
  }
};

/// How `serving_metrics` records and exports.
struct serving_metrics_options {
  serving_metric_names names;
  bucket_layout buckets = bucket_layout::exponential();
  /// The histograms' scale: 6 keeps quantiles within 0.54 % (log_histogram's default, 1 %).
  int scale = 6;
  /// Labels on every exported point (e.g. {"model_name", "llama-3-8b"}).
  label_set labels;

  /// vLLM's names and bucket lists over tokchron's definitions (see
  /// `serving_metric_names::vllm`).
  [[nodiscard]] static serving_metrics_options vllm() {
    serving_metrics_options o;
    o.names = serving_metric_names::vllm();
    o.buckets = bucket_layout::vllm();
    return o;
  }
};

/// The canonical metrics of finished requests, as a server exports them: one `log_histogram`
/// per metric marked `served` in metric_table (TTFT, TPOT, per-token ITL, E2E and the engine
/// phases; seconds) and counters of requests by finish reason, output and prompt tokens and
/// preemptions.
///
/// It is the single-writer mode of the aggregation model (`basic_distributions<log_histogram>`,
/// collect/distributions.hpp, recording `distributions_options::served()`: the served metrics of
/// every finished request) with the names, buckets and labels it is exported under.
///
/// `record` is O(chunks) and noexcept; memory grows with the range of values, not the count
/// (a few KiB per histogram). `merge` adds another replica's or thread's metrics without loss.
/// Thread safety: one writer; snapshot while nobody writes. Many recording threads: a
/// `distributions<sharded>` (tokchron/distributions.hpp) whose snapshots are merged in; a
/// running server with live scrapes uses `live_metrics` (live/recorder.hpp) instead.
class serving_metrics : public basic_distributions<log_histogram> {
  using base = basic_distributions<log_histogram>;

 public:
  /// Throws std::invalid_argument for a bad scale or bucket list.
  explicit serving_metrics(serving_metrics_options options = {})
      : base(distributions_options::served(), log_histogram::with_scale(options.scale)),
        options_(std::move(options)) {
    for (const auto& m : metric_table)
      if (m.served) detail::check_upper_bounds(options_.buckets.bounds(m.id));
  }

  // `record(timeline)`: records a finished request: every canonical metric it defines that is
  // served, its per-token ITL samples (when its store keeps chunks) and its counters. A request
  // that has not finished is not recorded: false, counted in `unfinished()`. Rejected samples
  // (NaN, memory) are counted by the histograms (`histogram(m).rejected()`).
  using base::record;

  // `merge(other)`: adds `other`'s samples and counters (same scale: lossless): another
  // `serving_metrics`, or distributions recorded with `distributions_options::served()`
  // elsewhere, e.g. a `distributions<sharded>` snapshot. Strong guarantee on std::bad_alloc.
  using base::merge;

  /// The histogram of metric `m` (empty for a metric that is not `served`).
  [[nodiscard]] const log_histogram& histogram(metric_id m) const noexcept { return (*this)[m]; }
  [[nodiscard]] std::uint64_t output_tokens() const noexcept { return counts().output_tokens; }
  [[nodiscard]] std::uint64_t prompt_tokens() const noexcept { return counts().prompt_tokens; }
  [[nodiscard]] std::uint64_t preemptions() const noexcept { return counts().preemptions; }
  /// `record` calls refused because the request had not finished.
  [[nodiscard]] std::uint64_t unfinished() const noexcept { return counts().unfinished; }
  [[nodiscard]] const serving_metrics_options& options() const noexcept { return options_; }

  /// The families, in a fixed order: the served metrics' histograms (in table order, classic
  /// buckets from the options), then the requests counter (one point per finish reason, zeros
  /// included, so every series exists from the first scrape), output tokens, prompt tokens,
  /// preemptions.
  [[nodiscard]] metrics_snapshot snapshot() const {
    metrics_snapshot s;
    const auto& n = options_.names;
    for (const auto& m : metric_table)
      if (m.served)
        s.family(n[m.id], std::string(m.help), metric_kind::histogram, "seconds")
            .add(classic_histogram(histogram(m.id), options_.buckets.bounds(m.id)),
                 options_.labels);
    auto& req = s.family(n.requests, "Finished requests, by finish reason.", metric_kind::counter);
    for (std::size_t r = 0; r < finish_reason_count; ++r) {
      label_set l = options_.labels;
      l.push_back(label{n.outcome_label, std::string(to_string(static_cast<finish_reason>(r)))});
      req.add(static_cast<double>(requests(static_cast<finish_reason>(r))), std::move(l));
    }
    s.family(n.output_tokens, "Output tokens of finished requests.", metric_kind::counter)
        .add(static_cast<double>(output_tokens()), options_.labels);
    s.family(n.prompt_tokens, "Prompt tokens of finished requests.", metric_kind::counter)
        .add(static_cast<double>(prompt_tokens()), options_.labels);
    s.family(n.preemptions, "Preemptions of finished requests.", metric_kind::counter)
        .add(static_cast<double>(preemptions()), options_.labels);
    return s;
  }

 private:
  serving_metrics_options options_;
};

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_EXPORT_SERVING_METRICS_HPP
