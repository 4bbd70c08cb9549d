// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_LIVE_OPTIONS_HPP
#define TOKCHRON_LIVE_OPTIONS_HPP

/// \file
/// How a `live_metrics` object records and what it exports: a preset is plain data, the rules
/// of recording (`live_rules`), the label names and their bounds, the inclusion policy and the
/// exported families (`live_family`: name, kind, help, unit, what feeds it, bucket edges,
/// finish-reason strings). Standard library and exposition/labels.hpp only (the recording
/// header includes it). The servers' presets (`tokchron_live_options`,
/// `vllm_live_options`, ...) are in live/presets.hpp; docs/library/live-metrics.md shows how to
/// write one.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/exposition/labels.hpp"
#include "tokchron/live/options_fwd.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// What feeds a family of a preset: one of the quantities a `live_metrics` object records.
enum class live_source : std::uint8_t {
  histogram,           ///< the histogram `live_family::histogram`
  requests,            ///< counter: finished requests by finish reason (label `label`)
  finished,            ///< counter: finished requests whose reason is in `live_family::reasons`
  arrived,             ///< counter: requests arrived (finished of every reason, running, waiting)
  prompt_tokens,       ///< counter: prompt tokens (when: `live_rules`)
  generation_tokens,   ///< counter: output tokens (when: `live_rules`)
  preemptions,         ///< counter: preemptions, as they happen
  running,             ///< gauge: scheduled and not finished or preempted
  waiting,             ///< gauge: arrived (or preempted) and not yet scheduled
  in_flight,           ///< gauge: arrived and not finished (running + waiting)
  before_first_token,  ///< gauge: arrived, not finished, no output token yet
  kv_cache_usage,      ///< gauge the server sets (`set_kv_cache_usage`); exported once set
  /// Counters the server feeds (`add_prefix_cache`), exported once fed.
  prefix_cache_queries,
  prefix_cache_hits,
  /// Counter of prompt tokens served from a prefix cache, as the server reports them per request,
  /// counted when the prompt tokens are; exported once one was reported, as the next two.
  prompt_tokens_cached,
  /// Counter of prompt tokens by source (label `label`; vLLM's `local_compute`,
  /// `local_cache_hit`, `external_kv_transfer`).
  prompt_tokens_by_source,
  prompt_tokens_recomputed,  ///< counter: cached prompt tokens recomputed (all but one cached)
  /// Counter of output tokens in reasoning chunks (`chunk_kind::reasoning`, also in the
  /// generation tokens), exported once one arrived.
  reasoning_tokens,
  /// Speculative decoding's counters (`speculative`), exported once fed: drafts, draft tokens,
  /// accepted tokens, accepted tokens per draft position (label `label`, one value per position
  /// of `live_options::speculative_positions`, from 0; none when that is 0).
  spec_drafts,
  spec_draft_tokens,
  spec_accepted_tokens,
  spec_accepted_per_position,
  /// Counter of the prompt tokens computed: prompt - cached (as `set_cached_prompt_tokens`
  /// reported them), counted with the prompt tokens (llama.cpp's `prompt_tokens_total`).
  prompt_tokens_computed,
  /// Counter of the output tokens of every request that produced one, counted when it
  /// finishes, whatever the reason (llama.cpp counts a slot's tokens as it is released).
  finished_output_tokens,
  /// Counter of the decode times (first to last token, in whole microseconds, at least 1 us)
  /// of every request that produced a token, in seconds, counted when it finishes, whatever
  /// the reason (llama.cpp's `tokens_predicted_seconds_total`).
  decode_seconds,
  /// Gauge of decode throughput since the previous scrape: the decode steps (N - 1 per request:
  /// the first token comes with the prompt) of the requests `decode_seconds` counted between
  /// the previous scrape and this one, over their decode seconds; 0 when none. Every scrape
  /// starts a new window (llama.cpp's `predicted_tokens_seconds`).
  decode_throughput,
  /// Histograms by a label of the family (`live_family::stages`, one histogram per label
  /// value: SGLang's latency per request stage); a point once its histogram observed something.
  stage_histograms,
  /// Disaggregated serving (`kv_transfer`), exported once a transfer was recorded: counters
  /// of the requests whose KV cache moved between nodes, of its bytes and of its tokens, as
  /// each transfer is recorded.
  kv_transfers,
  kv_transfer_bytes,
  kv_transfer_tokens,
  /// Gauges of the most recent transfer of the series (SGLang's, set by its prefill node):
  /// its time in milliseconds, its size in MiB (bytes / 2^20) and its speed in GiB/s
  /// (MiB / 1024 / seconds; 0 for a transfer of 0 s).
  kv_transfer_last_ms,
  kv_transfer_last_mb,
  kv_transfer_last_gb_s,
  rejected,           ///< counter: requests rejected before scheduling
  misuse,             ///< counter: refused recording calls
  label_overflow,     ///< counter: requests recorded into the overflow series
  long_label_values,  ///< counter: series lookups with a value over `max_label_value_bytes`
  dropped,            ///< counter: samples lost to memory exhaustion
};

/// The kind a family of `source` has: histogram, gauge (running, waiting, KV-cache usage,
/// throughput) or counter. A family may also write a counter's value as a gauge.
[[nodiscard]] constexpr metric_kind live_kind_of(live_source source) noexcept {
  switch (source) {
    case live_source::histogram:
    case live_source::stage_histograms: return metric_kind::histogram;
    case live_source::running:
    case live_source::waiting:
    case live_source::in_flight:
    case live_source::before_first_token:
    case live_source::kv_cache_usage:
    case live_source::kv_transfer_last_ms:
    case live_source::kv_transfer_last_mb:
    case live_source::kv_transfer_last_gb_s:
    case live_source::decode_throughput: return metric_kind::gauge;
    default: return metric_kind::counter;
  }
}

/// True for the sources of tokchron's own counters (misuse, label overflow, long label values,
/// dropped samples): one point without labels, whatever the series.
[[nodiscard]] constexpr bool live_is_own(live_source source) noexcept {
  return source == live_source::misuse || source == live_source::label_overflow ||
         source == live_source::long_label_values || source == live_source::dropped;
}

/// One exported family of a preset: its name, kind, help, unit, what feeds it and, for a
/// histogram, its bucket edges. A preset is the list of these (`live_options::families`), in
/// exposition order, with its `live_rules` and labels: plain data, read at record time (the
/// histograms' edges, the rules) and at scrape time (everything else).
struct live_family {
  std::string name;  ///< base name; writers add `_total`, `_bucket`, ...
  live_source source = live_source::histogram;
  /// `live_kind_of(source)`; a counter's value may be written as a gauge.
  metric_kind kind = metric_kind::histogram;
  std::string help;  ///< empty: `live_default_help` (live/presets.hpp) of the source and rules
  std::string unit;  ///< OpenMetrics' `# UNIT` (the name must end with `_` + unit), or empty
  live_histogram histogram = live_histogram::ttft;  ///< `histogram`: which one
  /// `histogram`, `stage_histograms`: upper bounds (finite, strictly increasing; +Inf is
  /// implicit; a value is counted in the first bound >= it). Two families of one histogram
  /// carry the same edges.
  std::vector<double> buckets;
  /// `stage_histograms`: the histogram of each value of `label_values` (as many).
  std::vector<live_histogram> stages;
  /// The label the family adds to the series' labels: the finish reason (`requests`, or a
  /// histogram kept by reason, below), the source (`prompt_tokens_by_source`), the draft
  /// position (`spec_accepted_per_position`), the stage (`stage_histograms`).
  std::string label;
  /// `requests`: the label value of each `finish_reason` (indexed by it; empty: not counted),
  /// then values the server exports that tokchron never records (always 0). Reasons sharing a
  /// value are summed into it; values are written in order, each once.
  /// `prompt_tokens_by_source`: the values of the computed, cache-hit and transferred sources.
  /// `histogram` with a `label`: the value of each `finish_reason` (exactly one per reason);
  /// empty: that reason's samples go in the point without the label.
  std::vector<std::string> label_values;
  /// `requests` only: a second label after `label` (Dynamo's `error_type` after `status`), or
  /// empty for none. `second_label_values` holds its value beside each entry of `label_values`
  /// (as many); a point per distinct pair of values whose first is not empty, in order, the
  /// reasons sharing the pair summed.
  std::string second_label;
  std::vector<std::string> second_label_values;
  /// The reasons counted (`live_reason_bit`): by `finished`, and by a histogram family (0:
  /// every reason `live_rules::reasons` lets in). A histogram family with reasons or a `label`
  /// keeps its histogram by finish reason (one set of buckets per reason): it must be one the
  /// recorder observes at the finish under the preset's rules (E2E, TPOT, the phase times,
  /// generation and prefill-computed tokens; TTFT under `ttft_at_finish`; queue time unless
  /// `queue_at_schedule`). Its points: the reasons whose label value is empty summed in one
  /// point without the label, each other value (reasons sharing it summed) in a point with it,
  /// written once it holds a sample (OpenTelemetry's `error.type` on failed requests).
  std::uint8_t reasons = 0;
  /// Labels with fixed values on every point of this family, after the series' labels and
  /// before `label` (Dynamo's `endpoint` and `request_type` on its requests counter).
  label_set const_labels;
  /// One point without the series' labels: the sum over every series (a server's family that
  /// has no labels while its others do). Not for histograms or families with a `label`.
  bool sum_series = false;
  /// False: the Prometheus text writes the counter without `_total` (TGI's exporter);
  /// OpenMetrics keeps it.
  bool total_suffix = true;
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
  /// How events are recorded (tokchron's canonical definitions by default).
  live_rules rules;
  /// The server's part in disaggregated serving: where a KV-cache transfer (`kv_transfer`)
  /// counts as prompt tokens not computed (`decode`, `both`) or as one sent (`prefill`).
  /// `live_with_role` (live/presets.hpp) also labels every family with it.
  live_role role = live_role::both;
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
  /// The families exported, in exposition order (each name once).
  std::vector<live_family> families;
};

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_LIVE_OPTIONS_HPP
