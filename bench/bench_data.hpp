// SPDX-License-Identifier: MIT
// The latency shapes the estimator benchmarks feed (one definition for every bench source).
#ifndef TOKCHRON_BENCH_BENCH_DATA_HPP
#define TOKCHRON_BENCH_BENCH_DATA_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace tokchron_bench {

/// Lognormal: median 50 ms, sigma 0.5 (as sketches.md measures). Bimodal: 70 % lognormal around
/// 20 ms and 30 % around 400 ms (sigma 0.3 each: cache hits and misses). Pareto: 10 ms scale,
/// shape 1.5 (a heavy tail over six decades). Sorted: the lognormal samples ascending.
enum shape : int { lognormal = 0, sorted = 1, bimodal = 2, pareto = 3 };
inline const char* shape_name(int s) noexcept {
  switch (s) {
    case lognormal: return "lognormal";
    case sorted: return "sorted";
    case bimodal: return "bimodal";
    default: return "pareto";
  }
}
/// Samples cycled through in the timed loops.
constexpr std::size_t ring = std::size_t{1} << 16;

inline std::vector<double> make_data(int s, std::size_t n, std::uint64_t seed = 42) {
  std::mt19937_64 rng(seed);
  std::vector<double> v(n);
  if (s == bimodal) {
    std::lognormal_distribution<double> fast(std::log(0.020), 0.3), slow(std::log(0.400), 0.3);
    std::bernoulli_distribution pick_slow(0.3);
    for (double& x : v) x = pick_slow(rng) ? slow(rng) : fast(rng);
  } else if (s == pareto) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (double& x : v) x = 0.010 / std::pow(1.0 - u(rng), 1.0 / 1.5);
  } else {
    std::lognormal_distribution<double> d(std::log(0.050), 0.5);
    for (double& x : v) x = d(rng);
    if (s == sorted) std::sort(v.begin(), v.end());
  }
  return v;
}
/// The ring of each shape, made once.
inline const std::vector<double>& data(int s) {
  static const std::vector<double> d[4] = {make_data(lognormal, ring), make_data(sorted, ring),
                                           make_data(bimodal, ring), make_data(pareto, ring)};
  return d[s];
}

}  // namespace tokchron_bench

#endif  // TOKCHRON_BENCH_BENCH_DATA_HPP
