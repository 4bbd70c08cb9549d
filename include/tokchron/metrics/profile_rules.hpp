// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_METRICS_PROFILE_RULES_HPP
#define TOKCHRON_METRICS_PROFILE_RULES_HPP

/// \file
/// The profiles' vocabulary for TPOT and ITL (`tpot_span`, `small_n_rule`, `itl_grain`), in a
/// header of its own: metrics/profile.hpp's `profile` and a server preset's `live_rules`
/// (live/options_fwd.hpp, which the recording header includes) both name their rules in it.
/// Standard library only.

#include <cstdint>

#include "tokchron/config.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// The numerator of TPOT: TPOT = numerator / (N - 1).
enum class tpot_span : std::uint8_t {
  e2e_minus_ttft,  ///< the profile's E2E minus its TTFT (every tool)
  token_span,      ///< last counted chunk minus first counted chunk (tokchron canonical: tN - t1)
  none,            ///< the tool reports no TPOT (llmperf)
  /// (last counted chunk, else the E2E end) - origin, over N rather than N - 1: TTFT included,
  /// none for N = 0 (GuideLLM's `time_per_output_token_ms`)
  origin_to_last_over_n,
};

/// What TPOT is for a request with N <= 1.
enum class small_n_rule : std::uint8_t {
  excluded,  ///< no value; left out of the TPOT statistics
  zero,      ///< 0, included in the statistics (trtllm-bench)
  invalid,   ///< no value, and counted as an invalid sample
  negative,  ///< (E2E - TTFT) / -1, kept in the statistics, and N counted as 0 (MLPerf loadgen:
             ///< n_tokens = 1 is logged as an error and set to 0, so `n_tokens - 1` is -1)
};

/// The grain of the ITL samples a tool pools across requests.
enum class itl_grain : std::uint8_t {
  none,                  ///< the tool reports no ITL
  per_chunk,             ///< one sample per gap between consecutive counted chunks
  per_token_split,       ///< a gap g before a k-token chunk gives k samples g/k (SGLang native)
  per_token_with_first,  ///< as per_token_split, plus k1 - 1 zeros for the first chunk's
                         ///< extra tokens: N - 1 samples whose mean is TPOT (canonical)
  per_request_tpot,      ///< one sample per request: its TPOT (GenAI-Perf, AIPerf)
  per_request_including_ttft,  ///< one per request: (last counted chunk - origin) / non-[DONE]
                               ///< chunks, 0 when N = 0 (llmperf: TTFT included)
  per_token_gap_zeros,  ///< one sample per token, each token stamped with its chunk's time: a
                        ///< k-token chunk gives its whole gap then k - 1 zeros, the first chunk
                        ///< k1 - 1 zeros (inference-perf's `output_token_times` deltas)
  per_request_span,     ///< one per request: (last counted chunk - first) / (N - 1), N > 1
                        ///< (GuideLLM's `inter_token_latency_ms`)
};

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_METRICS_PROFILE_RULES_HPP
