// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_COLLECT_COLLECTOR_HPP
#define TOKCHRON_COLLECT_COLLECTOR_HPP

/// \file
/// `basic_collector`: many threads record into one distribution without contending, and interval
/// snapshots return exactly the samples recorded since the previous snapshot while the writers
/// keep recording.
///
/// It is also the sharded many-writer mode of the aggregation model: a collector of
/// `basic_distributions<E>` (collect/distributions.hpp; `distributions<sharded, E>` in
/// tokchron/distributions.hpp) gives each writer a shard of per-metric distributions, recorded a
/// request at a time (`writer::record(timeline)`), and its snapshots are `basic_distributions<E>`.
///
/// Design (HdrHistogram's interval recorder, made per-thread): each `writer` owns a shard of two
/// estimators, an active one it records into and an inactive one. A snapshot flips every shard's
/// active side, waits until no writer is still inside a recording call on the old side, merges
/// the old sides and clears them. A recording call is bracketed by two plain stores of a
/// per-shard sequence number (odd while inside): no read-modify-write, no lock, no cache line
/// shared with another writer. The store-load ordering the hand-over needs comes from an
/// asymmetric barrier: the snapshot issues Linux `membarrier(2)` (about 1 us) so writers need
/// only a compiler barrier. Where that is unavailable (and under ThreadSanitizer) the writer's
/// store and load are sequentially consistent instead (`collector_sync::fences`), which costs a
/// locked instruction per sample on x86 but is portable.
///
/// \code
///   tokchron::collector ttft;           // log_histogram shards, 1 % relative error
///   // on each worker thread, once:
///   auto w = ttft.make_writer();
///   w.add(0.120);                       // noexcept, never blocks
///   // on the metrics thread, every interval:
///   auto interval = ttft.snapshot();    // the samples since the previous snapshot
///   auto total = ttft.cumulative();     // every sample since construction
///
///   tokchron::distributions<tokchron::sharded> d;   // every metric of every request
///   auto dw = d.make_writer();
///   dw.record(timeline);                // a finished request's metrics, noexcept
///   tokchron::basic_distributions<> interval_metrics = d.snapshot();
/// \endcode

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "tokchron/collect/detail/asymmetric_barrier.hpp"
#include "tokchron/collect/detail/shard.hpp"
#include "tokchron/collect/distributions.hpp"
#include "tokchron/config.hpp"
#include "tokchron/quantile/estimator.hpp"
#include "tokchron/quantile/log_histogram.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// How a collector's writers and snapshots synchronise.
enum class collector_sync : std::uint8_t {
  /// The asymmetric barrier when the process can use it (Linux membarrier), else `fences`.
  automatic,
  /// A sequentially consistent store and load in every recording call: portable, slower.
  fences,
};

namespace detail {

template <class E, class = void>
struct has_nothrow_clear : std::false_type {};
template <class E>
struct has_nothrow_clear<E, std::void_t<decltype(std::declval<E&>().clear())>>
    : std::bool_constant<noexcept(std::declval<E&>().clear())> {};

template <class E, class = void>
struct has_merge : std::false_type {};
template <class E>
struct has_merge<E, std::void_t<decltype(std::declval<E&>().merge(std::declval<const E&>()))>>
    : std::true_type {};

template <class E, class = void>
struct has_empty : std::false_type {};
template <class E>
struct has_empty<E, std::void_t<decltype(bool(std::declval<const E&>().empty()))>>
    : std::true_type {};

/// True when `e` holds nothing to hand over: `empty()` where the type says (distributions also
/// hold request counters), else no samples and none refused.
template <class E>
[[nodiscard]] bool holds_nothing(const E& e) noexcept {
  if constexpr (has_empty<E>::value)
    return e.empty();
  else
    return e.count() == 0 && e.rejected() == 0;
}

}  // namespace detail

/// Many threads record samples into one distribution; interval snapshots return exactly the
/// samples recorded since the previous snapshot (none lost, none counted twice) while writers
/// keep recording.
///
/// `Estimator` is any mergeable quantile estimator (`is_mergeable_estimator_v`), or
/// `basic_distributions` of one (the sharded mode of the aggregation model), that is copy
/// constructible and has a noexcept `clear()`; each shard starts as a copy of the prototype given
/// at construction (its configuration, e.g. a histogram's scale), cleared. Memory: two
/// estimators per writer alive at the same time (shards of destroyed writers are reused), plus
/// the pending interval and the cumulative total. A moved-from collector may only be destroyed
/// or assigned to.
///
/// Thread safety: `make_writer`, `snapshot`, `cumulative`, `writers` and `snapshots` may be called
/// from any thread at any time (they serialise on an internal mutex that writers never take);
/// each `writer` is used by one thread at a time.
template <class Estimator = log_histogram>
class basic_collector {
  static_assert(detail::has_merge<Estimator>::value,
                "a collector needs a mergeable estimator (see tokchron/quantile/estimator.hpp) "
                "or basic_distributions of one");
  static_assert(std::is_copy_constructible_v<Estimator>, "shards are copies of a prototype");
  static_assert(detail::has_nothrow_clear<Estimator>::value,
                "clearing a shard must not fail: the estimator needs a noexcept clear()");

  using shard = detail::collector_shard<Estimator>;

  struct state {
    state(const Estimator& p, bool asym) : prototype(p), pending(p), total(p), asymmetric(asym) {
      prototype.clear();
      pending.clear();
      total.clear();
    }
    std::mutex mutex;
    Estimator prototype;  // empty, configured
    Estimator pending;    // drained from the shards since the last snapshot
    Estimator total;      // every interval returned so far
    std::vector<std::unique_ptr<shard>> shards;
    std::uint64_t epoch = 0;
    std::uint64_t snapshots = 0;
    bool asymmetric;
  };

 public:
  using estimator_type = Estimator;
  using value_type = typename Estimator::value_type;

  /// A handle through which one thread records into the collector. Move-only; moving it hands
  /// the shard to another owner. A default-constructed or moved-from writer is detached: `add`
  /// returns false and records nothing. A writer may outlive its collector (it keeps the shared
  /// state alive; what it records then is never reported).
  ///
  /// Thread safety: one thread at a time per writer (any thread, with a happens-before between
  /// successive owners, e.g. the hand-over itself).
  class writer {
   public:
    writer() noexcept = default;
    writer(writer&& o) noexcept : state_(std::move(o.state_)), shard_(o.shard_) {
      o.shard_ = nullptr;
    }
    writer& operator=(writer&& o) noexcept {
      if (this != &o) {
        release();
        state_ = std::move(o.state_);
        shard_ = o.shard_;
        o.shard_ = nullptr;
      }
      return *this;
    }
    writer(const writer&) = delete;
    writer& operator=(const writer&) = delete;
    ~writer() { release(); }

    /// Records `x` with the estimator's own `add`: false when the estimator rejects x (NaN,
    /// infinity, ...; it counts those in `rejected()`, which snapshots carry) or when the writer
    /// is detached. Costs the estimator's add plus two plain stores and a load; never blocks.
    bool add(value_type x) noexcept {
      if (TOKCHRON_UNLIKELY(shard_ == nullptr)) return false;
      Estimator& e = shard_->enter();
      const bool ok = e.add(x);
      shard_->leave();
      return ok;
    }

    /// Calls `f(estimator&)` on this writer's active estimator, for recording calls other than
    /// `add(x)`. `f` must be noexcept and only record. False (`f` not called) when detached.
    template <class F>
    bool update(F&& f) noexcept {
      static_assert(std::is_nothrow_invocable_v<F&, Estimator&>, "update(f) needs a noexcept f");
      if (TOKCHRON_UNLIKELY(shard_ == nullptr)) return false;
      Estimator& e = shard_->enter();
      f(e);
      shard_->leave();
      return true;
    }

    /// Records a request into a collector of distributions (`basic_distributions::record`:
    /// a finished timeline, or a `request_metrics`). Returns what that returns; false (nothing
    /// recorded) when detached. Costs the recording plus two plain stores and a load.
    template <class Request, class E = Estimator>
    auto record(const Request& request) noexcept
        -> decltype(std::declval<E&>().record(request), bool()) {
      if (TOKCHRON_UNLIKELY(shard_ == nullptr)) return false;
      Estimator& e = shard_->enter();
      const bool ok = record_into(e, request);
      shard_->leave();
      return ok;
    }

    /// Whether this writer records into a collector.
    [[nodiscard]] bool attached() const noexcept { return shard_ != nullptr; }

   private:
    friend class basic_collector;
    template <class Request>
    static bool record_into(Estimator& e, const Request& request) noexcept {
      if constexpr (std::is_void_v<decltype(e.record(request))>) {
        e.record(request);
        return true;
      } else {
        return e.record(request);
      }
    }
    writer(std::shared_ptr<state> s, shard* sh) noexcept : state_(std::move(s)), shard_(sh) {}
    void release() noexcept {
      if (shard_ != nullptr) shard_->retired_.store(true, std::memory_order_release);
      shard_ = nullptr;
      state_.reset();
    }

    std::shared_ptr<state> state_;
    shard* shard_ = nullptr;
  };

  /// A collector of default-constructed estimators, synchronised by `sync`.
  explicit basic_collector(collector_sync sync = collector_sync::automatic)
      : basic_collector(Estimator(), sync) {}
  /// A collector whose shards are cleared copies of `prototype` (its samples are ignored, its
  /// configuration kept). Throws std::bad_alloc if memory runs out.
  explicit basic_collector(const Estimator& prototype,
                           collector_sync sync = collector_sync::automatic)
      : state_(std::make_shared<state>(prototype, sync == collector_sync::automatic &&
                                                      detail::asymmetric_barrier::available())) {}

  basic_collector(const basic_collector&) = delete;
  basic_collector& operator=(const basic_collector&) = delete;
  basic_collector(basic_collector&&) noexcept = default;
  basic_collector& operator=(basic_collector&&) noexcept = default;
  ~basic_collector() = default;

  /// A new writer for the calling thread. Reuses the shard of a destroyed writer when there is
  /// one (samples it has not reported yet are kept). Throws std::bad_alloc if memory runs out.
  /// Takes the collector's mutex: make one writer per thread and keep it.
  [[nodiscard]] writer make_writer() {
    std::lock_guard<std::mutex> lock(state_->mutex);
    for (auto& sh : state_->shards) {
      if (sh->retired_.load(std::memory_order_acquire)) {
        sh->retired_.store(false, std::memory_order_relaxed);
        return writer(state_, sh.get());
      }
    }
    state_->shards.push_back(
        std::make_unique<shard>(state_->prototype, state_->asymmetric, state_->epoch));
    return writer(state_, state_->shards.back().get());
  }

  /// The samples recorded since the previous snapshot (since construction for the first one),
  /// merged into one estimator whose `rejected()` counts the samples refused in the interval;
  /// they are also added to `cumulative()`. Never blocks writers; waits only for recording calls
  /// in progress. O(writers x estimator merge) plus one `membarrier` (about 1 us). Throws
  /// std::bad_alloc if a merge runs out of memory; nothing is lost then: the samples not returned
  /// stay in the collector and come with a later snapshot.
  [[nodiscard]] Estimator snapshot() {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state& st = *state_;
    drain(st);
    if constexpr (std::is_nothrow_move_constructible_v<Estimator> &&
                  std::is_nothrow_move_assignable_v<Estimator>) {
      Estimator fresh(st.prototype);  // may throw: nothing changed yet
      st.total.merge(st.pending);     // may throw: a merge leaves its target as it was
      Estimator out(std::move(st.pending));
      st.pending = std::move(fresh);
      ++st.snapshots;
      return out;
    } else {
      Estimator out(st.pending);
      st.total.merge(st.pending);
      st.pending.clear();
      ++st.snapshots;
      return out;
    }
  }

  /// Every sample recorded since construction: what `snapshot` returned so far plus what it
  /// would return now. Does not start a new interval. Same cost and guarantees as `snapshot`.
  [[nodiscard]] Estimator cumulative() {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state& st = *state_;
    drain(st);
    Estimator out(st.total);
    out.merge(st.pending);
    return out;
  }

  /// How many writers are attached now.
  [[nodiscard]] std::size_t writers() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    std::size_t n = 0;
    for (const auto& sh : state_->shards)
      if (!sh->retired_.load(std::memory_order_acquire)) ++n;
    return n;
  }
  /// How many interval snapshots have been taken.
  [[nodiscard]] std::uint64_t snapshots() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->snapshots;
  }
  /// True when writers pay only a compiler barrier (the asymmetric barrier is in use).
  [[nodiscard]] bool asymmetric() const noexcept { return state_->asymmetric; }

 private:
  /// Moves every shard's samples into `st.pending` (mutex held). If a merge throws, the shards
  /// not yet merged keep their samples for the next drain and `pending` keeps the rest.
  static void drain(state& st) {
    const std::uint64_t old_epoch = st.epoch;
    const std::uint64_t new_epoch = old_epoch + 1;
    for (auto& sh : st.shards)
      sh->epoch_.store(new_epoch,
                       st.asymmetric ? std::memory_order_release : std::memory_order_seq_cst);
    st.epoch = new_epoch;
    if (st.asymmetric) detail::asymmetric_barrier::heavy();
    const std::size_t old_side = old_epoch & 1u;
    for (auto& sh : st.shards) {
      sh->wait_quiescent([] { std::this_thread::yield(); });
      // A writer destroyed before this point records no more: both sides are the snapshot's.
      const bool gone = sh->retired_.load(std::memory_order_acquire);
      merge_and_clear(st, sh->buffers_[old_side].value);
      if (gone) merge_and_clear(st, sh->buffers_[old_side ^ 1u].value);
    }
  }

  static void merge_and_clear(state& st, Estimator& e) {
    if (detail::holds_nothing(e)) return;
    st.pending.merge(e);  // may throw: a merge leaves its target as it was
    e.clear();
  }

  std::shared_ptr<state> state_;
};

/// A collector of the default estimator, `log_histogram` (1 % relative error unless a prototype
/// says otherwise: `tokchron::collector c(tokchron::log_histogram(0.001));`).
using collector = basic_collector<>;

/// The sharded many-writer mode: a collector of `basic_distributions<Estimator>`.
template <class Estimator>
struct distributions_mode<sharded, Estimator> {
  using type = basic_collector<basic_distributions<Estimator>>;
};

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_COLLECT_COLLECTOR_HPP
