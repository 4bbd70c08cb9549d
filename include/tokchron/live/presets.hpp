// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_LIVE_PRESETS_HPP
#define TOKCHRON_LIVE_PRESETS_HPP

/// \file
/// Ready-made `live_options`: tokchron's names and canonical definitions, or the names, labels,
/// buckets and semantics of vLLM, SGLang, Text Generation Inference, the llama.cpp server or
/// trtllm-serve (looked up in each server's source; docs/library/live-metrics.md lists each
/// point with its source line). Include this where the server builds its metrics object, not
/// in its hot files (it pulls in the bucket helpers).
///
/// \code
///   tokchron::live_metrics m(tokchron::vllm_live_options("llama-3-8b", 8192));
///   tokchron::live_metrics t(tokchron::tokchron_live_options({"model", "adapter"},
///                                                            {"llama-3-8b", ""}));
///   tokchron::live_metrics s(tokchron::sglang_live_options("llama-3-8b"));
///   tokchron::live_metrics g(tokchron::tgi_live_options(4095, 4096));
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
#include "tokchron/timeline/event.hpp"

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

/// The index of histogram `h` in `live_names::histograms` and `live_options::buckets`.
[[nodiscard]] constexpr std::size_t live_index(live_histogram h) noexcept {
  return static_cast<std::size_t>(h);
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
  o.buckets[live_index(live_histogram::validation_time)].clear();  // not exported
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
      case live_histogram::validation_time: break;  // not exported
      default:
        o.buckets[h] = detail::live_is_time(static_cast<live_histogram>(h))
                           ? vllm_request_latency_buckets()
                           : one_two_five_buckets(max_model_len);
    }
  }
  return o;
}

/// The names of a preset with nothing exported but tokchron's own counters (misuse, label
/// overflow, dropped samples, and rejected requests where the server has no such counter).
[[nodiscard]] inline live_names tokchron_own_names() {
  live_names n;
  n.misuse = "tokchron_misuse";
  n.label_overflow = "tokchron_label_overflow";
  n.long_label_values = "tokchron_long_label_values";
  n.dropped = "tokchron_dropped_samples";
  return n;
}

/// SGLang's `/metrics` (sgl-project/sglang python/sglang/srt/metrics/collector.py at
/// 00ae9c1590d2d0bb6c0bfff39e312c34ae3dd538, TokenizerMetricsCollector and
/// SchedulerMetricsCollector; called from python/sglang/srt/managers/tokenizer_manager.py
/// `collect_metrics` once per output batch): label `model_name`; `sglang:time_to_first_token_
/// seconds` as the first batch arrives, `sglang:inter_token_latency_seconds` with k samples of
/// g / k for each later batch of k tokens (`observe_inter_token_latency`: the bucket of
/// interval / num_new_tokens gets num_new_tokens, the sum the interval), and when the request
/// finishes `sglang:e2e_request_latency_seconds`, `sglang:prompt_tokens_total`,
/// `sglang:generation_tokens_total`, `sglang:cached_tokens_total`, `sglang:num_requests_total`
/// (`observe_one_finished_request`); `sglang:num_aborted_requests_total`;
/// `sglang:queue_time_seconds` when the scheduler first runs the request; the running and queue
/// gauges; `sglang:num_retracted_requests_total` from preemptions; `sglang:token_usage` is the
/// server-fed KV-cache gauge. Bucket lists are SGLang's defaults.
[[nodiscard]] inline live_options sglang_live_options(std::string model_name) {
  live_options o;
  o.semantics = live_semantics::sglang;
  o.label_names = {"model_name"};
  o.default_label_values = {std::move(model_name)};
  live_names n = tokchron_own_names();
  n.histograms[live_index(live_histogram::ttft)] = "sglang:time_to_first_token_seconds";
  n.histograms[live_index(live_histogram::itl)] = "sglang:inter_token_latency_seconds";
  n.histograms[live_index(live_histogram::e2e)] = "sglang:e2e_request_latency_seconds";
  n.histograms[live_index(live_histogram::queue_time)] = "sglang:queue_time_seconds";
  n.prompt_tokens = "sglang:prompt_tokens";
  n.generation_tokens = "sglang:generation_tokens";
  n.prompt_tokens_cached = "sglang:cached_tokens";
  n.preemptions = "sglang:num_retracted_requests";
  n.running = "sglang:num_running_reqs";
  n.waiting = "sglang:num_queue_reqs";
  n.kv_cache_usage = "sglang:token_usage";
  n.reason_counters = {
      {"sglang:num_requests",
       static_cast<std::uint8_t>(
           live_reason_bit(finish_reason::stop) | live_reason_bit(finish_reason::length) |
           live_reason_bit(finish_reason::aborted) | live_reason_bit(finish_reason::error) |
           live_reason_bit(finish_reason::timed_out)),
       "Number of requests processed."},
      {"sglang:num_aborted_requests",
       static_cast<std::uint8_t>(live_reason_bit(finish_reason::aborted) |
                                 live_reason_bit(finish_reason::timed_out)),
       "Number of requests aborted."}};
  n.rejected = "tokchron_rejected_requests";
  o.names = std::move(n);
  o.buckets[live_index(live_histogram::ttft)] = {0.1, 0.2, 0.4, 0.6, 0.8, 1,  2,   4,   6,
                                                 8,   10,  20,  40,  60,  80, 100, 200, 400};
  o.buckets[live_index(live_histogram::itl)] = {
      0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060,
      0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000};
  o.buckets[live_index(live_histogram::e2e)] = {0.1, 0.2, 0.4, 0.6,  0.8,  1,   2,  4,
                                                6,   8,   10,  20,   40,   60,  80, 100,
                                                200, 400, 600, 1200, 1800, 2400};
  o.buckets[live_index(live_histogram::queue_time)] = {
      0.0, 0.1, 0.2, 0.5, 1,    2,    3,    4,    5,    10,   15,   20,
      30,  40,  50,  60,  70,   80,   90,   100,  200,  300,  400,  500,
      600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000};
  return o;
}

/// Text Generation Inference's duration buckets (router/src/server.rs at
/// 003eaec0fbe00aacf03547b317163363cef56ab9, `start`): 35 edges, 0.0001 multiplied by 1.5 once
/// per edge, as TGI computes them; every family whose name ends in "duration".
[[nodiscard]] inline std::vector<double> tgi_duration_buckets() {
  std::vector<double> b;
  b.reserve(35);
  double value = 0.0001;
  for (int i = 0; i < 35; ++i) {
    value *= 1.5;
    b.push_back(value);
  }
  return b;
}

/// TGI's linear buckets: `max / 100 * (x + 1)` for x = 0..99 (router/src/server.rs). Throws
/// std::invalid_argument for a maximum of 0 (TGI's edges would all be 0).
[[nodiscard]] inline std::vector<double> tgi_linear_buckets(std::uint64_t max) {
  if (max == 0)
    TOKCHRON_THROW(std::invalid_argument, "tokchron: TGI's length buckets need max > 0");
  std::vector<double> b;
  b.reserve(100);
  for (int x = 0; x < 100; ++x) b.push_back(static_cast<double>(max) / 100.0 * (x + 1));
  return b;
}

/// Text Generation Inference's router `/metrics` (huggingface/text-generation-inference
/// router/src/server.rs at 003eaec0fbe00aacf03547b317163363cef56ab9, `generate_internal` and
/// `generate_stream_internal`; router/src/validation.rs; backends/v3/src/queue.rs and
/// backend.rs at db931fcf42da018a3657580c64bf2720f167f9ab): no labels; at the end of a
/// successful request `tgi_request_success`, `tgi_request_duration` (arrival to end),
/// `tgi_request_validation_duration` (arrival to queued), `tgi_request_queue_duration`
/// (queued to batch start), `tgi_request_inference_duration` (batch start to the last token),
/// `tgi_request_mean_time_per_token_duration` (that over the generated tokens),
/// `tgi_request_generated_tokens`; at validation (tokchron: `arrive`) `tgi_request_input_length`
/// and `tgi_request_max_new_tokens`; `tgi_request_count` at arrival; `tgi_request_failure{err}`;
/// the `tgi_queue_size` and `tgi_batch_current_size` gauges. Counters are written without
/// `_total`, as TGI's exporter writes them. Buckets: `tgi_duration_buckets()`, lengths on
/// `tgi_linear_buckets(max_input_tokens)` and `tgi_linear_buckets(max_total_tokens)`.
[[nodiscard]] inline live_options tgi_live_options(std::uint64_t max_input_tokens,
                                                   std::uint64_t max_total_tokens) {
  live_options o;
  o.semantics = live_semantics::tgi;
  live_names n = tokchron_own_names();
  n.histograms[live_index(live_histogram::e2e)] = "tgi_request_duration";
  n.histograms[live_index(live_histogram::validation_time)] = "tgi_request_validation_duration";
  n.histograms[live_index(live_histogram::queue_time)] = "tgi_request_queue_duration";
  n.histograms[live_index(live_histogram::inference_time)] = "tgi_request_inference_duration";
  n.histograms[live_index(live_histogram::tpot)] = "tgi_request_mean_time_per_token_duration";
  n.histograms[live_index(live_histogram::generation_tokens)] = "tgi_request_generated_tokens";
  n.histograms[live_index(live_histogram::prompt_tokens)] = "tgi_request_input_length";
  n.histograms[live_index(live_histogram::max_tokens)] = "tgi_request_max_new_tokens";
  n.requests = "tgi_request_failure";
  n.reason_label = "err";
  n.arrived = "tgi_request_count";
  n.reason_counters = {{"tgi_request_success",
                        static_cast<std::uint8_t>(live_reason_bit(finish_reason::stop) |
                                                  live_reason_bit(finish_reason::length)),
                        "Number of successful requests"}};
  n.waiting = "tgi_queue_size";
  n.running = "tgi_batch_current_size";
  n.counter_total_suffix = false;
  o.names = std::move(n);
  const std::vector<double> duration = tgi_duration_buckets();
  for (std::size_t x = 0; x < live_histogram_count; ++x)
    if (detail::live_is_time(static_cast<live_histogram>(x))) o.buckets[x] = duration;
  o.buckets[live_index(live_histogram::prompt_tokens)] = tgi_linear_buckets(max_input_tokens);
  o.buckets[live_index(live_histogram::generation_tokens)] = tgi_linear_buckets(max_total_tokens);
  o.buckets[live_index(live_histogram::max_tokens)] = tgi_linear_buckets(max_total_tokens);
  return o;
}

/// The llama.cpp server's `/metrics` with `--metrics` (ggml-org/llama.cpp
/// tools/server/server-context.cpp at 001d906a6d86e2490e394361e7cc6f478b100088:
/// `server_metrics`, the metrics task, `update_slots`): no labels, no histograms;
/// `llamacpp:prompt_tokens_total` (prompt tokens evaluated, the cached ones not) and
/// `llamacpp:prompt_seconds_total` at a request's first token (`on_prompt_eval`);
/// `llamacpp:tokens_predicted_total` and `llamacpp:tokens_predicted_seconds_total` when a slot
/// completes (`on_prediction`, stop and length only), each request's time cut to whole
/// milliseconds before it is added (a double added into a uint64_t); the gauges
/// `llamacpp:prompt_tokens_seconds` and `llamacpp:predicted_tokens_seconds` over the window
/// since the previous scrape (each `/metrics` call resets llama.cpp's bucket), and
/// `llamacpp:requests_processing` (running), `llamacpp:requests_deferred` (waiting).
[[nodiscard]] inline live_options llamacpp_live_options() {
  live_options o;
  o.semantics = live_semantics::llamacpp;
  live_names n = tokchron_own_names();
  n.prompt_tokens = "llamacpp:prompt_tokens";
  n.prefill_seconds = "llamacpp:prompt_seconds";
  n.generation_tokens = "llamacpp:tokens_predicted";
  n.decode_seconds = "llamacpp:tokens_predicted_seconds";
  n.prompt_throughput = "llamacpp:prompt_tokens_seconds";
  n.generation_throughput = "llamacpp:predicted_tokens_seconds";
  n.running = "llamacpp:requests_processing";
  n.waiting = "llamacpp:requests_deferred";
  n.rejected = "tokchron_rejected_requests";
  o.names = std::move(n);
  return o;
}

/// trtllm-serve's `/prometheus/metrics` (NVIDIA/TensorRT-LLM tensorrt_llm/metrics/collector.py
/// at 050f80def8df236e326949c8bd9dee10fd896a83, `MetricsCollector`; the per-request values of
/// tensorrt_llm/metrics/perf_utils.py at 11ef94feee457e1b2f6f5ecc9172475d918aec20,
/// `process_req_perf_metrics`): labels `model_name` and `engine_type` ("trtllm"); when a
/// request finishes with a finish reason (stop, length, timeout) `trtllm_request_success_total
/// {finished_reason}`, TTFT and E2E from the executor's arrival to the first and the last
/// token, TPOT decode / (N - 1) for N > 1, queue, prefill, decode and inference times, the
/// prompt and generation token counters; values of 0 are not observed (queue time excepted);
/// the running and waiting gauges (iteration stats); `trtllm_kv_cache_utilization` is the
/// server-fed KV-cache gauge. Bucket lists are the collector's defaults.
[[nodiscard]] inline live_options trtllm_live_options(std::string model_name,
                                                      std::string engine_type = "trtllm") {
  live_options o;
  o.semantics = live_semantics::trtllm;
  o.label_names = {"model_name", "engine_type"};
  o.default_label_values = {std::move(model_name), std::move(engine_type)};
  live_names n = tokchron_own_names();
  n.histograms[live_index(live_histogram::e2e)] = "trtllm_e2e_request_latency_seconds";
  n.histograms[live_index(live_histogram::ttft)] = "trtllm_time_to_first_token_seconds";
  n.histograms[live_index(live_histogram::tpot)] = "trtllm_time_per_output_token_seconds";
  n.histograms[live_index(live_histogram::queue_time)] = "trtllm_request_queue_time_seconds";
  n.histograms[live_index(live_histogram::prefill_time)] = "trtllm_request_prefill_time_seconds";
  n.histograms[live_index(live_histogram::decode_time)] = "trtllm_request_decode_time_seconds";
  n.histograms[live_index(live_histogram::inference_time)] =
      "trtllm_request_inference_time_seconds";
  n.requests = "trtllm_request_success";
  n.reason_label = "finished_reason";
  n.prompt_tokens = "trtllm_prompt_tokens";
  n.generation_tokens = "trtllm_generation_tokens";
  n.prompt_tokens_cached = "trtllm_prompt_cached_tokens";
  n.running = "trtllm_num_requests_running";
  n.waiting = "trtllm_num_requests_waiting";
  n.kv_cache_usage = "trtllm_kv_cache_utilization";
  n.spec_draft_tokens = "trtllm_spec_decode_num_draft_tokens";
  n.spec_accepted_tokens = "trtllm_spec_decode_num_accepted_tokens";
  n.rejected = "tokchron_rejected_requests";
  o.names = std::move(n);
  const std::vector<double> long_latency = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                            5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                            60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
  o.buckets[live_index(live_histogram::e2e)] = long_latency;
  o.buckets[live_index(live_histogram::queue_time)] = long_latency;
  o.buckets[live_index(live_histogram::decode_time)] = long_latency;
  o.buckets[live_index(live_histogram::inference_time)] = long_latency;
  o.buckets[live_index(live_histogram::ttft)] = {
      0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
      1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
  o.buckets[live_index(live_histogram::tpot)] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                                 0.3,  0.4,   0.5,  0.75,  1.0, 2.5,  5.0,
                                                 7.5,  10.0,  20.0, 40.0,  80.0};
  o.buckets[live_index(live_histogram::prefill_time)] = {0.001, 0.005, 0.01, 0.025, 0.05,  0.1,
                                                         0.25,  0.5,   1.0,  2.5,   5.0,   10.0,
                                                         20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
  return o;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_LIVE_PRESETS_HPP
