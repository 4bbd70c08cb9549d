// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TIMELINE_REQUEST_TIMELINE_HPP
#define TOKCHRON_TIMELINE_REQUEST_TIMELINE_HPP

/// \file
/// `basic_request_timeline`: what happened to one request, on one clock.

#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

#include "tokchron/clock.hpp"
#include "tokchron/config.hpp"
#include "tokchron/timeline/event.hpp"
#include "tokchron/timeline/store.hpp"

TOKCHRON_BEGIN_NAMESPACE

namespace detail {
// Empty-base optimisation for the clock: the standard clocks cost no bytes.
template <class Clock, bool Empty = std::is_empty_v<Clock> && !std::is_final_v<Clock>>
class clock_holder : private Clock {
 protected:
  clock_holder() = default;
  explicit clock_holder(const Clock& c) : Clock(c) {}
  [[nodiscard]] const Clock& get_clock() const noexcept { return *this; }
};
template <class Clock>
class clock_holder<Clock, false> {
 protected:
  clock_holder() = default;
  explicit clock_holder(const Clock& c) : clock_(c) {}
  [[nodiscard]] const Clock& get_clock() const noexcept { return clock_; }

 private:
  Clock clock_{};
};
}  // namespace detail

/// The recorded life of one request: intended arrival, actual send, queueing, scheduling and
/// preemption, every output chunk, and the finish with its reason.
///
/// Every recording call takes an optional timestamp, so a server can pass a time it already
/// read; without one it reads `Clock`. Recording calls are `noexcept`, allocate only when the
/// store grows, and return a `record_status`: on misuse (time going backwards, a chunk before
/// the request started or after it finished, finishing twice, a time outside the time range of
/// clock.hpp, an event out of order) nothing recorded changes and the misuse counter goes up.
///
/// The event order, which makes every metric non-negative by construction: events come in
/// non-decreasing time order; arrival (or send) first, then send, queued, the first scheduled,
/// chunks and finish, in that order of phases. Preemptions and reschedules may come at any time
/// after the start; a repeated `queued` keeps the first. Refused, with `out_of_order`: `queued`
/// once scheduled or after a chunk; the first `scheduled` after a chunk; any chunk after the
/// `[DONE]` chunk. `send` after queued, scheduled or a chunk is `already_started`. So t1 >=
/// first scheduled >= queued >= send >= arrival and finish >= every event. Thread safety: one
/// writer; readers need the writer to have finished or an external happens-before (the `collect/`
/// layer gives the many-thread view).
///
/// \code
///   tokchron::request_timeline tl;
///   tl.arrive();
///   tl.chunk(1);                   // first token
///   tl.chunk(3);                   // a chunk of 3 tokens
///   tl.finish(tokchron::finish_reason::stop);
///   auto ttft = tokchron::ttft(tl);  // std::optional<steady_clock::duration>
/// \endcode
template <class Clock = default_clock, class Store = full_store<>>
class basic_request_timeline : private detail::clock_holder<Clock> {
  static_assert(is_clock_v<Clock>, "Clock must meet the clock contract (see tokchron/clock.hpp)");

 public:
  using clock_type = Clock;
  using time_point = typename Clock::time_point;
  using duration = typename Clock::duration;
  using store_type = typename Store::template bind<Clock>;

  basic_request_timeline() = default;
  /// A timeline that reads `clock` (e.g. a shared `manual_clock`) and keeps chunks in `store`.
  explicit basic_request_timeline(const Clock& clock, store_type store = store_type())
      : detail::clock_holder<Clock>(clock), store_(std::move(store)) {}

  // --- recording ---------------------------------------------------------------------------

  /// The time the request was meant to start: a load generator's scheduled send time, or the
  /// server's receive time. Recording it separately from `send` keeps coordinated omission
  /// visible. Must be the first event.
  record_status arrive() noexcept { return arrive(now()); }
  record_status arrive(time_point t) noexcept;

  /// The time the request was actually sent (client side). Arrival defaults to it.
  record_status send() noexcept { return send(now()); }
  record_status send(time_point t) noexcept;

  /// The time the request entered the scheduler's waiting queue.
  record_status queued() noexcept { return queued(now()); }
  record_status queued(time_point t) noexcept;

  /// The time the request was scheduled to run. The first time is kept; a later call after a
  /// preemption records a reschedule.
  record_status scheduled() noexcept { return scheduled(now()); }
  record_status scheduled(time_point t) noexcept;

  /// The time the request was preempted (its KV cache freed; it waits to be rescheduled).
  record_status preempted() noexcept { return preempted(now()); }
  record_status preempted(time_point t) noexcept;

  /// One streamed output chunk carrying `tokens` tokens (0 is legal: a role or usage chunk).
  record_status chunk(std::uint32_t tokens, chunk_kind kind = chunk_kind::text) noexcept {
    return chunk(now(), tokens, kind);
  }
  record_status chunk(time_point t, std::uint32_t tokens,
                      chunk_kind kind = chunk_kind::text) noexcept;

  /// The end of the request: the last byte of the response, a failure or a rejection.
  record_status finish(finish_reason reason = finish_reason::stop) noexcept {
    return finish(now(), reason);
  }
  record_status finish(time_point t, finish_reason reason = finish_reason::stop) noexcept;

  /// Prompt length in tokens, when known.
  void set_prompt_tokens(std::uint64_t n) noexcept { prompt_tokens_ = n; }
  /// The output-token count the server reported (e.g. OpenAI `usage.completion_tokens`), which
  /// some tools prefer to counting chunk tokens. Where it came from is then unknown (a source
  /// given with an earlier count is dropped).
  void set_reported_output_tokens(std::uint64_t n) noexcept {
    reported_output_tokens_ = n;
    usage_from_.reset();
  }
  /// The reported output-token count and where the client learnt it (a later call replaces
  /// both).
  void set_reported_output_tokens(std::uint64_t n, usage_source from) noexcept {
    reported_output_tokens_ = n;
    usage_from_ = from;
  }
  /// Prompt tokens served from a prefix cache (OpenAI `usage.prompt_tokens_details.cached_tokens`).
  void set_cached_prompt_tokens(std::uint64_t n) noexcept { cached_prompt_tokens_ = n; }
  /// The reasoning-token count the server reported (OpenAI
  /// `usage.completion_tokens_details.reasoning_tokens`; part of the reported output tokens).
  void set_reported_reasoning_tokens(std::uint64_t n) noexcept { reported_reasoning_tokens_ = n; }
  /// Speculative decoding over the whole request: tokens the draft proposed and tokens the target
  /// model accepted. `accepted > drafted` is refused (`invalid_count`, counted as misuse). A later
  /// call replaces the earlier totals.
  record_status set_speculative(std::uint64_t drafted, std::uint64_t accepted) noexcept {
    if (accepted > drafted) return misuse(record_status::invalid_count);
    spec_drafted_ = drafted;
    spec_accepted_ = accepted;
    return record_status::ok;
  }

  // --- queries -------------------------------------------------------------------------------

  /// The recorded arrival, or the send time when only that was recorded.
  [[nodiscard]] std::optional<time_point> arrival() const noexcept {
    if (has(bit_arrival)) return arrival_;
    return send_time();
  }
  /// Whether arrival was recorded explicitly (rather than defaulting to send).
  [[nodiscard]] bool has_explicit_arrival() const noexcept { return has(bit_arrival); }
  [[nodiscard]] std::optional<time_point> send_time() const noexcept {
    return get(bit_send, send_);
  }
  [[nodiscard]] std::optional<time_point> queued_time() const noexcept {
    return get(bit_queued, queued_);
  }
  [[nodiscard]] std::optional<time_point> first_scheduled() const noexcept {
    return get(bit_scheduled, first_scheduled_);
  }
  [[nodiscard]] std::optional<time_point> last_scheduled() const noexcept {
    return get(bit_scheduled, last_scheduled_);
  }
  [[nodiscard]] std::optional<time_point> last_preempted() const noexcept {
    return preemptions() ? std::optional<time_point>(last_preempted_) : std::nullopt;
  }
  [[nodiscard]] std::uint32_t preemptions() const noexcept { return store_.preemption_count(); }
  [[nodiscard]] std::optional<time_point> finish_time() const noexcept {
    return get(bit_finish, finish_);
  }
  [[nodiscard]] std::optional<finish_reason> reason() const noexcept {
    return has(bit_finish) ? std::optional<finish_reason>(reason_) : std::nullopt;
  }
  [[nodiscard]] bool finished() const noexcept { return has(bit_finish); }
  /// Finished with stop or length.
  [[nodiscard]] bool succeeded() const noexcept { return finished() && is_success(reason_); }
  /// Tokens over all chunks.
  [[nodiscard]] std::uint64_t output_tokens() const noexcept { return store_.output_tokens(); }
  [[nodiscard]] std::optional<std::uint64_t> prompt_tokens() const noexcept {
    return prompt_tokens_;
  }
  [[nodiscard]] std::optional<std::uint64_t> reported_output_tokens() const noexcept {
    return reported_output_tokens_;
  }
  /// Where the reported output-token count came from, when the recorder said so.
  [[nodiscard]] std::optional<usage_source> reported_output_tokens_source() const noexcept {
    return usage_from_;
  }
  [[nodiscard]] std::optional<std::uint64_t> cached_prompt_tokens() const noexcept {
    return cached_prompt_tokens_;
  }
  [[nodiscard]] std::optional<std::uint64_t> reported_reasoning_tokens() const noexcept {
    return reported_reasoning_tokens_;
  }
  /// Speculative tokens drafted / accepted (`set_speculative`), when recorded.
  [[nodiscard]] std::optional<std::uint64_t> speculative_drafted_tokens() const noexcept {
    return spec_drafted_;
  }
  [[nodiscard]] std::optional<std::uint64_t> speculative_accepted_tokens() const noexcept {
    return spec_accepted_;
  }
  [[nodiscard]] std::optional<time_point> first_token_time() const noexcept {
    return store_.first_token_time();
  }
  [[nodiscard]] std::optional<time_point> last_token_time() const noexcept {
    return store_.last_token_time();
  }
  /// The chunk that carried the second output token (the first token chunk when it carried
  /// two or more).
  [[nodiscard]] std::optional<time_point> second_token_time() const noexcept {
    return store_.second_token_time();
  }
  /// The first chunk carrying answer tokens (any kind but `reasoning`).
  [[nodiscard]] std::optional<time_point> first_answer_token_time() const noexcept {
    return store_.first_answer_token_time();
  }
  /// The first chunk carrying reasoning tokens.
  [[nodiscard]] std::optional<time_point> first_reasoning_token_time() const noexcept {
    return store_.first_reasoning_token_time();
  }
  /// Tokens over the reasoning chunks (part of `output_tokens()`).
  [[nodiscard]] std::uint64_t reasoning_tokens() const noexcept {
    return store_.reasoning_tokens();
  }
  /// How many recording calls were refused (misuse), and the most recent refusal.
  [[nodiscard]] std::uint32_t misuse_count() const noexcept { return misuses_; }
  [[nodiscard]] record_status last_misuse() const noexcept { return last_misuse_; }

  [[nodiscard]] const store_type& store() const noexcept { return store_; }
  [[nodiscard]] store_type& store() noexcept { return store_; }
  [[nodiscard]] const Clock& clock() const noexcept { return this->get_clock(); }
  [[nodiscard]] time_point now() const noexcept { return this->get_clock().now(); }

 private:
  enum : std::uint8_t {
    bit_arrival = 1,
    bit_send = 2,
    bit_queued = 4,
    bit_scheduled = 8,
    bit_finish = 16,
    bit_done = 32,  // a [DONE] chunk was recorded: it ends the stream
  };
  [[nodiscard]] bool has(std::uint8_t bits) const noexcept { return (has_ & bits) != 0; }
  [[nodiscard]] bool started() const noexcept { return has(bit_arrival | bit_send); }
  [[nodiscard]] std::optional<time_point> get(std::uint8_t bit, time_point t) const noexcept {
    return has(bit) ? std::optional<time_point>(t) : std::nullopt;
  }
  [[nodiscard]] record_status check_time(time_point t, bool need_start) const noexcept {
    if (has(bit_finish)) return record_status::after_finish;
    if (need_start && !started()) return record_status::not_started;
    if (TOKCHRON_UNLIKELY(!in_time_range(t))) return record_status::time_out_of_range;
    if (started() && t < latest_) return record_status::time_went_backwards;
    return record_status::ok;
  }
  record_status misuse(record_status s) noexcept {
    if (misuses_ != UINT32_MAX) ++misuses_;
    last_misuse_ = s;
    return s;
  }

  store_type store_{};
  time_point arrival_{}, send_{}, queued_{}, first_scheduled_{}, last_scheduled_{},
      last_preempted_{}, finish_{}, latest_{};
  std::optional<std::uint64_t> prompt_tokens_, reported_output_tokens_, cached_prompt_tokens_,
      reported_reasoning_tokens_, spec_drafted_, spec_accepted_;
  std::optional<usage_source> usage_from_;
  std::uint32_t misuses_ = 0;
  std::uint8_t has_ = 0;
  finish_reason reason_ = finish_reason::stop;
  record_status last_misuse_ = record_status::ok;
};

// The recording calls taking a time are defined out of the class, so that they are not inline:
// a translation unit that sees `extern template class basic_request_timeline<...>` (record.hpp
// with TOKCHRON_SEPARATE_INSTANTIATION) calls the one instantiation of record_instantiate.hpp
// instead of compiling its own (docs/testing.md, "Which header to include where").
template <class Clock, class Store>
record_status basic_request_timeline<Clock, Store>::arrive(time_point t) noexcept {
  if (started()) return misuse(record_status::already_started);
  if (TOKCHRON_UNLIKELY(!in_time_range(t))) return misuse(record_status::time_out_of_range);
  arrival_ = t;
  has_ |= bit_arrival;
  latest_ = t;
  return record_status::ok;
}

template <class Clock, class Store>
record_status basic_request_timeline<Clock, Store>::send(time_point t) noexcept {
  if (has(bit_send) || has(bit_queued | bit_scheduled) || store_.chunk_count() > 0)
    return misuse(record_status::already_started);
  if (record_status s = check_time(t, false); s != record_status::ok) return misuse(s);
  send_ = t;
  has_ |= bit_send;
  latest_ = t;
  return record_status::ok;
}

template <class Clock, class Store>
record_status basic_request_timeline<Clock, Store>::queued(time_point t) noexcept {
  if (record_status s = check_time(t, true); s != record_status::ok) return misuse(s);
  if (has(bit_scheduled) || store_.chunk_count() > 0) return misuse(record_status::out_of_order);
  if (!has(bit_queued)) queued_ = t;
  has_ |= bit_queued;
  latest_ = t;
  return record_status::ok;
}

template <class Clock, class Store>
record_status basic_request_timeline<Clock, Store>::scheduled(time_point t) noexcept {
  if (record_status s = check_time(t, true); s != record_status::ok) return misuse(s);
  if (!has(bit_scheduled) && store_.chunk_count() > 0) return misuse(record_status::out_of_order);
  if constexpr (detail::has_add_schedule<store_type, time_point>::value) {
    if (record_status s = store_.add_schedule(t); s != record_status::ok) return misuse(s);
  }
  if (!has(bit_scheduled)) first_scheduled_ = t;
  last_scheduled_ = t;
  has_ |= bit_scheduled;
  latest_ = t;
  return record_status::ok;
}

template <class Clock, class Store>
record_status basic_request_timeline<Clock, Store>::preempted(time_point t) noexcept {
  if (record_status s = check_time(t, true); s != record_status::ok) return misuse(s);
  if (record_status s = store_.add_preemption(t); s != record_status::ok) return misuse(s);
  last_preempted_ = t;
  latest_ = t;
  return record_status::ok;
}

template <class Clock, class Store>
record_status basic_request_timeline<Clock, Store>::chunk(time_point t, std::uint32_t tokens,
                                                          chunk_kind kind) noexcept {
  if (record_status s = check_time(t, true); s != record_status::ok) return misuse(s);
  if (TOKCHRON_UNLIKELY(has(bit_done))) return misuse(record_status::out_of_order);
  if (record_status s = store_.add_chunk(t, tokens, kind); s != record_status::ok) return misuse(s);
  if (kind == chunk_kind::done) has_ |= bit_done;
  latest_ = t;
  return record_status::ok;
}

template <class Clock, class Store>
record_status basic_request_timeline<Clock, Store>::finish(time_point t,
                                                           finish_reason reason) noexcept {
  if (has(bit_finish)) return misuse(record_status::finished_twice);
  if (record_status s = check_time(t, true); s != record_status::ok) return misuse(s);
  finish_ = t;
  reason_ = reason;
  has_ |= bit_finish;
  latest_ = t;
  return record_status::ok;
}

/// A timeline on `steady_clock` that keeps every chunk: the common case.
using request_timeline = basic_request_timeline<>;

/// A timeline on `steady_clock` with O(1) memory, handing gaps to `Sink`.
template <class Sink = null_gap_sink>
using streaming_request_timeline = basic_request_timeline<default_clock, streaming_store<Sink>>;

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_TIMELINE_REQUEST_TIMELINE_HPP
