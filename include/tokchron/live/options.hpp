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
#include <vector>

#include "tokchron/config.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// Whose definitions a `live_metrics` object records.
enum class live_semantics : std::uint8_t {
  /// tokchron's canonical definitions (metrics/canonical.hpp): ITL one sample per output token
  /// after the first (a chunk of k tokens after a gap g gives k samples of g/k), TPOT only for
  /// requests with at least two tokens; finish reasons as `to_string(finish_reason)`.
  tokchron,
  /// vLLM's (vllm/v1/metrics/stats.py, loggers.py): ITL one sample per engine step (streamed
  /// chunk) that carried tokens after the first, per-request TPOT decode_time / (N - 1) and 0
  /// for N <= 1, finish reasons stop, length, abort, error, repetition; see docs/live-metrics.md.
  vllm,
};

/// Which finished requests enter the per-request histograms (TTFT, E2E, queue, prefill,
/// decode, inference, TPOT, prompt and generation lengths) and the token counters. Requests of
/// every outcome are always counted in the requests counter, by finish reason.
enum class live_inclusion : std::uint8_t {
  /// Only requests that completed (stop, length). TTFT and token counters move when the
  /// request finishes instead of as its chunks arrive. Per-step ITL still streams (a sample,
  /// once exported, cannot be taken back).
  completed,
  /// The default: every request that was scheduled (reached the engine), whatever its
  /// outcome: completed, and aborted, failed or timed out after scheduling. A request rejected
  /// or abandoned while queued enters no latency histogram and no token counter. TTFT, ITL and
  /// the token counters move as chunks arrive (prompt tokens with the first token, as vLLM
  /// counts them at the end of prefill).
  scheduled,
  /// Every finished request whose interval is defined, also those never scheduled (their E2E
  /// and queue time, and their prompt tokens at finish).
  all,
};

/// The histograms a `live_metrics` object keeps per series.
enum class live_histogram : std::uint8_t {
  ttft,               ///< time to first token from arrival, s
  itl,                ///< inter-token latency (per token or per step, see live_semantics), s
  tpot,               ///< per-request time per output token, s
  e2e,                ///< arrival to finish, s
  queue_time,         ///< queued (or arrival) to first scheduled, s
  prefill_time,       ///< first scheduled to first token, s
  decode_time,        ///< first to last token, s
  inference_time,     ///< first scheduled to last token (vLLM's RUNNING phase), s
  prompt_tokens,      ///< prompt length, tokens
  generation_tokens,  ///< output length, tokens
  max_tokens,         ///< the request's max_tokens parameter, when the server gives it
};
/// The number of `live_histogram`s.
inline constexpr std::size_t live_histogram_count = 11;

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
  /// Counter of rejected requests, when `requests` does not carry them (vLLM never counts a
  /// request it refused before the engine saw it).
  std::string rejected;
  std::string misuse;          ///< counter of refused recording calls
  std::string label_overflow;  ///< counter of requests recorded into the overflow series
  std::string dropped;         ///< counter of samples lost to memory exhaustion
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
  /// The label value of the overflow series.
  std::string overflow_value = "__overflow__";
  /// Classic-histogram upper bounds by `live_histogram` (finite, strictly increasing; +Inf is
  /// implicit). The bucket counts are exact: a value is counted in the first bound >= it.
  std::array<std::vector<double>, live_histogram_count> buckets;
  /// Family names.
  live_names names;
};

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_LIVE_OPTIONS_HPP
