// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TIMELINE_EVENT_HPP
#define TOKCHRON_TIMELINE_EVENT_HPP

/// \file
/// The vocabulary of a request's life: chunk kinds, finish reasons and recording statuses.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tokchron/config.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// What a streamed response chunk carried. The token count decides what most of tokchron's
/// canonical metrics see (TTFT is the first chunk carrying tokens of any kind); the kind tells
/// answer tokens from reasoning tokens (time to first answer token, reasoning time) and lets a
/// profile reproduce a tool that skips some chunks.
enum class chunk_kind : std::uint8_t {
  text,       ///< ordinary content, the answer (tokens > 0 normally)
  empty,      ///< a choices entry with empty text, e.g. the role chunk of a chat stream
  usage,      ///< a usage-only chunk (no choices), usually the last one
  done,       ///< the `[DONE]` line of an SSE stream
  reasoning,  ///< reasoning content (vLLM's and SGLang's `reasoning_content` delta field)
};

/// Where the client learnt a request's reported output-token count (OpenAI
/// `usage.completion_tokens`): the tools differ in which of these they read, so a profile needs
/// to know.
enum class usage_source : std::uint8_t {
  usage_chunk,    ///< a usage-only chunk of the stream (no choices: `stream_options.include_usage`)
  content_chunk,  ///< the usage object of a chunk that had choices (the last one carrying one:
                  ///< a server that puts usage on its final content chunk, continuous usage)
  body,           ///< the body of a non-streamed response
  server,         ///< the server's own count, written by the server; nothing says a client saw it
};

/// Why a request ended.
enum class finish_reason : std::uint8_t {
  stop,       ///< the model produced a stop token or sequence
  length,     ///< the output-length limit was reached
  aborted,    ///< the client went away or cancelled
  error,      ///< the server failed the request
  timed_out,  ///< an allotted time ran out
  rejected,   ///< refused before being scheduled (queue full, queue timeout)
};

/// The number of `finish_reason`s (`rejected` is the last).
inline constexpr std::size_t finish_reason_count =
    static_cast<std::size_t>(finish_reason::rejected) + 1;

/// True when a request that ended for `r` counts as completed (stop or length).
[[nodiscard]] constexpr bool is_success(finish_reason r) noexcept {
  return r == finish_reason::stop || r == finish_reason::length;
}

/// The result of one recording call. Anything but `ok` means the call changed nothing except
/// the timeline's misuse counter.
enum class record_status : std::uint8_t {
  ok,
  time_went_backwards,  ///< earlier than the latest event already recorded
  not_started,          ///< a chunk, schedule or finish before arrival or send was recorded
  already_started,      ///< arrival or send recorded twice, or arrival after send
  after_finish,         ///< any event after finish
  finished_twice,       ///< finish called again
  out_of_memory,        ///< the store could not grow; the chunk was dropped
  count_overflow,       ///< the token count would overflow 32 bits
  time_out_of_range,    ///< outside the time range (|ticks| < 2^62, clock.hpp `time_range_ticks`)
  /// An event of an earlier phase after a later one, which would make a metric negative:
  /// `queued` after `scheduled` or after a chunk, the first `scheduled` after a chunk, or any
  /// chunk after the `[DONE]` chunk.
  out_of_order,
  /// A count that contradicts another: speculative tokens accepted greater than drafted.
  invalid_count,
};

/// A short lowercase name of a status, for logs.
[[nodiscard]] constexpr std::string_view to_string(record_status s) noexcept {
  switch (s) {
    case record_status::ok: return "ok";
    case record_status::time_went_backwards: return "time_went_backwards";
    case record_status::not_started: return "not_started";
    case record_status::already_started: return "already_started";
    case record_status::after_finish: return "after_finish";
    case record_status::finished_twice: return "finished_twice";
    case record_status::out_of_memory: return "out_of_memory";
    case record_status::count_overflow: return "count_overflow";
    case record_status::time_out_of_range: return "time_out_of_range";
    case record_status::out_of_order: return "out_of_order";
    case record_status::invalid_count: return "invalid_count";
  }
  return "unknown";
}

/// The name of a finish reason as used in traces and exports ("stop", "length", ...).
[[nodiscard]] constexpr std::string_view to_string(finish_reason r) noexcept {
  switch (r) {
    case finish_reason::stop: return "stop";
    case finish_reason::length: return "length";
    case finish_reason::aborted: return "aborted";
    case finish_reason::error: return "error";
    case finish_reason::timed_out: return "timed_out";
    case finish_reason::rejected: return "rejected";
  }
  return "unknown";
}

/// The name of a chunk kind as used in traces ("text", "empty", "usage", "done", "reasoning").
[[nodiscard]] constexpr std::string_view to_string(chunk_kind k) noexcept {
  switch (k) {
    case chunk_kind::text: return "text";
    case chunk_kind::empty: return "empty";
    case chunk_kind::usage: return "usage";
    case chunk_kind::done: return "done";
    case chunk_kind::reasoning: return "reasoning";
  }
  return "unknown";
}

/// The trace format's name of a usage source ("usage_chunk", "content_chunk", "body",
/// "server").
[[nodiscard]] constexpr std::string_view to_string(usage_source s) noexcept {
  switch (s) {
    case usage_source::usage_chunk: return "usage_chunk";
    case usage_source::content_chunk: return "content_chunk";
    case usage_source::body: return "body";
    case usage_source::server: return "server";
  }
  return "unknown";
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_TIMELINE_EVENT_HPP
