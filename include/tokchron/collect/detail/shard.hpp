// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_COLLECT_DETAIL_SHARD_HPP
#define TOKCHRON_COLLECT_DETAIL_SHARD_HPP

/// \file
/// Internals of `collect/` and `live/`: one writer's shard of two buffers and the hand-over
/// protocol between the writer and a snapshot (see collector.hpp for the design). Light:
/// standard `<atomic>` and `<cstdint>` only, so recording headers can use it. Not part of the API.

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "tokchron/collect/detail/asymmetric_barrier.hpp"
#include "tokchron/config.hpp"

TOKCHRON_BEGIN_NAMESPACE
namespace detail {

/// The cache-line size assumed for padding (x86-64 and most AArch64 cores).
inline constexpr std::size_t cache_line = 64;

/// An estimator alone on its cache lines, so a snapshot clearing one side does not disturb the
/// writer recording into the other.
template <class Estimator>
struct alignas(cache_line) padded_estimator {
  Estimator value;
};

/// One writer's part of a collector: two estimators and the hand-over state. The owning writer
/// thread writes `seq_`, `own_seq_` and the active estimator; a snapshot (holding the
/// collector's mutex) writes `epoch_` and the inactive estimator.
template <class Estimator>
struct alignas(cache_line) collector_shard {
  collector_shard(const Estimator& prototype, bool asymmetric, std::uint64_t epoch)
      : asymmetric_(asymmetric), buffers_{{prototype}, {prototype}} {
    epoch_.store(epoch, std::memory_order_relaxed);
  }

  /// Enters a recording call and returns the estimator to record into (owner thread only).
  Estimator& enter() noexcept {
    ++own_seq_;  // odd: inside a call
    std::uint64_t e;
    if (TOKCHRON_LIKELY(asymmetric_)) {
      // release (a plain store on x86): a snapshot that reads this odd value also sees every
      // sample of the calls before it, as reading the previous call's even value would.
      seq_.store(own_seq_, std::memory_order_release);
      asymmetric_barrier::light();
      e = epoch_.load(std::memory_order_acquire);
    } else {
      seq_.store(own_seq_, std::memory_order_seq_cst);
      e = epoch_.load(std::memory_order_seq_cst);
    }
    return buffers_[e & 1u].value;
  }
  /// Leaves the recording call (owner thread only).
  void leave() noexcept { seq_.store(++own_seq_, std::memory_order_release); }

  /// Waits until the owner is not inside a recording call that may have chosen the side that was
  /// active before the latest flip (snapshot only; after the flip and the heavy barrier).
  /// `yield()` is called between polls once spinning has lasted a while (the caller passes
  /// `std::this_thread::yield`, so this header needs no `<thread>`).
  template <class Yield>
  void wait_quiescent(Yield&& yield) const noexcept {
    const std::uint64_t s =
        seq_.load(asymmetric_ ? std::memory_order_acquire : std::memory_order_seq_cst);
    if ((s & 1u) == 0) return;
    // Inside a call: it ends within nanoseconds unless the owner was descheduled.
    for (unsigned spins = 0; seq_.load(std::memory_order_acquire) == s; ++spins)
      if (spins >= 64) yield();
  }

  std::atomic<std::uint64_t> seq_{0};    // written by the owner
  std::uint64_t own_seq_ = 0;            // the owner's copy of seq_
  std::atomic<std::uint64_t> epoch_{0};  // written by snapshots; its parity is the active side
  std::atomic<bool> retired_{false};     // the writer is gone (release: after its last call)
  bool asymmetric_;
  padded_estimator<Estimator> buffers_[2];
};

}  // namespace detail
TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_COLLECT_DETAIL_SHARD_HPP
