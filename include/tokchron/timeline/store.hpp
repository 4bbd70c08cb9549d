// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TIMELINE_STORE_HPP
#define TOKCHRON_TIMELINE_STORE_HPP

/// \file
/// Token stores: where a request timeline keeps its output chunks.
///
/// A store policy `S` names, through `S::template bind<Clock>`, the class that holds the chunks
/// of one request on that clock. Two policies ship:
///  - `full_store<Allocator>` keeps every chunk (16 bytes each), so per-chunk and per-token ITL
///    can be computed afterwards and any tool's definition can be replayed;
///  - `streaming_store<Sink>` keeps O(1) state (first/second/last token, first answer and first
///    reasoning token, counts, largest gap) and hands
///    each inter-token gap to `Sink` as it happens, for servers that cannot keep every token.
/// Both give identical TTFT, TTFA, reasoning time, TTST, TPOT, E2E, queue, prefill and decode
/// times for the same events.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>  // also std::allocator and std::allocator_traits, which every vector uses:
                   // <memory> would add about 9,000 lines to each recording translation unit

#include "tokchron/config.hpp"
#include "tokchron/timeline/event.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// One streamed output chunk: when it arrived, how many tokens it carried, and what it was.
template <class TimePoint>
struct basic_token_chunk {
  TimePoint time;
  std::uint32_t tokens;
  chunk_kind kind;
};

/// A scheduling or a preemption as a `full_store` keeps it: its time and how many chunks had
/// been recorded before it, which places it exactly among the chunks (for `replay`).
template <class TimePoint>
struct basic_schedule_event {
  TimePoint time;
  std::uint32_t chunks_before;
  bool preempted;  ///< true for a preemption, false for a scheduling (first or later)
};

/// The counts and times both stores keep (the public base of `full_store<>::bind` and
/// `streaming_store::bind`, so what `timeline.store()` answers besides its chunks): token and
/// chunk counts, the first, second and last token times, reasoning tokens, the largest gap
/// between token chunks, preemptions. The stores count through its protected `check` and
/// `count`.
template <class Clock>
class store_counters {
 public:
  using time_point = typename Clock::time_point;
  using duration = typename Clock::duration;

  /// Total output tokens over all chunks.
  [[nodiscard]] std::uint64_t output_tokens() const noexcept { return tokens_; }
  /// All chunks recorded, including 0-token ones.
  [[nodiscard]] std::uint32_t chunk_count() const noexcept { return chunks_; }
  /// Chunks that carried at least one token.
  [[nodiscard]] std::uint32_t token_chunk_count() const noexcept { return token_chunks_; }
  /// Tokens in the first chunk that carried any (0 when none has).
  [[nodiscard]] std::uint32_t first_chunk_tokens() const noexcept { return first_tokens_; }
  /// Arrival of the first chunk that carried a token.
  [[nodiscard]] std::optional<time_point> first_token_time() const noexcept {
    return token_chunks_ ? std::optional<time_point>(first_token_) : std::nullopt;
  }
  /// Arrival of the last chunk that carried a token.
  [[nodiscard]] std::optional<time_point> last_token_time() const noexcept {
    return token_chunks_ ? std::optional<time_point>(last_token_) : std::nullopt;
  }
  /// Arrival of the first chunk of any kind.
  [[nodiscard]] std::optional<time_point> first_chunk_time() const noexcept {
    return chunks_ ? std::optional<time_point>(first_chunk_) : std::nullopt;
  }
  /// Arrival of the last chunk of any kind.
  [[nodiscard]] std::optional<time_point> last_chunk_time() const noexcept {
    return chunks_ ? std::optional<time_point>(last_chunk_) : std::nullopt;
  }
  /// Arrival of the chunk carrying the second output token: the first token chunk when it
  /// carried two or more tokens, else the next token chunk (empty with fewer than two tokens).
  [[nodiscard]] std::optional<time_point> second_token_time() const noexcept {
    if (first_tokens_ > 1) return first_token_;
    return token_chunks_ > 1 ? std::optional<time_point>(second_token_) : std::nullopt;
  }
  /// Arrival of the first chunk carrying answer tokens: tokens of any kind but `reasoning`.
  [[nodiscard]] std::optional<time_point> first_answer_token_time() const noexcept {
    return answer_chunks_ ? std::optional<time_point>(first_answer_) : std::nullopt;
  }
  /// Arrival of the first chunk carrying reasoning tokens (kind `reasoning`).
  [[nodiscard]] std::optional<time_point> first_reasoning_token_time() const noexcept {
    return reasoning_chunks_ ? std::optional<time_point>(first_reasoning_) : std::nullopt;
  }
  /// Tokens over all `reasoning` chunks (part of `output_tokens()`).
  [[nodiscard]] std::uint64_t reasoning_tokens() const noexcept { return reasoning_tokens_; }
  /// Chunks of kind `reasoning` that carried at least one token.
  [[nodiscard]] std::uint32_t reasoning_chunk_count() const noexcept { return reasoning_chunks_; }
  /// The largest gap between consecutive token chunks (empty with fewer than two).
  [[nodiscard]] std::optional<duration> max_token_gap() const noexcept {
    return token_chunks_ > 1 ? std::optional<duration>(max_gap_) : std::nullopt;
  }
  /// How many times the request was preempted.
  [[nodiscard]] std::uint32_t preemption_count() const noexcept { return preemptions_; }

 protected:
  /// Checks that the chunk can be counted; the caller has checked time order.
  [[nodiscard]] record_status check(std::uint32_t tokens) const noexcept {
    if (TOKCHRON_UNLIKELY(chunks_ == std::numeric_limits<std::uint32_t>::max() ||
                          tokens_ > std::numeric_limits<std::uint64_t>::max() - tokens))
      return record_status::count_overflow;
    return record_status::ok;
  }
  /// Counts a chunk; returns the gap since the previous token chunk when this one carries tokens
  /// and is not the first (duration::zero() otherwise).
  duration count(time_point t, std::uint32_t tokens, chunk_kind kind) noexcept {
    if (chunks_++ == 0) first_chunk_ = t;
    last_chunk_ = t;
    duration gap = duration::zero();
    if (tokens > 0) {
      if (token_chunks_++ == 0) {
        first_token_ = t;
        first_tokens_ = tokens;
      } else {
        if (token_chunks_ == 2) second_token_ = t;
        gap = t - last_token_;
        if (gap > max_gap_) max_gap_ = gap;
      }
      last_token_ = t;
      tokens_ += tokens;
      if (kind == chunk_kind::reasoning) {
        if (reasoning_chunks_++ == 0) first_reasoning_ = t;
        reasoning_tokens_ += tokens;
      } else if (answer_chunks_++ == 0) {
        first_answer_ = t;
      }
    }
    return gap;
  }
  void count_preemption() noexcept { ++preemptions_; }

 private:
  time_point first_chunk_{}, last_chunk_{}, first_token_{}, last_token_{}, second_token_{},
      first_answer_{}, first_reasoning_{};
  duration max_gap_ = duration::zero();
  std::uint64_t tokens_ = 0, reasoning_tokens_ = 0;
  std::uint32_t chunks_ = 0, token_chunks_ = 0, first_tokens_ = 0, preemptions_ = 0,
                answer_chunks_ = 0, reasoning_chunks_ = 0;
};

/// Keeps every chunk, and every scheduling and preemption in order among the chunks (what
/// `replay` needs). Allocator-aware; 16 bytes per chunk with a 64-bit clock, and 16 per
/// scheduling or preemption. A chunk or event that cannot be stored (allocation failure) is
/// reported as `out_of_memory` and not counted, so the counters always agree with `chunks()`.
template <class Allocator = std::allocator<std::byte>>
struct full_store {
  template <class Clock>
  class bind : public store_counters<Clock> {
    using base = store_counters<Clock>;

   public:
    using time_point = typename Clock::time_point;
    using duration = typename Clock::duration;
    using chunk_type = basic_token_chunk<time_point>;
    using allocator_type =
        typename std::allocator_traits<Allocator>::template rebind_alloc<chunk_type>;
    using time_allocator =
        typename std::allocator_traits<Allocator>::template rebind_alloc<time_point>;
    using schedule_event_type = basic_schedule_event<time_point>;
    static constexpr bool keeps_chunks = true;

    bind() = default;
    explicit bind(const Allocator& a) : chunks_(allocator_type(a)), events_(allocator_type(a)) {}

    /// Reserves room for `n` chunks so that recording does not allocate (may throw bad_alloc).
    void reserve(std::size_t n) { chunks_.reserve(n); }

    /// Every chunk in arrival order.
    [[nodiscard]] const std::vector<chunk_type, allocator_type>& chunks() const noexcept {
      return chunks_;
    }
    /// The time of every preemption, in order (a new vector: O(schedulings + preemptions)).
    [[nodiscard]] std::vector<time_point, time_allocator> preemption_times() const {
      std::vector<time_point, time_allocator> out{time_allocator(events_.get_allocator())};
      out.reserve(this->preemption_count());
      for (const chunk_type& e : events_)
        if (e.kind == preemption_mark) out.push_back(e.time);
      return out;
    }
    /// The number of schedulings (the first and each later one) and preemptions recorded.
    [[nodiscard]] std::size_t schedule_event_count() const noexcept { return events_.size(); }
    /// The `i`th scheduling or preemption in recording order (i < `schedule_event_count()`),
    /// with the number of chunks recorded before it.
    [[nodiscard]] schedule_event_type schedule_event(std::size_t i) const noexcept {
      const chunk_type& e = events_[i];
      return schedule_event_type{e.time, e.tokens, e.kind == preemption_mark};
    }

    record_status add_chunk(time_point t, std::uint32_t tokens, chunk_kind kind) noexcept;
    record_status add_preemption(time_point t) noexcept {
      if (record_status s = add_event(t, preemption_mark); s != record_status::ok) return s;
      this->count_preemption();
      return record_status::ok;
    }
    record_status add_schedule(time_point t) noexcept { return add_event(t, schedule_mark); }

   private:
    // Schedulings and preemptions are kept as chunk_type records, so that recording
    // instantiates one vector type (each one more costs every recording translation unit
    // compile time): `tokens` holds the number of chunks before the event and `kind` tells
    // the two apart.
    static constexpr chunk_kind schedule_mark = chunk_kind::text;
    static constexpr chunk_kind preemption_mark = chunk_kind::empty;

    record_status add_event(time_point t, chunk_kind mark) noexcept;

    std::vector<chunk_type, allocator_type> chunks_;
    std::vector<chunk_type, allocator_type> events_;
  };
};

// The two members that grow a vector are defined out of the class, so that they are not inline:
// with `extern template class full_store<>::bind<...>` (record.hpp with
// TOKCHRON_SEPARATE_INSTANTIATION) a translation unit calls the instantiation of
// record_instantiate.hpp instead of compiling its own vector growth.
template <class Allocator>
template <class Clock>
record_status full_store<Allocator>::bind<Clock>::add_chunk(time_point t, std::uint32_t tokens,
                                                            chunk_kind kind) noexcept {
  if (record_status s = this->check(tokens); s != record_status::ok) return s;
  TOKCHRON_TRY { chunks_.push_back(chunk_type{t, tokens, kind}); }
  TOKCHRON_CATCH_ALL { return record_status::out_of_memory; }
  this->count(t, tokens, kind);
  return record_status::ok;
}
template <class Allocator>
template <class Clock>
record_status full_store<Allocator>::bind<Clock>::add_event(time_point t,
                                                            chunk_kind mark) noexcept {
  TOKCHRON_TRY { events_.push_back(chunk_type{t, this->chunk_count(), mark}); }
  TOKCHRON_CATCH_ALL { return record_status::out_of_memory; }
  return record_status::ok;
}

/// A gap sink that ignores every gap: the streaming store's default.
struct null_gap_sink {
  template <class Duration>
  void operator()(Duration, std::uint32_t) const noexcept {}
};

/// Keeps O(1) state per request and calls `sink(gap, tokens)` (noexcept) as each token chunk
/// arrives: `gap` is the time since the previous token chunk and `tokens` the chunk's token
/// count, so per-token ITL is `tokens` samples of `gap / tokens`. For the first token chunk
/// carrying k > 1 tokens it calls `sink(zero, k - 1)`: those tokens arrived with no gap, and
/// this keeps sum(gaps) = decode time and the per-token sample count = N - 1.
template <class Sink = null_gap_sink>
struct streaming_store {
  template <class Clock>
  class bind : public store_counters<Clock> {
   public:
    using time_point = typename Clock::time_point;
    using duration = typename Clock::duration;
    static constexpr bool keeps_chunks = false;

    bind() = default;
    explicit bind(Sink sink) : sink_(std::move(sink)) {}

    /// The sink, e.g. to read what it accumulated.
    [[nodiscard]] Sink& sink() noexcept { return sink_; }
    [[nodiscard]] const Sink& sink() const noexcept { return sink_; }

    record_status add_chunk(time_point t, std::uint32_t tokens, chunk_kind kind) noexcept {
      if (record_status s = this->check(tokens); s != record_status::ok) return s;
      const bool first = this->token_chunk_count() == 0;
      const duration gap = this->count(t, tokens, kind);
      if (tokens > 0) {
        if (!first)
          sink_(gap, tokens);
        else if (tokens > 1)
          sink_(duration::zero(), tokens - 1);
      }
      return record_status::ok;
    }
    record_status add_preemption(time_point) noexcept {
      this->count_preemption();
      return record_status::ok;
    }
    record_status add_schedule(time_point) noexcept { return record_status::ok; }

   private:
    static_assert(std::is_nothrow_invocable_v<Sink&, duration, std::uint32_t>,
                  "a streaming_store sink must be noexcept-callable as sink(duration, uint32_t)");
    Sink sink_{};
  };
};

namespace detail {
/// True when store `S` takes `add_schedule(t)` (both shipped stores do; a store written before
/// it existed still works without).
template <class S, class TP, class = void>
struct has_add_schedule : std::false_type {};
template <class S, class TP>
struct has_add_schedule<S, TP,
                        std::void_t<decltype(std::declval<S&>().add_schedule(std::declval<TP>()))>>
    : std::true_type {};
}  // namespace detail

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_TIMELINE_STORE_HPP
