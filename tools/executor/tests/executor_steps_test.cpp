// SPDX-License-Identifier: MIT
// The executor's over-time series come from the executor: recorded by the engine's step hook,
// they add up to the engine's own totals.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine.hpp"
#include "loadgen.hpp"
#include "pictures/executor_plot.hpp"
#include "pictures/executor_steps.hpp"
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

TEST_CASE("plot_executor: the pictures of a sweep carry the executor's printed numbers") {
  batching::report_settings rs;
  rs.objectives = tokchron::sla::parse("p95(ttft) < 1.5s, p95(tpot) < 100ms");
  std::vector<batching::outcome> all;
  std::vector<plot::executor_series> steps;
  for (std::uint32_t bs : {4u, 8u, 16u}) {
    batching::configuration c;
    c.name = "max_batch_size=" + std::to_string(bs);
    c.parameters = {{"max_batch_size", std::to_string(bs)}};
    c.cfg.sched.max_batch_size = bs;
    c.cfg.load.users = 12;
    c.cfg.load.think = batching::distribution::parse("exp:2", batching::quantity::seconds);
    c.cfg.load.duration_s = 40;
    auto be = batching::make_backend(c.cfg);
    steps.push_back({c.name, {}});
    auto r = batching::run(c.cfg.sched, c.cfg.load, *be, plot::record_steps(steps.back()));
    all.push_back(batching::evaluate(c, std::move(r), rs));
  }
  const auto dir = std::filesystem::temp_directory_path() / "tokchron_plot_test_executor";
  std::filesystem::remove_all(dir);
  plot::plot_options opt;
  opt.render = false;
  const auto res =
      plot::plot_executor(all, steps, rs, "batching-executor --sweep", dir.string(), opt);
  std::vector<std::string> names;
  for (const auto& p : res.pictures) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"latency_ttft", "latency_tpot", "latency_itl",
                                          "latency_e2e", "spectrum", "frontier", "timeline",
                                          "executor"});
  // frontier.dat: throughput and P95s equal the summaries the executor printed.
  std::ifstream f(dir / "frontier.dat");
  std::string line;
  std::size_t i = 0;
  while (std::getline(f, line) && !line.empty()) {
    if (line[0] == '#') continue;
    std::istringstream is(line);
    std::size_t idx;
    double tps, ttft, tpot;
    is >> idx >> tps >> ttft >> tpot;
    CHECK(idx == i);
    CHECK(tps == *all[i].summary.output_throughput);
    CHECK(ttft == *all[i].summary.ttft.at(95));
    CHECK(tpot == *all[i].summary.tpot.at(95));
    ++i;
  }
  CHECK(i == all.size());
  std::ifstream page(dir / "index.html");
  std::stringstream ps;
  ps << page.rdbuf();
  CHECK(ps.str().find("P95 TTFT") != std::string::npos);  // the sweep table, verbatim
}
