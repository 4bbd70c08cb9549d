// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_METRICS_INCLUSION_HPP
#define TOKCHRON_METRICS_INCLUSION_HPP

/// \file
/// The inclusion policy: which finished requests a population counts, family by family. One
/// rule, written here once, read by a server's live metrics (`live_options::inclusion`,
/// live/recorder.hpp) and by run summaries (`summary_options::inclusion`, metrics/run_summary.hpp;
/// `tokchron-report --inclusion`), so that a report of a server's trace counts exactly the
/// requests its `/metrics` counted. Light: standard library and timeline/event.hpp only.

#include <cstdint>
#include <optional>
#include <string_view>

#include "tokchron/config.hpp"
#include "tokchron/timeline/event.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// Which finished requests enter the per-request histograms (TTFT, E2E, queue, prefill,
/// decode, inference, TPOT, prompt and generation lengths) and the token counters. Requests of
/// every outcome are always counted in the requests counter, by finish reason. `live_inclusion`
/// (live/options_fwd.hpp) is the same type.
enum class inclusion_policy : std::uint8_t {
  /// Only requests that completed (stop, length). TTFT and token counters move when the
  /// request finishes instead of as its chunks arrive. Per-step ITL still streams (a sample,
  /// once exported, cannot be taken back).
  completed,
  /// The live metrics' default: every request that was scheduled (reached the engine; a
  /// request that produced tokens counts as scheduled even if the server never reported it),
  /// whatever its outcome: completed, and aborted, failed or timed out after scheduling. A
  /// request rejected or abandoned while queued enters no latency histogram and no token
  /// counter. TTFT, ITL and the token counters move as chunks arrive (prompt tokens with the
  /// first token, as vLLM counts them at the end of prefill).
  scheduled,
  /// Every finished request whose interval is defined, also those never scheduled (their E2E
  /// and queue time, and their prompt tokens at finish).
  all,
};

/// The families whose populations differ under one policy.
enum class inclusion_family : std::uint8_t {
  /// The per-request histograms (latencies, TPOT, prompt and output lengths) and the output
  /// (generation) token counter: the requests `inclusion_policy` names.
  per_request,
  /// The prompt-token counter: as `per_request`, except that under `scheduled` a request counts
  /// its prompt with its first token, so one scheduled but never given a token does not.
  prompt_tokens,
  /// Inter-token latencies: every request's chunks under every policy (they stream as the
  /// chunks arrive, and a sample once exported cannot be taken back; under `completed` they
  /// therefore include the chunks of requests that later failed).
  itl,
  /// The requests counter by finish reason: every finished request.
  requests,
};

/// True when a request that finished for `reason` (empty: not finished), was `scheduled` (the
/// engine reported scheduling it) and produced a first token (`first_token`: a chunk carrying
/// tokens) counts in `family` under `policy`. An unfinished request counts in none.
[[nodiscard]] constexpr bool includes(inclusion_policy policy, inclusion_family family,
                                      std::optional<finish_reason> reason, bool scheduled,
                                      bool first_token) noexcept {
  if (!reason) return false;
  if (family == inclusion_family::itl || family == inclusion_family::requests) return true;
  const bool member = policy == inclusion_policy::completed   ? is_success(*reason)
                      : policy == inclusion_policy::scheduled ? scheduled || first_token
                                                              : true;
  if (family == inclusion_family::prompt_tokens && policy == inclusion_policy::scheduled)
    return member && first_token;
  return member;
}

/// `includes` for a timeline (anything with `reason()`, `first_scheduled()` and
/// `first_token_time()`: `basic_request_timeline` of any store).
template <class Timeline>
[[nodiscard]] bool includes(inclusion_policy policy, inclusion_family family,
                            const Timeline& tl) noexcept {
  return includes(policy, family, tl.reason(), tl.first_scheduled().has_value(),
                  tl.first_token_time().has_value());
}

/// The policy's name: "completed", "scheduled", "all".
[[nodiscard]] constexpr std::string_view to_string(inclusion_policy p) noexcept {
  switch (p) {
    case inclusion_policy::completed: return "completed";
    case inclusion_policy::scheduled: return "scheduled";
    case inclusion_policy::all: return "all";
  }
  return "?";
}

/// The policy named `name` (as `to_string` writes it), or empty.
[[nodiscard]] constexpr std::optional<inclusion_policy> parse_inclusion(
    std::string_view name) noexcept {
  for (const inclusion_policy p :
       {inclusion_policy::completed, inclusion_policy::scheduled, inclusion_policy::all})
    if (to_string(p) == name) return p;
  return std::nullopt;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_METRICS_INCLUSION_HPP
