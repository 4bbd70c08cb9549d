// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_CORE_ENGINE_HPP
#define TOKCHRON_TOOLS_EXECUTOR_CORE_ENGINE_HPP

/// \file
/// The run loop: request source (the load generator, app/loadgen.hpp) -> scheduler -> backend,
/// one step at a time, every event recorded in the requests' tokchron timelines.
///
/// With a virtual-time backend (sim) the clock jumps: to the end of each step, and over idle
/// gaps to the next arrival or scheduler wake-up, so a 10-minute run takes milliseconds. With
/// a real-time backend the clock follows `steady_clock` from the start of the run and idle gaps
/// are slept. The run ends when every request that arrived before the workload's `duration`
/// has finished; requests after it (background load, see app/loadgen.hpp) are then aborted, so
/// `run_result::requests` holds them too, finished as `aborted`.

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "backend.hpp"
#include "request.hpp"
#include "scheduler.hpp"

namespace batching {

/// What the engine measured besides the timelines (those hold the latency story).
struct engine_stats {
  double end_s = 0;             ///< virtual (or real) time when the last request finished
  double busy_s = 0;            ///< time spent inside steps
  double kv_block_seconds = 0;  ///< integral of KV blocks in use over step time
  double batch_seconds = 0;     ///< integral of the batch's sequence count over step time
  std::uint32_t kv_blocks_total = 0, kv_blocks_peak = 0;
  std::uint64_t steps = 0;
  double wall_s = 0;  ///< how long the run took on this machine

  /// Share of the run the backend was busy.
  [[nodiscard]] double busy_fraction() const noexcept { return end_s > 0 ? busy_s / end_s : 0; }
  /// Time-averaged share of KV blocks in use over the run.
  [[nodiscard]] double kv_use_mean() const noexcept {
    return end_s > 0 && kv_blocks_total ? kv_block_seconds / (end_s * kv_blocks_total) : 0;
  }
  /// Time-averaged sequences per step over the run (idle time counts as 0).
  [[nodiscard]] double mean_batch() const noexcept { return end_s > 0 ? batch_seconds / end_s : 0; }
  [[nodiscard]] double kv_use_peak() const noexcept {
    return kv_blocks_total ? double(kv_blocks_peak) / kv_blocks_total : 0;
  }
};

/// A finished run: every request (in creation order) and the counters.
struct run_result {
  std::deque<request> requests;
  engine_stats engine;
  scheduler_stats sched;
};

/// Observes each step (tests check invariants with it): the plan as it was run, the result.
using step_observer = std::function<void(const step_plan&, const step_result&, const scheduler&)>;

/// Where a run's requests come from: the load generator (app/loadgen.hpp), or a test's own.
/// It owns them (stable addresses); the engine asks it for arrivals and tells it of finishes.
class request_source {
 public:
  virtual ~request_source() = default;
  /// Requests arriving from this time on are background load: the run ends when every earlier
  /// one has finished.
  [[nodiscard]] virtual time_point end() const noexcept = 0;
  /// The earliest arrival not yet released, if any.
  [[nodiscard]] virtual std::optional<time_point> next_arrival() const = 0;
  /// Appends to `out`, in arrival order, every request arriving at or before `now` (its arrival
  /// and send recorded in its timeline).
  virtual void release(time_point now, std::vector<request*>& out) = 0;
  /// `r` finished (done, rejected or aborted) at `t`.
  virtual void on_finish(const request& r, time_point t) = 0;
  /// Hands over every request it made, in creation order (called once, when the run ends).
  [[nodiscard]] virtual std::deque<request> take_requests() = 0;
};

/// Runs the requests of `src` through a scheduler with `cfg` on `be`; `clock` is the clock their
/// timelines read (the engine sets it). Throws `std::invalid_argument` for a bad configuration
/// and `std::runtime_error` when the backend fails or the run cannot make progress (which would
/// be a scheduler bug).
[[nodiscard]] run_result run(const scheduler_config& cfg, request_source& src,
                             const clock_type& clock, backend& be,
                             const step_observer& observe = {});

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_CORE_ENGINE_HPP
