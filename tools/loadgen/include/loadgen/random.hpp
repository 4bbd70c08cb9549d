// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_LOADGEN_RANDOM_HPP
#define TOKCHRON_TOOLS_LOADGEN_RANDOM_HPP

/// \file
/// A seeded random source whose every draw is specified here, so a seed gives the same run on
/// every compiler and standard library (the `std::*_distribution` algorithms are not specified).

#include <cmath>
#include <cstdint>
#include <random>

namespace tokchron_loadgen {

/// Derives independent stream seeds from one user seed (splitmix64 finaliser).
[[nodiscard]] constexpr std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream) noexcept {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// mt19937_64 (its output sequence is fixed by the standard) with hand-written transforms.
/// Single-threaded.
class rng {
 public:
  explicit rng(std::uint64_t seed) : gen_(seed) {}

  /// Uniform in [0, 1), 53 random bits.
  [[nodiscard]] double uniform() noexcept {
    return static_cast<double>(gen_() >> 11) * (1.0 / 9007199254740992.0);
  }
  /// Uniform in [a, b).
  [[nodiscard]] double uniform(double a, double b) noexcept { return a + (b - a) * uniform(); }
  /// A uniform integer in [0, n) (n > 0), by rejection so there is no modulo bias.
  [[nodiscard]] std::uint64_t below(std::uint64_t n) noexcept {
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    std::uint64_t x;
    do x = gen_();
    while (x >= limit);
    return x % n;
  }
  /// Standard normal (Box-Muller; one of the pair is kept for the next call).
  [[nodiscard]] double normal() noexcept {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double a = 6.283185307179586 * u2;
    spare_ = r * std::sin(a);
    has_spare_ = true;
    return r * std::cos(a);
  }
  /// Exponential with the given mean.
  [[nodiscard]] double exponential(double mean) noexcept {
    return -mean * std::log(1.0 - uniform());
  }
  /// Gamma(shape k, scale theta), Marsaglia-Tsang; shape < 1 by the boost u^(1/k).
  [[nodiscard]] double gamma(double k, double theta) noexcept {
    if (k < 1.0) {
      double u = uniform();
      while (u <= 0.0) u = uniform();
      return gamma(k + 1.0, theta) * std::pow(u, 1.0 / k);
    }
    const double d = k - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      double x, v;
      do {
        x = normal();
        v = 1.0 + c * x;
      } while (v <= 0.0);
      v = v * v * v;
      const double u = uniform();
      if (u < 1.0 - 0.0331 * x * x * x * x) return d * v * theta;
      if (u > 0.0 && std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v * theta;
    }
  }

 private:
  std::mt19937_64 gen_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace tokchron_loadgen

#endif  // TOKCHRON_TOOLS_LOADGEN_RANDOM_HPP
