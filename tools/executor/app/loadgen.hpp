// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_APP_LOADGEN_HPP
#define TOKCHRON_TOOLS_EXECUTOR_APP_LOADGEN_HPP

/// \file
/// The load generator: closed loop (N users, each sending its next request a think time after
/// the previous response ended) or open loop (Poisson, or gamma-distributed gaps for bursts).
///
/// Every request's timeline starts with its *intended* arrival (`arrive`, and `send` at the same
/// instant: the simulated client never falls behind), so queueing is never hidden. Randomness:
/// each closed-loop user has its own stream (lengths, think times), as has the open-loop arrival
/// process, so two scheduler configurations see the same request sequence for a seed (common
/// random numbers: their difference is the configuration's, not the dice's). A user's first
/// request comes after one think time (or at a uniform offset in [0, ramp_up]) so the users do
/// not all arrive at t = 0. The run's requests are those arriving before `duration`. In closed
/// loop the users go on after it (those later requests are the background of the last ones, so
/// the run ends in steady state instead of draining) until every run request has finished, and
/// the engine then aborts the background. In open loop arrivals stop at `duration` and the
/// queue drains (an overloaded open loop has no steady state to keep).
///
/// A shared prefix (`shared_prefix`) is prepended to every prompt; `reasoning_fraction` makes the
/// first tokens of every answer reasoning tokens. Neither draws a random number, so a run with
/// them sees the same request sequence as one without.
///
/// Memory: the run keeps every request it made (the reports read them all). A workload may set a
/// `memory_limit`: the users' state and the requests' footprints (`user_footprint`,
/// `request_footprint`, both bounds from above) are counted as they are made, and the run stops
/// with an error naming the limit rather than outgrow it. `count_open_arrivals` tells before a
/// run how many requests an open loop will make.

#include <cstdint>
#include <deque>
#include <optional>
#include <queue>
#include <string_view>
#include <vector>

#include "backend.hpp"
#include "distribution.hpp"
#include "engine.hpp"
#include "random.hpp"
#include "request.hpp"

namespace batching {

enum class arrival_mode : std::uint8_t { closed, open };

/// The workload. `validate()` throws `std::invalid_argument` naming the bad field.
struct workload {
  arrival_mode mode = arrival_mode::closed;
  std::uint32_t users = 50;  ///< closed loop
  distribution think = distribution::fixed(0, quantity::seconds);
  double rate = 1.0;        ///< open loop: mean requests per second
  double burstiness = 1.0;  ///< open loop: gamma shape of the gaps (1 = Poisson, < 1 burstier)
  distribution prompt = distribution::parse("normal:300,90", quantity::prompt_length);
  distribution output = distribution::parse("uniform:75,225", quantity::output_length);
  double duration_s = 600;  ///< arrivals stop after this many seconds
  /// A shared system prompt of this many tokens heads every prompt (before the `prompt`
  /// length drawn): the scheduler's prefix cache can reuse it. 0: none.
  std::uint32_t shared_prefix = 0;
  /// The share of each answer given to reasoning: its first round(F x output) tokens are
  /// reasoning tokens. 0: none.
  double reasoning_fraction = 0;
  double ramp_up_s = 0;  ///< closed loop: first requests spread over [0, ramp_up] instead
  std::uint32_t priority_levels = 1;  ///< priorities drawn uniformly from [0, levels)
  double predict_noise = 0.5;         ///< sd of log(predicted / true output length)
  std::uint64_t max_requests = 0;     ///< 0: no limit
  std::uint64_t seed = 1;
  /// Bytes the users and requests may keep (by `user_footprint` and `request_footprint`); 0: no
  /// limit. A run that would keep more stops with `std::runtime_error`.
  std::uint64_t memory_limit = 0;

  void validate() const;
};

/// The longest shared prefix a workload takes (a drawn length's bound, distribution.hpp).
inline constexpr std::uint32_t max_shared_prefix = max_length;

/// The memory limit `batching-executor` sets by default (a sweep: its runs together): 2 GiB.
inline constexpr std::uint64_t default_memory_limit = std::uint64_t(2) << 30;

/// The latest arrival a run schedules, in seconds after its start (within 64-bit nanoseconds):
/// a user whose think time, or an open loop whose next gap, reaches past it sends no more.
inline constexpr double max_arrival_s = 9e9;

/// The most bytes a request keeps until the end of the run: the request and its timeline, and a
/// chunk per output token with the room a growing vector may leave (as much again).
[[nodiscard]] std::uint64_t request_footprint(std::uint32_t output_tokens) noexcept;
/// The bytes a closed-loop user keeps: its random stream and its pending arrival.
[[nodiscard]] std::uint64_t user_footprint() noexcept;
/// The bytes a finished run of `w` that made `requests` keeps, by the two footprints above (what
/// its load generator counted against `memory_limit`).
[[nodiscard]] std::uint64_t run_footprint(const workload& w,
                                          const std::deque<request>& requests) noexcept;

/// How many requests the open loop of `w` makes: all of them, and those arriving at or after
/// `from_s` (the measured ones when it is the warm-up); `capped` when it stopped counting at
/// `limit`. Exact: it replays the load generator's arrival stream for `w.seed`, without making
/// requests (O(total) time, O(1) memory).
struct arrival_count {
  std::uint64_t total = 0, from = 0;
  bool capped = false;
};
[[nodiscard]] arrival_count count_open_arrivals(const workload& w, double from_s,
                                                std::uint64_t limit);

/// Produces the requests of a run. Owns them (stable addresses). Single-threaded.
class load_generator final : public request_source {
 public:
  /// Timelines read `clock` (the engine's); throws `std::invalid_argument` for a bad workload.
  load_generator(const workload& w, const clock_type& clock);

  /// Requests arriving from this time on are background (after `duration`).
  [[nodiscard]] time_point end() const noexcept override { return end_; }
  /// The earliest intended arrival not yet released, if any.
  [[nodiscard]] std::optional<time_point> next_arrival() const override;
  /// Creates every request whose intended arrival is <= `now` (arrival and send recorded) and
  /// appends it to `out`, in arrival order.
  void release(time_point now, std::vector<request*>& out) override;
  /// `r` ended (done or rejected) at `t`: its user thinks, then sends the next one.
  void on_finish(const request& r, time_point t) override;
  [[nodiscard]] std::deque<request> take_requests() override { return std::move(requests_); }

  [[nodiscard]] std::deque<request>& requests() noexcept { return requests_; }
  [[nodiscard]] const workload& config() const noexcept { return w_; }

 private:
  struct pending {
    time_point at;
    std::uint32_t user;
    double think;  // seconds since the user's previous response; < 0 for none
    bool operator>(const pending& o) const noexcept {
      return at != o.at ? at > o.at : user > o.user;
    }
  };
  void push(time_point at, std::uint32_t user, double think = -1);
  void schedule_open(time_point after);
  void charge(std::uint64_t bytes, time_point now);

  workload w_;
  clock_type clock_;
  time_point end_;
  std::vector<rng> user_rng_;
  rng arrival_rng_;
  std::priority_queue<pending, std::vector<pending>, std::greater<pending>> queue_;
  std::deque<request> requests_;
  std::uint64_t scheduled_ = 0;
  std::uint64_t bytes_ = 0;  // the footprints counted against `memory_limit`
};

/// Runs `load` through a scheduler with `cfg` on `be` (the engine, core/engine.hpp, fed by a
/// `load_generator`). Throws as that `run` does, and `std::invalid_argument` for a bad workload.
[[nodiscard]] run_result run(const scheduler_config& cfg, const workload& load, backend& be,
                             const step_observer& observe = {});

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_APP_LOADGEN_HPP
