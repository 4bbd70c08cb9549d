// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "tokchron/quantile/exact.hpp"

using tokchron::exact_quantiles;
using tokchron::quantile_method;

namespace {
// Values 1..n added in a shuffled order (the estimator must sort).
exact_quantiles<> one_to(int n) {
  std::vector<double> v;
  for (int i = 1; i <= n; ++i) v.push_back(i);
  std::mt19937 rng(42);
  std::shuffle(v.begin(), v.end(), rng);
  exact_quantiles<> e;
  for (double x : v) CHECK(e.add(x));
  return e;
}
double q(const exact_quantiles<>& e, double p, quantile_method m) { return *e.quantile(p, m); }
constexpr auto lin = quantile_method::linear;
constexpr auto low = quantile_method::lower;
constexpr auto nr = quantile_method::nearest_rank;
}  // namespace

TEST_CASE("the estimator contract holds") {
  static_assert(tokchron::is_quantile_estimator_v<exact_quantiles<>>);
  static_assert(tokchron::is_mergeable_estimator_v<exact_quantiles<>>);
  static_assert(tokchron::is_quantile_estimator_v<exact_quantiles<long>>);
  static_assert(!tokchron::is_quantile_estimator_v<std::vector<double>>);
}

TEST_CASE("empty input gives empty optionals") {
  exact_quantiles<> e;
  CHECK(e.empty());
  CHECK(!e.quantile(0.5));
  CHECK(!e.mean());
  CHECK(!e.min());
  CHECK(!e.max());
  CHECK(!e.stddev());
  CHECK(!e.cdf(1.0));
  CHECK(e.rank(1.0) == 0);
}

TEST_CASE("n = 1: every method returns the sample") {
  exact_quantiles<> e;
  e.add(5.0);
  for (double p : {0.0, 0.5, 0.99, 1.0})
    for (auto m : {lin, low, nr}) CHECK(q(e, p, m) == 5.0);
  CHECK(*e.stddev(0) == 0.0);
  CHECK(!e.stddev(1));
}

TEST_CASE("n = 2 by hand") {
  exact_quantiles<> e;
  e.add(3.0);
  e.add(1.0);
  CHECK(q(e, 0.5, lin) == 2.0);
  CHECK(q(e, 0.5, low) == 3.0);  // floor(2 * 0.5) = 1
  CHECK(q(e, 0.5, nr) == 1.0);   // ceil(0.5 * 2) - 1 = 0
  CHECK(q(e, 0.99, lin) == doctest::Approx(2.98));
  CHECK(q(e, 0.99, low) == 3.0);
  CHECK(q(e, 0.99, nr) == 3.0);
  for (auto m : {lin, low, nr}) {
    CHECK(q(e, 0.0, m) == 1.0);
    CHECK(q(e, 1.0, m) == 3.0);
  }
}

namespace {
/// The three methods' answers at `p`: linear within 1e-12 relative (its interpolation rounds),
/// lower and nearest rank exactly (they pick a sample).
void three(const exact_quantiles<>& e, double p, double linear, double lower, double nearest) {
  CAPTURE(p);
  CHECK(q(e, p, lin) == doctest::Approx(linear).epsilon(1e-12));
  CHECK(q(e, p, low) == lower);
  CHECK(q(e, p, nr) == nearest);
}
}  // namespace

TEST_CASE("n = 100 at P99: the three methods disagree, as the tools do") {
  const auto e = one_to(100);
  three(e, 0.99, 99.01, 100.0, 99.0);  // h = 98.01; floor(99.0) = 99 -> x[99]; ceil - 1 = 98
  three(e, 0.95, 95.05, 96.0, 95.0);
  three(e, 0.5, 50.5, 51.0, 50.0);
  // 100 * 0.29 is 28.999999999999996 in binary floating point: Python's int(n * p) gives 28,
  // and so must we (trtllm-bench's method is reproduced, not idealised).
  CHECK(q(e, 0.29, low) == 29.0);
  CHECK(q(e, 0.29, nr) == 29.0);
}

TEST_CASE("n = 101 by hand") {
  const auto e = one_to(101);
  three(e, 0.99, 100.0, 100.0, 100.0);  // h = 99 exactly; floor(99.99) = 99; ceil(99.99) - 1 = 99
  three(e, 0.999, 100.9, 101.0, 101.0);
  three(e, 0.5, 51.0, 51.0, 51.0);
}

TEST_CASE("mean, std with ddof 0 and 1, min, max, rank, cdf") {
  const auto e = one_to(100);
  CHECK(*e.mean() == 50.5);
  CHECK(e.sum() == 5050.0);
  CHECK(*e.stddev(0) == doctest::Approx(std::sqrt(9999.0 / 12.0)).epsilon(1e-12));
  CHECK(*e.stddev(1) == doctest::Approx(std::sqrt(100.0 * 101.0 / 12.0)).epsilon(1e-12));
  CHECK(*e.min() == 1.0);
  CHECK(*e.max() == 100.0);
  CHECK(e.rank(10.0) == 10);
  CHECK(e.rank(10.5) == 10);
  CHECK(e.rank(0.0) == 0);
  CHECK(*e.cdf(25.0) == 0.25);
  CHECK(e.relative_error() == 0.0);
}

TEST_CASE("NaN and infinities are rejected and counted; state unchanged") {
  auto e = one_to(10);
  CHECK(!e.add(std::numeric_limits<double>::quiet_NaN()));
  CHECK(!e.add(std::numeric_limits<double>::infinity()));
  CHECK(!e.add(-std::numeric_limits<double>::infinity()));
  CHECK(e.rejected() == 3);
  CHECK(e.count() == 10);
  CHECK(*e.max() == 10.0);
  CHECK(e.sum() == 55.0);
}

TEST_CASE("negative values and zero are ordinary samples") {
  exact_quantiles<> e;
  e.add(-2.0);
  e.add(0.0);
  e.add(2.0);
  CHECK(q(e, 0.5, lin) == 0.0);
  CHECK(*e.min() == -2.0);
}

TEST_CASE("a probability outside [0, 1] is a caller error") {
  const auto e = one_to(3);
  CHECK_THROWS_AS((void)e.quantile(1.5), std::invalid_argument);
  CHECK_THROWS_AS((void)e.quantile(-0.1), std::invalid_argument);
  CHECK_THROWS_AS((void)e.quantile(std::numeric_limits<double>::quiet_NaN()),
                  std::invalid_argument);
}

TEST_CASE("merge equals one stream") {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> d(std::log(0.05), 0.5);
  exact_quantiles<> all, a, b;
  for (int i = 0; i < 1000; ++i) {
    const double x = d(rng);
    all.add(x);
    (i % 3 ? a : b).add(x);
  }
  a.merge(b);
  CHECK(a.count() == all.count());
  for (double p : {0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0})
    for (auto m : {lin, low, nr}) CHECK(q(a, p, m) == q(all, p, m));
  CHECK(a.sum() == doctest::Approx(all.sum()).epsilon(1e-12));
}

TEST_CASE("assign takes the samples as add would, NaN and infinities counted out") {
  const std::vector<double> in{0.3, 0.1, std::nan(""), 0.2, std::numeric_limits<double>::infinity(),
                               0.7};
  exact_quantiles<> added;
  for (double x : in) added.add(x);
  exact_quantiles<> taken;
  taken.add(5.0);  // replaced, not kept
  std::vector<double> v = in;
  taken.assign(std::move(v));
  CHECK(taken.count() == 4);
  CHECK(taken.rejected() == 2);
  CHECK(taken.sum() == added.sum());  // same order of addition: bit-identical
  CHECK(taken.samples() == std::vector<double>{0.3, 0.1, 0.2, 0.7});  // insertion order kept
  for (double p : {0.0, 0.25, 0.5, 0.9, 1.0})
    CHECK(q(taken, p, lin) == q(added, p, lin));  // a query still sorts
  CHECK(taken.sorted_samples() == std::vector<double>{0.1, 0.2, 0.3, 0.7});
  taken.assign({});
  CHECK(taken.empty());
  CHECK(taken.sum() == 0.0);
  CHECK(!taken.quantile(0.5));
}

TEST_CASE("exact_quantiles: runs of equal samples equal the samples added one by one") {
  // add(x, count) stores one run; every statistic must equal that of count single adds.
  std::mt19937_64 rng(11);
  tokchron::exact_quantiles<> runs, singles;
  for (int i = 0; i < 400; ++i) {
    const double x = static_cast<double>(rng() % 50) * 0.25 - 2.0;  // repeats, negatives
    const std::uint64_t k = rng() % 4 == 0 ? rng() % 30 : 1;
    CHECK(runs.add(x, k));
    for (std::uint64_t j = 0; j < k; ++j) singles.add(x);
    if (i == 200) {  // queries in the middle, then more adds: the sorted merge is rebuilt
      CHECK(*runs.quantile(0.5) == *singles.quantile(0.5));
    }
  }
  CHECK(!runs.runs().empty());
  REQUIRE(runs.count() == singles.count());
  CHECK(*runs.min() == *singles.min());
  CHECK(*runs.max() == *singles.max());
  CHECK(*runs.mean() == doctest::Approx(*singles.mean()).epsilon(1e-12));
  CHECK(*runs.stddev(1) == doctest::Approx(*singles.stddev(1)).epsilon(1e-12));
  for (double q : {0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0})
    for (auto m : {tokchron::quantile_method::linear, tokchron::quantile_method::lower,
                   tokchron::quantile_method::nearest_rank}) {
      CAPTURE(q);
      CHECK(*runs.quantile(q, m) == *singles.quantile(q, m));
    }
  for (double x : {-3.0, -2.0, 0.0, 1.3, 10.25, 100.0}) {
    CHECK(runs.rank(x) == singles.rank(x));
    CHECK(*runs.cdf(x) == *singles.cdf(x));
  }
  for (std::uint64_t r = 0; r < runs.count(); r += 7)
    CHECK(runs.at_rank(r) == singles.sorted_samples()[static_cast<std::size_t>(r)]);
  // merging carries the runs
  tokchron::exact_quantiles<> merged;
  merged.add(1000.0);
  merged.merge(runs);
  CHECK(merged.count() == runs.count() + 1);
  CHECK(*merged.max() == 1000.0);
  for (std::uint64_t r = 0; r < runs.count(); r += 5) CHECK(merged.at_rank(r) == runs.at_rank(r));
  // a huge count costs one run, and NaN runs are refused once
  tokchron::exact_quantiles<> huge;
  CHECK(huge.add(0.5, std::uint64_t{1} << 40));
  CHECK(huge.add(0.25, 3));
  CHECK_FALSE(huge.add(std::nan(""), 1000));
  CHECK(huge.rejected() == 1);
  CHECK(huge.count() == (std::uint64_t{1} << 40) + 3);
  CHECK(*huge.min() == 0.25);
  CHECK(*huge.quantile(0.5) == 0.5);
  CHECK(huge.add(7.0, 0));  // nothing
  CHECK(huge.count() == (std::uint64_t{1} << 40) + 3);
  huge.clear();
  CHECK(huge.empty());
  CHECK(huge.runs().empty());
}
