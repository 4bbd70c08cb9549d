// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_LIVE_PRESETS_HPP
#define TOKCHRON_LIVE_PRESETS_HPP

/// \file
/// Ready-made `live_options`: tokchron's names and canonical definitions, or vLLM's names,
/// labels, buckets and semantics (looked up in vLLM's source; docs/library/live-metrics.md lists
/// each point with its source line). Include this where the server builds its metrics object, not
/// in its hot files (it pulls in the bucket helpers).
///
/// \code
///   tokchron::live_metrics m(tokchron::vllm_live_options("llama-3-8b", 8192));
///   tokchron::live_metrics t(tokchron::tokchron_live_options({"model", "adapter"},
///                                                            {"llama-3-8b", ""}));
/// \endcode

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/exposition/buckets.hpp"
#include "tokchron/live/options.hpp"
#include "tokchron/metrics/metric.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// vLLM's `build_1_2_5_buckets(max_value)` (vllm/v1/metrics/loggers.py): 1, 2, 5, 10, 20,
/// 50, ... while <= `max_value` (empty for 0). Used for its prompt- and generation-length
/// histograms with `max_model_len`.
[[nodiscard]] inline std::vector<double> one_two_five_buckets(std::uint64_t max_value) {
  std::vector<double> b;
  for (std::uint64_t scale = 1;; scale *= 10) {
    for (const std::uint64_t m : {1u, 2u, 5u}) {
      if (m * scale > max_value) return b;
      b.push_back(static_cast<double>(m * scale));
    }
    if (scale > max_value / 10) return b;
  }
}

/// The metric of `metric_table` that live histogram `h` records, if it is one.
[[nodiscard]] constexpr std::optional<metric_id> live_metric(live_histogram h) noexcept {
  switch (h) {
    case live_histogram::ttft: return metric_id::ttft;
    case live_histogram::itl: return metric_id::itl;
    case live_histogram::tpot: return metric_id::tpot;
    case live_histogram::e2e: return metric_id::e2e;
    case live_histogram::queue_time: return metric_id::queue_time;
    case live_histogram::prefill_time: return metric_id::prefill_time;
    case live_histogram::decode_time: return metric_id::decode_time;
    default: return std::nullopt;
  }
}

/// Every family name in scheme `s`: histograms of `metric_table` metrics from the table
/// (`prometheus_name(m, "tokchron_")` or `vllm_name`), the others from `live_histogram_names`
/// and `live_family_names`.
[[nodiscard]] inline live_names live_names_for(live_semantics s) {
  const bool vllm = s == live_semantics::vllm;
  live_names n;
  for (std::size_t h = 0; h < live_histogram_count; ++h)
    if (const auto m = live_metric(static_cast<live_histogram>(h)))
      n.histograms[h] = vllm ? std::string(info(*m).vllm_name) : prometheus_name(*m, "tokchron_");
  for (const auto& r : live_histogram_names)
    n.histograms[static_cast<std::size_t>(r.histogram)] = std::string(vllm ? r.vllm : r.tokchron);
  for (const auto& f : live_family_names) n.*(f.member) = std::string(vllm ? f.vllm : f.tokchron);
  return n;
}

/// tokchron's names (`live_names_for(live_semantics::tokchron)`) and canonical definitions;
/// every latency histogram on `exponential_buckets(4, 1 ms, 1000 s)`, so PromQL quantiles over
/// any sum of replicas err by at most 4.43 % inside that range; lengths on 1-2-5 buckets up to
/// `max_tokens_bound`. Labels: `label_names`, default series `default_label_values` (one per
/// name). Throws std::invalid_argument when they differ in size.
[[nodiscard]] inline live_options tokchron_live_options(
    std::vector<std::string> label_names = {}, std::vector<std::string> default_label_values = {},
    std::uint64_t max_tokens_bound = 1000000) {
  if (label_names.size() != default_label_values.size())
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: tokchron_live_options needs one default value per label name");
  live_options o;
  o.semantics = live_semantics::tokchron;
  o.label_names = std::move(label_names);
  o.default_label_values = std::move(default_label_values);
  o.names = live_names_for(o.semantics);
  const std::vector<double> lat = bucket_layout::exponential().request;
  const std::vector<double> len = one_two_five_buckets(max_tokens_bound);
  for (std::size_t h = 0; h < live_histogram_count; ++h)
    o.buckets[h] = detail::live_is_time(static_cast<live_histogram>(h)) ? lat : len;
  return o;
}

/// vLLM's `/metrics` (vllm/v1/metrics/loggers.py, PrometheusStatLogger): labels `model_name`
/// and `engine` (default series: `model_name`, `engine`), vLLM's names
/// (`live_names_for(live_semantics::vllm)`), bucket lists (lengths on
/// `one_two_five_buckets(max_model_len)`), per-step ITL, per-request TPOT with 0 for one-token
/// answers, finished_reason values, and the deprecated `vllm:time_per_output_token_seconds` /
/// `vllm:gpu_cache_usage_perc` that vLLM's earlier example Grafana dashboard queries. See
/// docs/library/live-metrics.md for what tokchron cannot know.
[[nodiscard]] inline live_options vllm_live_options(std::string model_name,
                                                    std::uint64_t max_model_len,
                                                    std::string engine = "0") {
  live_options o;
  o.semantics = live_semantics::vllm;
  o.label_names = {"model_name", "engine"};
  o.default_label_values = {std::move(model_name), std::move(engine)};
  o.names = live_names_for(o.semantics);
  for (std::size_t h = 0; h < live_histogram_count; ++h) {
    switch (static_cast<live_histogram>(h)) {
      case live_histogram::ttft: o.buckets[h] = vllm_ttft_buckets(); break;
      case live_histogram::itl:
      case live_histogram::tpot: o.buckets[h] = vllm_itl_buckets(); break;
      default:
        o.buckets[h] = detail::live_is_time(static_cast<live_histogram>(h))
                           ? vllm_request_latency_buckets()
                           : one_two_five_buckets(max_model_len);
    }
  }
  return o;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_LIVE_PRESETS_HPP
