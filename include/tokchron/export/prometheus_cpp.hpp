// SPDX-License-Identifier: MIT
// tokchron-requires: prometheus-cpp
#ifndef TOKCHRON_EXPORT_PROMETHEUS_CPP_HPP
#define TOKCHRON_EXPORT_PROMETHEUS_CPP_HPP

/// \file
/// Adaptor for servers that already expose `/metrics` through prometheus-cpp (Debian
/// `prometheus-cpp-dev`; link its CMake target `core`, and `pull` for the Exposer, both in the
/// `prometheus-cpp` namespace). Not included by tokchron.hpp.
///
/// \code
///   #include <tokchron/export/prometheus_cpp.hpp>
///   auto m = std::make_shared<tokchron::prometheus_live_metrics>(
///       tokchron::vllm_live_options("llama-3-8b", 8192));
///   exposer.RegisterCollectable(m);   // the server's existing prometheus::Exposer
///   // ... per request, on any thread (live/recorder.hpp):
///   m->arrive(r); m->scheduled(r); m->chunk(r, tokens); m->finish(r);
/// \endcode

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include <prometheus/client_metric.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>

#include "tokchron/config.hpp"
#include "tokchron/export/serving_metrics.hpp"
#include "tokchron/exposition/snapshot_data.hpp"
#include "tokchron/live/recorder.hpp"
#include "tokchron/live/scrape.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// prometheus-cpp's `MetricFamily` list for `s`: counters named with `_total`, histograms with
/// their `+Inf` bucket, labels in order. prometheus-cpp's TextSerializer then writes the same
/// samples as `to_prometheus(s)` (HELP text aside: prometheus-cpp does not escape it).
[[nodiscard]] inline std::vector<prometheus::MetricFamily> to_prometheus_cpp(
    const metrics_snapshot& s) {
  std::vector<prometheus::MetricFamily> out;
  out.reserve(s.families.size());
  for (const auto& f : s.families) {
    prometheus::MetricFamily pf;
    pf.name = f.kind == metric_kind::counter ? f.name + "_total" : f.name;
    pf.help = f.help;
    switch (f.kind) {
      case metric_kind::counter: pf.type = prometheus::MetricType::Counter; break;
      case metric_kind::gauge: pf.type = prometheus::MetricType::Gauge; break;
      case metric_kind::histogram: pf.type = prometheus::MetricType::Histogram; break;
    }
    pf.metric.reserve(f.points.size());
    for (const auto& p : f.points) {
      prometheus::ClientMetric m;
      for (const auto& l : p.labels) m.label.push_back({l.name, l.value});
      switch (f.kind) {
        case metric_kind::counter: m.counter.value = p.value; break;
        case metric_kind::gauge: m.gauge.value = p.value; break;
        case metric_kind::histogram:
          m.histogram.sample_count = p.histogram.count;
          m.histogram.sample_sum = p.histogram.sum;
          m.histogram.bucket.reserve(p.histogram.buckets.size() + 1);
          for (const auto& b : p.histogram.buckets)
            m.histogram.bucket.push_back({b.cumulative_count, b.upper_bound});
          m.histogram.bucket.push_back(
              {p.histogram.count, std::numeric_limits<double>::infinity()});
          break;
      }
      pf.metric.push_back(std::move(m));
    }
    out.push_back(std::move(pf));
  }
  return out;
}

/// A prometheus-cpp `Collectable` that publishes whatever snapshot `source` returns on each
/// scrape (called on the Exposer's thread: `source` must be safe to call from there).
class prometheus_collectable : public prometheus::Collectable {
 public:
  explicit prometheus_collectable(std::function<metrics_snapshot()> source)
      : source_(std::move(source)) {}
  [[nodiscard]] std::vector<prometheus::MetricFamily> Collect() const override {
    return to_prometheus_cpp(source_());
  }

 private:
  std::function<metrics_snapshot()> source_;
};

/// Live server metrics (live/recorder.hpp) that are also a prometheus-cpp `Collectable`: any
/// number of threads record without a lock, the Exposer's thread scrapes (`scrape`,
/// live/scrape.hpp) on each collection.
///
/// \code
///   auto m = std::make_shared<tokchron::prometheus_live_metrics>(
///       tokchron::vllm_live_options("llama-3-8b", 8192));
///   exposer.RegisterCollectable(m);
///   tokchron::live_request r;         // per request; then m->arrive(r), m->chunk(r, n), ...
/// \endcode
template <class Clock = std::chrono::steady_clock>
class basic_prometheus_live_metrics : public basic_live_metrics<Clock>,
                                      public prometheus::Collectable {
 public:
  using basic_live_metrics<Clock>::basic_live_metrics;
  /// The families of `scrape(*this)`, converted by `to_prometheus_cpp`.
  [[nodiscard]] std::vector<prometheus::MetricFamily> Collect() const override {
    return to_prometheus_cpp(scrape(*this));
  }
};
/// Live metrics on the steady clock, as a prometheus-cpp `Collectable`.
using prometheus_live_metrics = basic_prometheus_live_metrics<>;

/// The `live_options` that export what `serving_metrics` with `o` exports: the same family
/// names, bucket bounds and constant labels (as label names with the default series' values),
/// on tokchron's canonical definitions (per-token ITL), default inclusion (scheduled requests
/// only). The families `serving_metrics` has no counterpart of (gauges, inference time, length
/// histograms) are left out; misuse and dropped samples are counted under tokchron's names.
[[nodiscard]] inline live_options to_live_options(const serving_metrics_options& o) {
  live_options l;
  for (const auto& lab : o.labels) {
    l.label_names.push_back(lab.name);
    l.default_label_values.push_back(lab.value);
    // Constant labels are the application's own: never cut.
    if (lab.value.size() > l.max_label_value_bytes) l.max_label_value_bytes = lab.value.size();
  }
  l.max_series = 1;
  // In live_histogram order, as the scrape wrote them before the families were data.
  for (const auto& [h, m] : {std::pair{live_histogram::ttft, metric_id::ttft},
                             std::pair{live_histogram::itl, metric_id::itl},
                             std::pair{live_histogram::tpot, metric_id::tpot},
                             std::pair{live_histogram::e2e, metric_id::e2e},
                             std::pair{live_histogram::queue_time, metric_id::queue_time},
                             std::pair{live_histogram::prefill_time, metric_id::prefill_time},
                             std::pair{live_histogram::decode_time, metric_id::decode_time}})
    if (!o.names[m].empty())
      l.families.push_back(live_histogram_family(o.names[m], h, o.buckets.bounds(m)));
  if (!o.names.requests.empty()) {
    live_family f = live_source_family(o.names.requests, live_source::requests);
    f.label = o.names.outcome_label;
    for (std::size_t k = 0; k < finish_reason_count; ++k)
      f.label_values.emplace_back(to_string(static_cast<finish_reason>(k)));
    l.families.push_back(std::move(f));
  }
  for (const auto& [name, source] :
       {std::pair{&o.names.prompt_tokens, live_source::prompt_tokens},
        std::pair{&o.names.output_tokens, live_source::generation_tokens},
        std::pair{&o.names.preemptions, live_source::preemptions}})
    if (!name->empty()) l.families.push_back(live_source_family(*name, source));
  l.families.push_back(live_source_family("tokchron_misuse", live_source::misuse));
  l.families.push_back(live_source_family("tokchron_dropped_samples", live_source::dropped));
  return l;
}

/// A prometheus-cpp `Collectable` with the families of `serving_metrics`: a thin layer over
/// `prometheus_live_metrics` (no lock on the recording path): `record(timeline)` of finished
/// requests from any thread, scraped on the Exposer's thread. Families as `to_live_options`
/// says. For streamed events, labelled series or vLLM's semantics use
/// `prometheus_live_metrics` directly; for a mergeable `log_histogram` of the requests keep a
/// `serving_metrics` (single writer) beside it.
class prometheus_serving_metrics : public prometheus_live_metrics {
 public:
  /// Throws std::invalid_argument for bad options (as `basic_live_metrics`).
  explicit prometheus_serving_metrics(const serving_metrics_options& options = {})
      : prometheus_live_metrics(to_live_options(options)) {}

  /// Records a finished request (`basic_live_metrics::record`); false for an unfinished one
  /// (counted as misuse). Lock-free, noexcept.
  template <class Timeline>
  bool record(const Timeline& tl) noexcept {
    return prometheus_live_metrics::record(tl) == record_status::ok;
  }
  /// `scrape(*this)`.
  [[nodiscard]] metrics_snapshot snapshot() const { return scrape(*this); }
  /// Recording calls lost because a thread's shard could not be allocated.
  [[nodiscard]] std::uint64_t dropped() const noexcept {
    return detail::live_access::state(*this).lost_shards.load(std::memory_order_relaxed);
  }
};

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_EXPORT_PROMETHEUS_CPP_HPP
