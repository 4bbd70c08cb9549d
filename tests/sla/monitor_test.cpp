// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>

#include "tokchron/sla/monitor.hpp"

using namespace std::chrono_literals;
using tokchron::manual_clock;
using tokchron::verdict_status;

namespace {
tokchron::request_metrics request(double ttft) {
  tokchron::request_metrics m;
  m.succeeded = true;
  m.ttft = ttft;
  return m;
}
}  // namespace

TEST_CASE("SRE workbook burn rules scale with the SLO period") {
  const auto r = tokchron::sre_burn_rules();
  REQUIRE(r.size() == 3);
  CHECK(r[0].long_window == 1h);
  CHECK(r[0].short_window == 5min);
  CHECK(r[0].threshold == 14.4);
  CHECK(r[1].long_window == 6h);
  CHECK(r[1].short_window == 30min);
  CHECK(r[1].threshold == 6);
  CHECK(r[2].long_window == 72h);
  CHECK(r[2].short_window == 6h);
  CHECK(r[2].severity == "ticket");
  const auto day = tokchron::sre_burn_rules(24h);  // a 1-day period: 2 min / 10 s, ...
  CHECK(day[0].long_window == 2min);
  CHECK(day[0].short_window == 10s);
  CHECK_THROWS_AS((void)tokchron::sre_burn_rules(0s), std::invalid_argument);
}

TEST_CASE("burn-rate alerts fire on both windows and stop as the short window rolls over") {
  manual_clock clock;
  tokchron::slo_monitor<manual_clock>::options opt;
  opt.windows = {1min, 10min};
  opt.rules = tokchron::sre_burn_rules();
  tokchron::slo_monitor<manual_clock> mon(tokchron::sla::parse("p99(ttft) < 1s"), opt, clock);

  // two quiet hours, one good request a second
  for (int i = 0; i < 7200; ++i) {
    clock.advance(1s);
    mon.record(request(0.1));
  }
  auto st = mon.status();
  CHECK(!st.firing());
  REQUIRE(st.objectives.size() == 1);
  REQUIRE(st.objectives[0].windows.size() == 2);
  // P99 from 60 samples cannot pass; from 540..600 (no misses) it can
  CHECK(st.objectives[0].windows[0].result.status == verdict_status::insufficient_data);
  CHECK(st.objectives[0].windows[1].result.status == verdict_status::pass);
  CHECK(*st.objectives[0].windows[1].burn_rate == 0);

  // 30 minutes with every other request slow. After 5 of them the short window burns at 50
  // but the hour only at 150/3600 / 0.01 = 4.2: no page yet.
  for (int i = 0; i < 1800; ++i) {
    clock.advance(1s);
    mon.record(request(i % 2 ? 2.0 : 0.1));
    if (i == 299) {
      st = mon.status();
      CHECK(*st.alerts[0].short_burn > 14.4);
      CHECK(*st.alerts[0].long_burn == doctest::Approx(150.0 / 3600 / 0.01).epsilon(0.1));
      CHECK(!st.alerts[0].firing);
    }
  }
  st = mon.status();
  // 1 h / 5 min page: 5 min burns 0.5 / 0.01 = 50, the last hour about 900/3600 / 0.01 = 25
  REQUIRE(st.alerts.size() == 3);
  CHECK(st.alerts[0].firing);
  CHECK(*st.alerts[0].short_burn == doctest::Approx(50).epsilon(0.02));
  CHECK(*st.alerts[0].long_burn == doctest::Approx(25).epsilon(0.1));
  // 6 h / 30 min at 6: the 6 h window holds all 9000 requests, 900 slow: burn 10, page
  CHECK(st.alerts[1].firing);
  CHECK(*st.alerts[1].long_burn == doctest::Approx(900.0 / 9000 / 0.01).epsilon(0.02));
  CHECK(st.objectives[0].windows[0].result.status == verdict_status::fail);

  // recovery: ten good minutes roll the 5-minute window clean; the hour still remembers (and
  // the 10-minute status window is clean again)
  for (int i = 0; i < 600; ++i) {
    clock.advance(1s);
    mon.record(request(0.1));
  }
  st = mon.status();
  CHECK(*st.alerts[0].short_burn == 0);
  CHECK(*st.alerts[0].long_burn > 14.4);
  CHECK(!st.alerts[0].firing);
  CHECK(st.objectives[0].windows[1].result.status == verdict_status::pass);

  // nothing recorded for a while: the windows empty out and say so
  clock.advance(100h);
  st = mon.status();
  CHECK(st.objectives[0].windows[0].result.reason == "no samples");
  CHECK(!st.alerts[0].long_burn);
  CHECK(!st.firing());
}

TEST_CASE("monitor: metrics, failures and bad configuration") {
  manual_clock clock;
  tokchron::slo_monitor<manual_clock, tokchron::exact_quantiles<>>::options opt;
  opt.windows = {10s};
  tokchron::slo_monitor<manual_clock, tokchron::exact_quantiles<>> mon(
      tokchron::sla::parse("mean(tpot) < 50ms, max(ttft) < 2s"), opt, clock);
  auto m = request(0.5);
  m.tpot = 0.02;
  mon.record(m);
  auto failed = m;
  failed.succeeded = false;
  mon.record(failed);
  CHECK(mon.failed() == 1);
  CHECK(mon.succeeded() == 1);
  const auto st = mon.status();
  CHECK(st.objectives[0].windows[0].result.samples == 1);
  CHECK(st.objectives[1].windows[0].result.status == verdict_status::pass);
  CHECK(!st.objectives[1].windows[0].burn_rate);  // max has no event budget
  CHECK(mon.window(tokchron::slo_metric::itl, 10s) == nullptr);
  CHECK(mon.window(tokchron::slo_metric::ttft, 10s)->count() == 1);

  using mon_t = tokchron::slo_monitor<manual_clock>;
  mon_t::options none;
  CHECK_THROWS_AS(mon_t(tokchron::sla::parse("p99(ttft) < 1s"), none, clock),
                  std::invalid_argument);
  mon_t::options bad_rule;
  bad_rule.rules = {{5min, 1h, 14.4, "page"}};
  CHECK_THROWS_AS(mon_t(tokchron::sla::parse("p99(ttft) < 1s"), bad_rule, clock),
                  std::invalid_argument);
  // windows that do not split into 10 whole ticks still work (fewer slices)
  mon_t::options odd;
  odd.windows = {std::chrono::nanoseconds(7)};
  CHECK_NOTHROW(mon_t(tokchron::sla::parse("p99(ttft) < 1s"), odd, clock));
}
