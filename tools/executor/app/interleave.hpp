// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_APP_INTERLEAVE_HPP
#define TOKCHRON_TOOLS_EXECUTOR_APP_INTERLEAVE_HPP

/// \file
/// `--interleave on`: the configurations of a sweep run at once, one thread each, and take
/// their steps in turns, so that every configuration is measured under the same conditions.
///
/// A measured step time (the cpu backend's `clock=cpu`) excludes the time other processes ran,
/// but not what they do to the step: a neighbour that evicts the caches or takes memory
/// bandwidth makes the same step take more CPU time (on a shared 2-core machine, 1.3-1.6x).
/// Configurations measured one after the other therefore see different machines whenever the
/// neighbours change. In turns, one step at a time (never two at once, so the runs do not
/// disturb each other), always the run that has so far spent the least step time: run A's k-th
/// second of step time is measured in the same stretch of wall time as every other run's k-th
/// second (to within one step), so a neighbour that comes or goes between the start and the end
/// disturbs every configuration in the same proportion, and a comparison between
/// configurations (a calibration from some of them and a prediction of another) does not see
/// it. Needs virtual-time backends: a wall-clock run would count the other runs' turns as its
/// own time.

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend.hpp"
#include "cli.hpp"
#include "engine.hpp"
#include "pictures/executor_steps.hpp"

namespace batching {

/// The turns of `runs` runs: a step of run i may start when no step runs, every run that has not
/// left is waiting for its turn (none is between steps), and run i has spent the least step time
/// of them (ties: the lowest index). Thread-safe; each run uses it from its own thread.
class step_turns {
 public:
  explicit step_turns(std::size_t runs);
  /// Waits for run i's turn.
  void begin(std::size_t i);
  /// Run i's step took `seconds` of step time; the turn passes.
  void end(std::size_t i, double seconds);
  /// Run i takes no more steps (it finished or failed). Idempotent.
  void leave(std::size_t i);
  /// The step time run i has spent so far.
  [[nodiscard]] double spent(std::size_t i) const;

 private:
  enum class state { between, waiting, stepping, left };
  [[nodiscard]] bool turn_of(std::size_t i) const;  // under m_
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::vector<state> state_;
  std::vector<double> spent_;
};

/// A backend whose steps take turns (`step_turns`) with the other runs' backends.
class turn_backend final : public backend {
 public:
  /// Throws `std::invalid_argument` when `inner` is not a virtual-time backend.
  turn_backend(std::unique_ptr<backend> inner, step_turns& turns, std::size_t index);
  [[nodiscard]] std::string name() const override { return inner_->name(); }
  [[nodiscard]] bool virtual_time() const noexcept override { return true; }
  [[nodiscard]] std::uint32_t kv_blocks(std::uint32_t block_size) const override {
    return inner_->kv_blocks(block_size);
  }
  step_result step(const batch& b) override;
  void release(std::uint64_t seq_id) noexcept override { inner_->release(seq_id); }
  [[nodiscard]] std::optional<duration> predict_prefill(std::uint32_t tokens) const override {
    return inner_->predict_prefill(tokens);
  }

 private:
  std::unique_ptr<backend> inner_;
  step_turns& turns_;
  std::size_t index_;
};

/// Runs every configuration at once, their steps in turns; each may keep `memory_limit` divided
/// by the number of configurations. `steps`, when not null, holds one series per configuration
/// (for --plot). Returns the runs in the configurations' order; rethrows the first failure
/// (after every run has stopped). Throws `std::invalid_argument` when a configuration's backend
/// does not keep virtual time.
[[nodiscard]] std::vector<run_result> run_interleaved(std::vector<configuration>& configs,
                                                      std::uint64_t memory_limit,
                                                      std::vector<plot::executor_series>* steps);

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_APP_INTERLEAVE_HPP
