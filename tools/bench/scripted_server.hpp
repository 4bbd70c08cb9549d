// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
#ifndef TOKCHRON_TOOLS_BENCH_SCRIPTED_SERVER_HPP
#define TOKCHRON_TOOLS_BENCH_SCRIPTED_SERVER_HPP

/// \file
/// A tiny OpenAI-style SSE server with known emission times: the test and timing harness of
/// tokchron-bench. It listens on 127.0.0.1 (an ephemeral port), answers every POST with a
/// chunked `text/event-stream` on a fixed schedule, and records the steady-clock time at which it
/// handed each event's bytes to the kernel (read just before the write), keyed by the request's
/// `X-Request-Id` header. Client and server share the machine's clock, so a client's read time
/// minus the emission time is the client's timing error plus the loopback's delay.
///
/// The stream of a request asking for `max_tokens` = n: for chat a role chunk (empty content) at
/// `first_delay`, then n text chunks, the first at `first_delay` and one every `interval`, then
/// (with `stream_options.include_usage`) a usage chunk and `[DONE]` in the last text chunk's
/// write. The request's `model` picks a misbehaviour (`server_script::models`, when not empty,
/// picks it instead, by the request's order of arrival), after `fault_after` text chunks:
/// - `cut` closes the connection; `reset` resets it (an RST: SO_LINGER 0); `stall` stops
///   writing (and keeps the connection open);
/// - `malformed` writes a data line that is not JSON, `garbage` a line that is not an SSE field,
///   `error` an in-stream error object;
/// - `endless` goes on with text chunks and never sends `[DONE]`; `pings` sends only SSE
///   comments from then on, forever; `endless_line` starts a line and never ends it (64 KiB
///   every interval);
/// - `unterminated` ends its stream (and the chunked body) with a `[DONE]` data line but no
///   blank line after it;
/// - `usage_low` reports fewer completion tokens than it sent chunks, `usage_negative` a
///   negative count, `usage_2p64` 2^64 completion tokens;
/// - `badchunk` writes a chunk-size line that is not hexadecimal, `hugechunk` a chunk size of
///   2^80, `endless_ext` a chunk-size line whose extension never ends;
/// - `abort` ends the stream with a text chunk whose finish_reason is `abort`, then usage and
///   `[DONE]` (as a server that gives up on a request does); `abort_cut` sends that chunk and
///   closes the connection;
/// and at the end of the stream: `done_stall` sends `[DONE]` but never ends the chunked body
/// (the connection stays open); `after_done` sends one more event after `[DONE]`;
/// and over the whole stream: `merged` holds every event after the first back for the last
/// write (one read brings them all); `line_split` sends each event's blank line with the next
/// write; `bom` starts the body with a UTF-8 byte order mark; `media_type` answers
/// `Text/Event-Stream ; Charset=UTF-8`, `not_media` `text/event-streamx`; `numbered` makes text
/// chunk k of the request with X-Request-Id ID carry " ID.k" (every other stream carries " w");
/// `error_null` puts
/// `"error": null` in every chunk; `tools` (chat) streams tool-call deltas and no content,
/// finish_reason `tool_calls`; `other_choice` puts the text in choice 1 beside an empty
/// choice 0; `interim` sends 100 Continue, 103 Early Hints and 100 Continue before the answer,
/// `endless_interim` 100 Continue every interval and no answer;
/// and from the start of the answer:
/// - `split` sends the whole stream one byte a write (the chunked framing too), its SSE lines
///   ended by LF, CR and CRLF in turn, with comment lines between events: a valid stream;
/// - `http500` answers 500 with an OpenAI error body, `http503` 503 likewise, `latin1_500` 500
///   with a Latin-1 text body, `utf8_500` 500 with a UTF-8 character across byte 300,
///   `gzip_500` 500 with a gzip body (binary bytes, an escape sequence), `switching` 101
///   Switching Protocols, `json` answers 200 with a JSON body (not a stream), `html` 200 with
///   an HTML page, `headers_stall` sends the stream's headers and then nothing, `silent` reads
///   the request and never answers.
/// A request with `Connection: keep-alive` keeps its
/// connection open after a whole stream for the next request (HTTP/1.1 keep-alive), except with
/// model `drop`, which says keep-alive and closes it anyway (a server dropping idle connections).
/// Handlers run on one thread. Memory: one record per chunk written, and each request's prompt,
/// body and headers.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tokchron_bench {

/// The schedule every stream follows.
struct server_script {
  using duration = std::chrono::steady_clock::duration;
  server_script() = default;
  server_script(duration first, duration every, std::uint32_t fault,
                std::vector<std::string> behaviours = {})
      : first_delay(first), interval(every), fault_after(fault), models(std::move(behaviours)) {}

  std::chrono::steady_clock::duration first_delay = std::chrono::milliseconds(5);
  std::chrono::steady_clock::duration interval = std::chrono::milliseconds(2);
  std::uint32_t fault_after = 2;  ///< text chunks before a misbehaviour
  /// When not empty, the models that request 0, 1, 2, ... (in order of arrival) behave as, in
  /// turn, whatever model they name.
  std::vector<std::string> models;
};

/// A request as the server read it: its body and its header fields (names as sent).
struct seen_request {
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

/// One written event: when its bytes went to the kernel, and its kind ("role", "text", "usage",
/// "done").
struct emission {
  std::chrono::steady_clock::time_point time;
  std::string kind;
};

class scripted_server {
 public:
  /// Starts listening and serving on a thread of its own. Throws `std::runtime_error` when it
  /// cannot listen.
  explicit scripted_server(server_script s = {});
  ~scripted_server();
  scripted_server(const scripted_server&) = delete;
  scripted_server& operator=(const scripted_server&) = delete;

  [[nodiscard]] std::uint16_t port() const noexcept;
  /// The events written so far per `X-Request-Id` (a copy; thread-safe).
  [[nodiscard]] std::map<std::string, std::vector<emission>> emissions() const;
  /// The prompt (or the first message's content) of each request so far, per `X-Request-Id`
  /// (a copy; thread-safe).
  [[nodiscard]] std::map<std::string, std::string> prompts() const;
  /// Each request's body and headers so far, per `X-Request-Id` (a copy; thread-safe).
  [[nodiscard]] std::map<std::string, seen_request> seen() const;
  /// Requests received so far (thread-safe).
  [[nodiscard]] std::uint64_t requests() const;
  /// Connections accepted so far (thread-safe).
  [[nodiscard]] std::uint64_t connections() const;
  /// Stops serving, joins the thread and closes the listener: later connections are refused
  /// (the destructor calls it).
  void stop();

  struct impl;  ///< the listener, its thread and the records (scripted_server.cpp)

 private:
  std::unique_ptr<impl> impl_;
};

}  // namespace tokchron_bench

#endif  // TOKCHRON_TOOLS_BENCH_SCRIPTED_SERVER_HPP
