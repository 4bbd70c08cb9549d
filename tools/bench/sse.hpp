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
  none,           ///< the request did not fail
  connect,        ///< the connection could not be opened
  tls,            ///< the TLS handshake failed (a certificate refused, no common protocol)
  timeout,        ///< the connect, idle or request timeout
  connection,     ///< a read or write error (a reset connection)
  http_status,    ///< an HTTP status other than 200 (after any 1xx interim responses)
  http_framing,   ///< a response the HTTP parser refuses (a bad chunk size, a bad header)
  not_sse,        ///< a 200 whose media type is not text/event-stream
  ended_early,    ///< the body or the connection ended before [DONE]
  sse_line,       ///< a line that is not an SSE field; an event after [DONE]
  sse_too_long,   ///< a line or event over `max_sse_line`; more than `max_stream_events` events
  sse_json,       ///< event data that is not a JSON object
  sse_event,      ///< an event with neither choices nor usage, or a field of the wrong type
  usage,          ///< usage counts that cannot be (negative, past 2^64 - 1, fewer than seen)
  server_error,   ///< an `error` object in the stream
  server_finish,  ///< a finish reason saying the request did not complete (`abort`, `error`)
};
/// The kind's name as the report prints it (`sse_json`, `timeout`, ...).
[[nodiscard]] const char* failure_name(failure_kind k) noexcept;

/// `bytes` made safe to quote in a reason (standard error, a trace's JSON): valid UTF-8 (each
/// byte of an invalid sequence, a surrogate or an overlong form replaced by U+FFFD, as the
/// WHATWG decoder and nlohmann-json's `replace` handler do), control characters written as
/// `\n`, `\r`, `\t` or `\xNN` (nothing in a reason can move a terminal's cursor), and cut on a
/// character boundary so that the result is at most `max_bytes` bytes, with `...` at the end
/// when it was cut (`max_bytes` >= 3).
[[nodiscard]] std::string quote_bytes(std::string_view bytes, std::size_t max_bytes);

/// How a server said its stream ended: the finish reason of a choice, mapped.
/// - completed: `stop`, `length` (`length` kept as such; the others are `stop`), `tool_calls`,
///   `function_call`, `content_filter` (OpenAI), `eos_token`, `stop_sequence` (TGI,
///   router/src/lib.rs `FinishReason`), `repetition` (vLLM's `FinishReason`,
///   vllm/v1/engine/__init__.py), and any word not listed here (counted by name: a run prints
///   every finish reason it saw);
/// - not completed, a failure: `abort`, `aborted`, `cancelled`, `canceled` (vLLM's and SGLang's
///   `abort`: SGLang's `FINISH_ABORT`, python/sglang/srt/managers/schedule_batch.py;
///   TensorRT-LLM's `cancelled`, tensorrt_llm/executor/result.py) as `aborted`; `error`
///   (vLLM) as `error`; `timeout` (TensorRT-LLM) as `timed_out`.
struct server_finish {
  tc::finish_reason reason = tc::finish_reason::stop;
  bool completed = true;  ///< false: the server said the request did not complete
  bool known = true;      ///< false: a word not listed above (taken as completed)
};
[[nodiscard]] server_finish classify_finish_reason(std::string_view word) noexcept;

/// What one stream carried, counted by the decoder as it reads (see `sse_decoder`).
struct stream_content {
  std::uint64_t events = 0;        ///< events taken (`[DONE]` included)
  std::uint64_t text = 0;          ///< events whose measured choice carried text
  std::uint64_t reasoning = 0;     ///< events with reasoning text
  std::uint64_t tool_calls = 0;    ///< events with tool-call deltas (`delta.tool_calls`,
                                   ///< `delta.function_call`) and no text
  std::uint64_t other_choice = 0;  ///< events with text or tool calls only in a choice other
                                   ///< than index 0 (the one measured)
  std::uint64_t empty = 0;         ///< choices events with none of the above (a role chunk)
  std::uint64_t usage_only = 0;    ///< usage events without choices
  /// Events whose last data line was completed by the same read as another event's: the
  /// client cannot tell their arrivals apart, and they share that read's time.
  std::uint64_t shared_read = 0;
  /// Gaps between two consecutive token chunks (text or reasoning), and those of them inside
  /// one read (recorded as 0: an ITL sample the client could not measure).
  std::uint64_t token_gaps = 0, token_gaps_in_one_read = 0;
  /// The last token chunk shared its read with `[DONE]`: the stream's end and its last token
  /// carry one time (that read's), and the gap between them is not measured.
  bool last_token_with_done = false;
};

/// Decodes one response body (the bytes after HTTP framing) as a server-sent event stream and
/// records its events into a timeline (see the file comment). Lines end at LF, CR or CRLF (the
/// SSE grammar), split anywhere between two `feed` calls; `:` lines are comments; a UTF-8 byte
/// order mark at the start of the stream is skipped (the SSE specification decodes the stream
/// with UTF-8 decode, which drops one leading BOM), split or not. Each event is recorded at the
/// time of the read that completed its last data line (the line a client that reads lines acts
/// on), not the later blank line that dispatches it, so a token whose blank line comes with
/// the next event keeps its own time. A stream fails (`error()` names the line or event and
/// the reason, `failure()` its kind) on a line that is not a field, a line or event longer
/// than `max_sse_line`, more than `max_stream_events` events, event data that is not a JSON
/// object, an `error` that is not null or false, an event after `[DONE]`, or usage counts that
/// cannot be: not an integer in [0, 2^64 - 1], cached prompt tokens above the prompt tokens,
/// reasoning tokens above the completion tokens, or completion tokens fewer than the chunks
/// with tokens received so far. A finish reason that says the request did not complete
/// (`classify_finish_reason`) is no decoding failure: the stream is read on to `[DONE]` (its
/// usage kept), and `server_failure()` gives the request's reason. The measured choice is the
/// one with `index` 0 (the first when none has an index): tokchron-bench asks for one.
/// The decoder never finishes the timeline: its owner does (`finish_timeline` at `[DONE]` once
/// the body ended cleanly), so a request has one verdict. Memory: at most `max_sse_line` bytes
/// for the line being read plus `max_sse_line` for the event's data, whatever the server sends.
/// Single-threaded.
class sse_decoder {
 public:
  sse_decoder(endpoint_kind e, timeline& tl) : endpoint_(e), tl_(&tl) {}
  /// Feeds `bytes`, read at `t` by read number `read` (several calls may share one read: the
  /// HTTP parser hands a read's body over in pieces); every event whose last data line they
  /// complete is recorded at `t`. Returns false once the stream failed (`error()` says why);
  /// later bytes are then ignored.
  bool feed(std::string_view bytes, clock::time_point t, std::uint64_t read);
  /// As above, each call its own read.
  bool feed(std::string_view bytes, clock::time_point t) { return feed(bytes, t, ++own_reads_); }
  [[nodiscard]] bool failed() const noexcept { return !error_.empty(); }
  [[nodiscard]] const std::string& error() const noexcept { return error_; }
  [[nodiscard]] failure_kind failure() const noexcept { return kind_; }
  /// True once `[DONE]` was read.
  [[nodiscard]] bool done() const noexcept { return done_; }
  /// How the stream ended, by the measured choice's last finish reason (`stop` when none was
  /// given; the server's failure reasons mapped as `classify_finish_reason` says).
  [[nodiscard]] tc::finish_reason finish_reason() const noexcept { return finish_.reason; }
  /// The server's own word for it (quoted, at most 40 bytes); empty when it gave none.
  [[nodiscard]] const std::string& finish_word() const noexcept { return finish_word_; }
  /// Whether `finish_word()` is one `classify_finish_reason` knows.
  [[nodiscard]] bool finish_word_known() const noexcept { return finish_.known; }
  /// Not empty when the server's finish reason said the request did not complete: the
  /// request's failure reason ("SSE event N: the server ended the request with finish_reason
  /// 'abort'"). Set by the first such event.
  [[nodiscard]] const std::string& server_failure() const noexcept { return server_failure_; }
  /// Finishes the timeline at `[DONE]`'s time with `finish_reason()` (call once `done()` and
  /// the body ended).
  tc::record_status finish_timeline();
  [[nodiscard]] std::uint64_t events() const noexcept { return events_; }
  [[nodiscard]] const stream_content& content() const noexcept { return content_; }
  /// What a stream that ends here leaves undecoded, for the reason of a stream cut short:
  /// empty, or ", inside an event (a data line without the blank line that ends it)", or
  /// ", inside a line".
  [[nodiscard]] std::string unfinished() const;
  /// From now on, appends the measured choice's text of each event taken (chat
  /// `delta.content`, completions `text`; not reasoning, not tool calls) to `*out`, at most
  /// `most` bytes in all; past them `*cut` is set and nothing more is appended.
  void keep_text(std::string* out, std::size_t most, bool* cut) noexcept {
    kept_ = out;
    keep_most_ = most;
    kept_cut_ = cut;
  }
  /// The bytes the decoder holds now (its line and event buffers' capacity).
  [[nodiscard]] std::size_t buffered() const noexcept {
    return line_.capacity() + data_.capacity();
  }

 private:
  bool line(std::string_view l, clock::time_point t, std::uint64_t read);
  bool event();
  bool fail(failure_kind k, std::string why);
  void record(clock::time_point t, std::uint32_t tokens, tc::chunk_kind kind);

  endpoint_kind endpoint_;
  timeline* tl_;
  std::string line_, data_, error_, server_failure_, finish_word_;
  std::uint64_t lines_ = 0, events_ = 0, token_chunks_ = 0, own_reads_ = 0;
  bool has_data_ = false, done_ = false, after_cr_ = false;
  std::size_t bom_seen_ = 0;       // bytes of a leading BOM matched so far (3: past the start)
  clock::time_point data_time_{};  // the read that completed the event's last data line
  std::uint64_t data_read_ = 0;
  // The read of the latest recorded event and how many events it completed; the read of the
  // latest token chunk.
  std::uint64_t last_read_ = 0, last_read_events_ = 0, last_token_read_ = 0;
  bool any_token_ = false;
  clock::time_point done_time_{};
  failure_kind kind_ = failure_kind::none;
  std::string* kept_ = nullptr;  // `keep_text`'s
  std::size_t keep_most_ = 0;
  bool* kept_cut_ = nullptr;
  bool kept_full_ = false;
  server_finish finish_;
  stream_content content_;
};

}  // namespace tokchron_bench

#endif  // TOKCHRON_TOOLS_BENCH_SSE_HPP
