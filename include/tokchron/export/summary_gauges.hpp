// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXPORT_SUMMARY_GAUGES_HPP
#define TOKCHRON_EXPORT_SUMMARY_GAUGES_HPP

/// \file
/// Run summaries and SLA verdicts as gauges in a snapshot (`tokchron_run_*`, `tokchron_slo_*`).

#include <optional>
#include <string>
#include <utility>

#include "tokchron/config.hpp"
#include "tokchron/exposition/snapshot_data.hpp"
#include "tokchron/metrics/metric.hpp"
#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/sla/objective.hpp"
#include "tokchron/sla/verdict.hpp"

TOKCHRON_BEGIN_NAMESPACE

// `run_summary` (metrics/run_summary.hpp) and `sla_verdict` (sla/verdict.hpp) are plain data
// already; exporters read them as they are. These add them to a snapshot as gauges.

/// Adds a run summary's scalar fields as gauges named `prefix` + field
/// (`tokchron_run_duration_seconds`, `..._request_throughput`, `..._output_throughput`,
/// `..._total_token_throughput`, `..._completed`, `..._failed`, `..._mean_concurrency`,
/// `..._peak_concurrency`) and each time distribution's percentiles as
/// `prometheus_name(metric, prefix)` gauges (`tokchron_run_e2e_seconds{percentile="95"}`; an
/// undefined value is left out), every point labelled `profile` plus `labels`.
inline void add_run_summary(metrics_snapshot& s, const run_summary& r, const label_set& labels = {},
                            const std::string& prefix = "tokchron_run_") {
  label_set base = labels;
  base.push_back(label{"profile", r.profile});
  auto gauge = [&](const std::string& name, const char* help, std::optional<double> v) {
    auto& f = s.family(prefix + name, help, metric_kind::gauge);
    if (v) f.add(*v, base);
  };
  gauge("duration_seconds", "Run duration.", r.duration);
  gauge("request_throughput", "Completed requests per second.", r.request_throughput);
  gauge("output_throughput", "Output tokens per second.", r.output_throughput);
  gauge("total_token_throughput", "Prompt and output tokens per second.", r.total_token_throughput);
  gauge("completed", "Requests completed.", static_cast<double>(r.completed));
  gauge("failed", "Requests failed.", static_cast<double>(r.failed));
  gauge("mean_concurrency", "Sum of E2E latencies over the duration.", r.mean_concurrency);
  gauge("peak_concurrency", "Most requests in flight at once.",
        static_cast<double>(r.peak_concurrency));
  for (const auto& m : metric_table) {
    const distribution* d = r.of(m.id);
    if (d == nullptr || !m.is_time() || d->count == 0) continue;
    auto& f = s.family(prometheus_name(m.id, prefix),
                       "Percentiles of the run's distribution, by the profile's method.",
                       metric_kind::gauge, "seconds");
    for (const auto& p : d->percentiles) {
      if (!p.value) continue;
      label_set l = base;
      l.push_back(label{"percentile", detail::shortest_number(p.percent)});
      f.add(*p.value, std::move(l));
    }
  }
}

/// Adds SLA verdicts as gauges `prefix` + `pass` (1 pass, 0 fail; no point when undecided),
/// `decided`, `measured`, `threshold`, `margin` and `samples`, each point labelled `labels` plus
/// `objective` ("p95(ttft) < 1.5s"). Values in the metric's base unit (seconds, tokens/s).
inline void add_verdicts(metrics_snapshot& s, const sla_verdict& v, const label_set& labels = {},
                         const std::string& prefix = "tokchron_slo_") {
  auto fam = [&](const char* name, const char* help) {
    return metric_family{prefix + name, help, metric_kind::gauge, {}, {}};
  };
  metric_family pass = fam("pass", "1 when the objective passes, 0 when it fails."),
                decided = fam("decided", "1 when the data decide the objective, 0 when not."),
                measured = fam("measured", "The measured statistic."),
                threshold = fam("threshold", "The objective's threshold."),
                margin = fam("margin", "Signed headroom (negative: missed by that much)."),
                samples = fam("samples", "Samples judged.");
  for (const auto& x : v.verdicts) {
    label_set l = labels;
    l.push_back(label{"objective", x.target.to_string()});
    if (x.decided()) pass.add(x.passed() ? 1.0 : 0.0, l);
    decided.add(x.decided() ? 1.0 : 0.0, l);
    if (x.measured) measured.add(*x.measured, l);
    threshold.add(x.target.threshold, l);
    if (x.margin) margin.add(*x.margin, l);
    samples.add(static_cast<double>(x.samples), l);
  }
  for (auto* f : {&pass, &decided, &measured, &threshold, &margin, &samples})
    s.families.push_back(std::move(*f));
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_EXPORT_SUMMARY_GAUGES_HPP
