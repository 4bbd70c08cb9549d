// SPDX-License-Identifier: MIT
// Bad input to the estimators, the window and the collector (docs/bad-input.md,
// rows E1-E9): refused samples are counted and change nothing else; bad
// configuration throws std::invalid_argument; merges either succeed losslessly or change nothing.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "tokchron/clock.hpp"
#include "tokchron/collect/collector.hpp"
#include "tokchron/quantile/exact.hpp"
#include "tokchron/quantile/log_histogram.hpp"
#include "tokchron/quantile/windowed.hpp"

using namespace std::chrono_literals;
using tokchron::exact_quantiles;
using tokchron::log_histogram;

namespace {
constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();
constexpr double inf_v = std::numeric_limits<double>::infinity();
const double non_finite[] = {nan_v, -nan_v, inf_v, -inf_v};

// count, sum, min, max and a quantile, to compare before and after a refused call.
template <class E>
std::vector<double> state_of(const E& e) {
  return {static_cast<double>(e.count()), e.sum(), e.min().value_or(-1), e.max().value_or(-1),
          e.quantile(0.5).value_or(-1)};
}

template <class E>
void refuses_non_finite(E& e) {
  e.add(1.0);
  e.add(2.0);
  const auto before = state_of(e);
  const std::uint64_t rejected = e.rejected();
  for (double x : non_finite) CHECK_FALSE(e.add(x));
  CHECK(e.rejected() == rejected + 4);
  CHECK(state_of(e) == before);
}
}  // namespace

TEST_CASE("bad input E1: NaN and infinities are refused, counted, and change nothing") {
  exact_quantiles<> ex;
  refuses_non_finite(ex);
  log_histogram lh;
  refuses_non_finite(lh);
  tokchron::manual_clock clock;
  tokchron::windowed<log_histogram, tokchron::manual_clock> w(60s, 6, clock);
  refuses_non_finite(w);
  // through the collector: refused in the writer's shard, reported by the next snapshot
  tokchron::collector c;
  auto writer = c.make_writer();
  writer.add(1.0);
  for (double x : non_finite) CHECK_FALSE(writer.add(x));
  const log_histogram s = c.snapshot();
  CHECK(s.count() == 1);
  CHECK(s.rejected() == 4);
  CHECK(*s.max() == 1.0);
}

TEST_CASE("bad input E2: a quantile probability outside [0, 1] or NaN is a usage error") {
  exact_quantiles<> ex;
  log_histogram lh;
  for (double x : {1.0, 2.0, 3.0}) {
    ex.add(x);
    lh.add(x);
  }
  for (double q : {-0.01, 1.01, nan_v, inf_v, -inf_v}) {
    CAPTURE(q);
    CHECK_THROWS_AS((void)ex.quantile(q), std::invalid_argument);
    CHECK_THROWS_AS((void)lh.quantile(q), std::invalid_argument);
  }
  // and with no samples the answer is "no data", not an error
  CHECK_FALSE(exact_quantiles<>().quantile(0.5));
  CHECK_FALSE(log_histogram().quantile(0.5));
}

TEST_CASE("bad input E3: negative samples (a negative duration) are kept, with their sign") {
  // Estimators record numbers; a negative latency is the caller's bug but is not lost or
  // folded into the positive range: it stays visible as the minimum.
  log_histogram lh;
  exact_quantiles<> ex;
  for (double x : {-0.5, 0.1, 0.2, 0.3}) {
    CHECK(lh.add(x));
    CHECK(ex.add(x));
  }
  CHECK(*lh.min() == -0.5);
  CHECK(*ex.min() == -0.5);
  CHECK(*lh.quantile(0.0) == -0.5);
  CHECK(lh.negative_buckets().size() == 1);
  CHECK(lh.sum() == doctest::Approx(0.1));
}

TEST_CASE("bad input E4: merging incompatible log_histograms throws and changes nothing") {
  log_histogram a(0.01, 0.0), b(0.01, 1e-6);
  a.add(1.0);
  b.add(2.0);
  const log_histogram before = a;
  CHECK_THROWS_AS(a.merge(b), std::invalid_argument);  // different zero thresholds
  CHECK(a == before);
  // different scales are compatible: the finer one is downscaled, no sample is lost
  log_histogram fine = log_histogram::with_scale(8), coarse = log_histogram::with_scale(2);
  for (int i = 1; i <= 100; ++i) {
    fine.add(i * 0.01);
    coarse.add(i * 0.02);
  }
  fine.merge(coarse);
  CHECK(fine.count() == 200);
  CHECK(fine.scale() == 2);
  CHECK(*fine.max() == 2.0);
}

TEST_CASE("bad input E5: bad estimator and window configuration throws std::invalid_argument") {
  for (double alpha : {0.0, -0.1, 1.0, 2.0, nan_v, inf_v})
    CHECK_THROWS_AS((void)log_histogram(alpha), std::invalid_argument);
  CHECK_THROWS_AS((void)log_histogram(0.01, -1.0), std::invalid_argument);
  CHECK_THROWS_AS((void)log_histogram(0.01, nan_v), std::invalid_argument);
  CHECK_THROWS_AS((void)log_histogram::with_scale(log_histogram::max_scale + 1),
                  std::invalid_argument);
  CHECK_THROWS_AS((void)log_histogram::with_scale(log_histogram::min_scale - 1),
                  std::invalid_argument);
  using win = tokchron::windowed<log_histogram, tokchron::manual_clock>;
  tokchron::manual_clock clock;
  CHECK_THROWS_AS((void)win(0s, 6, clock), std::invalid_argument);
  CHECK_THROWS_AS((void)win(-60s, 6, clock), std::invalid_argument);
  CHECK_THROWS_AS((void)win(60s, 0, clock), std::invalid_argument);
  CHECK_THROWS_AS((void)win(std::chrono::nanoseconds(10), 3, clock), std::invalid_argument);
}

TEST_CASE("bad input E6: bucket counters widen instead of overflowing") {
  log_histogram h;
  constexpr std::uint64_t n = 70000;  // past a 16-bit counter
  for (std::uint64_t i = 0; i < n; ++i) h.add(0.05);
  CHECK(h.count() == n);
  REQUIRE(h.positive_buckets().size() == 1);
  CHECK((*h.positive_buckets().begin()).count == n);
  log_histogram twice = h;
  twice.merge(h);
  CHECK(twice.count() == 2 * n);
  CHECK((*twice.positive_buckets().begin()).count == 2 * n);
}

TEST_CASE("bad input E7: a sample older than the window is refused and counted as late") {
  tokchron::manual_clock clock;
  tokchron::windowed<log_histogram, tokchron::manual_clock> w(60s, 6, clock);
  clock.set(600s);
  CHECK(w.add(1.0));
  const std::uint64_t count = w.count();
  CHECK_FALSE(w.add(tokchron::manual_clock::at(100s), 2.0));  // 500 s old
  CHECK(w.late() == 1);
  CHECK(w.count() == count);
  CHECK(*w.max() == 1.0);
}

TEST_CASE("bad input E7: a sample ahead of the clock is refused and counted as future") {
  // issue 19: after one sample a year ahead, present samples used to be dropped with every
  // counter at 0. Now the future sample is refused and counted, and the present ones land.
  tokchron::manual_clock clock;
  tokchron::windowed<log_histogram, tokchron::manual_clock> w(60s, 6, clock);
  clock.set(600s);
  CHECK_FALSE(w.add(tokchron::manual_clock::at(600s + std::chrono::hours(24 * 365)), 5.0));
  CHECK(w.future() == 1);
  CHECK(w.rejected() == 1);
  CHECK(w.count() == 0);
  for (int i = 0; i < 1000; ++i) {
    clock.set(600s + std::chrono::milliseconds(i));
    REQUIRE(w.add(tokchron::manual_clock::at(600s + std::chrono::milliseconds(i)), 1.0));
  }
  CHECK(w.count() == 1000);
  CHECK(w.late() == 0);
  CHECK(w.future() == 1);
  CHECK(w.rejected() == 1);
  // the next slice is the future too until the clock reaches it
  CHECK_FALSE(w.add(tokchron::manual_clock::at(610s), 2.0));
  CHECK(w.future() == 2);
  clock.set(610s);
  CHECK(w.add(tokchron::manual_clock::at(610s), 2.0));
  CHECK(w.count() == 1001);
  // a late sample is counted even when nothing was recorded recently (the now slice keeps it)
  clock.set(6000s);
  CHECK_FALSE(w.add(tokchron::manual_clock::at(10s), 3.0));
  CHECK(w.late() == 1);
  CHECK(w.rejected() == 3);
  w.clear();
  CHECK(w.future() == 0);
  CHECK(w.rejected() == 0);
}

TEST_CASE("bad input E10: windowed times at the edges of int64 are refused and counted") {
  using ns = std::chrono::nanoseconds;
  tokchron::manual_clock clock;
  tokchron::windowed<log_histogram, tokchron::manual_clock> w(60s, 6, clock);
  const auto at = [](std::int64_t v) { return tokchron::manual_clock::at(ns(v)); };
  constexpr std::int64_t most = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t least = std::numeric_limits<std::int64_t>::min();
  CHECK_FALSE(w.add(at(most), 1.0));
  CHECK_FALSE(w.add(at(tokchron::time_range_ticks), 1.0));
  CHECK(w.future() == 2);
  CHECK_FALSE(w.add(at(least), 1.0));
  CHECK_FALSE(w.add(at(least + 1), 1.0));
  CHECK(w.late() == 2);
  CHECK(w.rejected() == 4);
  CHECK(w.add(1.0));  // the present still works
  CHECK(w.count() == 1);
  // a clock outside the range: every sample refused and counted, no overflow
  clock.set(ns(most));
  CHECK_FALSE(w.add(1.0));
  CHECK_FALSE(w.add(at(20000000000), 1.0));  // another slice: the slow path reads the clock
  CHECK(w.future() == 4);
  CHECK(w.count() == 0);
  clock.set(ns(least));
  CHECK_FALSE(w.add(1.0));
  CHECK(w.count() == 0);
  // a window outside the range is a configuration error
  CHECK_THROWS_AS((void)tokchron::windowed<log_histogram>(ns(most - most % 2), 2),
                  std::invalid_argument);
}

TEST_CASE("bad input E8: a detached or orphaned collector writer records nothing and says so") {
  tokchron::collector::writer none;
  CHECK_FALSE(none.add(1.0));
  tokchron::collector::writer orphan;
  {
    tokchron::collector c;
    orphan = c.make_writer();
  }
  CHECK(orphan.add(1.0));  // the shared state outlives the collector: no dangling write
  tokchron::collector c2;
  auto w = c2.make_writer();
  auto moved = std::move(w);
  CHECK_FALSE(w.add(1.0));  // NOLINT(bugprone-use-after-move): moved-from is detached
  CHECK(moved.add(1.0));
  CHECK(c2.snapshot().count() == 1);
}

// A hostile serialised histogram can claim 2^63 samples; merging two of them must not wrap the
// 64-bit counts to 0 (an empty histogram that lost 2^64 samples, and an exact-sample copy past
// the end on the way): the merge throws std::overflow_error and changes nothing. Found by the
// log_histogram fuzz target (tests/fuzz/regressions/log_histogram/merge_count_wraps_2pow64).
TEST_CASE("bad input E9: merging counts past 2^64 is refused, not wrapped") {
  log_histogram h;
  for (int i = 0; i < 40; ++i) h.add(0.0);
  std::vector<unsigned char> b = h.serialize();
  const std::uint64_t big = std::uint64_t{1} << 63;
  for (unsigned i = 0; i < 8; ++i) {
    b[16 + i] = static_cast<unsigned char>(big >> (8 * i));  // count
    b[56 + i] = static_cast<unsigned char>(big >> (8 * i));  // zero_count
  }
  const std::uint32_t crc = tokchron::detail::crc32(b.data(), b.size() - 4);
  for (unsigned i = 0; i < 4; ++i) b[b.size() - 4 + i] = static_cast<unsigned char>(crc >> (8 * i));
  const auto d = log_histogram::deserialize(b.data(), b.size());
  REQUIRE(d.ok());
  log_histogram x = *d.histogram;
  CHECK_THROWS_AS(x.merge(*d.histogram), std::overflow_error);
  CHECK(x == *d.histogram);  // refused: nothing changed
  CHECK(x.count() == big);
  // a merge that fits still succeeds
  log_histogram small;
  small.add(1.0);
  CHECK_NOTHROW(x.merge(small));
  CHECK(x.count() == big + 1);
}

namespace {
// A clock with a 32-bit tick count of milliseconds: its whole range is inside the time range,
// and slice ends past INT32_MAX must not overflow the tick type.
struct int32_ms_clock {
  using rep = std::int32_t;
  using period = std::milli;
  using duration = std::chrono::duration<rep, period>;
  using time_point = std::chrono::time_point<int32_ms_clock, duration>;
  static constexpr bool is_steady = true;
  rep* now_ticks = nullptr;
  [[nodiscard]] time_point now() const { return time_point(duration(*now_ticks)); }
};
}  // namespace

TEST_CASE("bad input E11: extreme slice widths, slice counts and query times never overflow") {
  using ns = std::chrono::nanoseconds;
  constexpr std::int64_t most = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t least = std::numeric_limits<std::int64_t>::min();
  using win = tokchron::windowed<log_histogram, tokchron::manual_clock>;
  tokchron::manual_clock clock;
  // slice counts the window cannot hold: refused before any cast (SIZE_MAX as int64 is -1)
  CHECK_THROWS_AS((void)win(ns(6), std::numeric_limits<std::size_t>::max(), clock),
                  std::invalid_argument);
  CHECK_THROWS_AS((void)win(ns(6), 7, clock), std::invalid_argument);
  CHECK_THROWS_AS((void)win(ns(std::int64_t{1} << 40), win::max_slices * 2, clock),
                  std::invalid_argument);
  // 1-tick slices, and one slice as wide as the range allows, at the edges of int64
  win narrow(ns(6), 6, clock);
  win wide(ns(tokchron::time_range_ticks - 1), 1, clock);
  for (win* w : {&narrow, &wide}) {
    for (std::int64_t now : {least, least + 1, -tokchron::time_range_ticks + 1, std::int64_t{0},
                             tokchron::time_range_ticks - 1, most - 1, most}) {
      clock.set(ns(now));
      const bool in_range = tokchron::in_time_range(ns(now));
      CHECK(w->add(1.0) == in_range);
      CHECK(w->add(tokchron::manual_clock::at(ns(now)), 2.0) == in_range);
      CHECK_FALSE(w->add(tokchron::manual_clock::at(ns(least)), 1.0));
      CHECK_FALSE(w->add(tokchron::manual_clock::at(ns(most)), 1.0));
      // queries at the clock's now and at any time: the count of the live slices, no overflow
      const std::uint64_t c = w->count();
      CHECK(c <= 4);
      CHECK(w->count(tokchron::manual_clock::at(ns(least))) <= 4);
      CHECK(w->count(tokchron::manual_clock::at(ns(most))) <= 4);
      std::uint64_t seen = 0;
      w->for_each_slice(tokchron::manual_clock::at(ns(now)),
                        [&](const log_histogram& e, tokchron::manual_clock::time_point start) {
                          CHECK(tokchron::in_time_range(start));
                          seen += e.count();
                        });
      CHECK(seen == c);
      CHECK(w->snapshot(tokchron::manual_clock::at(ns(least))).count() <= 4);
      CHECK(w->rejected() >= 2);
      (void)w->late();
      (void)w->quantile(0.5);
      w->clear();
    }
  }
  // the widest slice at each end of the range: a sample at the clock's now is kept
  for (std::int64_t now : {-tokchron::time_range_ticks + 1, tokchron::time_range_ticks - 1}) {
    wide.clear();
    clock.set(ns(now));
    CHECK(wide.add(tokchron::manual_clock::at(ns(now)), 3.0));
    CHECK(wide.count() == 1);
  }

  // a 32-bit millisecond clock: slices of 2^30 ms, times up to INT32_MAX and down to INT32_MIN
  std::int32_t t = std::numeric_limits<std::int32_t>::max();
  using win32 = tokchron::windowed<log_histogram, int32_ms_clock>;
  win32 w32(int32_ms_clock::duration(std::int32_t{1} << 30), 1, int32_ms_clock{&t});
  CHECK(w32.add(1.0));  // the slice [2^30, 2^31) ends past INT32_MAX
  CHECK(w32.add(2.0));
  CHECK(w32.count() == 2);
  t = std::numeric_limits<std::int32_t>::min();
  win32 odd(int32_ms_clock::duration(3), 3, int32_ms_clock{&t});
  CHECK(odd.add(1.0));
  std::uint64_t slices_seen = 0;
  odd.for_each_slice(odd.clock().now(), [&](const log_histogram& e, int32_ms_clock::time_point) {
    slices_seen += e.count();
  });
  CHECK(slices_seen == 1);
  t = std::numeric_limits<std::int32_t>::max();
  CHECK(odd.add(1.0));
  CHECK(odd.count() == 1);
}
