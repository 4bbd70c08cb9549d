// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_APP_LOADGEN_HPP
#define TOKCHRON_TOOLS_EXECUTOR_APP_LOADGEN_HPP

/// \file
/// The executor's load generator: the arrivals of a workload (tools/loadgen, shared with
/// tokchron-bench) made into the requests the engine schedules.
///
/// Every request's timeline starts with its *intended* arrival (`arrive`, and `send` at the same
/// instant: the simulated client never falls behind), so queueing is never hidden. In closed loop
/// the users go on after `duration` until every run request has finished, and the engine then
/// aborts the background; in open loop the queue drains.
///
/// Memory: the run keeps every request it made (the reports read them all). The users' state
/// and the requests' footprints (`user_footprint`, `request_footprint`, both bounds from above)
/// are counted against the workload's `memory_limit` as they are made, and the run stops with an
/// error naming the limit rather than outgrow it.

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "backend.hpp"
#include "engine.hpp"
#include "loadgen/arrivals.hpp"
#include "loadgen/distribution.hpp"
#include "loadgen/random.hpp"
#include "request.hpp"

namespace batching {

// The load generator's vocabulary, as the executor names it.
using tokchron_loadgen::arrival_count;
using tokchron_loadgen::arrival_mode;
using tokchron_loadgen::count_open_arrivals;
using tokchron_loadgen::default_memory_limit;
using tokchron_loadgen::distribution;
using tokchron_loadgen::max_arrival_s;
using tokchron_loadgen::max_length;
using tokchron_loadgen::max_shared_prefix;
using tokchron_loadgen::parse_decimal;
using tokchron_loadgen::parse_seconds;
using tokchron_loadgen::parse_trace_values;
using tokchron_loadgen::quantity;
using tokchron_loadgen::user_footprint;
using tokchron_loadgen::workload;

/// The most bytes a request keeps until the end of the run: the request and its timeline, and a
/// chunk per output token with the room a growing vector may leave (as much again).
[[nodiscard]] std::uint64_t request_footprint(std::uint32_t output_tokens) noexcept;
/// The bytes a finished run of `w` that made `requests` keeps, by the two footprints above (what
/// its load generator counted against `memory_limit`).
[[nodiscard]] std::uint64_t run_footprint(const workload& w,
                                          const std::deque<request>& requests) noexcept;

/// Produces the requests of a run from the arrivals of its workload. Owns them (stable
/// addresses). Single-threaded.
class load_generator final : public request_source {
 public:
  /// Timelines read `clock` (the engine's); throws `std::invalid_argument` for a bad workload.
  load_generator(const workload& w, const clock_type& clock);

  /// Requests arriving from this time on are background (after `duration`).
  [[nodiscard]] time_point end() const noexcept override { return arrivals_.end(); }
  /// The earliest intended arrival not yet released, if any.
  [[nodiscard]] std::optional<time_point> next_arrival() const override {
    return arrivals_.next_arrival();
  }
  /// Creates every request whose intended arrival is <= `now` (arrival and send recorded) and
  /// appends it to `out`, in arrival order. Throws `std::runtime_error` when the requests would
  /// pass the workload's `memory_limit`.
  void release(time_point now, std::vector<request*>& out) override;
  /// `r` ended (done or rejected) at `t`: its user thinks, then sends the next one.
  void on_finish(const request& r, time_point t) override;
  [[nodiscard]] std::deque<request> take_requests() override { return std::move(requests_); }

  [[nodiscard]] std::deque<request>& requests() noexcept { return requests_; }
  [[nodiscard]] const workload& config() const noexcept { return arrivals_.config(); }

 private:
  tokchron_loadgen::arrival_generator arrivals_;
  clock_type clock_;
  std::vector<tokchron_loadgen::arrival> released_;
  std::deque<request> requests_;
  std::uint64_t bytes_ = 0;  // the footprints counted against `memory_limit`
};

/// Runs `load` through a scheduler with `cfg` on `be` (the engine, core/engine.hpp, fed by a
/// `load_generator`). Throws as that `run` does, and `std::invalid_argument` for a bad workload.
[[nodiscard]] run_result run(const scheduler_config& cfg, const workload& load, backend& be,
                             const step_observer& observe = {});

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_APP_LOADGEN_HPP
