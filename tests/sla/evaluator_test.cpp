// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <algorithm>
#include <boost/math/distributions/binomial.hpp>
#include <boost/multiprecision/cpp_int.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "tokchron/quantile/log_histogram.hpp"
#include "tokchron/sla/evaluator.hpp"
#include "tokchron/testing.hpp"

using tokchron::binomial_cdf;
using tokchron::binomial_sf;
using tokchron::evaluate;
using tokchron::exact_quantiles;
using tokchron::objective;
using tokchron::verdict_status;
using namespace std::chrono_literals;

namespace {
using big = boost::multiprecision::cpp_int;

// Exact P(B <= k) for k = 0..n, B ~ Binomial(n, a/b), as doubles: running sums of
// C(n,i) a^i (b-a)^(n-i) / b^n in exact integers, each rounded once.
std::vector<double> exact_cdfs(unsigned n, unsigned a, unsigned b) {
  const big den = boost::multiprecision::pow(big(b), n);
  std::vector<double> out;
  big num = 0, c = 1;
  for (unsigned i = 0; i <= n; ++i) {
    if (i > 0) c = c * (n - i + 1) / i;
    num +=
        c * boost::multiprecision::pow(big(a), i) * boost::multiprecision::pow(big(b - a), n - i);
    // keep 80 significant bits of the quotient, then scale back
    const long shift = static_cast<long>(boost::multiprecision::msb(den)) -
                       static_cast<long>(boost::multiprecision::msb(num)) + 80;
    const big scaled = (num << static_cast<unsigned>(shift)) / den;
    out.push_back(std::ldexp(scaled.convert_to<double>(), static_cast<int>(-shift)));
  }
  return out;
}

exact_quantiles<> samples(const std::vector<double>& v) {
  exact_quantiles<> e;
  for (double x : v) e.add(x);
  return e;
}

exact_quantiles<> evenly(std::size_t n, double lo, double step) {
  exact_quantiles<> e;
  for (std::size_t i = 0; i < n; ++i) e.add(lo + step * static_cast<double>(i));
  return e;
}

// An estimator meeting the contract that reports quantiles with a declared relative error, to
// check that verdicts widen by it (and one with no bound at all, as P² has).
struct lossy_estimator {
  using value_type = double;
  exact_quantiles<> inner;
  double err = 0.01;
  bool add(double x) noexcept { return inner.add(x); }
  std::uint64_t count() const { return inner.count(); }
  std::uint64_t rejected() const { return inner.rejected(); }
  bool empty() const { return inner.empty(); }
  double sum() const { return inner.sum(); }
  std::optional<double> mean() const { return inner.mean(); }
  std::optional<double> min() const { return inner.min(); }
  std::optional<double> max() const { return inner.max(); }
  std::optional<double> quantile(double q) const { return inner.quantile(q); }
  double relative_error() const { return err; }
};
static_assert(tokchron::is_quantile_estimator_v<lossy_estimator>);
}  // namespace

TEST_CASE("binomial tails equal the exact binomial computation") {
  const unsigned ns[] = {1, 2, 5, 20, 100, 299, 300};
  const unsigned ps[][2] = {{1, 100}, {1, 20}, {1, 2}, {19, 20}, {99, 100}, {9, 10}};
  for (unsigned n : ns) {
    for (const auto& p : ps) {
      const double pd = static_cast<double>(p[0]) / p[1];
      const std::vector<double> cdf = exact_cdfs(n, p[0], p[1]);
      for (unsigned k = 0; k <= n; ++k) {
        const double want = cdf[k];
        const double got = binomial_cdf(n, pd, k);
        CAPTURE(n);
        CAPTURE(pd);
        CAPTURE(k);
        // p as a double is within 1 ulp of a/b: the tail moves by at most n k ulp relative
        CHECK(std::fabs(got - want) <= 1e-11 * want + 1e-300);
        const double want_sf = k == 0 ? 1.0 : 1.0 - cdf[k - 1];
        CHECK(std::fabs(binomial_sf(n, pd, k) - want_sf) <= 1e-11 * want_sf + 1e-15);
      }
    }
  }
  CHECK(binomial_cdf(10, 0.0, 0) == 1.0);
  CHECK(binomial_cdf(10, 1.0, 9) == 0.0);
  CHECK(binomial_sf(10, 0.5, 11) == 0.0);
}

TEST_CASE("binomial tails stay accurate at large n (against Boost.Math)") {
  for (std::uint64_t n : {std::uint64_t{10000}, std::uint64_t{1000000}, std::uint64_t{50000000}}) {
    for (double p : {0.5, 0.95, 0.99, 0.999}) {
      boost::math::binomial_distribution<double> d(static_cast<double>(n), p);
      const double mean = static_cast<double>(n) * p;
      const double sd = std::sqrt(mean * (1 - p));
      for (double z : {-6.0, -3.0, -1.0, 0.0, 1.0, 3.0}) {
        const double kd = std::floor(mean + z * sd);
        if (kd < 0 || kd >= static_cast<double>(n)) continue;
        const auto k = static_cast<std::uint64_t>(kd);
        const double want = boost::math::cdf(d, kd);
        CAPTURE(n);
        CAPTURE(p);
        CAPTURE(k);
        CHECK(std::fabs(binomial_cdf(n, p, k) - want) <= 1e-9 * want);
      }
    }
  }
}

TEST_CASE("order-statistic bound ranks are the exact extreme ranks at the confidence") {
  for (unsigned n : {10u, 50u, 100u, 299u, 300u}) {
    for (const auto& p : {std::pair<unsigned, unsigned>{1, 2}, {9, 10}, {19, 20}, {99, 100}}) {
      const double q = static_cast<double>(p.first) / p.second;
      const std::vector<double> cdf = exact_cdfs(n, p.first, p.second);
      for (double c : {0.9, 0.95, 0.99}) {
        const double alpha = 1 - c;
        const auto r = tokchron::quantile_bound_ranks(n, q, c);
        CAPTURE(n);
        CAPTURE(q);
        CAPTURE(c);
        // lower: P(B <= l - 1) <= alpha, and l + 1 would break it
        if (r.lower >= 1) {
          CHECK(cdf[r.lower - 1] <= alpha);
          if (r.lower < n) CHECK(cdf[r.lower] > alpha);
        } else {
          CHECK(cdf[0] > alpha);
        }
        // upper: P(B >= u) = 1 - P(B <= u - 1) <= alpha, and u - 1 would break it
        if (r.upper <= n) {
          CHECK(1 - cdf[r.upper - 1] <= alpha);
          if (r.upper > 1) CHECK(1 - cdf[r.upper - 2] > alpha);
        } else {
          CHECK(1 - cdf[n - 1] > alpha);
        }
      }
    }
  }
  CHECK_THROWS_AS((void)tokchron::quantile_bound_ranks(10, 1.5, 0.95), std::invalid_argument);
  CHECK_THROWS_AS((void)tokchron::quantile_bound_ranks(10, 0.5, 1.0), std::invalid_argument);
}

TEST_CASE("P99 from 100 requests is undecided, not a false pass") {
  const objective o = objective::parse("p99(ttft) < 2s");
  const auto e = evenly(100, 0.1, 0.001);  // every sample far below the threshold
  const auto v = evaluate(o, e);
  CHECK(v.status == verdict_status::insufficient_data);
  CHECK(v.upper == std::numeric_limits<double>::infinity());
  CHECK(*v.misses == 0);
  CHECK(v.measured == doctest::Approx(*e.quantile(0.99)));
  CHECK(*v.margin == doctest::Approx(2.0 - *e.quantile(0.99)));
  // 0.99^299 <= 0.05 < 0.99^298: 299 samples with no miss are the least that pass
  REQUIRE(v.more_samples_if_no_misses);
  CHECK(*v.more_samples_if_no_misses == 199);
  CHECK(std::pow(0.99, 299) <= 0.05);
  CHECK(std::pow(0.99, 298) > 0.05);
  CHECK(v.to_string().find("insufficient_data") != std::string::npos);

  const auto v299 = evaluate(o, evenly(299, 0.1, 0.001));
  CHECK(v299.status == verdict_status::pass);
  CHECK(v299.upper == doctest::Approx(0.1 + 0.298));  // the largest sample bounds P99
  const auto v298 = evaluate(o, evenly(298, 0.1, 0.001));
  CHECK(v298.status == verdict_status::insufficient_data);
}

TEST_CASE("a percentile verdict agrees with the early-stopping criterion") {
  // 1000 samples 1..1000 ms; p95 < T for T sweeping across the bounds.
  const auto e = evenly(1000, 0.001, 0.001);
  const double c = 0.95;
  for (int t = 900; t <= 1000; t += 3) {
    objective o = objective::parse("p95(e2el) < 1s");
    o.threshold = t * 0.001 + 0.0005;  // between samples: no ties
    const auto v = evaluate(o, e, {c});
    const std::uint64_t misses = 1000 - static_cast<std::uint64_t>(t);
    CAPTURE(t);
    CHECK(*v.misses == misses);
    const bool pass = tokchron::percentile_passes(1000, misses, 0.05, c);
    CHECK((v.status == verdict_status::pass) == pass);
    // fail exactly when the lower bound sample is at or above the threshold
    const bool fail = binomial_sf(1000, 0.05, misses) <= 1 - c;
    CHECK((v.status == verdict_status::fail) == fail);
    if (v.status == verdict_status::insufficient_data) {
      REQUIRE(v.more_samples_if_no_misses);
      const std::uint64_t need = 1000 + *v.more_samples_if_no_misses;
      CHECK(tokchron::percentile_passes(need, misses, 0.05, c));
      CHECK(!tokchron::percentile_passes(need - 1, misses, 0.05, c));
      if (v.more_samples_needed) {
        CHECK(*v.more_samples_needed >= *v.more_samples_if_no_misses);
      } else {
        CHECK(static_cast<double>(misses) >= 0.05 * 1000);
      }
    }
  }
}

TEST_CASE("the bounds cover the true quantile at the stated confidence") {
  // Lognormal samples; the true 0.9-quantile is exp(mu + sigma z_0.9).
  const double mu = -3, sigma = 0.5, c = 0.95;
  const double truth = std::exp(mu + sigma * 1.2815515655446004);
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> d(mu, sigma);
  const int trials = 1000;
  int upper_below = 0, lower_above = 0;
  objective o = objective::parse("p90(ttft) < 1s");
  for (int t = 0; t < trials; ++t) {
    exact_quantiles<> e;
    for (int i = 0; i < 200; ++i) e.add(d(rng));
    const auto v = evaluate(o, e, {c});
    if (v.upper < truth) ++upper_below;
    if (v.lower > truth) ++lower_above;
  }
  // each side errs with probability <= 0.05; allow 4 standard errors of a 0.05 rate
  const double allowed = (0.05 + 4 * std::sqrt(0.05 * 0.95 / trials)) * trials;
  CHECK(upper_below <= allowed);
  CHECK(lower_above <= allowed);
  CHECK(upper_below > 0);  // the bounds are not trivially wide
}

TEST_CASE("fail, pass and lower-bound objectives") {
  std::vector<double> v;
  for (int i = 0; i < 80; ++i) v.push_back(0.5);
  for (int i = 0; i < 20; ++i) v.push_back(3.0);  // 20% over 2 s: P95 clearly misses
  const auto e = samples(v);
  const auto f = evaluate(objective::parse("p95(ttft) < 2s"), e);
  CHECK(f.status == verdict_status::fail);
  CHECK(f.lower == 3.0);
  CHECK(*f.margin == doctest::Approx(-1.0));
  CHECK(*f.misses == 20);
  CHECK(!f.more_samples_needed);

  // "90% of requests get at least 10 tokens/s": p10(tokens_per_s) >= 10
  const auto rates = evenly(1000, 12, 0.01);
  const auto ok = evaluate(objective::parse("p10(tokens_per_s) >= 10"), rates);
  CHECK(ok.status == verdict_status::pass);
  CHECK(ok.lower >= 12);
  const auto bad = evaluate(objective::parse("p10(tokens_per_s) >= 15"), rates);
  CHECK(bad.status == verdict_status::fail);
  CHECK(*bad.misses == 300);  // 12.00 .. 14.99
}

TEST_CASE("mean, max and min verdicts") {
  const auto e = evenly(100, 0.010, 0.0002);  // 10.0 .. 29.8 ms, mean 19.9 ms
  const auto m = evaluate(objective::parse("mean(itl) < 50ms"), e);
  CHECK(m.status == verdict_status::pass);
  const double half = 1.6448536269514722 * *e.stddev(1) / 10;
  CHECK(m.lower == doctest::Approx(0.0199 - half).epsilon(1e-12));
  CHECK(m.upper == doctest::Approx(0.0199 + half).epsilon(1e-12));
  CHECK(tokchron::detail::normal_quantile(0.95) == doctest::Approx(1.6448536269514722));
  CHECK(tokchron::detail::normal_quantile(0.99) == doctest::Approx(2.3263478740408408));
  // a threshold inside the interval is undecided
  const auto u = evaluate(objective::parse("mean(itl) < 20ms"), e);
  CHECK(u.status == verdict_status::insufficient_data);
  const auto mx = evaluate(objective::parse("max(itl) < 29.8ms"), e);
  CHECK(mx.status == verdict_status::fail);  // 29.8 ms is not < 29.8 ms
  CHECK(evaluate(objective::parse("max(itl) <= 29.8ms"), e).status == verdict_status::pass);
  CHECK(evaluate(objective::parse("min(itl) > 5ms"), e).status == verdict_status::pass);
  CHECK(evaluate(objective::parse("p95(itl) < 1s"), exact_quantiles<>()).reason == "no samples");
}

TEST_CASE("an estimator's relative error widens the bounds; none means undecided") {
  lossy_estimator l;
  for (int i = 1; i <= 1000; ++i) l.add(i * 0.001);
  exact_quantiles<> e = l.inner;
  const objective o = objective::parse("p90(ttft) < 2s");
  const auto exact_v = evaluate(o, e);
  const auto lossy_v = evaluate(o, l);
  CHECK(lossy_v.upper == doctest::Approx(exact_v.upper / 0.99).epsilon(1e-12));
  CHECK(lossy_v.lower == doctest::Approx(exact_v.lower / 1.01).epsilon(1e-12));
  CHECK(lossy_v.status == verdict_status::pass);
  CHECK(*lossy_v.misses == *exact_v.misses);
  // a threshold just above the exact upper bound passes exactly but not with 1% error
  objective tight = o;
  tight.threshold = exact_v.upper * 1.005;
  CHECK(evaluate(tight, e).status == verdict_status::pass);
  CHECK(evaluate(tight, l).status == verdict_status::insufficient_data);

  l.err = std::numeric_limits<double>::infinity();
  const auto none = evaluate(o, l);
  CHECK(none.status == verdict_status::insufficient_data);
  CHECK(none.reason.find("no error bound") != std::string_view::npos);
  CHECK(none.measured);
}

TEST_CASE("an SLA judged on scripted timelines equals the hand computation") {
  // 400 requests: TTFT = 100 + i ms (i = 0..399), 11 tokens each 20 ms apart (TPOT 20 ms).
  tokchron::slo_distributions<> d;
  for (int i = 0; i < 400; ++i) {
    auto tl = tokchron::testing::script()
                  .arrive(0ms)
                  .first_token(std::chrono::milliseconds(100 + i))
                  .tokens(10, 20ms)
                  .finish()
                  .timeline();
    CHECK(d.add(tl));
  }
  auto failed = tokchron::testing::script().arrive(0ms).finish(5ms, tokchron::finish_reason::error);
  CHECK(d.add(failed.timeline()));
  CHECK(d.failed() == 1);
  CHECK(d.succeeded() == 400);
  CHECK(d[tokchron::slo_metric::itl].count() == 4000);

  const auto s = tokchron::sla::parse(
      "p95(ttft) < 500ms, p99(tpot) <= 20ms, mean(itl) < 25ms, p99(ttft) < 450ms, "
      "min(fluidity) > 0.5");
  const auto r = d.evaluate(s);
  REQUIRE(r.verdicts.size() == 5);
  // p95 of 100..499 ms by numpy's linear rule: h = 0.95 * 399 = 379.05 -> 479.05 ms
  CHECK(*r.verdicts[0].measured == doctest::Approx(0.47905));
  CHECK(r.verdicts[0].status == verdict_status::pass);
  CHECK(r.verdicts[1].status == verdict_status::pass);  // every TPOT is 20 ms
  CHECK(r.verdicts[2].status == verdict_status::pass);
  // p99 is 495.01 ms > 450 ms and 50 samples (>= 450 ms) miss: a confident fail
  CHECK(r.verdicts[3].status == verdict_status::fail);
  CHECK(*r.verdicts[3].misses == 50);
  CHECK(r.verdicts[4].reason == "metric not recorded");
  CHECK(r.overall() == verdict_status::fail);
  CHECK(r.exit_code() == 3);

  tokchron::sla_verdict only_undecided;
  only_undecided.verdicts.push_back(r.verdicts[4]);
  only_undecided.verdicts.push_back(r.verdicts[0]);
  CHECK(only_undecided.exit_code() == 4);
  only_undecided.verdicts.erase(only_undecided.verdicts.begin());
  CHECK(only_undecided.exit_code() == 0);
}

TEST_CASE("verdicts on a log_histogram bracket the exact ones within its error") {
  tokchron::log_histogram h(0.01);
  exact_quantiles<> e;
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> d(-2.5, 0.6);
  for (int i = 0; i < 5000; ++i) {
    const double x = d(rng);
    h.add(x);
    e.add(x);
  }
  const double err = h.relative_error();
  for (double p : {50.0, 90.0, 99.0}) {
    objective o = objective::parse("p99(ttft) < 1s");
    o.percentile = p;
    const auto ve = evaluate(o, e), vh = evaluate(o, h);
    CAPTURE(p);
    // the histogram's bounds contain the exact bounds, and are at most 2e wider
    CHECK(vh.upper >= ve.upper);
    CHECK(vh.upper <= ve.upper * (1 + err) / (1 - err) * (1 + 1e-12));
    CHECK(vh.lower <= ve.lower);
    CHECK(vh.lower >= ve.lower * (1 - err) / (1 + err) * (1 - 1e-12));
    CHECK(*vh.measured == doctest::Approx(*ve.measured).epsilon(err));
  }
}

TEST_CASE("slo_distributions record every metric the table and the record share") {
  // Canonical records hold ttft_from_send and ttft_from_scheduled; a profiled request does not
  // (its profile decides TTFT's origin), and its per-request ITL is not a pooled ITL sample.
  const auto tl = tokchron::testing::script()
                      .arrive(0ms)
                      .send(2ms)
                      .scheduled(10ms)
                      .first_token(40ms)
                      .tokens(3, 10ms)
                      .finish()
                      .timeline();
  tokchron::slo_distributions<> canonical, profiled;
  REQUIRE(canonical.add(tl));
  const auto m = tokchron::canonical_metrics(tl);
  for (const auto& d : tokchron::metric_table) {
    CAPTURE(d.name);
    if (const auto v = m.value(d.id)) {
      REQUIRE(canonical[d.id].count() == 1);
      CHECK(*canonical[d.id].max() == *v);
    }
  }
  CHECK(*canonical[tokchron::metric_id::ttft_from_send].max() == doctest::Approx(0.038));
  CHECK(*canonical[tokchron::metric_id::ttft_from_scheduled].max() == doctest::Approx(0.030));
  CHECK(canonical.evaluate(tokchron::sla::parse("max(ttft_from_send) < 39ms")).overall() ==
        verdict_status::pass);

  tokchron::request_metrics p = tokchron::evaluate(tokchron::profiles::genai_perf, tl);
  REQUIRE(p.itl);  // a per-request grain
  profiled.add(p);
  CHECK(profiled[tokchron::metric_id::itl].count() == 0);
  CHECK(profiled[tokchron::metric_id::ttft_from_send].count() == 0);
  CHECK(profiled[tokchron::metric_id::e2e].count() == 1);
  CHECK(profiled[tokchron::metric_id::output_rate].count() == 1);
}
