// SPDX-License-Identifier: MIT
// The executor's over-time series come from the executor: recorded by the engine's step hook,
// they add up to the engine's own totals.
#include <doctest/doctest.h>

#include "engine.hpp"
#include "executor_steps.hpp"
#include "sim_backend.hpp"

TEST_CASE("record_steps: every step, integrals equal to the engine's totals") {
  batching::sim_config sc;
  batching::sim_backend be(sc);
  batching::scheduler_config cfg;
  cfg.max_batch_size = 8;
  batching::workload w;
  w.users = 20;
  w.duration_s = 30;
  plot::executor_series s{"b8", {}};
  const auto r = batching::run(cfg, w, be, plot::record_steps(s));
  REQUIRE(s.steps.size() == r.engine.steps);
  REQUIRE(r.engine.steps > 100);
  double batch = 0, kv = 0, busy = 0;
  std::uint32_t kv_peak = 0, batch_peak = 0;
  for (std::size_t i = 0; i < s.steps.size(); ++i) {
    const auto& st = s.steps[i];
    CHECK(st.end > st.start);
    if (i) CHECK(st.start >= s.steps[i - 1].end);  // one step at a time
    CHECK(st.batch <= cfg.max_batch_size);
    CHECK(st.kv_used <= st.kv_total);
    batch += st.batch * (st.end - st.start);
    kv += st.kv_used * (st.end - st.start);
    busy += st.end - st.start;
    kv_peak = std::max(kv_peak, st.kv_used);
    batch_peak = std::max(batch_peak, st.batch);
  }
  CHECK(batch == doctest::Approx(r.engine.batch_seconds).epsilon(1e-9));
  CHECK(kv == doctest::Approx(r.engine.kv_block_seconds).epsilon(1e-9));
  CHECK(busy == doctest::Approx(r.engine.busy_s).epsilon(1e-9));
  CHECK(kv_peak == r.engine.kv_blocks_peak);
  CHECK(batch_peak == r.sched.max_batch_seen);
  CHECK(s.steps.back().end == doctest::Approx(r.engine.end_s).epsilon(1e-9));
  // 20 closed-loop users with no think time and 8 slots: requests queue.
  std::uint32_t waiting_peak = 0;
  for (const auto& st : s.steps) waiting_peak = std::max(waiting_peak, st.waiting);
  CHECK(waiting_peak >= 10);

  // Binned for drawing, the means keep the engine's time-averages.
  const auto bins = plot::bin_steps(s, 250);
  double b = 0, k = 0;
  for (const auto& x : bins) {
    b += x.batch * (x.end - x.start);
    k += x.kv_use * (x.end - x.start);
  }
  CHECK(b / r.engine.end_s == doctest::Approx(r.engine.mean_batch()).epsilon(1e-9));
  CHECK(k / r.engine.end_s == doctest::Approx(r.engine.kv_use_mean()).epsilon(1e-9));
}
