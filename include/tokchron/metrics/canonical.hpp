// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_METRICS_CANONICAL_HPP
#define TOKCHRON_METRICS_CANONICAL_HPP

/// \file
/// tokchron's own metric definitions, each a documented function of a request timeline.
///
/// Notation: `a` = arrival (the intended arrival when recorded, else the send time); `t1` = the
/// first chunk carrying a token; `tN` = the last chunk carrying a token; `f` = finish; `N` = the
/// sum of chunk token counts. Chunks with 0 tokens (role, usage, `[DONE]`) never count as tokens.
/// A metric whose inputs were not recorded, or whose formula is undefined (TPOT for N < 2), is
/// an empty `std::optional`, never a silent 0. Differences of time points are exact durations of
/// the clock; ratios are `std::chrono::duration<double, period>` of the same period.
///
/// | metric              | formula                         | needs                       |
/// |---------------------|---------------------------------|-----------------------------|
/// | ttft                | t1 - a                          | a token                     |
/// | ttft_from_send      | t1 - send                       | send, a token               |
/// | ttft_from_scheduled | t1 - first scheduled            | scheduled, a token          |
/// | e2e                 | f - a                           | finish                      |
/// | queue_time          | first scheduled - (queued or a) | scheduled                   |
/// | prefill_time        | t1 - first scheduled            | scheduled, a token          |
/// | decode_time         | tN - t1                         | a token                     |
/// | tpot                | (tN - t1) / (N - 1)             | N >= 2                      |
/// | normalized_latency  | (f - a) / N                     | finish, N >= 1              |
/// | output_rate         | N / (f - a), tokens per second  | finish, N >= 1, f > a       |
/// | itl per token       | k samples g/k per chunk of k tokens after gap g; the first token
///                         chunk's other k1 - 1 tokens give k1 - 1 samples of 0, so there are
///                         N - 1 samples summing to decode_time and their mean is tpot |
/// | itl per chunk       | t_i - t_{i-1} over consecutive token chunks (token chunks - 1)   |
/// | icl                 | the same per-chunk gaps (`for_each_itl_per_chunk`)                 |
/// | ttfa                | tA - a                          | an answer token             |
/// | reasoning_time      | tA - tR                         | tR <= tA                    |
/// | ttst                | t(2nd token) - t1               | N >= 2                      |
/// | prefill_tps         | prompt / (t1 - a), tokens/s     | prompt, a token, t1 > a     |
/// | uncached_prefill_tps| (prompt - cached) / (t1 - a)    | as above, cached <= prompt  |
/// | spec_acceptance     | accepted / drafted              | drafted > 0                 |
///
/// Answer tokens are the tokens of every chunk kind but `reasoning`; `tA` is the first chunk
/// carrying one and `tR` the first chunk carrying reasoning tokens. Reasoning tokens are output
/// tokens (N counts them, as OpenAI's `completion_tokens` counts `reasoning_tokens`), so TPOT
/// and ITL span reasoning and answer alike.

#include <chrono>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "tokchron/clock.hpp"
#include "tokchron/config.hpp"
#include "tokchron/metrics/metric_id.hpp"
#include "tokchron/timeline/request_timeline.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// A duration of the timeline's clock period with a fractional count (for ratios such as TPOT).
template <class Timeline>
using fractional_duration_t = std::chrono::duration<double, typename Timeline::duration::period>;

namespace detail {
/// later - earlier. Both come from a timeline, which holds only time points inside the time
/// range (clock.hpp), so the difference fits; a point outside it gives no value, never an
/// overflow.
template <class TP>
[[nodiscard]] constexpr std::optional<typename TP::duration> diff(
    const std::optional<TP>& later, const std::optional<TP>& earlier) noexcept {
  if (!later || !earlier || !in_time_range(*later) || !in_time_range(*earlier)) return std::nullopt;
  return *later - *earlier;
}
}  // namespace detail

/// Time to first token from arrival: t1 - a.
template <class Timeline>
[[nodiscard]] auto ttft(const Timeline& tl) noexcept {
  return detail::diff(tl.first_token_time(), tl.arrival());
}
/// Time to first token from the actual send: t1 - send (differs from ttft by issue delay).
template <class Timeline>
[[nodiscard]] auto ttft_from_send(const Timeline& tl) noexcept {
  return detail::diff(tl.first_token_time(), tl.send_time());
}
/// Time to first token from the first scheduling: t1 - first scheduled (engine-side view).
template <class Timeline>
[[nodiscard]] auto ttft_from_scheduled(const Timeline& tl) noexcept {
  return detail::diff(tl.first_token_time(), tl.first_scheduled());
}
/// End-to-end latency: f - a, whatever the finish reason.
template <class Timeline>
[[nodiscard]] auto e2e(const Timeline& tl) noexcept {
  return detail::diff(tl.finish_time(), tl.arrival());
}
/// Queue time: first scheduled - queued (arrival when queueing was not recorded).
template <class Timeline>
[[nodiscard]] auto queue_time(const Timeline& tl) noexcept {
  return detail::diff(tl.first_scheduled(), tl.queued_time() ? tl.queued_time() : tl.arrival());
}
/// Prefill time: t1 - first scheduled (includes any preemption before the first token).
template <class Timeline>
[[nodiscard]] auto prefill_time(const Timeline& tl) noexcept {
  return detail::diff(tl.first_token_time(), tl.first_scheduled());
}
/// Decode time: tN - t1 (zero for a single token chunk).
template <class Timeline>
[[nodiscard]] auto decode_time(const Timeline& tl) noexcept {
  return detail::diff(tl.last_token_time(), tl.first_token_time());
}
/// Time per output token: (tN - t1) / (N - 1), defined only for N >= 2.
template <class Timeline>
[[nodiscard]] std::optional<fractional_duration_t<Timeline>> tpot(const Timeline& tl) noexcept {
  const std::uint64_t n = tl.output_tokens();
  const auto d = decode_time(tl);
  if (n < 2 || !d) return std::nullopt;
  return fractional_duration_t<Timeline>(*d) / static_cast<double>(n - 1);
}
/// Normalised latency: (f - a) / N, defined for N >= 1.
template <class Timeline>
[[nodiscard]] std::optional<fractional_duration_t<Timeline>> normalized_latency(
    const Timeline& tl) noexcept {
  const std::uint64_t n = tl.output_tokens();
  const auto d = e2e(tl);
  if (n < 1 || !d) return std::nullopt;
  return fractional_duration_t<Timeline>(*d) / static_cast<double>(n);
}
namespace detail {
/// `tokens` / `d` in tokens per second, when `d` is recorded and positive.
template <class Duration>
[[nodiscard]] std::optional<double> tokens_per_second(std::uint64_t tokens,
                                                      const std::optional<Duration>& d) noexcept {
  if (!d || *d <= Duration::zero()) return std::nullopt;
  return static_cast<double>(tokens) / std::chrono::duration<double>(*d).count();
}
}  // namespace detail

/// Per-request output rate in tokens per second: N / (f - a), defined for N >= 1 and f > a.
template <class Timeline>
[[nodiscard]] std::optional<double> output_rate(const Timeline& tl) noexcept {
  const std::uint64_t n = tl.output_tokens();
  if (n < 1) return std::nullopt;
  return detail::tokens_per_second(n, e2e(tl));
}

/// Time to first answer token from arrival: tA - a, tA the first chunk carrying tokens of any
/// kind but `reasoning`. Equals ttft for a request without reasoning; empty when no answer token
/// arrived (reasoning only, or a failure mid-reasoning).
template <class Timeline>
[[nodiscard]] auto ttfa(const Timeline& tl) noexcept {
  return detail::diff(tl.first_answer_token_time(), tl.arrival());
}
/// Reasoning time: tA - tR, from the first reasoning token to the first answer token. Empty
/// without an answer token, without a reasoning token, or when reasoning began only after the
/// answer (tR > tA: the answer did not wait for it).
template <class Timeline>
[[nodiscard]] auto reasoning_time(const Timeline& tl) noexcept {
  using result = decltype(detail::diff(tl.first_answer_token_time(), tl.arrival()));
  const auto a = tl.first_answer_token_time();
  const auto r = tl.first_reasoning_token_time();
  if (!a || !r || *r > *a) return result{};
  return detail::diff(a, r);
}
/// Time to second token: the chunk carrying the second output token minus t1 (0 when the first
/// token chunk carried two or more tokens); empty for N < 2.
template <class Timeline>
[[nodiscard]] auto ttst(const Timeline& tl) noexcept {
  return detail::diff(tl.second_token_time(), tl.first_token_time());
}

/// Prefill throughput per request (per user): prompt tokens / ttft, tokens per second. Empty
/// without a prompt length or a first token, or when ttft is 0.
template <class Timeline>
[[nodiscard]] std::optional<double> prefill_tps(const Timeline& tl) noexcept {
  const auto p = tl.prompt_tokens();
  if (!p) return std::nullopt;
  return detail::tokens_per_second(*p, ttft(tl));
}
/// Prefill throughput over the prompt tokens the request actually prefilled: (prompt - cached)
/// / ttft. Empty as `prefill_tps`, and when the cached count is unknown or exceeds the prompt.
template <class Timeline>
[[nodiscard]] std::optional<double> uncached_prefill_tps(const Timeline& tl) noexcept {
  const auto p = tl.prompt_tokens();
  const auto c = tl.cached_prompt_tokens();
  if (!p || !c || *c > *p) return std::nullopt;
  return detail::tokens_per_second(*p - *c, ttft(tl));
}
/// Speculative decoding acceptance rate: accepted / drafted tokens, in [0, 1]; empty when
/// nothing was drafted or speculation was not recorded.
template <class Timeline>
[[nodiscard]] std::optional<double> spec_acceptance(const Timeline& tl) noexcept {
  const auto d = tl.speculative_drafted_tokens();
  const auto a = tl.speculative_accepted_tokens();
  if (!d || !a || *d == 0) return std::nullopt;
  return static_cast<double>(*a) / static_cast<double>(*d);
}

/// Calls `f(gap)` for each gap between consecutive token chunks (per-chunk ITL, as vLLM's
/// client pools them; the samples of the `icl` metric, reasoning and answer chunks alike).
/// Needs a store that keeps chunks. Returns the number of calls.
template <class Timeline, class F>
std::size_t for_each_itl_per_chunk(const Timeline& tl, F&& f) {
  static_assert(Timeline::store_type::keeps_chunks,
                "per-chunk ITL needs a full_store; a streaming_store hands gaps to its sink");
  std::size_t calls = 0;
  bool have_prev = false;
  typename Timeline::time_point prev{};
  for (const auto& c : tl.store().chunks()) {
    if (c.tokens == 0) continue;
    if (have_prev) {
      f(c.time - prev);
      ++calls;
    }
    prev = c.time;
    have_prev = true;
  }
  return calls;
}

/// Calls `f(gap_per_token)` once per output token after the first (N - 1 calls): a chunk of k
/// tokens after gap g gives k calls with g/k; the first token chunk's extra tokens give 0.
/// When `f` also takes a count, it is called `f(gap_per_token, k)` once per chunk instead (the
/// k equal samples as one run: O(chunks), however many tokens a chunk declares). Needs a store
/// that keeps chunks. Returns the number of samples (N - 1).
template <class Timeline, class F>
std::size_t for_each_itl_per_token(const Timeline& tl, F&& f) {
  static_assert(Timeline::store_type::keeps_chunks,
                "per-token ITL needs a full_store; a streaming_store hands gaps to its sink");
  using fd = fractional_duration_t<Timeline>;
  std::size_t calls = 0;
  bool have_prev = false;
  typename Timeline::time_point prev{};
  for (const auto& c : tl.store().chunks()) {
    if (c.tokens == 0) continue;
    const fd each = have_prev ? fd(c.time - prev) / static_cast<double>(c.tokens) : fd::zero();
    const std::uint32_t k = have_prev ? c.tokens : c.tokens - 1u;
    if constexpr (std::is_invocable_v<F&, fd, std::uint64_t>) {
      if (k > 0) f(each, std::uint64_t{k});
    } else {
      for (std::uint32_t i = 0; i < k; ++i) f(each);
    }
    calls += k;
    prev = c.time;
    have_prev = true;
  }
  return calls;
}

/// One request's metrics, in seconds (tokens/s for the rates; empty where undefined, never a
/// silent 0): what `canonical_metrics(tl)` computes under tokchron's definitions, and what
/// `evaluate(profile, tl)` (metrics/profile.hpp) computes as a profile sees the request. Each
/// metric field is named as its `metric_id`; the fields and `field` are generated from
/// `TOKCHRON_PER_REQUEST_METRICS` (metrics/metric_id.hpp).
///
/// What each producer fills: `canonical_metrics` every canonical metric (not `itl`), the token
/// counts, `preemptions`, `succeeded` and `completed` (the canonical rule: the timeline
/// succeeded). `evaluate` the metrics the profile reports (`ttft` from the profile's origin, so
/// never `ttft_from_send` or `ttft_from_scheduled`; `itl` under a per-request ITL grain),
/// `completed` by the profile's rule (`succeeded` stays false), `tpot_invalid`, `quirks`, and
/// `reasoning_tokens` only when the request had any. A record filled by hand sets `succeeded`.
struct request_metrics {
#define TOKCHRON_X(name, canonical) std::optional<double> name;
  TOKCHRON_PER_REQUEST_METRICS(TOKCHRON_X)
#undef TOKCHRON_X
  std::uint64_t output_tokens = 0;  ///< N (under a profile: by its token source)
  /// Tokens of the reasoning chunks (part of output_tokens). `canonical_metrics`: always set
  /// (0 without reasoning); `evaluate`: set when the request had any (a tool that re-encodes
  /// reasoning text gets none without it: AIPerf's reasoning_token_count).
  std::optional<std::uint64_t> reasoning_tokens;
  std::optional<std::uint64_t> prompt_tokens, cached_prompt_tokens;
  std::uint32_t preemptions = 0;
  bool succeeded = false;  ///< the request succeeded (canonical_metrics, or a hand-filled record)
  bool completed = false;  ///< counted as completed by the profile that computed the record
  bool tpot_invalid = false;  ///< N too small under a profile's `small_n_rule::invalid`
  /// What the profile's quirks did to this request (a run's warnings count them); all clear
  /// from `canonical_metrics`.
  struct quirk_flags {
    std::uint32_t usage_chunks_ignored = 0;  ///< usage-only chunks treated as absent
    bool usage_not_read = false;     ///< a reported usage count differing from the streamed tokens
                                     ///< that the tool never reads
    bool ttft_defaulted = false;     ///< no counted chunk: the tool's default TTFT 0 was kept
    std::uint32_t gaps_split = 0;    ///< ITL gaps restarted at an uncounted chunk
    bool one_response = false;       ///< N > 1 in one counted chunk: no TPOT (GenAI-Perf)
    bool negative_tpot = false;      ///< N < 2: the negative TPOT of `small_n_rule::negative`
    bool no_first_token = false;     ///< engine-side, completed without a token: no TTFT (the tool
                                     ///< would read an unset time; its intent: none)
    bool not_streamable = false;     ///< fewer than 2 counted tokens: no TTFT, TPOT or ITL
                                     ///< (`profile::ttft_needs_two_tokens`)
    bool usage_unseen = false;       ///< a usage count from where the tool does not read one
                                     ///< (`profile::usage_sources`), or of unknown source, other
                                     ///< than the N the tool counted instead
    bool failed_after_done = false;  ///< failed after its `[DONE]`, which ends the tool's
                                     ///< reading: completed for it (`profile::stops_at_done`)
  } quirks;

  /// Whether the request counts as completed: `completed` (by a profile's rule) or `succeeded`
  /// (canonical_metrics, or a record filled by hand).
  [[nodiscard]] constexpr bool counted() const noexcept { return completed || succeeded; }

  using field_type = std::optional<double> request_metrics::*;
  /// The field holding metric `m`, or nullptr for the metrics a request has no one value of
  /// (icl: pooled samples, `for_each_icl`; fluidity: needs deadlines).
  [[nodiscard]] static constexpr field_type field(metric_id m) noexcept {
    switch (m) {
#define TOKCHRON_X(name, canonical) \
  case metric_id::name: return &request_metrics::name;
      TOKCHRON_PER_REQUEST_METRICS(TOKCHRON_X)
#undef TOKCHRON_X
      default: break;
    }
    return nullptr;
  }
  /// Whether `canonical_metrics` computes metric `m` (every metric of `field` but `itl`).
  [[nodiscard]] static constexpr bool canonical(metric_id m) noexcept {
    switch (m) {
#define TOKCHRON_X(name, canonical) \
  case metric_id::name: return (canonical) != 0;
      TOKCHRON_PER_REQUEST_METRICS(TOKCHRON_X)
#undef TOKCHRON_X
      default: break;
    }
    return false;
  }
  /// `field(m)` where `canonical_metrics` computes `m`, else nullptr: the columns of a
  /// canonical record (request CSV rows, per-request SLO limits).
  [[nodiscard]] static constexpr field_type canonical_field(metric_id m) noexcept {
    return canonical(m) ? field(m) : nullptr;
  }
  /// The value of metric `m` (empty when undefined or not held here).
  [[nodiscard]] constexpr std::optional<double> value(metric_id m) const noexcept {
    const field_type f = field(m);
    return f ? this->*f : std::nullopt;
  }
};

/// Computes `request_metrics` for a timeline.
template <class Timeline>
[[nodiscard]] request_metrics canonical_metrics(const Timeline& tl) noexcept {
  auto sec = [](const auto& d) -> std::optional<double> {
    if (!d) return std::nullopt;
    return std::chrono::duration<double>(*d).count();
  };
  request_metrics m;
  m.ttft = sec(ttft(tl));
  m.ttft_from_send = sec(ttft_from_send(tl));
  m.ttft_from_scheduled = sec(ttft_from_scheduled(tl));
  m.tpot = sec(tpot(tl));
  m.e2e = sec(e2e(tl));
  m.queue_time = sec(queue_time(tl));
  m.prefill_time = sec(prefill_time(tl));
  m.decode_time = sec(decode_time(tl));
  m.normalized_latency = sec(normalized_latency(tl));
  m.output_rate = output_rate(tl);
  m.ttfa = sec(ttfa(tl));
  m.reasoning_time = sec(reasoning_time(tl));
  m.ttst = sec(ttst(tl));
  m.prefill_tps = prefill_tps(tl);
  m.uncached_prefill_tps = uncached_prefill_tps(tl);
  m.spec_acceptance = spec_acceptance(tl);
  m.output_tokens = tl.output_tokens();
  m.reasoning_tokens = tl.reasoning_tokens();
  m.prompt_tokens = tl.prompt_tokens();
  m.cached_prompt_tokens = tl.cached_prompt_tokens();
  m.preemptions = tl.preemptions();
  m.succeeded = tl.succeeded();
  m.completed = m.succeeded;
  return m;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_METRICS_CANONICAL_HPP
