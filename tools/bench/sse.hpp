// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_TOOLS_BENCH_SSE_HPP
#define TOKCHRON_TOOLS_BENCH_SSE_HPP

/// \file
/// tokchron-bench's SSE stream decoder: the bytes of one streamed OpenAI-compatible response
/// body (after HTTP framing) into a tokchron request timeline, and the kinds of failure a
/// request can end with. Needs only nlohmann-json and tokchron's headers (the fuzz target
/// `tests/fuzz/sse_decoder_fuzz.cpp` builds it alone).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tokchron/timeline/request_timeline.hpp"

namespace tokchron_bench {

namespace tc = tokchron;
using clock = std::chrono::steady_clock;
/// A request's record: steady clock, every chunk kept.
using timeline = tc::basic_request_timeline<clock, tc::full_store<>>;

enum class endpoint_kind : std::uint8_t { completions, chat };

/// The longest SSE line or event accepted (1 MiB): a longer one fails the request, so memory
/// per stream is bounded whatever the server sends.
inline constexpr std::size_t max_sse_line = std::size_t{1} << 20;
/// The most SSE events one stream may carry (2^20, eight times the longest output a server
/// streams today, one token an event): a stream that goes on past it fails, so the chunks a
/// request keeps (one record each) are bounded too.
inline constexpr std::uint64_t max_stream_events = std::uint64_t{1} << 20;

/// What ended a failed request: a run counts its failures by kind (`failure_name`), and each
/// keeps its full reason in the trace.
enum class failure_kind : std::uint8_t {
  none,          ///< the request did not fail
  connect,       ///< the connection could not be opened
  timeout,       ///< the connect, idle or request timeout
  connection,    ///< a read or write error (a reset connection)
  http_status,   ///< an HTTP status other than 200
  http_framing,  ///< a response the HTTP parser refuses (a bad chunk size, a bad header)
  not_sse,       ///< a 200 whose Content-Type is not text/event-stream
  ended_early,   ///< the body or the connection ended before [DONE]
  sse_line,      ///< a line that is not an SSE field; an event after [DONE]
  sse_too_long,  ///< a line or event over `max_sse_line`; more than `max_stream_events` events
  sse_json,      ///< event data that is not a JSON object
  sse_event,     ///< an event with neither choices nor usage, or a field of the wrong type
  usage,         ///< usage counts that cannot be (negative, past 2^64 - 1, fewer than seen)
  server_error,  ///< an `error` object in the stream
};
/// The kind's name as the report prints it (`sse_json`, `timeout`, ...).
[[nodiscard]] const char* failure_name(failure_kind k) noexcept;

/// Decodes one response body (the bytes after HTTP framing) as a server-sent event stream and
/// records its events into a timeline (see the file comment). Lines end at LF, CR or CRLF (the
/// SSE grammar), split anywhere between two `feed` calls; `:` lines are comments. A stream
/// fails (`error()` names the line or event and the reason, `failure()` its kind) on a line
/// that is not a field, a line or event longer than `max_sse_line`, more than
/// `max_stream_events` events, event data that is not a JSON object, an `error` object, an
/// event after `[DONE]`, or usage counts that cannot be: not an integer in [0, 2^64 - 1],
/// cached prompt tokens above the prompt tokens, reasoning tokens above the completion tokens,
/// or completion tokens fewer than the chunks with tokens received so far. Memory: at most
/// `max_sse_line` bytes for the line being read plus `max_sse_line` for the event's data,
/// whatever the server sends. Single-threaded.
class sse_decoder {
 public:
  sse_decoder(endpoint_kind e, timeline& tl) : endpoint_(e), tl_(&tl) {}
  /// Feeds `bytes`, read at `t`; every event they complete is recorded at `t`. Returns false
  /// once the stream failed (`error()` says why); later bytes are then ignored.
  bool feed(std::string_view bytes, clock::time_point t);
  [[nodiscard]] bool failed() const noexcept { return !error_.empty(); }
  [[nodiscard]] const std::string& error() const noexcept { return error_; }
  [[nodiscard]] failure_kind failure() const noexcept { return kind_; }
  /// True once `[DONE]` was read (the timeline is then finished at its time).
  [[nodiscard]] bool done() const noexcept { return done_; }
  [[nodiscard]] std::uint64_t events() const noexcept { return events_; }
  /// What a stream that ends here leaves undecoded, for the reason of a stream cut short:
  /// empty, or ", inside an event (a data line without the blank line that ends it)", or
  /// ", inside a line".
  [[nodiscard]] std::string unfinished() const;
  /// The bytes the decoder holds now (its line and event buffers' capacity).
  [[nodiscard]] std::size_t buffered() const noexcept {
    return line_.capacity() + data_.capacity();
  }

 private:
  bool line(std::string_view l, clock::time_point t);
  bool event(clock::time_point t);
  bool fail(failure_kind k, std::string why);

  endpoint_kind endpoint_;
  timeline* tl_;
  std::string line_, data_, error_;
  std::uint64_t lines_ = 0, events_ = 0, token_chunks_ = 0;
  bool has_data_ = false, done_ = false, after_cr_ = false;
  failure_kind kind_ = failure_kind::none;
  tc::finish_reason reason_ = tc::finish_reason::stop;
};

}  // namespace tokchron_bench

#endif  // TOKCHRON_TOOLS_BENCH_SSE_HPP
