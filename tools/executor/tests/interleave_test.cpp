// SPDX-License-Identifier: MIT
// --interleave (app/interleave.hpp): steps in turns, least spent first, never two at once; the
// runs' results are those of the same runs one after the other; wall-clock backends refused.
#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"
#include "fake_backend.hpp"
#include "interleave.hpp"
#include "loadgen.hpp"

using namespace batching;

namespace {

class wall_backend final : public backend {
 public:
  [[nodiscard]] std::string name() const override { return "wall"; }
  [[nodiscard]] bool virtual_time() const noexcept override { return false; }
  [[nodiscard]] std::uint32_t kv_blocks(std::uint32_t) const override { return 1; }
  step_result step(const batch&) override { return {}; }
};

}  // namespace

TEST_CASE("step_turns: one step at a time, always the run that has spent the least") {
  // Three runs whose steps cost 1, 2 and 5 units, 60 steps each.
  const std::vector<double> cost = {1, 2, 5};
  const int steps = 60;
  step_turns turns(cost.size());
  std::atomic<int> stepping{0};
  std::mutex log_m;
  std::vector<std::size_t> order;
  std::vector<std::vector<double>> spent_at_start;  // every run's spent time at each start
  std::vector<int> overlaps(cost.size(), 0);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < cost.size(); ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < steps; ++k) {
        turns.begin(i);
        if (stepping.fetch_add(1) != 0) ++overlaps[i];
        {
          const std::lock_guard<std::mutex> lock(log_m);
          order.push_back(i);
          std::vector<double> s;
          for (std::size_t j = 0; j < cost.size(); ++j) s.push_back(turns.spent(j));
          spent_at_start.push_back(s);
        }
        std::this_thread::yield();
        stepping.fetch_sub(1);
        turns.end(i, cost[i]);
      }
      turns.leave(i);
    });
  for (auto& t : threads) t.join();
  for (int o : overlaps) CHECK(o == 0);
  REQUIRE(order.size() == cost.size() * steps);
  std::vector<int> done(cost.size(), 0);
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::size_t i = order[k];
    for (std::size_t j = 0; j < cost.size(); ++j)
      if (j != i && done[j] < steps)  // every run still taking steps had spent at least as much
        CHECK(spent_at_start[k][i] <= spent_at_start[k][j]);
    ++done[i];
  }
  // The cheap run's 60 steps (60 units) were all taken before the dear run passed 65 units.
  std::size_t last_cheap = 0;
  for (std::size_t k = 0; k < order.size(); ++k)
    if (order[k] == 0) last_cheap = k;
  CHECK(spent_at_start[last_cheap][2] <= 60 + 5);
}

TEST_CASE("step_turns: a run that leaves no longer holds the others back") {
  step_turns turns(2);
  turns.leave(1);
  turns.begin(0);  // would wait forever for run 1 if its leaving were not counted
  turns.end(0, 1.0);
  CHECK(turns.spent(0) == 1.0);
  turns.leave(0);
}

TEST_CASE("turn_backend: refuses a wall-clock backend") {
  step_turns turns(1);
  CHECK_THROWS_WITH_AS(turn_backend(std::make_unique<wall_backend>(), turns, 0),
                       doctest::Contains("needs backends that keep virtual time"),
                       std::invalid_argument);
  const turn_backend ok(std::make_unique<testing::fake_backend>(64), turns, 0);
  CHECK(ok.virtual_time());
  CHECK(ok.kv_blocks(16) == 64);
}

TEST_CASE("run_interleaved: the same results as the runs one after the other") {
  const command_line cl = parse_command_line(
      {"--backend", "sim", "--hw", "a10g", "--users", "6", "--prompt-len", "uniform:32,512",
       "--output-len", "uniform:8,64", "--duration", "20", "--sweep", "max_batch_size=2,4,8"});
  std::vector<configuration> configs = expand(cl);
  const std::vector<run_result> together = run_interleaved(configs, cl.memory_limit, nullptr);
  REQUIRE(together.size() == 3);
  for (std::size_t i = 0; i < configs.size(); ++i) {
    auto be = make_backend(configs[i].cfg);
    const run_result alone = run(configs[i].cfg.sched, configs[i].cfg.load, *be);
    CAPTURE(configs[i].name);
    REQUIRE(alone.requests.size() == together[i].requests.size());
    CHECK(alone.engine.steps == together[i].engine.steps);
    CHECK(alone.engine.end_s == together[i].engine.end_s);
    CHECK(alone.engine.busy_s == together[i].engine.busy_s);
    for (std::size_t k = 0; k < alone.requests.size(); ++k) {
      CHECK(alone.requests[k].arrival == together[i].requests[k].arrival);
      CHECK(alone.requests[k].generated == together[i].requests[k].generated);
    }
  }
}
