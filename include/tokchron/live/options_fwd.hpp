// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_LIVE_OPTIONS_FWD_HPP
#define TOKCHRON_LIVE_OPTIONS_FWD_HPP

/// \file
/// The rules and enumerations of live/options.hpp (`live_rules`, `live_inclusion`,
/// `live_histogram`) and a declaration of `live_options`, for the recording header under
/// `TOKCHRON_SEPARATE_INSTANTIATION`: there a hot file records without the options' definition
/// (its `std::vector<std::string>` and `std::array` members are a fifth of what the recording
/// header costs a translation unit), and the file that constructs a `live_metrics` includes
/// live/options.hpp or live/presets.hpp.

#include <cstddef>
#include <cstdint>

#include "tokchron/config.hpp"
#include "tokchron/metrics/inclusion.hpp"
#include "tokchron/metrics/profile_rules.hpp"
#include "tokchron/timeline/event.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// How a preset records: which samples each event gives and when (live/recorder.hpp reads it,
/// copied once into the recorder; the sources of each server's rules are cited at its preset
/// in live/presets.hpp and in docs/library/live-metrics.md). The TPOT and ITL rules are named
/// in the profiles' vocabulary (metrics/profile_rules.hpp). The defaults are tokchron's
/// canonical definitions (metrics/canonical.hpp).
struct live_rules {
  /// The ITL samples of a streamed chunk with tokens after the first: `per_chunk` (one sample
  /// of the gap g: vLLM's engine steps), `per_token_split` (k samples of g / k for a chunk of k
  /// tokens, none for the first chunk's extra tokens: SGLang) or `per_token_with_first` (as
  /// `per_token_split`, plus k1 - 1 zeros for a first chunk of k1 tokens: N - 1 samples whose
  /// mean is TPOT).
  itl_grain itl = itl_grain::per_token_with_first;
  /// TPOT's numerator: `token_span` (last token - first token, over N - 1) or
  /// `origin_to_last_over_n` (last token - first scheduled, over N, for N >= 1: the server's
  /// origin is the batch start; TGI's mean time per token).
  tpot_span tpot = tpot_span::token_span;
  /// TPOT of a request with N <= 1 under `token_span`: `excluded` (no sample) or `zero` (a
  /// sample of 0: vLLM).
  small_n_rule tpot_small_n = small_n_rule::excluded;
  bool ttft_at_finish = false;      ///< TTFT observed at the finish, not at the first token
  bool tokens_at_finish = false;    ///< prompt, cached and generation counters at the finish
  bool lengths_at_arrival = false;  ///< prompt-length and max_tokens histograms at `arrive`
  /// The prompt-length histogram at the first token (requests that never produced one are not
  /// in it), not at the finish.
  bool lengths_at_first_token = false;
  bool queue_at_schedule = false;  ///< queue time observed when first scheduled
  bool from_queued = false;        ///< TTFT and E2E from `queued` when known
  bool e2e_to_last_token = false;  ///< E2E ends at the last token, not at the finish
  bool positive_only = false;      ///< latencies of 0 not observed, queue time excepted
  /// The output-length histogram only for requests that produced a token (N > 0), not for
  /// every finished request (Dynamo's frontend observes it only then).
  bool output_length_if_any = false;
  /// Finish reasons (bit `live_reason_bit(r)`) whose requests enter the per-request series;
  /// 0: every reason the inclusion policy lets in.
  std::uint8_t reasons = 0;
};

/// Which finished requests enter the per-request histograms and the token counters: the one
/// inclusion rule of metrics/inclusion.hpp (`completed`, `scheduled` (the default), `all`),
/// which run summaries and `tokchron-report --inclusion` apply too.
using live_inclusion = inclusion_policy;

/// The histograms a `live_metrics` object keeps per series.
enum class live_histogram : std::uint8_t {
  ttft,               ///< time to first token from arrival, s
  itl,                ///< inter-token latency (per token or per chunk, see live_rules::itl), s
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
  /// prompt tokens served from a prefix cache, per request that reported them, tokens
  /// (observed when the prompt tokens are counted)
  cached_prompt_tokens,
  /// prompt tokens computed in prefill (prompt - cached, the whole prompt when the server
  /// reported no cached count), per finished request whose prompt length is known, tokens
  prefill_computed_tokens,
  /// the time a request's KV cache took to move between a prefill and a decode node, per
  /// transfer (`kv_transfer`), s
  kv_transfer_time,
};
/// The number of `live_histogram`s.
inline constexpr std::size_t live_histogram_count = 15;

namespace detail {
/// True for the histograms of times (seconds); the others count tokens.
[[nodiscard]] constexpr bool live_is_time(live_histogram h) noexcept {
  return h != live_histogram::prompt_tokens && h != live_histogram::generation_tokens &&
         h != live_histogram::max_tokens && h != live_histogram::cached_prompt_tokens &&
         h != live_histogram::prefill_computed_tokens;
}
}  // namespace detail

struct live_options;

/// The part a server plays in disaggregated serving (prefill and decode on separate nodes, the
/// KV cache moved between them): `both` (no split: the default), `prefill` (computes prompts
/// and sends their KV caches) or `decode` (receives KV caches and generates). On a `decode` or
/// `both` node the tokens of a transferred KV cache are prompt tokens not computed there
/// (vLLM's `external_kv_transfer` source); on a `prefill` node a transfer is one sent.
enum class live_role : std::uint8_t { both, prefill, decode };

/// `both`, `prefill` or `decode`.
[[nodiscard]] constexpr const char* to_string(live_role r) noexcept {
  return r == live_role::prefill ? "prefill" : r == live_role::decode ? "decode" : "both";
}

/// Bit `1 << r` of finish reason `r`, for sets of reasons (`live_rules::reasons`,
/// `live_family::reasons`).
[[nodiscard]] constexpr std::uint8_t live_reason_bit(finish_reason r) noexcept {
  return static_cast<std::uint8_t>(1u << static_cast<unsigned>(r));
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_LIVE_OPTIONS_FWD_HPP
