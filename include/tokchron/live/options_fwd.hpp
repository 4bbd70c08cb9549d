// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_LIVE_OPTIONS_FWD_HPP
#define TOKCHRON_LIVE_OPTIONS_FWD_HPP

/// \file
/// The enumerations of live/options.hpp (`live_semantics`, `live_inclusion`, `live_histogram`)
/// and a declaration of `live_options`, for the recording header under
/// `TOKCHRON_SEPARATE_INSTANTIATION`: there a hot file records without the options' definition
/// (its `std::vector<std::string>` and `std::array` members are a fifth of what the recording
/// header costs a translation unit), and the file that constructs a `live_metrics` includes
/// live/options.hpp or live/presets.hpp.

#include <cstddef>
#include <cstdint>

#include "tokchron/config.hpp"
#include "tokchron/metrics/inclusion.hpp"
#include "tokchron/timeline/event.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// Whose definitions a `live_metrics` object records.
enum class live_semantics : std::uint8_t {
  /// tokchron's canonical definitions (metrics/canonical.hpp): ITL one sample per output token
  /// after the first (a chunk of k tokens after a gap g gives k samples of g/k), TPOT only for
  /// requests with at least two tokens; finish reasons as `to_string(finish_reason)`.
  tokchron,
  /// vLLM's (vllm/v1/metrics/stats.py, loggers.py): ITL one sample per engine step (streamed
  /// chunk) that carried tokens after the first, per-request TPOT decode_time / (N - 1) and 0
  /// for N <= 1, finish reasons stop, length, abort, error, repetition; see
  /// docs/library/live-metrics.md.
  vllm,
  /// SGLang's (python/sglang/srt/metrics/collector.py, TokenizerMetricsCollector): ITL one
  /// sample per output token of each output batch after the first (k samples of g/k, none for
  /// the first batch's extra tokens), TTFT as the first batch arrives, E2E and the prompt,
  /// generation and cached-token counters when the request finishes, queue time when it is
  /// first scheduled.
  sglang,
  /// Text Generation Inference's router (router/src/server.rs): every per-request histogram at
  /// the end of a successful request only (stop, length), its mean time per token
  /// (last token - first scheduled) / N, the prompt-length and max_new_tokens histograms when
  /// the request is validated (at arrival), counters written without `_total`.
  tgi,
  /// The llama.cpp server's (tools/server, `--metrics`): counters and gauges only; prompt
  /// tokens (computed, not cached) and prefill seconds at the first token, generated tokens and
  /// generation seconds when a request completes (stop, length), each request's seconds cut to
  /// whole milliseconds before they are summed.
  llamacpp,
  /// trtllm-serve's (tensorrt_llm/metrics/collector.py, perf_utils.py): every per-request
  /// series when the request finishes with a finish reason (stop, length, timeout: not
  /// cancelled, not failed), TTFT and E2E from the executor's arrival (`queued`, else the
  /// arrival) to the first and the last token, latencies of 0 not observed (queue time
  /// excepted).
  trtllm,
};

/// Which finished requests enter the per-request histograms and the token counters: the one
/// inclusion rule of metrics/inclusion.hpp (`completed`, `scheduled` (the default), `all`),
/// which run summaries and `tokchron-report --inclusion` apply too.
using live_inclusion = inclusion_policy;

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
  validation_time,    ///< arrival to queued (TGI's validation duration), s
};
/// The number of `live_histogram`s.
inline constexpr std::size_t live_histogram_count = 12;

namespace detail {
/// True for the histograms of times (seconds); the others count tokens.
[[nodiscard]] constexpr bool live_is_time(live_histogram h) noexcept {
  return h != live_histogram::prompt_tokens && h != live_histogram::generation_tokens &&
         h != live_histogram::max_tokens;
}
}  // namespace detail

struct live_options;

/// Bit `1 << r` of finish reason `r`, for sets of reasons (`live_names::reason_counter`).
[[nodiscard]] constexpr std::uint8_t live_reason_bit(finish_reason r) noexcept {
  return static_cast<std::uint8_t>(1u << static_cast<unsigned>(r));
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_LIVE_OPTIONS_FWD_HPP
