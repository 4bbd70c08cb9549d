// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <stdexcept>

#include "tokchron/clock.hpp"
#include "tokchron/quantile/exact.hpp"
#include "tokchron/quantile/log_histogram.hpp"
#include "tokchron/quantile/windowed.hpp"

using namespace std::chrono_literals;
using tokchron::log_histogram;
using tokchron::manual_clock;
using window = tokchron::windowed<log_histogram, manual_clock>;

TEST_CASE("windowed: meets the estimator contract and validates its configuration") {
  static_assert(tokchron::is_quantile_estimator_v<window>);
  static_assert(tokchron::is_quantile_estimator_v<tokchron::windowed<>>);
  static_assert(!tokchron::is_mergeable_estimator_v<window>);
  manual_clock c;
  CHECK_THROWS_AS(window(0s, 6, c), std::invalid_argument);
  CHECK_THROWS_AS(window(60s, 0, c), std::invalid_argument);
  CHECK_THROWS_AS(window(std::chrono::nanoseconds(10), 3, c), std::invalid_argument);
  const window w(60s, 6, c, log_histogram(0.001));
  CHECK(w.slice_duration() == 10s);
  CHECK(w.slices() == 6);
  CHECK(w.relative_error() == log_histogram(0.001).relative_error());
  CHECK(w.empty());
  CHECK(!w.quantile(0.5));
  CHECK(!w.min());
  CHECK(!w.mean());
}

TEST_CASE("windowed: slices roll over on the injected clock") {
  manual_clock c;
  window w(60s, 6, c);
  // one sample of value s + 1 in each second s = 0 .. 59
  for (int s = 0; s < 60; ++s) {
    c.set(std::chrono::seconds(s));
    CHECK(w.add(s + 1.0));
  }
  CHECK(w.count() == 60);
  CHECK(*w.min() == 1.0);
  CHECK(*w.max() == 60.0);
  CHECK(*w.mean() == doctest::Approx(30.5));
  // At 60 s the slice [0, 10) leaves the window: the view is [10, 60].
  c.set(60s);
  CHECK(w.count() == 50);
  CHECK(*w.min() == 11.0);
  CHECK(w.add(100.0));
  CHECK(w.count() == 51);
  CHECK(*w.max() == 100.0);
  // At 95 s: slices 4..9 are live, i.e. [40, 60) and [60, 70) of what was recorded.
  c.set(95s);
  CHECK(w.count() == 21);
  CHECK(*w.min() == 41.0);
  const log_histogram snap = w.snapshot();
  CHECK(snap.count() == 21);
  CHECK(*snap.quantile(0.5) == 51.0);  // exact mode: 41..60 and 100
  CHECK(*w.quantile(1.0) == 100.0);
  // Much later everything has expired, and the ring is reused without growing.
  c.set(1000s);
  CHECK(w.empty());
  CHECK(w.add(7.0));
  CHECK(w.count() == 1);
  CHECK(*w.quantile(0.5) == 7.0);
}

TEST_CASE("windowed: late samples are dropped and counted; in-window ones land in their slice") {
  manual_clock c;
  window w(30s, 3, c);
  c.set(100s);
  CHECK(w.add(1.0));
  CHECK(w.add(manual_clock::at(85s), 2.0));  // slice [80, 90) is still live at 100 s
  CHECK(w.count() == 2);
  CHECK(!w.add(manual_clock::at(65s), 3.0));  // slice [60, 70) has left
  CHECK(w.late() == 1);
  CHECK(w.rejected() == 1);
  CHECK(!w.add(std::numeric_limits<double>::quiet_NaN()));
  CHECK(w.rejected() == 2);
  CHECK(w.count() == 2);
  std::size_t live = 0;
  w.for_each_slice(c.now(), [&](const log_histogram& h, manual_clock::time_point start) {
    CHECK(h.count() == 1);
    CHECK((start == manual_clock::at(80s) || start == manual_clock::at(100s)));
    ++live;
  });
  CHECK(live == 2);
  w.clear();
  CHECK(w.empty());
  CHECK(w.rejected() == 0);
}

TEST_CASE("windowed: any mergeable estimator, negative clock times") {
  manual_clock c;
  c.set(-25s);
  tokchron::windowed<tokchron::exact_quantiles<>, manual_clock> w(20s, 2, c);
  CHECK(w.add(1.0));  // slice [-30, -20)
  c.set(-15s);
  CHECK(w.add(2.0));  // slice [-20, -10)
  CHECK(w.count() == 2);
  c.set(-5s);  // slice [-10, 0): [-30, -20) has left
  CHECK(w.count() == 1);
  CHECK(*w.quantile(0.5) == 2.0);
}

TEST_CASE("windowed: the default clock (steady_clock) records into the current slice") {
  tokchron::windowed<> w(std::chrono::hours(1), 4);  // 15-minute slices: no rollover here
  for (int i = 1; i <= 100; ++i) CHECK(w.add(i * 1e-3));
  CHECK(w.count() == 100);
  CHECK(*w.max() == 0.1);
  const double p50 = *w.quantile(0.5);
  CHECK(std::fabs(p50 - 0.0505) <= w.relative_error() * 0.0505);
}
