// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_METRICS_PROFILE_HPP
#define TOKCHRON_METRICS_PROFILE_HPP

/// \file
/// What a compatibility profile is: the choices in which public benchmark tools differ (origin,
/// which chunks count, E2E end, token source, TPOT, ITL grain, percentiles, duration, rates,
/// goodput) as enums and one plain `profile` struct, and the generic engine (`evaluate`) that
/// computes any profile's per-request values (`request_metrics`) from a request timeline. The
/// built-in profiles are in metrics/builtin_profiles.hpp.
///
/// Adding a choice is adding an enum and a `profile` field, setting tokchron's choice in
/// `profiles::canonical` and the other choice in each built-in profile that differs (each starts
/// from `canonical` and sets only what differs), and reading it in `evaluate`.
///
/// Per-request values are in seconds; the engine is O(chunks) per request, allocates nothing and
/// is `noexcept` (the ITL sink must be too). Thread safety: profiles are immutable constants.

#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "tokchron/config.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/metrics/metric_table.hpp"
#include "tokchron/metrics/profile_rules.hpp"
#include "tokchron/quantile/estimator.hpp"
#include "tokchron/timeline/event.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// The time latencies are measured from.
enum class latency_origin : std::uint8_t {
  send,     ///< the actual send time (`send_time()`, else `arrival()`): client-side tools
  arrival,  ///< the intended arrival (`arrival()`): MLPerf's scheduled time, tokchron canonical
};

/// Which streamed chunks a tool treats as "a token arrived" (for TTFT, ITL and response ends).
enum class chunk_rule : std::uint8_t {
  tokens,         ///< chunks carrying at least one token, whatever their kind
  choices,        ///< chunks with a choices entry: kinds `text`, `empty` and `reasoning` (vLLM)
  nonempty_text,  ///< chunks with non-empty content: kind `text` only (GenAI-Perf, legacy vLLM)
  any_response,   ///< every SSE message but `[DONE]`: kinds text, empty, usage, reasoning
  /// chunks whose content or reasoning content is non-empty: kinds `text` and `reasoning`
  /// (AIPerf: `_parse_chat_common` keeps a delta with either)
  content_or_reasoning,
  /// chunks with non-empty content that carry a token: kind `text` with tokens > 0
  /// (inference-perf stamps each re-tokenized token of a content chunk; a chunk of 0 tokens
  /// gives no time)
  text_tokens,
};

/// How a tool measures the time to second token.
enum class ttst_rule : std::uint8_t {
  second_token,     ///< the chunk carrying the second token - the first token chunk (0 when the
                    ///< first chunk carried two or more tokens): tokchron canonical
  second_response,  ///< the second counted chunk - the first (AIPerf `responses[1] - responses[0]`)
};

/// The bit of metric `m` in a profile's `extra_metrics` mask.
[[nodiscard]] constexpr std::uint32_t metric_bit(metric_id m) noexcept {
  return std::uint32_t{1} << static_cast<unsigned>(m);
}

/// The event that ends a request's end-to-end latency.
enum class e2e_end : std::uint8_t {
  last_counted_chunk,  ///< the last chunk the chunk rule counts (vLLM, GenAI-Perf, AIPerf)
  last_chunk,          ///< the last chunk of any kind, `[DONE]` included (SGLang)
  done_chunk,          ///< the `[DONE]` chunk, else the finish (legacy vLLM, GuideLLM)
  finish,              ///< the recorded finish: end of stream (llmperf, inference-perf)
  last_token_chunk,    ///< the last chunk carrying tokens, else the finish: the final engine
                       ///< response of an engine-side tool (trtllm-bench, gptManagerBenchmark,
                       ///< MLPerf), which sees no usage or `[DONE]` chunk
};

/// Where the output-token count N comes from.
enum class token_source : std::uint8_t {
  chunk_tokens,               ///< the sum of the chunks' token counts (exact token ids)
  usage_else_chunks,          ///< the usage count the tool read (`profile::usage_sources`), else
                              ///< the chunk sum (SGLang: the requested length, overwritten by
                              ///< the usage of any chunk that carried one)
  usage_nonzero_else_chunks,  ///< the usage count the tool read when non-zero, else the chunk sum
  usage_chunk_else_chunks,    ///< the usage count only when it came in a usage-only chunk, else
                              ///< the chunk sum (= usage_else_chunks with usage_sources limited
                              ///< to usage_chunk)
  counted_tokens,             ///< the tokens of the chunks the chunk rule counts (a re-encode of
                              ///< the content text only: inference-perf)
  usage_else_counted_chunks,  ///< the usage count the tool read, else the number of counted
                              ///< chunks, one token each (GuideLLM's `token_iterations`)
};

/// How a tool rounds TPOT (it may keep times as integer nanoseconds).
enum class ns_rounding : std::uint8_t {
  none,          ///< floating point
  nearest_even,  ///< round to integer ns, ties to even (Python's `round`: GenAI-Perf)
  truncate,      ///< integer ns division (MLPerf loadgen)
};

/// How the tool does its arithmetic on latencies (per request and in its means).
enum class tool_arithmetic : std::uint8_t {
  double_seconds,  ///< floating point (the Python tools): tokchron's own arithmetic
  int64_ns,        ///< integer nanoseconds; a mean is an int64 sum divided by a size_t count,
                   ///< truncated (so a negative sum wraps through the unsigned division) (MLPerf)
  float_ms,        ///< `std::chrono::duration<float, std::milli>` per request; a mean is a
                   ///< float sum in insertion order over the float count (gptManagerBenchmark)
};

/// The bit of usage source `u` in a profile's `usage_sources` mask.
[[nodiscard]] constexpr std::uint8_t usage_bit(usage_source u) noexcept {
  return static_cast<std::uint8_t>(1u << static_cast<unsigned>(u));
}

/// Whether the grain pools samples from within requests (per chunk or per token), as opposed
/// to one value per request or none.
[[nodiscard]] constexpr bool pools_samples(itl_grain g) noexcept {
  return g == itl_grain::per_chunk || g == itl_grain::per_token_split ||
         g == itl_grain::per_token_with_first || g == itl_grain::per_token_gap_zeros;
}

/// How the run's duration is measured. "The start" is the benchmark start when known (the trace
/// field `benchmark_start`, `run_summarizer::set_benchmark_start`), else the earliest intended
/// arrival (a stand-in: the tools start their clock before the first request is sent).
enum class duration_rule : std::uint8_t {
  origin_to_finish,    ///< the start to max(end) over every request, failed included, the end
                       ///< being the profile's E2E end when it has one, else the finish
  origin_to_e2e_end,   ///< max(E2E end) - min(origin) over completed requests, whatever the
                       ///< benchmark start: max(last response) - min(request) (GenAI-Perf, AIPerf)
  completed_to_end,    ///< as origin_to_e2e_end, failed requests counted as left out
                       ///< (trtllm-bench: `max(end_timestamp) - min(start_timestamp)` over its
                       ///< records, which hold completed requests only; it aborts on a failure)
  last_issued_to_end,  ///< the start to the E2E end of the last request issued (the latest
                       ///< intended arrival), whatever ends later (MLPerf loadgen's
                       ///< `final_query_all_samples_done_time`)
  all_origin_to_end,   ///< max(E2E end, else finish) - min(origin) over every request, failed
                       ///< included, whatever the benchmark start (inference-perf `total_time`)
};

/// Which requests the request throughput counts.
enum class rps_rule : std::uint8_t {
  completed,            ///< completed / duration
  all_requests,         ///< every request, failed included / duration (GenAI-Perf)
  completed_minus_one,  ///< (completed - 1) / duration (MLPerf loadgen samples per second)
};

/// The per-request output rate a tool reports ("per-user tokens/s").
enum class user_rate_rule : std::uint8_t {
  tokens_over_e2e,  ///< N / E2E (llmperf `request_output_throughput`, canonical `output_rate`)
  inverse_tpot,     ///< 1 / TPOT (gptManagerBenchmark `user tok/s = 1000 / TPOT(ms)`)
};

/// How a tool decides that a request is "good" for goodput (evaluated by `sla/`).
enum class goodput_rule : std::uint8_t {
  none,                     ///< the tool has no goodput
  all_met_missing_zero,     ///< good iff every chosen SLO has value <= SLO; a TPOT undefined for
                            ///< N <= 1 counts as 0 (vLLM)
  all_met_missing_fails,    ///< as above, but a missing metric makes the request not good (AIPerf)
  all_met_missing_ignored,  ///< value > SLO is bad; a missing metric is not checked (GenAI-Perf,
                            ///< tokchron canonical)
  percentile_limits,        ///< the run passes iff P99 TTFT and P99 TPOT are within limits (MLPerf)
};

/// One tool's definitions, as data. See the enums for each choice.
struct profile {
  std::string_view name;         ///< the name `find_profile` and reports use ("vllm", ...)
  std::string_view tool;         ///< the tool and the source it follows
  std::string_view description;  ///< what differs, and the stand-ins tokchron uses
  latency_origin origin;
  chunk_rule token_chunks;
  /// The tool uses `ttft == 0` as "not measured yet": a first response at exactly the origin is
  /// overwritten by the next one and gives no ITL sample (vllm #7242, sglang PR #36047).
  bool zero_ttft_is_unset;
  /// A request counts as completed only when a counted chunk arrived (vLLM's success flag,
  /// GenAI-Perf drops requests with no non-empty response). Otherwise: `succeeded()`.
  bool needs_first_response;
  e2e_end end;
  token_source output_tokens;
  tpot_span tpot_numerator;
  small_n_rule tpot_small_n;
  ns_rounding tpot_rounding;
  itl_grain itl;
  quantile_method percentile_method;
  /// Delta degrees of freedom of the reported std; empty when the tool reports no std.
  std::optional<unsigned> std_ddof;
  /// `std_ddof` values: numpy's population std (ddof 0), pandas' sample std (ddof 1), none.
  static constexpr std::optional<unsigned> population_std{0u}, sample_std{1u}, no_std{};
  duration_rule duration;
  rps_rule request_rate;
  user_rate_rule user_rate;
  goodput_rule goodput;
  /// The percentiles the tool prints by default, in percent, comma-separated.
  std::string_view default_percentiles;
  /// Where the tool reads a usage count (`usage_bit`s of `usage_source`): a count whose source
  /// is not among them never reached the tool's N (vLLM reads only a chunk without choices,
  /// SGLang and GuideLLM any chunk before the stream ends and a non-streamed body; none reads a
  /// count the server kept). A trace that does not say where its count came from has it from
  /// its usage chunk when it lists one, else from nowhere a tool reads (trace-format.md).
  std::uint8_t usage_sources;
  /// The tool stops reading the stream at its `[DONE]` line (GuideLLM breaks its loop there):
  /// what the trace records after it, a failure or the end of the stream, the tool never sees,
  /// so a request that has a `[DONE]` chunk succeeded for it whatever the trace says.
  bool stops_at_done;
  /// A request the tool counts as failed gets N = its counted chunks, one token each, whatever
  /// usage said (GuideLLM clears a failed request's output metrics and falls back to
  /// `token_iterations`); such N enter only what counts failed requests (GuideLLM's token rates).
  bool failed_output_is_chunks;
  /// The tool reads usage-only chunks: it sets `stream_options.include_usage` (vLLM), or handles
  /// one a server sends (SGLang). When false the tool never asks for usage, so a server sends it
  /// no usage-only chunk: such chunks in a trace (recorded by another client) are treated as
  /// absent (the tool's evident intent: fed one, AIPerf's parser raises and llmperf errors the
  /// request), and the usage count is never read. Engine-side tools see no usage chunk either.
  bool requests_usage;
  /// A completed request with no counted chunk keeps the tool's default TTFT of 0, which enters
  /// the TTFT statistics (legacy vLLM, SGLang, trtllm-bench).
  bool ttft_zero_without_response;
  /// The ITL gap restarts at every chunk but `[DONE]`, counted or not: an empty chunk in
  /// mid-stream splits the next gap (legacy vLLM chat loop: `most_recent_timestamp` is set
  /// outside its `if delta.get("content")`).
  bool gap_from_any_chunk;
  /// TPOT (and the per-request ITL) needs at least two counted chunks besides N > 1 (GenAI-Perf:
  /// `if num_responses > 1 and total_output_token > 1`).
  bool tpot_needs_two_responses;
  /// Which of the metrics ttfa, reasoning_time, ttst, icl, prefill_tps, uncached_prefill_tps and
  /// spec_acceptance the tool reports (`metric_bit`s); the others stay empty.
  std::uint32_t extra_metrics;
  /// How TTST is measured (when `extra_metrics` has ttst).
  ttst_rule ttst;
  /// A request with a non-positive gap between counted chunks gives no ICL sample at all
  /// (AIPerf's InterChunkLatencyMetric raises ValueError, and the record loses the metric).
  bool icl_needs_positive_gaps;
  /// The tool prints the median E2E as its mean and the mean as its median (legacy vLLM
  /// `benchmark_serving.py`: `mean_e2el_ms=np.median(...)`, `median_e2el_ms=np.mean(...)`).
  bool swaps_mean_median_e2e;
  /// The tool's arithmetic on latencies (integer ns, float ms or double).
  tool_arithmetic arithmetic;
  /// TTFT, TPOT and ITL need two time stamps: a request with fewer is "not streamable" and has
  /// none of them (inference-perf: `len(output_token_times) > 1`). A stamp is a token of the
  /// counted chunks under `itl_grain::per_token_gap_zeros` (inference-perf with a tokenizer),
  /// else a counted chunk (without one: one stamp per content chunk).
  bool ttft_needs_two_tokens;
  /// GuideLLM's statistics (`DistributionSummary.from_values`): TPOT samples weigh N and ITL
  /// samples N - 1; duplicates merged, zero weights dropped; the mean and the population std over
  /// the probabilities w / sum(w); a percentile is the first value whose cumulative probability
  /// (a float cumsum) reaches p (`np.searchsorted(cdf, p, side="left")`). Output and total token
  /// throughput count every request's tokens, failed included, over the span from the first
  /// token event to the last (its rate distributions over `output_tokens_timings`, without the
  /// benchmark window).
  bool guidellm_statistics;
  /// The duration starts at the benchmark start when one is known (false: the tool measures from
  /// its first request whatever the benchmark start, as GenAI-Perf, AIPerf and trtllm-bench do).
  [[nodiscard]] constexpr bool uses_benchmark_start() const noexcept {
    return duration != duration_rule::origin_to_e2e_end &&
           duration != duration_rule::completed_to_end &&
           duration != duration_rule::all_origin_to_end;
  }
  /// True when the tool reports metric `m` of `extra_metrics`.
  [[nodiscard]] constexpr bool reports(metric_id m) const noexcept {
    return (extra_metrics & metric_bit(m)) != 0;
  }
};

namespace detail {
[[nodiscard]] constexpr bool counts(chunk_rule r, std::uint32_t tokens, chunk_kind k) noexcept {
  switch (r) {
    case chunk_rule::tokens: return tokens > 0;
    case chunk_rule::choices:
      return k == chunk_kind::text || k == chunk_kind::empty || k == chunk_kind::reasoning;
    case chunk_rule::nonempty_text: return k == chunk_kind::text;
    case chunk_rule::any_response: return k != chunk_kind::done;
    case chunk_rule::content_or_reasoning:
      return k == chunk_kind::text || k == chunk_kind::reasoning;
    case chunk_rule::text_tokens: return k == chunk_kind::text && tokens > 0;
  }
  return false;
}

/// Whether the tool saw `tl` succeed: the timeline succeeded, or the profile's tool stops at
/// `[DONE]` and the stream had one (its failure came after, where the tool no longer reads).
template <class Timeline>
[[nodiscard]] bool tool_succeeded(const profile& p, const Timeline& tl) noexcept {
  if (tl.succeeded()) return true;
  if (!p.stops_at_done || !tl.finished()) return false;
  const auto& chunks = tl.store().chunks();
  return !chunks.empty() && chunks.back().kind == chunk_kind::done;
}

/// Where `tl`'s usage count came from: the recorded source, else its usage chunk when it has
/// one (a trace that does not say), else unknown.
template <class Timeline>
[[nodiscard]] std::optional<usage_source> usage_source_of(const Timeline& tl) noexcept {
  if (const auto s = tl.reported_output_tokens_source()) return s;
  for (const auto& c : tl.store().chunks())
    if (c.kind == chunk_kind::usage) return usage_source::usage_chunk;
  return std::nullopt;
}

template <class Timeline>
[[nodiscard]] std::optional<typename Timeline::time_point> origin_of(const profile& p,
                                                                     const Timeline& tl) noexcept {
  if (p.origin == latency_origin::send && tl.send_time()) return tl.send_time();
  return tl.arrival();
}

/// Hands `count` equal ITL samples to `sink`: one call `sink(value, count)` when it takes a
/// count, else `count` calls `sink(value)`.
template <class Sink>
void emit_itl(Sink& sink, double value, std::uint32_t count) noexcept {
  if constexpr (std::is_invocable_v<Sink&, double, std::uint64_t>) {
    sink(value, std::uint64_t{count});
  } else {
    for (std::uint32_t i = 0; i < count; ++i) sink(value);
  }
}

/// `d / n` in integer nanoseconds, rounded as the profile says, returned in seconds.
template <class Duration>
[[nodiscard]] double divide_ns(Duration d, std::uint64_t n, ns_rounding r) noexcept {
  if (r == ns_rounding::none)
    return std::chrono::duration<double>(d).count() / static_cast<double>(n);
  using ns = std::chrono::duration<double, std::nano>;
  double q;
  if constexpr (std::is_integral_v<typename Duration::rep> &&
                std::is_same_v<typename Duration::period, std::nano>) {
    if (r == ns_rounding::truncate && d.count() >= 0) {
      // Truncated integer nanoseconds, as the tool computes them.
      // NOLINTNEXTLINE(bugprone-integer-division)
      q = static_cast<double>(static_cast<std::uint64_t>(d.count()) / n);
      return q * 1e-9;
    }
  }
  q = ns(d).count() / static_cast<double>(n);
  q = r == ns_rounding::truncate ? std::trunc(q) : std::nearbyint(q);  // FE_TONEAREST: ties even
  return q * 1e-9;
}
}  // namespace detail

namespace detail {
/// A latency `d` as the tool computes it, in seconds: double, integer ns, or float ms.
template <class Duration>
[[nodiscard]] double tool_seconds(Duration d, tool_arithmetic a) noexcept {
  if (a == tool_arithmetic::float_ms)
    return static_cast<double>(std::chrono::duration<float, std::milli>(d).count()) / 1e3;
  if (a == tool_arithmetic::int64_ns)
    return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()) /
           1e9;
  return std::chrono::duration<double>(d).count();
}

/// `d / k` (k may be -1: MLPerf's `n_tokens - 1` for N < 2) as the tool computes it: integer ns
/// truncated toward zero, float ms, or as the profile's `ns_rounding` says.
template <class Duration>
[[nodiscard]] double tool_divide(Duration d, std::int64_t k, const profile& p) noexcept {
  if (p.arithmetic == tool_arithmetic::int64_ns) {
    const std::int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
    return static_cast<double>(ns / k) / 1e9;  // NOLINT(bugprone-integer-division)
  }
  if (p.arithmetic == tool_arithmetic::float_ms)
    return static_cast<double>(std::chrono::duration<float, std::milli>(d).count() /
                               static_cast<float>(k)) /
           1e3;
  if (k < 0) return -std::chrono::duration<double>(d).count() / static_cast<double>(-k);
  return divide_ns(d, static_cast<std::uint64_t>(k), p.tpot_rounding);
}

/// `evaluate`, also giving the time the profile's E2E ends at (`end_out`, when not null);
/// with `pool_any`, the pooled ITL samples of a request that did not succeed too (an
/// inclusion policy's `itl` family, metrics/inclusion.hpp).
template <class Timeline, class Sink>
[[nodiscard]] request_metrics evaluate_with_end(
    const profile& p, const Timeline& tl, Sink&& itl_sink,
    std::optional<typename Timeline::time_point>* end_out, bool pool_any = false) noexcept {
  static_assert(Timeline::store_type::keeps_chunks,
                "profiles replay every chunk: the timeline needs a full_store");
  using time_point = typename Timeline::time_point;
  using duration = typename Timeline::duration;
  auto sec = [](duration d) { return std::chrono::duration<double>(d).count(); };
  auto lat = [&](duration d) { return tool_seconds(d, p.arithmetic); };

  request_metrics r;
  const auto origin = origin_of(p, tl);
  const bool tool_ok = tool_succeeded(p, tl);
  const bool pooled = (pool_any || tool_ok) && pools_samples(p.itl);

  // One pass: the first and last counted chunks, the pooled ITL samples, the last chunk of any
  // kind, the last chunk carrying tokens, the [DONE] chunk, the number of non-[DONE] chunks and
  // of counted chunks. With `zero_ttft_is_unset` a counted chunk at exactly the origin leaves
  // TTFT "unset", as the tools' `ttft == 0.0` test. A tool that never asks for usage never sees
  // a usage-only chunk. `recent` is where the next ITL gap starts.
  bool have_first = false, have_ttft = false, have_last_any = false, have_done = false,
       have_token = false;
  time_point first{}, last{}, recent{}, last_any{}, done{}, last_token{}, second{}, answer{},
      reasoning{};
  bool have_answer = false, have_reasoning = false;
  std::uint64_t data_chunks = 0, counted = 0, counted_tokens = 0;
  for (const auto& c : tl.store().chunks()) {
    if (c.kind == chunk_kind::usage) {
      if (!p.requests_usage) {  // an engine-side tool never sees one: no quirk there
        if (p.end != e2e_end::last_token_chunk) ++r.quirks.usage_chunks_ignored;
        continue;
      }
    }
    last_any = c.time;
    have_last_any = true;
    if (c.tokens > 0) {
      last_token = c.time;
      have_token = true;
    }
    if (c.kind == chunk_kind::done) {
      if (!have_done) done = c.time;
      have_done = true;
    } else {
      ++data_chunks;
    }
    if (!counts(p.token_chunks, c.tokens, c.kind)) {
      if (p.gap_from_any_chunk && c.kind != chunk_kind::done) recent = c.time;
      continue;
    }
    if (++counted == 2) second = c.time;
    counted_tokens += c.tokens;
    if (c.kind == chunk_kind::reasoning) {
      if (!have_reasoning) reasoning = c.time;
      have_reasoning = true;
    } else {
      if (!have_answer) answer = c.time;
      have_answer = true;
    }
    if (!have_ttft) {
      first = c.time;
      have_first = true;
      have_ttft = !(p.zero_ttft_is_unset && origin && c.time == *origin);
      if (pooled &&
          (p.itl == itl_grain::per_token_with_first || p.itl == itl_grain::per_token_gap_zeros) &&
          c.tokens > 1)
        emit_itl(itl_sink, 0.0, c.tokens - 1u);
    } else if (pooled) {
      if (recent != last) ++r.quirks.gaps_split;
      const double gap = sec(c.time - recent);
      if (p.itl == itl_grain::per_chunk) {
        emit_itl(itl_sink, gap, 1u);
      } else if (p.itl == itl_grain::per_token_gap_zeros) {
        emit_itl(itl_sink, gap, 1u);
        if (c.tokens > 1) emit_itl(itl_sink, 0.0, c.tokens - 1u);
      } else {
        const std::uint32_t k = c.tokens ? c.tokens : 1u;
        emit_itl(itl_sink, gap / static_cast<double>(k), k);
      }
    }
    last = c.time;
    recent = c.time;
  }

  // N. The usage count counts only when it came where the tool reads one.
  const auto reported = tl.reported_output_tokens();
  const auto source = usage_source_of(tl);
  // The usage count the tool reads, as a flag and a plain value (g++ -O3 reports a
  // std::optional copy here as maybe uninitialized).
  const bool has_usage = p.requests_usage && reported.has_value() && source.has_value() &&
                         (p.usage_sources & usage_bit(*source)) != 0 &&
                         (p.output_tokens != token_source::usage_chunk_else_chunks ||
                          *source == usage_source::usage_chunk);
  const std::uint64_t usage = has_usage ? *reported : 0;
  std::uint64_t n = tl.output_tokens();
  r.quirks.usage_not_read =
      !p.requests_usage && p.end != e2e_end::last_token_chunk && reported && *reported != n;
  const bool reads_usage = p.output_tokens == token_source::usage_else_chunks ||
                           p.output_tokens == token_source::usage_nonzero_else_chunks ||
                           p.output_tokens == token_source::usage_chunk_else_chunks ||
                           p.output_tokens == token_source::usage_else_counted_chunks;
  if ((p.output_tokens == token_source::usage_else_chunks ||
       p.output_tokens == token_source::usage_chunk_else_chunks) &&
      has_usage)
    n = usage;
  if (p.output_tokens == token_source::usage_nonzero_else_chunks && has_usage && usage != 0)
    n = usage;
  if (p.output_tokens == token_source::counted_tokens) n = counted_tokens;
  if (p.output_tokens == token_source::usage_else_counted_chunks) n = has_usage ? usage : counted;
  // A count the tool would have read had it come where it reads one, and that would have
  // changed N (a 0 under the non-zero rule would not).
  r.quirks.usage_unseen =
      p.requests_usage && reads_usage && reported && !has_usage && *reported != n &&
      !(p.output_tokens == token_source::usage_nonzero_else_chunks && *reported == 0);
  r.output_tokens = n;
  r.prompt_tokens = tl.prompt_tokens();
  r.completed = tool_ok && (!p.needs_first_response || have_first);
  if (p.guidellm_statistics)  // post_validation: non-empty content, or a usage count above 0
    r.completed = tool_ok && (have_answer || (has_usage && usage > 0));
  r.quirks.failed_after_done = r.completed && !tl.succeeded();
  if (p.failed_output_is_chunks && !r.completed) {
    n = counted;
    r.output_tokens = n;
    r.quirks.usage_unseen = false;
  }

  // TTFT and E2E.
  std::optional<time_point> end_tp;
  switch (p.end) {
    case e2e_end::last_counted_chunk:
      if (have_first) end_tp = last;
      break;
    case e2e_end::last_chunk:
      if (have_last_any) end_tp = last_any;
      break;
    case e2e_end::done_chunk:
      end_tp = have_done ? std::optional<time_point>(done) : tl.finish_time();
      break;
    case e2e_end::finish: end_tp = tl.finish_time(); break;
    case e2e_end::last_token_chunk:
      end_tp = have_token ? std::optional<time_point>(last_token) : tl.finish_time();
      break;
  }
  if (end_out) *end_out = end_tp;
  if (origin && have_first) r.ttft = lat(first - *origin);
  if (origin && !have_first && r.completed && p.ttft_zero_without_response) {
    r.ttft = 0.0;
    r.quirks.ttft_defaulted = true;
  }
  if (origin && end_tp) r.e2e = lat(*end_tp - *origin);
  r.quirks.no_first_token = r.completed && !have_first && !p.ttft_zero_without_response &&
                            p.end == e2e_end::last_token_chunk;

  // "Not streamable": fewer than two time stamps (tokens, or chunks), no TTFT.
  const std::uint64_t stamps = p.itl == itl_grain::per_token_gap_zeros ? counted_tokens : counted;
  if (p.ttft_needs_two_tokens && stamps < 2) {
    r.quirks.not_streamable = r.completed && r.ttft.has_value();
    r.ttft.reset();
  }

  // TPOT: the numerator is the E2E end minus the first counted chunk (or the token span).
  if (p.tpot_numerator == tpot_span::none) {
    // no TPOT
  } else if (p.tpot_numerator == tpot_span::origin_to_last_over_n) {
    const std::optional<time_point> to = have_first ? std::optional<time_point>(last) : end_tp;
    if (origin && to && n >= 1) r.tpot = sec(*to - *origin) / static_cast<double>(n);
  } else if (p.ttft_needs_two_tokens && stamps < 2) {
    // not streamable: no TPOT
  } else if (n <= 1) {
    if (p.tpot_small_n == small_n_rule::zero && r.ttft && r.e2e) r.tpot = 0.0;
    if (p.tpot_small_n == small_n_rule::invalid && have_first) r.tpot_invalid = true;
    if (p.tpot_small_n == small_n_rule::negative && have_first && end_tp) {
      r.tpot = tool_divide(*end_tp - first, -1, p);
      r.quirks.negative_tpot = true;
      r.output_tokens = 0;  // loadgen sets n_tokens = 0 for N = 1
    }
  } else if (have_first) {
    if (p.tpot_needs_two_responses && counted < 2) {
      r.quirks.one_response = true;
    } else if (p.tpot_numerator == tpot_span::token_span) {
      r.tpot = divide_ns(last - first, n - 1, p.tpot_rounding);
    } else if (end_tp) {
      r.tpot = tool_divide(*end_tp - first, static_cast<std::int64_t>(n - 1), p);
    }
  }

  // Per-request ITL.
  if (p.itl == itl_grain::per_request_tpot && n > 1) r.itl = r.tpot;
  if (p.itl == itl_grain::per_request_span && n > 1 && have_first)
    r.itl = sec(last - first) / static_cast<double>(n - 1);
  if (p.itl == itl_grain::per_request_including_ttft && origin) {
    if (n == 0 || !have_first || data_chunks == 0)
      r.itl = 0.0;
    else
      r.itl = sec(last - *origin) / static_cast<double>(data_chunks);
  }

  // Engine-side phases (canonical definitions) and rates.
  auto opt_sec = [&](const auto& d) -> std::optional<double> {
    if (!d) return std::nullopt;
    return sec(*d);
  };
  r.queue_time = opt_sec(queue_time(tl));
  r.prefill_time = opt_sec(prefill_time(tl));
  r.decode_time = opt_sec(decode_time(tl));
  n = r.output_tokens;
  if (r.e2e && n >= 1) r.normalized_latency = *r.e2e / static_cast<double>(n);
  if (const std::uint64_t k = tl.reasoning_tokens(); k > 0) r.reasoning_tokens = k;

  // The metrics of `extra_metrics`, from the counted chunks and the profile's TTFT.
  if (p.reports(metric_id::ttfa) && origin && have_answer) r.ttfa = lat(answer - *origin);
  if (p.reports(metric_id::reasoning_time) && have_answer && have_reasoning && reasoning <= answer)
    r.reasoning_time = lat(answer - reasoning);
  if (p.reports(metric_id::ttst)) {
    if (p.ttst == ttst_rule::second_response) {
      if (counted >= 2) r.ttst = lat(second - first);
    } else if (const auto d = ttst(tl)) {
      r.ttst = lat(*d);
    }
  }
  const auto prompt = tl.prompt_tokens();
  const auto cached = tl.cached_prompt_tokens();
  if (r.ttft && *r.ttft > 0 && prompt) {
    if (p.reports(metric_id::prefill_tps)) r.prefill_tps = static_cast<double>(*prompt) / *r.ttft;
    if (p.reports(metric_id::uncached_prefill_tps) && cached && *cached <= *prompt)
      r.uncached_prefill_tps = static_cast<double>(*prompt - *cached) / *r.ttft;
  }
  if (p.reports(metric_id::spec_acceptance)) r.spec_acceptance = spec_acceptance(tl);
  if (p.user_rate == user_rate_rule::inverse_tpot) {
    if (r.tpot && *r.tpot > 0) r.output_rate = 1.0 / *r.tpot;
  } else if (r.e2e && *r.e2e > 0 && n >= 1) {
    r.output_rate = static_cast<double>(n) / *r.e2e;
  }
  return r;
}
}  // namespace detail

/// Computes `p`'s per-request values for `tl` and hands each pooled ITL sample (seconds; only
/// for the per-chunk and per-token grains, and only for completed requests) to `itl_sink`: as
/// `itl_sink(value, count)` for `count` equal samples (a k-token chunk's per-token samples are
/// one call) when the sink takes two arguments, else once per sample.
/// Needs a store that keeps chunks. O(chunks) with a two-argument sink; allocates nothing.
template <class Timeline, class Sink>
[[nodiscard]] request_metrics evaluate(const profile& p, const Timeline& tl,
                                       Sink&& itl_sink) noexcept {
  return detail::evaluate_with_end(
      p, tl, std::forward<Sink>(itl_sink),
      static_cast<std::optional<typename Timeline::time_point>*>(nullptr));
}

/// Calls `f(gap_seconds)` for each inter-chunk latency sample of `tl` under `p`: the gaps
/// between consecutive chunks the profile counts, for a request the profile completes, when
/// the profile reports `icl` (none otherwise, and none at all for the request when
/// `icl_needs_positive_gaps` and a gap is 0). Returns the number of samples. Needs a store that
/// keeps chunks; O(chunks), allocates nothing itself (throws only what `f` throws).
template <class Timeline, class F>
std::size_t for_each_icl(const profile& p, const Timeline& tl, F&& f) {
  static_assert(Timeline::store_type::keeps_chunks,
                "ICL replays every chunk: the timeline needs a full_store");
  if (!p.reports(metric_id::icl) || !detail::tool_succeeded(p, tl)) return 0;
  auto counted = [&](const auto& c) {
    if (c.kind == chunk_kind::usage && !p.requests_usage) return false;
    return detail::counts(p.token_chunks, c.tokens, c.kind);
  };
  const auto& chunks = tl.store().chunks();
  for (int pass = p.icl_needs_positive_gaps ? 0 : 1; pass < 2; ++pass) {
    std::size_t n = 0;
    bool have_prev = false;
    typename Timeline::time_point prev{};
    for (const auto& c : chunks) {
      if (!counted(c)) continue;
      if (have_prev) {
        const auto gap = c.time - prev;
        if (pass == 0 && gap <= Timeline::duration::zero()) return 0;
        if (pass == 1) f(detail::tool_seconds(gap, p.arithmetic));
        ++n;
      }
      prev = c.time;
      have_prev = true;
    }
    if (pass == 1) return n;
  }
  return 0;
}

/// `evaluate` without pooled ITL samples.
template <class Timeline>
[[nodiscard]] request_metrics evaluate(const profile& p, const Timeline& tl) noexcept {
  return evaluate(p, tl, [](double) noexcept {});
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_METRICS_PROFILE_HPP
