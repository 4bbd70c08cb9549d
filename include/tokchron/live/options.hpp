// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_LIVE_OPTIONS_HPP
#define TOKCHRON_LIVE_OPTIONS_HPP

/// \file
/// How a `live_metrics` object records and names what it exports: the semantics (tokchron's
/// canonical definitions or vLLM's), the inclusion policy, the label names and their
/// cardinality bound, bucket bounds and family names. Plain data, standard library only (the
/// recording header includes it). Ready-made option sets (`tokchron_live_options`,
/// `vllm_live_options`) are in live/presets.hpp.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/live/options_fwd.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// Family base names (writers add `_total`, `_bucket`, ...). An empty name leaves that family
/// out of the exposition.
struct live_names {
  /// By `live_histogram`.
  std::array<std::string, live_histogram_count> histograms;
  /// A second family carrying the ITL histogram (vLLM: the deprecated
  /// `vllm:time_per_output_token_seconds` that dashboards still query).
  std::string itl_alias;
  /// A second family carrying the max_tokens histogram (vLLM: `vllm:request_params_max_tokens`).
  std::string max_tokens_alias;
  std::string requests;           ///< counter by finish reason
  std::string reason_label;       ///< the finish-reason label on `requests`
  std::string prompt_tokens;      ///< counter
  std::string generation_tokens;  ///< counter
  std::string preemptions;        ///< counter
  std::string running;            ///< gauge: scheduled and not finished or preempted
  std::string waiting;            ///< gauge: arrived (or preempted) and not scheduled
  std::string kv_cache_usage;     ///< gauge the server sets (exported once set)
  std::string kv_cache_usage_alias;
  std::string prefix_cache_queries;  ///< counter the server feeds (exported once fed)
  std::string prefix_cache_hits;     ///< counter the server feeds (exported once fed)
  /// Counter of output tokens in reasoning chunks (`chunk_kind::reasoning`), exported once one
  /// arrived; they are in the generation-token counter too.
  std::string reasoning_tokens;
  /// Counter of prompt tokens served from a prefix cache, as the server reports them per
  /// request (exported once one was reported), counted when the prompt tokens are.
  std::string prompt_tokens_cached;
  /// Counter of prompt tokens by `source` label (`local_compute`, `local_cache_hit`,
  /// `external_kv_transfer`), beside `prompt_tokens_cached`.
  std::string prompt_tokens_by_source;
  /// Counter of cached prompt tokens recomputed (1 when all but one were cached).
  std::string prompt_tokens_recomputed;
  std::string spec_drafts;           ///< counter of speculative drafts (exported once fed)
  std::string spec_draft_tokens;     ///< counter of speculative tokens drafted
  std::string spec_accepted_tokens;  ///< counter of speculative tokens accepted
  /// Counter of accepted draft tokens by `position` label, one per draft position
  /// (`live_options::speculative_positions` of them, from position 0).
  std::string spec_accepted_per_position;
  /// Counter of rejected requests, when `requests` does not carry them (vLLM never counts a
  /// request it refused before the engine saw it).
  std::string rejected;
  std::string misuse;          ///< counter of refused recording calls
  std::string label_overflow;  ///< counter of requests recorded into the overflow series
  /// Counter of series lookups that carried a label value longer than
  /// `live_options::max_label_value_bytes` (cut or refused, see `live_long_label_value`).
  std::string long_label_values;
  std::string dropped;  ///< counter of samples lost to memory exhaustion
  /// Counter of arrived requests (TGI's `tgi_request_count`, counted as its handler starts):
  /// finished of every reason, plus running and waiting, as of the scrape.
  std::string arrived;
  /// Counter of the requests' prefill times (first scheduled to first token), each cut to whole
  /// milliseconds before it is added, in seconds, counted at the first token (llama.cpp's
  /// `llamacpp:prompt_seconds_total`).
  std::string prefill_seconds;
  /// Counter of the decode times (first to last token) of requests that completed (stop,
  /// length), each cut to whole milliseconds, in seconds, counted at the finish (llama.cpp's
  /// `llamacpp:tokens_predicted_seconds_total`).
  std::string decode_seconds;
  /// Gauges of prompt and generation throughput since the previous scrape (llama.cpp's
  /// `llamacpp:prompt_tokens_seconds`, `llamacpp:predicted_tokens_seconds`): tokens counted in
  /// the prompt (generation) counter over the seconds added to `prefill_seconds`
  /// (`decode_seconds`) between the previous scrape and this one; 0 when no time was added.
  /// Every scrape starts a new window, as every llama.cpp `/metrics` call does.
  std::string prompt_throughput;
  std::string generation_throughput;
  /// Counters of finished requests whose reason is in a set, without a reason label (SGLang's
  /// `sglang:num_requests_total`, TGI's `tgi_request_success`).
  struct reason_counter {
    std::string name;
    std::uint8_t reasons = 0;  ///< bit `1 << finish_reason` for each reason counted
    std::string help;
  };
  std::vector<reason_counter> reason_counters;
  /// False: counters are written without the `_total` suffix in the Prometheus text (TGI's
  /// exporter, metrics-exporter-prometheus, never adds it); OpenMetrics output keeps it.
  bool counter_total_suffix = true;
};

/// A family's base name in tokchron's naming and in vLLM's (empty: that scheme has none).
struct live_family_name {
  std::string live_names::*member;  ///< the `live_names` field it fills
  std::string_view tokchron;        ///< `tokchron_live_options`
  std::string_view vllm;            ///< `vllm_live_options` (vllm/v1/metrics/loggers.py)
};

/// The names of every family that is not a histogram of a `metric_table` metric (those take
/// the table's `prometheus_name` and `vllm_name`). The one list of these spellings:
/// `serving_metric_names` reads its counter names from here too.
inline constexpr live_family_name live_family_names[] = {
    {&live_names::itl_alias, "", "vllm:time_per_output_token_seconds"},
    {&live_names::max_tokens_alias, "", "vllm:request_params_max_tokens"},
    {&live_names::requests, "tokchron_requests", "vllm:request_success"},
    {&live_names::reason_label, "outcome", "finished_reason"},
    {&live_names::prompt_tokens, "tokchron_prompt_tokens", "vllm:prompt_tokens"},
    {&live_names::generation_tokens, "tokchron_output_tokens", "vllm:generation_tokens"},
    {&live_names::preemptions, "tokchron_preemptions", "vllm:num_preemptions"},
    {&live_names::running, "tokchron_requests_running", "vllm:num_requests_running"},
    {&live_names::waiting, "tokchron_requests_waiting", "vllm:num_requests_waiting"},
    {&live_names::kv_cache_usage, "tokchron_kv_cache_usage_ratio", "vllm:kv_cache_usage_perc"},
    {&live_names::kv_cache_usage_alias, "", "vllm:gpu_cache_usage_perc"},
    {&live_names::prefix_cache_queries, "tokchron_prefix_cache_queries",
     "vllm:prefix_cache_queries"},
    {&live_names::prefix_cache_hits, "tokchron_prefix_cache_hits", "vllm:prefix_cache_hits"},
    {&live_names::reasoning_tokens, "tokchron_reasoning_tokens", "tokchron_reasoning_tokens"},
    {&live_names::prompt_tokens_cached, "tokchron_cached_prompt_tokens",
     "vllm:prompt_tokens_cached"},
    {&live_names::prompt_tokens_by_source, "", "vllm:prompt_tokens_by_source"},
    {&live_names::prompt_tokens_recomputed, "", "vllm:prompt_tokens_recomputed"},
    {&live_names::spec_drafts, "tokchron_spec_decode_drafts", "vllm:spec_decode_num_drafts"},
    {&live_names::spec_draft_tokens, "tokchron_spec_decode_draft_tokens",
     "vllm:spec_decode_num_draft_tokens"},
    {&live_names::spec_accepted_tokens, "tokchron_spec_decode_accepted_tokens",
     "vllm:spec_decode_num_accepted_tokens"},
    {&live_names::spec_accepted_per_position, "tokchron_spec_decode_accepted_tokens_per_pos",
     "vllm:spec_decode_num_accepted_tokens_per_pos"},
    {&live_names::rejected, "", "tokchron_rejected_requests"},
    {&live_names::misuse, "tokchron_misuse", "tokchron_misuse"},
    {&live_names::label_overflow, "tokchron_label_overflow", "tokchron_label_overflow"},
    {&live_names::long_label_values, "tokchron_long_label_values", "tokchron_long_label_values"},
    {&live_names::dropped, "tokchron_dropped_samples", "tokchron_dropped_samples"},
};

/// The row of `live_family_names` for field `member`.
[[nodiscard]] inline const live_family_name& live_family_name_of(
    std::string live_names::*member) noexcept {
  for (const auto& f : live_family_names)
    if (f.member == member) return f;
  return live_family_names[0];  // unreachable for the fields listed above
}

/// The histograms that are not `metric_table` metrics, with their names in each scheme.
struct live_histogram_name {
  live_histogram histogram;
  std::string_view tokchron, vllm;
};
/// See `live_histogram_name`.
inline constexpr live_histogram_name live_histogram_names[] = {
    {live_histogram::inference_time, "tokchron_inference_seconds",
     "vllm:request_inference_time_seconds"},
    {live_histogram::prompt_tokens, "tokchron_request_prompt_tokens", "vllm:request_prompt_tokens"},
    {live_histogram::generation_tokens, "tokchron_request_output_tokens",
     "vllm:request_generation_tokens"},
    {live_histogram::max_tokens, "tokchron_request_max_tokens",
     "vllm:request_max_num_generation_tokens"},
    {live_histogram::validation_time, "", ""},
};

/// What a series lookup does with a label value longer than
/// `live_options::max_label_value_bytes` (either way counted in `live_names::long_label_values`
/// and `long_label_values()`).
enum class live_long_label_value : std::uint8_t {
  /// The value is cut to the bound on a character boundary, and the series is that of the cut
  /// set: two values that agree on their first bytes share a series.
  truncate,
  /// The lookup returns the overflow series, as when there is no room for another set.
  overflow,
};

/// Configuration of a `basic_live_metrics`. Use the presets of live/presets.hpp and adjust.
struct live_options {
  live_semantics semantics = live_semantics::tokchron;
  live_inclusion inclusion = live_inclusion::scheduled;
  /// Label names on every series, fixed for the object's life (e.g. {"model_name", "engine"}).
  std::vector<std::string> label_names;
  /// The values of the default series (`live_series{}`), one per label name.
  std::vector<std::string> default_label_values;
  /// The most distinct label-value sets, the default one included; a further set records into
  /// the overflow series (every label = `overflow_value`) and is counted. Memory is bounded by
  /// this: per writer thread, at most two blocks per set, each of (counters + buckets) words.
  std::size_t max_series = 64;
  /// Speculative decoding's draft length (vLLM's `num_speculative_tokens`): one accepted-token
  /// counter per draft position, 0..64; 0 exports no per-position counter.
  std::size_t speculative_positions = 0;
  /// The label value of the overflow series.
  std::string overflow_value = "__overflow__";
  /// The longest label value, in bytes, a series carries (at least 1; the default and overflow
  /// values must fit). With `max_series` it bounds every scrape's size: a longer value is cut
  /// or refused as `long_label_value` says, and counted.
  std::size_t max_label_value_bytes = 256;
  live_long_label_value long_label_value = live_long_label_value::truncate;
  /// Classic-histogram upper bounds by `live_histogram` (finite, strictly increasing; +Inf is
  /// implicit). The bucket counts are exact: a value is counted in the first bound >= it.
  std::array<std::vector<double>, live_histogram_count> buckets;
  /// Family names.
  live_names names;
};

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_LIVE_OPTIONS_HPP
