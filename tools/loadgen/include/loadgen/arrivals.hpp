// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_LOADGEN_ARRIVALS_HPP
#define TOKCHRON_TOOLS_LOADGEN_ARRIVALS_HPP

/// \file
/// The arrival processes: closed loop (N users, each sending its next request a think time after
/// the previous response ended) or open loop (Poisson, or gamma-distributed gaps for bursts),
/// with the lengths of each request drawn from the workload's distributions. Shared by the
/// executor (which turns each arrival into a request it schedules) and tokchron-bench (which
/// sends each one to a server).
///
/// Times are the run's schedule: nanoseconds since its start, on `tokchron::manual_clock`. An
/// arrival's time is its *intended* arrival, so whoever sends it late sees the lag. Randomness:
/// each closed-loop user has its own stream (lengths, think times), as has the open-loop arrival
/// process, so two consumers (two scheduler configurations, or a simulated and a real server) see
/// the same request sequence for a seed (common random numbers). A user's first request comes
/// after one think time (or at a uniform offset in [0, ramp_up]) so the users do not all arrive
/// at t = 0. The run's requests are those arriving before `duration`. In closed loop the users go
/// on after it (those later requests are the background of the last ones, so the run ends in
/// steady state instead of draining) until the consumer stops asking; in open loop arrivals stop
/// at `duration`.
///
/// A shared prefix (`shared_prefix`) is prepended to every prompt; `reasoning_fraction` makes the
/// first tokens of every answer reasoning tokens. Neither draws a random number, so a run with
/// them sees the same request sequence as one without.
///
/// Memory: the generator keeps its users' state (`user_footprint` each, counted against the
/// workload's `memory_limit` before anything is allocated) and the arrivals not yet released;
/// the arrivals it hands out are the consumer's. `count_open_arrivals` tells before a run how
/// many requests an open loop will make.

#include <cstdint>
#include <optional>
#include <queue>
#include <vector>

#include "loadgen/distribution.hpp"
#include "loadgen/random.hpp"
#include "tokchron/clock.hpp"

namespace tokchron_loadgen {

/// The schedule's clock: nanoseconds since the start of the run.
using time_point = tokchron::manual_clock::time_point;
using duration = tokchron::manual_clock::duration;

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
  /// length drawn): a prefix cache can reuse it. 0: none.
  std::uint32_t shared_prefix = 0;
  /// The share of each answer given to reasoning: its first round(F x output) tokens are
  /// reasoning tokens. 0: none.
  double reasoning_fraction = 0;
  double ramp_up_s = 0;  ///< closed loop: first requests spread over [0, ramp_up] instead
  std::uint32_t priority_levels = 1;  ///< priorities drawn uniformly from [0, levels)
  double predict_noise = 0.5;         ///< sd of log(predicted / true output length)
  std::uint64_t max_requests = 0;     ///< 0: no limit
  std::uint64_t seed = 1;
  /// Bytes the run may keep: the users' state (`user_footprint`, checked by the generator) and
  /// whatever its consumer counts against it (the executor: its requests). 0: no limit.
  std::uint64_t memory_limit = 0;

  void validate() const;
};

/// The longest shared prefix a workload takes (a drawn length's bound, distribution.hpp).
inline constexpr std::uint32_t max_shared_prefix = max_length;

/// The memory limit a run gets by default (`batching-executor --memory-limit`; tokchron-bench's
/// users): 2 GiB.
inline constexpr std::uint64_t default_memory_limit = std::uint64_t(2) << 30;

/// The latest arrival a run schedules, in seconds after its start (within 64-bit nanoseconds):
/// a user whose think time, or an open loop whose next gap, reaches past it sends no more.
inline constexpr double max_arrival_s = 9e9;

/// One request of the schedule: what is asked, and when.
struct arrival {
  std::uint64_t id = 0;    ///< 0, 1, 2, ... in order of release
  std::uint32_t user = 0;  ///< closed loop: the user who sends it
  std::uint32_t prompt_tokens = 1;
  /// The prompt's first tokens that are the shared prefix (at most `prompt_tokens`).
  std::uint32_t prefix_tokens = 0;
  /// The answer's first tokens that are reasoning (at most `output_tokens`).
  std::uint32_t reasoning_tokens = 0;
  std::uint32_t output_tokens = 1;     ///< the response's length
  std::uint32_t predicted_output = 1;  ///< a noisy prediction of `output_tokens` (in [1, 2^32))
  std::int32_t priority = 0;           ///< drawn from [0, priority_levels)
  time_point at{};                     ///< the intended arrival
  /// Closed loop: the user's think time between its previous response and this request (empty
  /// for a user's first request and in open loop).
  std::optional<double> think_s;
};

/// Where a run's requests come from: the generator below, or a consumer's own schedule (a trace
/// replayed). Single-threaded.
class arrival_source {
 public:
  virtual ~arrival_source() = default;
  /// Requests arriving from this time on are background load: the run ends when every earlier
  /// one has finished.
  [[nodiscard]] virtual time_point end() const noexcept = 0;
  /// The earliest arrival not yet released, if any.
  [[nodiscard]] virtual std::optional<time_point> next_arrival() const = 0;
  /// Appends to `out`, in arrival order, every arrival at or before `now`.
  virtual void release(time_point now, std::vector<arrival>& out) = 0;
  /// The request `a` (one released) ended at `t`: a closed-loop user thinks, then sends its next.
  virtual void on_finish(const arrival& a, time_point t) = 0;
};

/// The bytes a closed-loop user keeps: its random stream and its pending arrival.
[[nodiscard]] std::uint64_t user_footprint() noexcept;

/// How many requests the open loop of `w` makes: all of them, and those arriving at or after
/// `from_s` (the measured ones when it is the warm-up); `capped` when it stopped counting at
/// `limit`. Exact: it replays the generator's arrival stream for `w.seed`, without making
/// requests (O(total) time, O(1) memory).
struct arrival_count {
  std::uint64_t total = 0, from = 0;
  bool capped = false;
};
[[nodiscard]] arrival_count count_open_arrivals(const workload& w, double from_s,
                                                std::uint64_t limit);

/// The arrivals of a workload.
class arrival_generator final : public arrival_source {
 public:
  /// Throws `std::invalid_argument` for a bad workload, or users whose state alone passes its
  /// `memory_limit`.
  explicit arrival_generator(const workload& w);

  [[nodiscard]] time_point end() const noexcept override { return end_; }
  [[nodiscard]] std::optional<time_point> next_arrival() const override;
  void release(time_point now, std::vector<arrival>& out) override;
  void on_finish(const arrival& a, time_point t) override;

  [[nodiscard]] const workload& config() const noexcept { return w_; }
  /// Arrivals released so far.
  [[nodiscard]] std::uint64_t released() const noexcept { return released_; }

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
  time_point end_;
  std::vector<rng> user_rng_;
  rng arrival_rng_;
  std::priority_queue<pending, std::vector<pending>, std::greater<pending>> queue_;
  std::uint64_t scheduled_ = 0, released_ = 0;
};

}  // namespace tokchron_loadgen

#endif  // TOKCHRON_TOOLS_LOADGEN_ARRIVALS_HPP
