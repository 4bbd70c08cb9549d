// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_LIVE_PRESETS_HPP
#define TOKCHRON_LIVE_PRESETS_HPP

/// \file
/// Ready-made `live_options`: tokchron's names and canonical definitions, or vLLM's names,
/// labels, buckets and semantics (looked up in vLLM's source; docs/live-metrics.md lists each
/// point with its source line). Include this where the server builds its metrics object, not
/// in its hot files (it pulls in the bucket helpers).
///
/// \code
///   tokchron::live_metrics m(tokchron::vllm_live_options("llama-3-8b", 8192));
///   tokchron::live_metrics t(tokchron::tokchron_live_options({"model", "adapter"},
///                                                            {"llama-3-8b", ""}));
/// \endcode

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/export/buckets.hpp"
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

/// tokchron's names (`tokchron_*`, histogram stems from metric_table) and canonical
/// definitions; every latency histogram on `exponential_buckets(4, 1 ms, 1000 s)`, so PromQL
/// quantiles over any sum of replicas err by at most 4.43 % inside that range; lengths on
/// 1-2-5 buckets up to `max_tokens_bound`. Labels: `label_names`, default series
/// `default_label_values` (one per name). Throws std::invalid_argument when they differ in
/// size.
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
  const std::vector<double> lat = bucket_layout::exponential().request;
  const std::vector<double> len = one_two_five_buckets(max_tokens_bound);
  auto& n = o.names.histograms;
  auto set = [&](live_histogram h, std::string name, const std::vector<double>& b) {
    n[static_cast<std::size_t>(h)] = std::move(name);
    o.buckets[static_cast<std::size_t>(h)] = b;
  };
  set(live_histogram::ttft, prometheus_name(metric_id::ttft, "tokchron_"), lat);
  set(live_histogram::itl, prometheus_name(metric_id::itl, "tokchron_"), lat);
  set(live_histogram::tpot, prometheus_name(metric_id::tpot, "tokchron_"), lat);
  set(live_histogram::e2e, prometheus_name(metric_id::e2e, "tokchron_"), lat);
  set(live_histogram::queue_time, prometheus_name(metric_id::queue_time, "tokchron_"), lat);
  set(live_histogram::prefill_time, prometheus_name(metric_id::prefill_time, "tokchron_"), lat);
  set(live_histogram::decode_time, prometheus_name(metric_id::decode_time, "tokchron_"), lat);
  set(live_histogram::inference_time, "tokchron_inference_seconds", lat);
  set(live_histogram::prompt_tokens, "tokchron_request_prompt_tokens", len);
  set(live_histogram::generation_tokens, "tokchron_request_output_tokens", len);
  set(live_histogram::max_tokens, "tokchron_request_max_tokens", len);
  live_names& m = o.names;
  m.requests = "tokchron_requests";
  m.reason_label = "outcome";
  m.prompt_tokens = "tokchron_prompt_tokens";
  m.generation_tokens = "tokchron_output_tokens";
  m.preemptions = "tokchron_preemptions";
  m.running = "tokchron_requests_running";
  m.waiting = "tokchron_requests_waiting";
  m.kv_cache_usage = "tokchron_kv_cache_usage_ratio";
  m.prefix_cache_queries = "tokchron_prefix_cache_queries";
  m.prefix_cache_hits = "tokchron_prefix_cache_hits";
  m.misuse = "tokchron_misuse";
  m.label_overflow = "tokchron_label_overflow";
  m.dropped = "tokchron_dropped_samples";
  return o;
}

/// vLLM's `/metrics` (vllm/v1/metrics/loggers.py, PrometheusStatLogger): labels `model_name`
/// and `engine` (default series: `model_name`, `engine`), vLLM's names, bucket lists (lengths
/// on `one_two_five_buckets(max_model_len)`), per-step ITL, per-request TPOT with 0 for
/// one-token answers, finished_reason values, and the deprecated
/// `vllm:time_per_output_token_seconds` / `vllm:gpu_cache_usage_perc` that vLLM's example
/// Grafana dashboard still queries. See docs/live-metrics.md for what tokchron cannot know.
[[nodiscard]] inline live_options vllm_live_options(std::string model_name,
                                                    std::uint64_t max_model_len,
                                                    std::string engine = "0") {
  live_options o;
  o.semantics = live_semantics::vllm;
  o.label_names = {"model_name", "engine"};
  o.default_label_values = {std::move(model_name), std::move(engine)};
  const std::vector<double> len = one_two_five_buckets(max_model_len);
  auto& n = o.names.histograms;
  auto set = [&](live_histogram h, std::string name, std::vector<double> b) {
    n[static_cast<std::size_t>(h)] = std::move(name);
    o.buckets[static_cast<std::size_t>(h)] = std::move(b);
  };
  // The table's vLLM names for the metrics it holds; the others are not tokchron metrics.
  set(live_histogram::ttft, std::string(info(metric_id::ttft).vllm_name), vllm_ttft_buckets());
  set(live_histogram::itl, std::string(info(metric_id::itl).vllm_name), vllm_itl_buckets());
  set(live_histogram::tpot, std::string(info(metric_id::tpot).vllm_name), vllm_itl_buckets());
  set(live_histogram::e2e, std::string(info(metric_id::e2e).vllm_name),
      vllm_request_latency_buckets());
  set(live_histogram::queue_time, std::string(info(metric_id::queue_time).vllm_name),
      vllm_request_latency_buckets());
  set(live_histogram::prefill_time, std::string(info(metric_id::prefill_time).vllm_name),
      vllm_request_latency_buckets());
  set(live_histogram::decode_time, std::string(info(metric_id::decode_time).vllm_name),
      vllm_request_latency_buckets());
  set(live_histogram::inference_time, "vllm:request_inference_time_seconds",
      vllm_request_latency_buckets());
  set(live_histogram::prompt_tokens, "vllm:request_prompt_tokens", len);
  set(live_histogram::generation_tokens, "vllm:request_generation_tokens", len);
  set(live_histogram::max_tokens, "vllm:request_max_num_generation_tokens", len);
  live_names& m = o.names;
  m.itl_alias = "vllm:time_per_output_token_seconds";
  m.max_tokens_alias = "vllm:request_params_max_tokens";
  m.requests = "vllm:request_success";
  m.reason_label = "finished_reason";
  m.prompt_tokens = "vllm:prompt_tokens";
  m.generation_tokens = "vllm:generation_tokens";
  m.preemptions = "vllm:num_preemptions";
  m.running = "vllm:num_requests_running";
  m.waiting = "vllm:num_requests_waiting";
  m.kv_cache_usage = "vllm:kv_cache_usage_perc";
  m.kv_cache_usage_alias = "vllm:gpu_cache_usage_perc";
  m.prefix_cache_queries = "vllm:prefix_cache_queries";
  m.prefix_cache_hits = "vllm:prefix_cache_hits";
  m.rejected = "tokchron_rejected_requests";
  m.misuse = "tokchron_misuse";
  m.label_overflow = "tokchron_label_overflow";
  m.dropped = "tokchron_dropped_samples";
  return o;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_LIVE_PRESETS_HPP
