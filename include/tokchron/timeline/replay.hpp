// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TIMELINE_REPLAY_HPP
#define TOKCHRON_TIMELINE_REPLAY_HPP

/// \file
/// `replay`: a recorded timeline's events, in time order, into a server's own callbacks, so the
/// server's accounting can be fed from a script (testing.hpp) or from a trace in one line.
///
/// \code
///   struct my_accounting : tokchron::replay_callbacks<tokchron::manual_clock::time_point> {
///     void chunk(time_point, std::uint32_t tokens, tokchron::chunk_kind) override {
///       generated += tokens;
///     }
///     void preempted(time_point) override { ++preemptions; }
///     std::uint64_t generated = 0, preemptions = 0;
///   } acct;
///   tokchron::replay(tl, acct);  // tl from tokchron::testing::script()...timeline()
/// \endcode

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "tokchron/config.hpp"
#include "tokchron/timeline/event.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// The callbacks `replay` calls, named as the timeline's recording calls, each a no-op here:
/// derive, override (with `override`, so a misspelt name does not compile) the ones the server
/// accounts for. Any other type with all seven members (a timeline, for instance) works too.
template <class TimePoint>
class replay_callbacks {
 public:
  using time_point = TimePoint;

  replay_callbacks() = default;
  replay_callbacks(const replay_callbacks&) = default;
  replay_callbacks& operator=(const replay_callbacks&) = default;
  replay_callbacks(replay_callbacks&&) noexcept = default;
  replay_callbacks& operator=(replay_callbacks&&) noexcept = default;
  virtual ~replay_callbacks() = default;

  /// The arrival `a` of the definitions (the send time when no arrival was recorded).
  virtual void arrive(time_point) {}
  /// The actual send, when recorded.
  virtual void send(time_point) {}
  /// Entering the waiting queue, when recorded.
  virtual void queued(time_point) {}
  /// Each scheduling: the first and each one after a preemption.
  virtual void scheduled(time_point) {}
  /// Each preemption.
  virtual void preempted(time_point) {}
  /// Each chunk, with its token count and kind (0-token chunks included).
  virtual void chunk(time_point, std::uint32_t /*tokens*/, chunk_kind) {}
  /// The finish, with its reason (`aborted`, `error`, `rejected`, ... for a failed request).
  virtual void finish(time_point, finish_reason) {}
};

namespace detail {
template <class C, class TP, class = void>
struct is_replay_target : std::false_type {};
template <class C, class TP>
struct is_replay_target<
    C, TP,
    std::void_t<decltype(std::declval<C&>().arrive(std::declval<TP>())),
                decltype(std::declval<C&>().send(std::declval<TP>())),
                decltype(std::declval<C&>().queued(std::declval<TP>())),
                decltype(std::declval<C&>().scheduled(std::declval<TP>())),
                decltype(std::declval<C&>().preempted(std::declval<TP>())),
                decltype(std::declval<C&>().chunk(std::declval<TP>(), std::uint32_t{},
                                                  chunk_kind::text)),
                decltype(std::declval<C&>().finish(std::declval<TP>(), finish_reason::stop))>>
    : std::true_type {};
}  // namespace detail

/// Calls `cb` once per recorded event of `tl`, in time order: `arrive` (with the send time when
/// only that was recorded), then `send` and `queued` when recorded, then each scheduling,
/// preemption and chunk in the order they were recorded, then `finish` when recorded. Events the
/// timeline refused (misuse) were never recorded and are not replayed. At equal times the recording
/// order is kept (a queueing comes before a scheduling or preemption at the same time). Needs a
/// store that keeps chunks (`full_store`). Returns the number of calls. O(chunks + schedulings +
/// preemptions); allocates nothing.
template <class Timeline, class Callbacks>
std::size_t replay(const Timeline& tl, Callbacks& cb) {
  using time_point = typename Timeline::time_point;
  static_assert(Timeline::store_type::keeps_chunks,
                "replay needs a full_store timeline: a streaming_store keeps no chunks or "
                "schedulings");
  static_assert(detail::is_replay_target<Callbacks, time_point>::value,
                "replay callbacks need arrive, send, queued, scheduled, preempted (each taking a "
                "time_point), chunk(time_point, uint32_t, chunk_kind) and "
                "finish(time_point, finish_reason): derive from replay_callbacks");
  const auto arrival = tl.arrival();
  if (!arrival) return 0;
  std::size_t calls = 1;
  cb.arrive(*arrival);
  if (tl.send_time()) {
    cb.send(*tl.send_time());
    ++calls;
  }
  auto queued = tl.queued_time();
  const auto& store = tl.store();
  const auto& chunks = store.chunks();
  const std::size_t events = store.schedule_event_count();
  std::size_t e = 0;
  for (std::size_t c = 0; c <= chunks.size(); ++c) {
    // The schedulings and preemptions recorded before chunk c (all remaining ones at the end).
    for (; e < events; ++e) {
      const auto ev = store.schedule_event(e);
      if (c < chunks.size() && ev.chunks_before > c) break;
      if (queued && *queued <= ev.time) {
        cb.queued(*queued);
        queued.reset();
        ++calls;
      }
      if (ev.preempted)
        cb.preempted(ev.time);
      else
        cb.scheduled(ev.time);
      ++calls;
    }
    if (queued) {  // queueing is refused after a chunk: it comes before the first one
      cb.queued(*queued);
      queued.reset();
      ++calls;
    }
    if (c == chunks.size()) break;
    cb.chunk(chunks[c].time, chunks[c].tokens, chunks[c].kind);
    ++calls;
  }
  if (const auto f = tl.finish_time()) {
    cb.finish(*f, *tl.reason());
    ++calls;
  }
  return calls;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_TIMELINE_REPLAY_HPP
