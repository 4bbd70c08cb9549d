// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_IO_TRACE_HPP
#define TOKCHRON_IO_TRACE_HPP

/// \file
/// The request-trace record of tokchron's JSON Lines format (docs/library/trace-format.md), its
/// validation, and its conversion to and from a request timeline. Standard library only; the
/// JSON reading and writing are in `io/trace_json_reader.hpp` and `io/trace_json_writer.hpp`
/// (nlohmann-json adaptors).
///
/// One record is one request; times are seconds (double) on one monotonic clock. Timelines made
/// from records run on `trace_clock` (integer nanoseconds since the trace clock's zero), so a
/// time survives record -> timeline -> record to the nanosecond.

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tokchron/clock.hpp"
#include "tokchron/config.hpp"
#include "tokchron/timeline/event.hpp"
#include "tokchron/timeline/request_timeline.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// The clock of replayed traces: integer nanoseconds since the trace's zero. It is never read
/// (`now()` returns the zero): every event of a replayed timeline carries its own time.
struct trace_clock {
  using rep = std::int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<trace_clock, duration>;
  static constexpr bool is_steady = true;
  [[nodiscard]] static constexpr time_point now() noexcept { return time_point{}; }
};

/// A timeline replayed from a trace: trace clock, every chunk kept.
using trace_timeline = basic_request_timeline<trace_clock>;

/// One chunk of a trace record: `[time, tokens]` or `[time, tokens, kind]`.
struct trace_chunk {
  double time = 0;  ///< seconds
  std::uint32_t tokens = 0;
  chunk_kind kind = chunk_kind::text;
  friend bool operator==(const trace_chunk& a, const trace_chunk& b) noexcept {
    return a.time == b.time && a.tokens == b.tokens && a.kind == b.kind;
  }
};

/// One request of a trace. Required: `send` and `chunks` (possibly empty). Everything else is
/// optional; `arrival` defaults to `send`, `end` to the latest event (the last chunk, preemption,
/// scheduling, queueing or send).
struct trace_record {
  std::string id;
  /// When the benchmark started, before its first request was sent (seconds): the start of every
  /// profile's duration that measures from it, or the earliest arrival when that is earlier.
  /// Optional; a tool that records it writes the same value on every line.
  std::optional<double> benchmark_start;
  // The host's clock anchor (docs/library/trace-format.md, "Clock anchors"): all three or none.
  std::optional<double> clock_mono;            ///< a monotonic reading, on this trace's clock
  std::optional<std::uint64_t> clock_wall_ns;  ///< the wall clock (Unix ns) read at clock_mono
  std::optional<std::uint64_t> clock_gap_ns;   ///< the two monotonic reads' gap around it (ns)

  std::optional<double> arrival;  ///< intended arrival (seconds)
  double send = 0;                ///< actual send (seconds)
  std::optional<double> queued, scheduled;
  std::vector<double> preempted;  ///< preemption times (tokchron extension)
  std::optional<std::uint64_t> prompt_tokens;
  std::vector<trace_chunk> chunks;
  std::optional<double> end;
  std::optional<std::uint64_t> usage_output_tokens;
  /// Where the client learnt `usage_output_tokens` (JSON field `usage_source`). Absent in
  /// traces that do not say: see docs/library/trace-format.md for how profiles read those.
  std::optional<usage_source> usage_from;
  bool ok = true;
  std::string error;  ///< the failure's message (empty when none)
  /// Why the request ended (tokchron extension; default: stop when ok, error otherwise).
  std::optional<finish_reason> reason;
  // Reasoning, prompt caching and speculative decoding (all optional):
  /// Prompt tokens served from a prefix cache (usage `prompt_tokens_details.cached_tokens`).
  std::optional<std::uint64_t> cached_prompt_tokens;
  /// Reasoning tokens the server reported (usage `completion_tokens_details.reasoning_tokens`).
  std::optional<std::uint64_t> usage_reasoning_tokens;
  /// Speculative tokens drafted and accepted over the request (both or neither).
  std::optional<std::uint64_t> spec_draft_tokens, spec_accepted_tokens;
};

namespace detail {
/// How a text field reads a JSON integer: as its digits (an `id`), or not at all.
enum class trace_text : std::uint8_t { string_only, integer_as_text };

/// One field of a trace line: its JSON name, where it lives in `trace_record`, and whether a
/// line must have it. The member's type says how it is read and written (see the readers in
/// io/trace_json_reader.hpp and io/detail/trace_scanner.hpp, and io/trace_json_writer.hpp).
template <class M>
struct trace_field {
  std::string_view name;
  M trace_record::*member;
  bool required = false;
  trace_text text = trace_text::string_only;
};

/// Every field of a trace line, in the order lines are written. The one list of trace fields:
/// the JSON reader, the fast scanner, the writer and `operator==` all walk it, so a new field
/// is a member of `trace_record` plus a row here (and a check in `validate` if it is a time).
inline constexpr auto trace_fields = std::make_tuple(
    trace_field<std::string>{"id", &trace_record::id, false, trace_text::integer_as_text},
    trace_field<std::optional<double>>{"benchmark_start", &trace_record::benchmark_start},
    // The clock anchor.
    trace_field<std::optional<double>>{"clock_mono", &trace_record::clock_mono},
    trace_field<std::optional<std::uint64_t>>{"clock_wall_ns", &trace_record::clock_wall_ns},
    trace_field<std::optional<std::uint64_t>>{"clock_gap_ns", &trace_record::clock_gap_ns},
    trace_field<std::optional<double>>{"arrival", &trace_record::arrival},
    trace_field<double>{"send", &trace_record::send, true},
    trace_field<std::optional<double>>{"queued", &trace_record::queued},
    trace_field<std::optional<double>>{"scheduled", &trace_record::scheduled},
    trace_field<std::vector<double>>{"preempted", &trace_record::preempted},
    trace_field<std::optional<std::uint64_t>>{"prompt_tokens", &trace_record::prompt_tokens},
    trace_field<std::vector<trace_chunk>>{"chunks", &trace_record::chunks, true},
    trace_field<std::optional<double>>{"end", &trace_record::end},
    trace_field<std::optional<std::uint64_t>>{"usage_output_tokens",
                                              &trace_record::usage_output_tokens},
    trace_field<std::optional<usage_source>>{"usage_source", &trace_record::usage_from},
    trace_field<bool>{"ok", &trace_record::ok},
    trace_field<std::string>{"error", &trace_record::error},
    trace_field<std::optional<finish_reason>>{"finish_reason", &trace_record::reason},
    // Reasoning, prompt caching and speculative decoding.
    trace_field<std::optional<std::uint64_t>>{"cached_prompt_tokens",
                                              &trace_record::cached_prompt_tokens},
    trace_field<std::optional<std::uint64_t>>{"usage_reasoning_tokens",
                                              &trace_record::usage_reasoning_tokens},
    trace_field<std::optional<std::uint64_t>>{"spec_draft_tokens",
                                              &trace_record::spec_draft_tokens},
    trace_field<std::optional<std::uint64_t>>{"spec_accepted_tokens",
                                              &trace_record::spec_accepted_tokens});

/// The number of trace fields.
inline constexpr std::size_t trace_field_count = std::tuple_size_v<decltype(trace_fields)>;

/// Calls `f(field, index)` for every trace field, in order.
template <class F>
constexpr void for_each_trace_field(F&& f) {
  std::apply(
      [&](const auto&... fd) {
        std::size_t i = 0;
        (f(fd, i++), ...);
      },
      trace_fields);
}

/// Sets every field of `r` to its default, keeping the storage of strings and vectors.
inline void reset_trace_record(trace_record& r) {
  static const trace_record defaults{};
  for_each_trace_field([&](const auto& fd, std::size_t) {
    auto& v = r.*fd.member;
    using T = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::vector<double>> ||
                  std::is_same_v<T, std::vector<trace_chunk>>)
      v.clear();
    else
      v = defaults.*fd.member;
  });
}
}  // namespace detail

/// Field-by-field equality over every trace field.
[[nodiscard]] inline bool operator==(const trace_record& a, const trace_record& b) {
  bool same = true;
  detail::for_each_trace_field(
      [&](const auto& fd, std::size_t) { same = same && a.*fd.member == b.*fd.member; });
  return same;
}
[[nodiscard]] inline bool operator!=(const trace_record& a, const trace_record& b) {
  return !(a == b);
}

/// What is wrong with a record: the field (JSON path such as `chunks[2][0]`) and why.
struct trace_issue {
  std::string field;
  std::string message;
};

/// The finish reason named `s` ("stop", "length", "aborted", "error", "timed_out", "rejected").
[[nodiscard]] inline std::optional<finish_reason> parse_finish_reason(std::string_view s) noexcept {
  for (finish_reason r : {finish_reason::stop, finish_reason::length, finish_reason::aborted,
                          finish_reason::error, finish_reason::timed_out, finish_reason::rejected})
    if (to_string(r) == s) return r;
  return std::nullopt;
}

/// The usage source named `s` ("usage_chunk", "content_chunk", "body", "server").
[[nodiscard]] inline std::optional<usage_source> parse_usage_source(std::string_view s) noexcept {
  for (usage_source u : {usage_source::usage_chunk, usage_source::content_chunk, usage_source::body,
                         usage_source::server})
    if (to_string(u) == s) return u;
  return std::nullopt;
}

/// The chunk kind named `s` ("text", "empty", "usage", "done", "reasoning").
[[nodiscard]] inline std::optional<chunk_kind> parse_chunk_kind(std::string_view s) noexcept {
  for (chunk_kind k : {chunk_kind::text, chunk_kind::empty, chunk_kind::usage, chunk_kind::done,
                       chunk_kind::reasoning})
    if (to_string(k) == s) return k;
  return std::nullopt;
}

namespace detail {
/// Times must be finite and inside the time range of the trace clock (clock.hpp
/// `time_range_ticks`: |t| < 2^62 ns, about 4.61e9 s), so every difference fits.
[[nodiscard]] inline bool valid_trace_time(double t) noexcept {
  return seconds_in_time_range<trace_clock::duration>(t);
}
/// What `validate` says of a time outside the range.
inline constexpr const char* bad_trace_time =
    "must be a finite time in seconds within +-4.61e9 (2^62 ns)";
}  // namespace detail

/// The `trace_clock` time of a trace's time in seconds (rounded to the nanosecond; a time that
/// `validate` refuses saturates as `from_seconds` says), e.g. a record's `benchmark_start` for
/// `run_summarizer::set_benchmark_start`.
[[nodiscard]] inline trace_clock::time_point trace_time(double seconds) noexcept {
  return trace_clock::time_point(from_seconds<trace_clock::duration>(seconds));
}

/// Adds `seconds` to every time of `r` (the fields in seconds: benchmark_start, clock_mono,
/// arrival, send, queued, scheduled, preempted, chunk times, end), e.g. to bring a host's trace
/// onto another host's clock. Counts, ids and flags are unchanged.
inline void shift_times(trace_record& r, double seconds) noexcept {
  if (seconds == 0) return;
  detail::for_each_trace_field([&](const auto& fd, std::size_t) {
    auto& v = r.*fd.member;
    using T = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<T, double>) {
      v += seconds;
    } else if constexpr (std::is_same_v<T, std::optional<double>>) {
      if (v) *v += seconds;
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
      for (double& t : v) t += seconds;
    } else if constexpr (std::is_same_v<T, std::vector<trace_chunk>>) {
      for (trace_chunk& c : v) c.time += seconds;
    }
  });
}

namespace detail {
/// The longest gap accepted between an anchor's two monotonic reads (1 s): a slower read is
/// no anchor.
inline constexpr std::uint64_t max_clock_gap_ns = 1000000000;
/// The clock anchor's fields: all three or none, a valid time, a wall time after 1970 that fits
/// a signed 64-bit count, a gap of at most `max_clock_gap_ns`.
[[nodiscard]] inline std::optional<trace_issue> validate_clock_anchor(const trace_record& r) {
  const int set = int(r.clock_mono.has_value()) + int(r.clock_wall_ns.has_value()) +
                  int(r.clock_gap_ns.has_value());
  if (set == 0) return std::nullopt;
  if (set != 3)
    return trace_issue{!r.clock_mono      ? "clock_mono"
                       : !r.clock_wall_ns ? "clock_wall_ns"
                                          : "clock_gap_ns",
                       "is missing: a clock anchor has clock_mono, clock_wall_ns and clock_gap_ns"};
  if (!valid_trace_time(*r.clock_mono)) return trace_issue{"clock_mono", bad_trace_time};
  if (*r.clock_wall_ns == 0 || *r.clock_wall_ns > std::uint64_t{INT64_MAX})
    return trace_issue{"clock_wall_ns", "must be Unix time in nanoseconds, from 1 to 2^63-1"};
  if (*r.clock_gap_ns > max_clock_gap_ns)
    return trace_issue{"clock_gap_ns", "is over 1 s (1000000000 ns): not an anchor"};
  return std::nullopt;
}
}  // namespace detail

/// The finish reason a record implies: its `reason`, else stop when ok and error otherwise.
[[nodiscard]] inline finish_reason reason_of(const trace_record& r) noexcept {
  if (r.reason) return *r.reason;
  return r.ok ? finish_reason::stop : finish_reason::error;
}

/// Checks a record: finite times inside the time range (`valid_trace_time`), events in order
/// (arrival <= send <= queued <= scheduled <= chunks <= end, preemptions within,
/// nothing after a `[DONE]` chunk: the order `basic_request_timeline` enforces), kinds consistent
/// with `ok`, counts consistent with each other (cached_prompt_tokens <= prompt_tokens,
/// usage_reasoning_tokens <= usage_output_tokens, spec_accepted_tokens <= spec_draft_tokens, the
/// speculative counts both or neither, a usage source only with a usage count). Empty when the
/// record is valid. O(chunks).
[[nodiscard]] inline std::optional<trace_issue> validate(const trace_record& r) {
  auto bad = [](std::string field, std::string msg) {
    return std::optional<trace_issue>(trace_issue{std::move(field), std::move(msg)});
  };
  if (!detail::valid_trace_time(r.send)) return bad("send", detail::bad_trace_time);
  if (r.arrival && !detail::valid_trace_time(*r.arrival))
    return bad("arrival", detail::bad_trace_time);
  if (r.arrival && *r.arrival > r.send) return bad("arrival", "is later than send");
  // A benchmark_start later than the line's own arrival is not an error of the line: the run
  // starts at the earlier of the two (run_summarizer), so a writer whose time 0 was taken after
  // its first requests arrived loses no request.
  if (r.benchmark_start && !detail::valid_trace_time(*r.benchmark_start))
    return bad("benchmark_start", detail::bad_trace_time);
  if (auto issue = detail::validate_clock_anchor(r)) return issue;
  double latest = r.send;
  const char* latest_name = "send";
  for (auto [name, v] : {std::pair<const char*, const std::optional<double>*>{"queued", &r.queued},
                         {"scheduled", &r.scheduled}}) {
    if (!*v) continue;
    if (!detail::valid_trace_time(**v)) return bad(name, detail::bad_trace_time);
    if (**v < latest) return bad(name, std::string("is earlier than ") + latest_name);
    latest = **v;
    latest_name = name;
  }
  const double before_chunks = latest;
  const char* before_chunks_name = latest_name;
  for (std::size_t i = 0; i < r.chunks.size(); ++i) {
    auto f = [i] { return "chunks[" + std::to_string(i) + "][0]"; };
    const double t = r.chunks[i].time;
    if (!detail::valid_trace_time(t)) return bad(f(), detail::bad_trace_time);
    if (t < latest)
      return bad(f(), i == 0 ? std::string("is earlier than ") + latest_name
                             : std::string("is earlier than the previous chunk"));
    if (i > 0 && r.chunks[i - 1].kind == chunk_kind::done)
      return bad("chunks[" + std::to_string(i) + "]", "comes after the [DONE] chunk");
    latest = t;
    latest_name = "the last chunk";
  }
  for (std::size_t i = 0; i < r.preempted.size(); ++i) {
    auto f = [i] { return "preempted[" + std::to_string(i) + "]"; };
    const double t = r.preempted[i];
    if (!detail::valid_trace_time(t)) return bad(f(), detail::bad_trace_time);
    if (t < before_chunks) return bad(f(), std::string("is earlier than ") + before_chunks_name);
    if (i > 0 && t < r.preempted[i - 1]) return bad(f(), "is earlier than the previous preemption");
  }
  if (r.end) {
    if (!detail::valid_trace_time(*r.end)) return bad("end", detail::bad_trace_time);
    if (*r.end < latest) return bad("end", std::string("is earlier than ") + latest_name);
    if (!r.preempted.empty() && *r.end < r.preempted.back())
      return bad("end", "is earlier than the last preemption");
  }
  if (r.reason && is_success(*r.reason) != r.ok)
    return bad("finish_reason",
               r.ok ? "is a failure but ok is true" : "is a success but ok is false");
  if (r.usage_from && !r.usage_output_tokens)
    return bad("usage_source", "needs usage_output_tokens");
  if (r.cached_prompt_tokens && r.prompt_tokens && *r.cached_prompt_tokens > *r.prompt_tokens)
    return bad("cached_prompt_tokens", "is greater than prompt_tokens");
  if (r.usage_reasoning_tokens && r.usage_output_tokens &&
      *r.usage_reasoning_tokens > *r.usage_output_tokens)
    return bad("usage_reasoning_tokens",
               "is greater than usage_output_tokens (which counts reasoning tokens)");
  if (r.spec_accepted_tokens.has_value() != r.spec_draft_tokens.has_value())
    return r.spec_draft_tokens ? bad("spec_draft_tokens", "needs spec_accepted_tokens")
                               : bad("spec_accepted_tokens", "needs spec_draft_tokens");
  if (r.spec_accepted_tokens && *r.spec_accepted_tokens > *r.spec_draft_tokens)
    return bad("spec_accepted_tokens", "is greater than spec_draft_tokens");
  return std::nullopt;
}

/// Replays `r` into a fresh timeline on `trace_clock`. Throws std::invalid_argument naming the
/// field when `validate(r)` finds a problem (call `validate` first to handle it as a value).
[[nodiscard]] inline trace_timeline to_timeline(const trace_record& r) {
  if (auto issue = validate(r))
    TOKCHRON_THROW(std::invalid_argument,
                   ("tokchron: trace record: " + issue->field + " " + issue->message).c_str());
  trace_timeline tl;
  tl.store().reserve(r.chunks.size());
  const auto at = trace_time;
  if (r.arrival) (void)tl.arrive(at(*r.arrival));
  (void)tl.send(at(r.send));
  if (r.queued) (void)tl.queued(at(*r.queued));
  if (r.scheduled) (void)tl.scheduled(at(*r.scheduled));
  // Preemptions interleave with chunks in time order (a preemption at a chunk's time goes first).
  std::size_t pi = 0;
  for (const trace_chunk& c : r.chunks) {
    while (pi < r.preempted.size() && r.preempted[pi] <= c.time)
      (void)tl.preempted(at(r.preempted[pi++]));
    (void)tl.chunk(at(c.time), c.tokens, c.kind);
  }
  while (pi < r.preempted.size()) (void)tl.preempted(at(r.preempted[pi++]));
  // Without `end`, the request ends at its latest event, so the finish is never refused.
  double end = r.send;
  if (r.queued && *r.queued > end) end = *r.queued;
  if (r.scheduled && *r.scheduled > end) end = *r.scheduled;
  if (!r.chunks.empty() && r.chunks.back().time > end) end = r.chunks.back().time;
  if (!r.preempted.empty() && r.preempted.back() > end) end = r.preempted.back();
  if (r.end) end = *r.end;
  (void)tl.finish(at(end), reason_of(r));
  if (r.prompt_tokens) tl.set_prompt_tokens(*r.prompt_tokens);
  if (r.usage_output_tokens) {
    if (r.usage_from)
      tl.set_reported_output_tokens(*r.usage_output_tokens, *r.usage_from);
    else
      tl.set_reported_output_tokens(*r.usage_output_tokens);
  }
  if (r.cached_prompt_tokens) tl.set_cached_prompt_tokens(*r.cached_prompt_tokens);
  if (r.usage_reasoning_tokens) tl.set_reported_reasoning_tokens(*r.usage_reasoning_tokens);
  if (r.spec_draft_tokens && r.spec_accepted_tokens)
    (void)tl.set_speculative(*r.spec_draft_tokens, *r.spec_accepted_tokens);
  return tl;
}

/// Makes a trace record of a finished timeline that keeps chunks (any clock). Times are seconds
/// since `zero` (e.g. the run's start), so records of one run share one clock. `id` and `error`
/// are copied into the record. Unfinished timelines get no `end` and `ok` = false. Throws
/// std::invalid_argument when `zero` is outside the time range (clock.hpp).
template <class Timeline>
[[nodiscard]] trace_record to_trace_record(const Timeline& tl, typename Timeline::time_point zero,
                                           std::string id = {}, std::string error = {}) {
  static_assert(Timeline::store_type::keeps_chunks,
                "a trace record lists every chunk: the timeline needs a full_store");
  if (!in_time_range(zero))
    TOKCHRON_THROW(std::invalid_argument, "tokchron: trace record: zero is outside the time range");
  auto s = [&](typename Timeline::time_point t) { return to_seconds(t - zero); };
  trace_record r;
  r.id = std::move(id);
  r.error = std::move(error);
  if (tl.has_explicit_arrival() && tl.arrival()) r.arrival = s(*tl.arrival());
  if (tl.send_time())
    r.send = s(*tl.send_time());
  else if (tl.arrival())
    r.send = s(*tl.arrival());
  if (tl.queued_time()) r.queued = s(*tl.queued_time());
  if (tl.first_scheduled()) r.scheduled = s(*tl.first_scheduled());
  for (const auto& t : tl.store().preemption_times()) r.preempted.push_back(s(t));
  r.prompt_tokens = tl.prompt_tokens();
  r.chunks.reserve(tl.store().chunks().size());
  for (const auto& c : tl.store().chunks())
    r.chunks.push_back(trace_chunk{s(c.time), c.tokens, c.kind});
  if (tl.finish_time()) r.end = s(*tl.finish_time());
  r.usage_output_tokens = tl.reported_output_tokens();
  if (r.usage_output_tokens) r.usage_from = tl.reported_output_tokens_source();
  r.cached_prompt_tokens = tl.cached_prompt_tokens();
  r.usage_reasoning_tokens = tl.reported_reasoning_tokens();
  r.spec_draft_tokens = tl.speculative_drafted_tokens();
  r.spec_accepted_tokens = tl.speculative_accepted_tokens();
  r.ok = tl.succeeded();
  if (tl.reason() && *tl.reason() != (r.ok ? finish_reason::stop : finish_reason::error))
    r.reason = tl.reason();
  return r;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_IO_TRACE_HPP
