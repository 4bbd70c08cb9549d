// tokchron-requires: nlohmann-json
// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXPORT_JSON_HPP
#define TOKCHRON_EXPORT_JSON_HPP

/// \file
/// JSON of run summaries, SLA verdicts and claim audits: the one schema every tool writes
/// (`tokchron-report --format json`, `batching-executor --format json`). An adaptor: needs
/// nlohmann-json (Debian nlohmann-json3-dev). Objects keep their keys in the order below
/// (`nlohmann::ordered_json`); times are seconds; an undefined value is `null`.
///
/// | function            | object                                                            |
/// |---------------------|-------------------------------------------------------------------|
/// | `distribution_json` | count, mean, median, std, min, max, one `pN` key per percentile   |
/// |                     | (`percentile_key`), `invalid` when the profile refused requests   |
/// | `summary_json`      | profile, completed, failed, requests_by_reason {stop, length,     |
/// |                     | aborted, error, timed_out, rejected}, inclusion (the population:  |
/// |                     | completed, scheduled, all; null: the profile's completed          |
/// |                     | requests), duration, the three throughputs,                       |
/// |                     | metrics {ttft, tpot, itl, e2e, queue_time?, prefill_time?,        |
/// |                     | decode_time?, output_rate}, requests, input_tokens, output_tokens, |
/// |                     | concurrencies, per-GPU throughputs when `gpus` is set, lengths    |
/// |                     | {prompt, output}, then each `extra` (goodput, attainment, ...)    |
/// | `verdict_json`      | objective, status, measured, margin, lower, upper (`null` when    |
/// |                     | unbounded), confidence, samples, then misses,                     |
/// |                     | more_samples_needed, more_samples_if_no_misses and reason when set|
/// | `sla_json`          | status (the overall verdict), verdicts [verdict_json...]          |
/// | `finding_json`      | check, consistent, claimed, implied, factor, allowed, message     |
/// | `audit_json`        | name, consistent, findings [finding_json...]                      |

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "tokchron/config.hpp"
#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/sla/consistency.hpp"
#include "tokchron/sla/verdict.hpp"

TOKCHRON_BEGIN_NAMESPACE

namespace detail {
/// `v`, or null when undefined or not finite (JSON has no infinities).
[[nodiscard]] inline nlohmann::ordered_json json_number(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}
}  // namespace detail

/// One distribution (see the file comment).
[[nodiscard]] inline nlohmann::ordered_json distribution_json(const distribution& d) {
  using detail::json_number;
  nlohmann::ordered_json j;
  j["count"] = d.count;
  j["mean"] = json_number(d.mean);
  j["median"] = json_number(d.median);
  j["std"] = json_number(d.stddev);
  j["min"] = json_number(d.min);
  j["max"] = json_number(d.max);
  for (const auto& p : d.percentiles) j[percentile_key(p.percent)] = json_number(p.value);
  if (d.invalid) j["invalid"] = d.invalid;
  return j;
}

/// One run summary (see the file comment). Queue, prefill and decode appear only when some
/// request recorded them, the metrics of `run_summary::kept_when_measured` and the reasoning
/// lengths only when some request measured them; the per-GPU throughputs only when the GPU
/// count is known.
[[nodiscard]] inline nlohmann::ordered_json summary_json(const run_summary& s) {
  using detail::json_number;
  nlohmann::ordered_json j;
  j["profile"] = s.profile;
  j["completed"] = s.completed;
  j["failed"] = s.failed;
  nlohmann::ordered_json reasons;
  for (std::size_t r = 0; r < finish_reason_count; ++r)
    reasons[std::string(to_string(static_cast<finish_reason>(r)))] = s.requests_by_reason[r];
  j["requests_by_reason"] = std::move(reasons);
  j["inclusion"] = s.inclusion ? nlohmann::ordered_json(std::string(to_string(*s.inclusion)))
                               : nlohmann::ordered_json(nullptr);
  j["duration"] = json_number(s.duration);
  j["request_throughput"] = json_number(s.request_throughput);
  j["output_throughput"] = json_number(s.output_throughput);
  j["total_token_throughput"] = json_number(s.total_token_throughput);
  nlohmann::ordered_json m;
  for (const metric_id id : run_summary::kept) {  // keys: the metric table's names
    const distribution& d = *s.of(id);
    if (!run_summary::needs_server_events(id) || d.count)
      m[std::string(to_string(id))] = distribution_json(d);
  }
  for (const metric_id id : run_summary::kept_when_measured)  // reasoning, caching, ...
    if (s.of(id)->count) m[std::string(to_string(id))] = distribution_json(*s.of(id));
  j["metrics"] = std::move(m);
  j["requests"] = s.requests;
  j["input_tokens"] = s.input_tokens;
  j["output_tokens"] = s.output_tokens;
  j["mean_concurrency"] = json_number(s.mean_concurrency);
  j["time_weighted_concurrency"] = json_number(s.time_weighted_concurrency);
  j["peak_concurrency"] = s.peak_concurrency;
  if (s.gpus) {
    j["gpus"] = *s.gpus;
    j["request_throughput_per_gpu"] = json_number(s.request_throughput_per_gpu);
    j["output_throughput_per_gpu"] = json_number(s.output_throughput_per_gpu);
    j["total_token_throughput_per_gpu"] = json_number(s.total_token_throughput_per_gpu);
  }
  j["lengths"] = {{"prompt", distribution_json(s.prompt_lengths)},
                  {"output", distribution_json(s.output_lengths)}};
  if (s.reasoning_lengths.count) {
    j["lengths"]["reasoning"] = distribution_json(s.reasoning_lengths);
    j["reasoning_tokens"] = s.reasoning_tokens;
  }
  for (const auto& [k, v] : s.extra) j[k] = json_number(v);
  return j;
}

/// One objective's verdict (see the file comment).
[[nodiscard]] inline nlohmann::ordered_json verdict_json(const verdict& v) {
  using detail::json_number;
  nlohmann::ordered_json j;
  j["objective"] = v.target.to_string();
  j["status"] = std::string(to_string(v.status));
  j["measured"] = json_number(v.measured);
  j["margin"] = json_number(v.margin);
  j["lower"] = json_number(v.lower);
  j["upper"] = json_number(v.upper);
  j["confidence"] = v.confidence;
  j["samples"] = v.samples;
  if (v.misses) j["misses"] = *v.misses;
  if (v.more_samples_needed) j["more_samples_needed"] = *v.more_samples_needed;
  if (v.more_samples_if_no_misses) j["more_samples_if_no_misses"] = *v.more_samples_if_no_misses;
  if (!v.reason.empty()) j["reason"] = std::string(v.reason);
  return j;
}

/// A whole SLA's judgement: the overall status and one verdict per objective.
[[nodiscard]] inline nlohmann::ordered_json sla_json(const sla_verdict& s) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const auto& v : s.verdicts) a.push_back(verdict_json(v));
  nlohmann::ordered_json j;
  j["status"] = std::string(to_string(s.overall()));
  j["verdicts"] = std::move(a);
  return j;
}

/// One audit check's outcome (see the file comment).
[[nodiscard]] inline nlohmann::ordered_json finding_json(const finding& f) {
  using detail::json_number;
  nlohmann::ordered_json j;
  j["check"] = std::string(f.check);
  j["consistent"] = f.consistent;
  j["claimed"] = json_number(f.claimed);
  j["implied"] = json_number(f.implied);
  j["factor"] = json_number(f.factor);
  j["allowed"] = json_number(f.allowed);
  j["message"] = f.message;
  return j;
}

/// One report's audit: its name, whether every check passed, and every finding.
[[nodiscard]] inline nlohmann::ordered_json audit_json(const audit_report& r) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const auto& f : r.findings) a.push_back(finding_json(f));
  nlohmann::ordered_json j;
  j["name"] = r.name;
  j["consistent"] = r.consistent();
  j["findings"] = std::move(a);
  return j;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_EXPORT_JSON_HPP
