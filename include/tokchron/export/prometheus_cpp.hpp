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
///   auto tc = std::make_shared<tokchron::prometheus_serving_metrics>();
///   exposer.RegisterCollectable(tc);   // the server's existing prometheus::Exposer
///   // ... when a request finishes, on any thread:
///   tc->record(timeline);
/// \endcode

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/client_metric.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>

#include "tokchron/config.hpp"
#include "tokchron/export/serving_metrics.hpp"
#include "tokchron/export/snapshot_data.hpp"
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

/// `serving_metrics` behind a mutex, published as a prometheus-cpp `Collectable`: any thread
/// records, the Exposer's thread collects. A scrape holds the lock only while it snapshots
/// (O(buckets)); the conversion runs outside it.
class prometheus_serving_metrics : public prometheus::Collectable {
 public:
  explicit prometheus_serving_metrics(serving_metrics_options options = {})
      : metrics_(std::move(options)) {}

  /// `serving_metrics::record` under the lock; noexcept (a failure to lock is counted in
  /// `dropped()` and the request is not recorded).
  template <class Timeline>
  bool record(const Timeline& tl) noexcept {
    TOKCHRON_TRY {
      std::lock_guard<std::mutex> lock(mutex_);
      return metrics_.record(tl);
    }
    TOKCHRON_CATCH_ALL {  // std::mutex::lock throws std::system_error only on EDEADLK
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    return false;
  }
  /// A copy of the metrics recorded so far (for merging, reports, tests).
  [[nodiscard]] serving_metrics metrics() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return metrics_;
  }
  [[nodiscard]] metrics_snapshot snapshot() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return metrics_.snapshot();
  }
  [[nodiscard]] std::uint64_t dropped() const noexcept {
    return dropped_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::vector<prometheus::MetricFamily> Collect() const override {
    return to_prometheus_cpp(snapshot());
  }

 private:
  mutable std::mutex mutex_;
  serving_metrics metrics_;
  std::atomic<std::uint64_t> dropped_{0};
};

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_EXPORT_PROMETHEUS_CPP_HPP
