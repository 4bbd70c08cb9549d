// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <utility>

#include "tokchron/clock.hpp"

using namespace std::chrono_literals;

TEST_CASE("manual_clock: copies share one time that moves only when told") {
  tokchron::manual_clock c;
  CHECK(c.now().time_since_epoch() == 0ns);
  tokchron::manual_clock copy = c;
  c.advance(120ms);
  CHECK(copy.now().time_since_epoch() == 120ms);
  copy.set(5s);
  CHECK(c.now() == tokchron::manual_clock::at(5s));
  CHECK(c.advance(1ns).time_since_epoch() == 5s + 1ns);
}

TEST_CASE("clock contract") {
  static_assert(tokchron::is_clock_v<std::chrono::steady_clock>);
  static_assert(tokchron::is_clock_v<std::chrono::system_clock>);
  static_assert(tokchron::is_clock_v<tokchron::manual_clock>);
  static_assert(tokchron::is_clock_v<tokchron::tsc_clock>);
  static_assert(!tokchron::is_clock_v<int>);
  static_assert(std::is_same_v<tokchron::default_clock, std::chrono::steady_clock>);
  CHECK(tokchron::manual_clock::is_steady);
}

TEST_CASE("to_seconds and from_seconds round-trip") {
  CHECK(tokchron::to_seconds(1500ms) == doctest::Approx(1.5));
  CHECK(tokchron::from_seconds<std::chrono::nanoseconds>(0.120) == 120ms);
  CHECK(tokchron::from_seconds<std::chrono::nanoseconds>(-0.5e-9) == -1ns);
}

TEST_CASE("tsc_clock: monotonic and calibrated against steady_clock") {
  const auto a = tokchron::tsc_clock::now();
  const auto b = tokchron::tsc_clock::now();
  CHECK(b >= a);
  if (!tokchron::tsc_clock::uses_tsc) return;
  CHECK(tokchron::tsc_clock::ns_per_tick() > 0.01);   // under 100 GHz
  CHECK(tokchron::tsc_clock::ns_per_tick() < 100.0);  // over 10 MHz
  // Busy-wait 50 ms of steady time (no sleep: the point is the two clocks' rates, not the
  // duration). The calibration measures over 10 ms, so a 1% rate error would be gross. Each
  // end's pair of reads is bracketed by reads of the other clock and the tightest of a few
  // tries kept (as the calibration does), and the rate is measured up to 3 times: a loaded
  // machine may preempt the thread between the two clocks' reads, which says nothing of the
  // rates; a wrong calibration fails every try.
  const auto pair = [] {
    std::pair<std::chrono::steady_clock::time_point, tokchron::tsc_clock::time_point> best;
    auto best_width = std::chrono::steady_clock::duration::max();
    for (int i = 0; i < 5; ++i) {
      const auto s0 = std::chrono::steady_clock::now();
      const auto t = tokchron::tsc_clock::now();
      const auto s1 = std::chrono::steady_clock::now();
      if (s1 - s0 < best_width) {
        best_width = s1 - s0;
        best = {s0 + (s1 - s0) / 2, t};
      }
    }
    return best;
  };
  double error = 1.0;
  for (int attempt = 0; attempt < 3 && error >= 0.01; ++attempt) {
    const auto start = pair();
    while (std::chrono::steady_clock::now() - start.first < 50ms) {
    }
    const auto end = pair();
    const double steady_ns =
        std::chrono::duration<double, std::nano>(end.first - start.first).count();
    const double tsc_ns =
        std::chrono::duration<double, std::nano>(end.second - start.second).count();
    error = std::fabs(tsc_ns / steady_ns - 1.0);
  }
  CHECK(error < 0.01);
}

TEST_CASE("stamps_adaptor: an engine's integer microsecond stamps as time points") {
  using namespace std::chrono_literals;
  // Same epoch: a stamp is microseconds since the clock's own zero.
  const tokchron::stamps_adaptor<tokchron::manual_clock> same;
  CHECK(same(1'500'000) == tokchron::manual_clock::at(1500ms));
  CHECK(same.stamp(tokchron::manual_clock::at(1500ms) + 999ns) == 1'500'000);  // truncated
  CHECK(same(-7) == tokchron::manual_clock::at(-7us));

  // An engine clock 5 s behind: calibration finds the offset within its bound.
  tokchron::manual_clock clock;
  clock.set(100s);
  auto engine_now = [&] {
    const auto t = clock.advance(3us);  // each read moves time, as real reads do
    return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch() - 5s).count();
  };
  const auto c = tokchron::stamps_adaptor<tokchron::manual_clock>::calibrate(engine_now, 3, clock);
  CHECK(c.error() <= 4us);
  const auto off = c.offset() - std::chrono::duration_cast<std::chrono::nanoseconds>(5s);
  CHECK((off < 0ns ? -off : off) <= c.error());
  CHECK_FALSE(tokchron::stamps_adaptor<tokchron::manual_clock>::same_epoch(engine_now, 3, clock));
  auto same_now = [&] {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               clock.advance(3us).time_since_epoch())
        .count();
  };
  CHECK(tokchron::stamps_adaptor<tokchron::manual_clock>::same_epoch(same_now, 3, clock));
}

#if defined(__linux__)
#include <time.h>
TEST_CASE("stamps_adaptor: CLOCK_MONOTONIC microseconds share steady_clock's epoch on Linux") {
  // What llama.cpp's ggml_time_us() returns.
  auto monotonic_us = [] {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
  };
  CHECK(tokchron::stamps_adaptor<>::same_epoch(monotonic_us, 20));
}
#endif
