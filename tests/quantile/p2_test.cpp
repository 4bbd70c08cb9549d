// SPDX-License-Identifier: MIT
// p2_quantiles (Boost extended P² adaptor) and the Boost.Accumulators log_histogram feature.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "tokchron/quantile/accumulators.hpp"
#include "tokchron/quantile/exact.hpp"
#include "tokchron/quantile/log_histogram.hpp"
#include "tokchron/quantile/p2.hpp"

#include <boost/accumulators/statistics/count.hpp>
#include <boost/accumulators/statistics/stats.hpp>

using tokchron::exact_quantiles;
using tokchron::p2_quantiles;

TEST_CASE("p2_quantiles: its limits are in the type") {
  static_assert(tokchron::is_quantile_estimator_v<p2_quantiles>);
  static_assert(!tokchron::is_mergeable_estimator_v<p2_quantiles>);
  CHECK(std::isinf(p2_quantiles::relative_error()));
  CHECK_THROWS_AS(p2_quantiles(std::vector<double>{}), std::invalid_argument);
  CHECK_THROWS_AS(p2_quantiles({0.5, 1.0}), std::invalid_argument);
  CHECK_THROWS_AS(p2_quantiles({0.0}), std::invalid_argument);
  p2_quantiles p{0.99, 0.5, 0.5};
  CHECK(p.probabilities() == std::vector<double>{0.5, 0.99});
  CHECK(p.warmup_size() == 7);
  CHECK(!p.quantile(0.5));
  CHECK_THROWS_AS((void)p.quantile(0.9), std::invalid_argument);  // not declared
  CHECK_THROWS_AS((void)p.quantile(2.0), std::invalid_argument);
  CHECK(!p.add(std::numeric_limits<double>::quiet_NaN()));
  CHECK(!p.add(std::numeric_limits<double>::infinity()));
  CHECK(p.rejected() == 2);
  CHECK(p.empty());
}

TEST_CASE("p2_quantiles: exact below 2m + 3 samples, then Boost's estimate") {
  p2_quantiles p{0.5, 0.9};
  exact_quantiles<> e;
  std::mt19937_64 rng(1);
  std::lognormal_distribution<double> d(std::log(0.05), 0.5);
  for (std::size_t n = 1; n < p.warmup_size(); ++n) {
    const double x = d(rng);
    p.add(x);
    e.add(x);
    CHECK(*p.quantile(0.5) == *e.quantile(0.5));
    CHECK(*p.quantile(0.9) == *e.quantile(0.9));
  }
  for (int i = 0; i < 100000; ++i) {
    const double x = d(rng);
    p.add(x);
    e.add(x);
  }
  CHECK(p.count() == e.count());
  CHECK(*p.min() == *e.min());
  CHECK(*p.max() == *e.max());
  CHECK(*p.mean() == doctest::Approx(*e.mean()));
  // On shuffled lognormal data P² is good (no bound is claimed; this is a sanity check).
  CHECK(*p.quantile(0.5) == doctest::Approx(*e.quantile(0.5)).epsilon(0.01));
  CHECK(*p.quantile(0.9) == doctest::Approx(*e.quantile(0.9)).epsilon(0.01));
}

TEST_CASE("accumulators: log_histogram inside a Boost accumulator_set") {
  namespace ba = boost::accumulators;
  namespace ta = tokchron::accumulators;
  ba::accumulator_set<double, ba::stats<ta::tag::log_histogram_quantile, ba::tag::count>> acc(
      ta::log_histogram_relative_accuracy = 0.001);
  exact_quantiles<> e;
  tokchron::log_histogram direct(0.001);
  std::mt19937_64 rng(2);
  std::lognormal_distribution<double> d(std::log(0.05), 0.5);
  for (int i = 0; i < 10000; ++i) {
    const double x = d(rng);
    acc(x);
    e.add(x);
    direct.add(x);
  }
  const tokchron::log_histogram& h = ta::log_histogram(acc);
  CHECK(h.scale() == tokchron::log_histogram::scale_for(0.001));
  CHECK(h == direct);
  CHECK(ba::count(acc) == 10000);
  for (double q : {0.5, 0.9, 0.99}) {
    const double got = ba::quantile(acc, ba::quantile_probability = q);
    CHECK(got == *direct.quantile(q));
    CHECK(std::fabs(got - *e.quantile(q)) <= h.relative_error() * *e.quantile(q));
    CHECK(ta::log_histogram_quantile(acc, ba::quantile_probability = q) == got);
  }
  ba::accumulator_set<double, ba::stats<ta::tag::log_histogram>> plain;  // default 1 %
  CHECK(ta::log_histogram(plain).scale() == 6);
}
