// SPDX-License-Identifier: MIT
// The documented error bound, checked: on every test distribution and at every grid quantile
// (P99.9 and P99.99 included), for each quantile_method, log_histogram's answer is within
// relative_error() of the exact sample quantile by the same method (exact_quantiles), both
// for one stream and after merging 8 shards. 10^5 samples per distribution, fixed seeds.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tokchron/quantile/exact.hpp"
#include "tokchron/quantile/log_histogram.hpp"

using tokchron::exact_quantiles;
using tokchron::log_histogram;
using tokchron::quantile_method;

namespace {
constexpr int n_samples = 100000;

struct distribution {
  std::string name;
  std::vector<double> samples;
};

std::vector<distribution> distributions() {
  std::mt19937_64 rng(20240601);
  std::vector<distribution> out;
  auto gen = [&](const char* name, const std::function<double()>& f) {
    distribution d{name, {}};
    d.samples.reserve(n_samples);
    for (int i = 0; i < n_samples; ++i) d.samples.push_back(f());
    out.push_back(std::move(d));
  };
  std::lognormal_distribution<double> logn(std::log(0.050), 0.5);
  gen("lognormal (median 50 ms, sigma 0.5)", [&] { return logn(rng); });
  std::normal_distribution<double> fast(0.030, 0.003), slow(0.300, 0.030);
  std::uniform_real_distribution<double> u01(0, 1);
  gen("bimodal (90% ~30 ms, 10% ~300 ms)",
      [&] { return std::max(1e-6, u01(rng) < 0.9 ? fast(rng) : slow(rng)); });
  gen("sorted lognormal (drift)", [&] { return logn(rng); });
  std::sort(out.back().samples.begin(), out.back().samples.end());
  gen("Pareto heavy tail (x_m 10 ms, shape 1.1)",
      [&] { return 0.010 / std::pow(1.0 - u01(rng), 1.0 / 1.1); });
  gen("constant 42 ms", [] { return 0.042; });
  std::exponential_distribution<double> ex(1.0 / 0.020);
  gen("exponential with 5% exact zeros", [&] { return u01(rng) < 0.05 ? 0.0 : ex(rng); });
  return out;
}

std::vector<double> grid() {
  std::vector<double> g;
  for (int i = 0; i <= 1000; ++i) g.push_back(i / 1000.0);
  for (double q : {0.9995, 0.9999, 0.99999, 0.0001}) g.push_back(q);
  return g;
}

constexpr quantile_method methods[] = {quantile_method::linear, quantile_method::lower,
                                       quantile_method::nearest_rank};

// The worst |estimate - exact| / |exact| over the grid and every method.
double worst_error(const log_histogram& h, const exact_quantiles<>& e) {
  double worst = 0;
  for (double q : grid())
    for (auto m : methods) {
      const double want = *e.quantile(q, m), got = *h.quantile(q, m);
      const double err = want == 0 ? std::fabs(got) : std::fabs(got - want) / std::fabs(want);
      worst = std::max(worst, err);
    }
  return worst;
}
}  // namespace

TEST_CASE("log_histogram accuracy: within alpha at every grid quantile, one stream and merged") {
  for (const distribution& d : distributions()) {
    for (double alpha : {0.01, 0.001, 0.05}) {
      log_histogram h(alpha);
      std::vector<log_histogram> shards(8, log_histogram(alpha));
      exact_quantiles<> e;
      for (std::size_t i = 0; i < d.samples.size(); ++i) {
        h.add(d.samples[i]);
        shards[i % 8].add(d.samples[i]);
        e.add(d.samples[i]);
      }
      log_histogram merged(alpha);
      for (const auto& s : shards) merged.merge(s);
      INFO(d.name << ", alpha " << alpha);
      const double one = worst_error(h, e), many = worst_error(merged, e);
      CHECK(one <= h.relative_error());
      CHECK(many <= h.relative_error());
      CHECK(h.relative_error() <= alpha);
      if (alpha == 0.01)
        MESSAGE(d.name << ": worst error " << one * 100 << " % (bound " << h.relative_error() * 100
                       << " %)");
      // merged shards answer exactly as the single stream
      for (double q : {0.5, 0.9, 0.99, 0.999}) CHECK(*merged.quantile(q) == *h.quantile(q));
    }
  }
}

TEST_CASE("log_histogram accuracy: tiny inputs n = 1..10 are exact") {
  std::mt19937_64 rng(4);
  std::lognormal_distribution<double> d(std::log(0.05), 1.0);
  for (int n = 1; n <= 10; ++n) {
    log_histogram h;
    exact_quantiles<> e;
    for (int i = 0; i < n; ++i) {
      const double x = d(rng);
      h.add(x);
      e.add(x);
    }
    INFO("n = " << n);
    CHECK(worst_error(h, e) == 0.0);
  }
}

TEST_CASE("log_histogram accuracy: the bound holds for every scale on a wide distribution") {
  std::mt19937_64 rng(8);
  std::lognormal_distribution<double> d(0.0, 3.0);
  std::vector<double> xs(20000);
  for (double& x : xs) x = d(rng);
  exact_quantiles<> e;
  for (double x : xs) e.add(x);
  for (int s = -3; s <= log_histogram::max_scale; ++s) {
    log_histogram h = log_histogram::with_scale(s);
    for (double x : xs) h.add(x);
    INFO("scale " << s);
    CHECK(worst_error(h, e) <= h.relative_error());
  }
}
