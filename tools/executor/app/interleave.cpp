// SPDX-License-Identifier: MIT
#include "interleave.hpp"

#include <exception>
#include <stdexcept>
#include <thread>
#include <utility>

#include "loadgen.hpp"
#include "tokchron/clock.hpp"

namespace batching {

step_turns::step_turns(std::size_t runs) : state_(runs, state::between), spent_(runs, 0.0) {}

bool step_turns::turn_of(std::size_t i) const {
  for (std::size_t j = 0; j < state_.size(); ++j) {
    if (state_[j] == state::left || j == i) continue;
    if (state_[j] != state::waiting) return false;  // stepping, or about to ask for a turn
    if (spent_[j] < spent_[i] || (spent_[j] == spent_[i] && j < i)) return false;
  }
  return true;
}

void step_turns::begin(std::size_t i) {
  std::unique_lock<std::mutex> lock(m_);
  state_.at(i) = state::waiting;
  cv_.notify_all();  // the others may have waited for this run to ask
  cv_.wait(lock, [&] { return turn_of(i); });
  state_[i] = state::stepping;
}

void step_turns::end(std::size_t i, double seconds) {
  {
    const std::lock_guard<std::mutex> lock(m_);
    spent_.at(i) += seconds;
    state_[i] = state::between;
  }
  cv_.notify_all();
}

void step_turns::leave(std::size_t i) {
  {
    const std::lock_guard<std::mutex> lock(m_);
    state_.at(i) = state::left;
  }
  cv_.notify_all();
}

double step_turns::spent(std::size_t i) const {
  const std::lock_guard<std::mutex> lock(m_);
  return spent_.at(i);
}

turn_backend::turn_backend(std::unique_ptr<backend> inner, step_turns& turns, std::size_t index)
    : inner_(std::move(inner)), turns_(turns), index_(index) {
  if (!inner_->virtual_time())
    throw std::invalid_argument(
        "--interleave on needs backends that keep virtual time (sim, or "
        "cpu with --compute clock=cpu); '" +
        inner_->name() + "' runs on the wall clock");
}

step_result turn_backend::step(const batch& b) {
  turns_.begin(index_);
  step_result r;
  try {
    r = inner_->step(b);
  } catch (...) {
    turns_.end(index_, 0.0);
    throw;
  }
  turns_.end(index_, tokchron::to_seconds(r.elapsed));
  return r;
}

std::vector<run_result> run_interleaved(std::vector<configuration>& configs,
                                        std::uint64_t memory_limit,
                                        std::vector<plot::executor_series>* steps) {
  const std::size_t n = configs.size();
  step_turns turns(n);
  std::vector<std::unique_ptr<backend>> backends;
  for (std::size_t i = 0; i < n; ++i) {  // made here, so a bad one throws before any run
    configs[i].cfg.load.memory_limit = memory_limit / n;
    backends.push_back(std::make_unique<turn_backend>(make_backend(configs[i].cfg), turns, i));
  }
  std::vector<run_result> out(n);
  std::vector<std::exception_ptr> failed(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      try {
        out[i] = run(configs[i].cfg.sched, configs[i].cfg.load, *backends[i],
                     steps ? plot::record_steps((*steps)[i]) : step_observer{});
      } catch (...) {
        failed[i] = std::current_exception();
      }
      turns.leave(i);
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  return out;
}

}  // namespace batching
