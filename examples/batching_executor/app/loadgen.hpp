// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXAMPLES_BATCHING_EXECUTOR_LOADGEN_HPP
#define TOKCHRON_EXAMPLES_BATCHING_EXECUTOR_LOADGEN_HPP

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
  double ramp_up_s = 0;     ///< closed loop: first requests spread over [0, ramp_up] instead
  std::uint32_t priority_levels = 1;  ///< priorities drawn uniformly from [0, levels)
  double predict_noise = 0.5;         ///< sd of log(predicted / true output length)
  std::uint64_t max_requests = 0;     ///< 0: no limit
  std::uint64_t seed = 1;

  void validate() const;
};

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

  workload w_;
  clock_type clock_;
  time_point end_;
  std::vector<rng> user_rng_;
  rng arrival_rng_;
  std::priority_queue<pending, std::vector<pending>, std::greater<pending>> queue_;
  std::deque<request> requests_;
  std::uint64_t scheduled_ = 0;
};

/// Runs `load` through a scheduler with `cfg` on `be` (the engine, core/engine.hpp, fed by a
/// `load_generator`). Throws as that `run` does, and `std::invalid_argument` for a bad workload.
[[nodiscard]] run_result run(const scheduler_config& cfg, const workload& load, backend& be,
                             const step_observer& observe = {});

}  // namespace batching

#endif  // TOKCHRON_EXAMPLES_BATCHING_EXECUTOR_LOADGEN_HPP
