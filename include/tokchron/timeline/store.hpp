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
///  - `streaming_store<Sink>` keeps O(1) state (first/last token, counts, largest gap) and hands
///    each inter-token gap to `Sink` as it happens, for servers that cannot keep every token.
/// Both give identical TTFT, TPOT, E2E, queue, prefill and decode times for the same events.

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

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

namespace detail {
/// State common to both stores: token and chunk counts and the first/last token times.
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
  duration count(time_point t, std::uint32_t tokens) noexcept {
    if (chunks_++ == 0) first_chunk_ = t;
    last_chunk_ = t;
    duration gap = duration::zero();
    if (tokens > 0) {
      if (token_chunks_++ == 0) {
        first_token_ = t;
        first_tokens_ = tokens;
      } else {
        gap = t - last_token_;
        if (gap > max_gap_) max_gap_ = gap;
      }
      last_token_ = t;
      tokens_ += tokens;
    }
    return gap;
  }
  void count_preemption() noexcept { ++preemptions_; }

 private:
  time_point first_chunk_{}, last_chunk_{}, first_token_{}, last_token_{};
  duration max_gap_ = duration::zero();
  std::uint64_t tokens_ = 0;
  std::uint32_t chunks_ = 0, token_chunks_ = 0, first_tokens_ = 0, preemptions_ = 0;
};
}  // namespace detail

/// Keeps every chunk and every preemption time. Allocator-aware; 16 bytes per chunk with a
/// 64-bit clock. A chunk that cannot be stored (allocation failure) is reported as
/// `out_of_memory` and not counted, so the counters always agree with `chunks()`.
template <class Allocator = std::allocator<std::byte>>
struct full_store {
  template <class Clock>
  class bind : public detail::store_counters<Clock> {
    using base = detail::store_counters<Clock>;

   public:
    using time_point = typename Clock::time_point;
    using duration = typename Clock::duration;
    using chunk_type = basic_token_chunk<time_point>;
    using allocator_type =
        typename std::allocator_traits<Allocator>::template rebind_alloc<chunk_type>;
    using time_allocator =
        typename std::allocator_traits<Allocator>::template rebind_alloc<time_point>;
    static constexpr bool keeps_chunks = true;

    bind() = default;
    explicit bind(const Allocator& a) : chunks_(allocator_type(a)), preempted_(time_allocator(a)) {}

    /// Reserves room for `n` chunks so that recording does not allocate (may throw bad_alloc).
    void reserve(std::size_t n) { chunks_.reserve(n); }

    /// Every chunk in arrival order.
    [[nodiscard]] const std::vector<chunk_type, allocator_type>& chunks() const noexcept {
      return chunks_;
    }
    /// The time of every preemption, in order.
    [[nodiscard]] const std::vector<time_point, time_allocator>& preemption_times() const noexcept {
      return preempted_;
    }

    record_status add_chunk(time_point t, std::uint32_t tokens, chunk_kind kind) noexcept {
      if (record_status s = this->check(tokens); s != record_status::ok) return s;
      TOKCHRON_TRY { chunks_.push_back(chunk_type{t, tokens, kind}); }
      TOKCHRON_CATCH_ALL { return record_status::out_of_memory; }
      this->count(t, tokens);
      return record_status::ok;
    }
    record_status add_preemption(time_point t) noexcept {
      TOKCHRON_TRY { preempted_.push_back(t); }
      TOKCHRON_CATCH_ALL { return record_status::out_of_memory; }
      this->count_preemption();
      return record_status::ok;
    }

   private:
    std::vector<chunk_type, allocator_type> chunks_;
    std::vector<time_point, time_allocator> preempted_;
  };
};

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
  class bind : public detail::store_counters<Clock> {
   public:
    using time_point = typename Clock::time_point;
    using duration = typename Clock::duration;
    static constexpr bool keeps_chunks = false;

    bind() = default;
    explicit bind(Sink sink) : sink_(std::move(sink)) {}

    /// The sink, e.g. to read what it accumulated.
    [[nodiscard]] Sink& sink() noexcept { return sink_; }
    [[nodiscard]] const Sink& sink() const noexcept { return sink_; }

    record_status add_chunk(time_point t, std::uint32_t tokens, chunk_kind) noexcept {
      if (record_status s = this->check(tokens); s != record_status::ok) return s;
      const bool first = this->token_chunk_count() == 0;
      const duration gap = this->count(t, tokens);
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

   private:
    static_assert(std::is_nothrow_invocable_v<Sink&, duration, std::uint32_t>,
                  "a streaming_store sink must be noexcept-callable as sink(duration, uint32_t)");
    Sink sink_{};
  };
};

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_TIMELINE_STORE_HPP
