// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tokchron/sla/capacity.hpp"
#include "tokchron/sla/evaluator.hpp"

using tokchron::load_point;
using tokchron::verdict_status;

namespace {
// 1000 requests with TTFT evenly spread over [ttft_lo, ttft_hi] and constant TPOT.
tokchron::slo_distributions<> run(double ttft_lo, double ttft_hi, double tpot) {
  tokchron::slo_distributions<> d;
  for (int i = 0; i < 1000; ++i) {
    d.add(tokchron::slo_metric::ttft, ttft_lo + (ttft_hi - ttft_lo) * i / 999.0);
    d.add(tokchron::slo_metric::tpot, tpot);
  }
  return d;
}
}  // namespace

TEST_CASE("the planner picks the most throughput that meets the SLA and explains rejections") {
  const auto sla = tokchron::sla::parse("p95(ttft) < 1.5s, p95(tpot) < 100ms");
  std::vector<load_point> pts;
  pts.push_back({"b8", {{"max_batch_size", "8"}}, 200, run(0.2, 1.2, 0.035).evaluate(sla)});
  pts.push_back({"b16", {{"max_batch_size", "16"}}, 300, run(0.5, 2.0, 0.120).evaluate(sla)});
  pts.push_back({"b16+prefill",
                 {{"max_batch_size", "16"}, {"prefill_priority", "on"}},
                 280,
                 run(0.3, 1.4, 0.060).evaluate(sla)});
  pts.push_back({"b4", {{"max_batch_size", "4"}}, 120, run(0.1, 0.9, 0.030).evaluate(sla)});
  const auto plan = tokchron::plan_capacity(pts);
  REQUIRE(plan.best);
  CHECK(pts[*plan.best].name == "b16+prefill");
  REQUIRE(plan.points.size() == 4);
  CHECK(plan.points[2].meets);
  CHECK(plan.points[2].misses.empty());
  // b16 misses both objectives; by how much is measured - threshold
  const auto& rej = plan.points[1];
  CHECK(!rej.meets);
  REQUIRE(rej.misses.size() == 2);
  CHECK(rej.misses[0].status == verdict_status::fail);
  const double p95_ttft = *pts[1].verdicts.verdicts[0].measured;
  CHECK(*rej.misses[0].excess == doctest::Approx(p95_ttft - 1.5));
  CHECK(*rej.misses[0].relative_excess == doctest::Approx((p95_ttft - 1.5) / 1.5));
  CHECK(*rej.misses[1].excess == doctest::Approx(0.020));
  CHECK(rej.misses[1].to_string().find("over by 20ms") != std::string::npos);
  // frontier on p95 TTFT: b4 (lowest latency), b8, b16+prefill, b16 (most throughput)
  CHECK(plan.frontier == std::vector<std::size_t>{3, 0, 2, 1});
  const std::string table = plan.to_string(pts);
  CHECK(table.find("* b16+prefill max_batch_size=16 prefill_priority=on") != std::string::npos);
  CHECK(table.find("rejected") != std::string::npos);
}

TEST_CASE("dominated points leave the frontier; undecided points need opting in") {
  const auto sla = tokchron::sla::parse("p99(ttft) < 1s");
  std::vector<load_point> pts;
  pts.push_back({"slow", {}, 100, run(0.5, 0.9, 0.02).evaluate(sla)});
  pts.push_back({"fast", {}, 150, run(0.1, 0.5, 0.02).evaluate(sla)});  // dominates "slow"
  tokchron::slo_distributions<> few;
  for (int i = 0; i < 50; ++i) few.add(tokchron::slo_metric::ttft, 0.1);
  pts.push_back({"few samples", {}, 500, few.evaluate(sla)});  // P99 from 50: undecided
  auto plan = tokchron::plan_capacity(pts);
  CHECK(pts[*plan.best].name == "fast");
  CHECK(!plan.points[0].on_frontier);
  CHECK(plan.points[2].misses.at(0).status == verdict_status::insufficient_data);
  tokchron::capacity_options opt;
  opt.accept_undecided = true;
  plan = tokchron::plan_capacity(pts, opt);
  CHECK(pts[*plan.best].name == "few samples");
  CHECK(!tokchron::plan_capacity({}).best);
}
