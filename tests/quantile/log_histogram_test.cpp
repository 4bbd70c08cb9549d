// SPDX-License-Identifier: MIT
// log_histogram: the exact bucket index, the OTel layout, exact mode, merge, downscaling,
// rejection of bad samples. Accuracy over distributions is in log_histogram_accuracy_test.cpp,
// serialisation in log_histogram_serial_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <vector>

#include "tokchron/quantile/exact.hpp"
#include "tokchron/quantile/log_histogram.hpp"

using tokchron::exact_quantiles;
using tokchron::log_histogram;
using tokchron::quantile_method;

namespace {
// A tiny unsigned big integer (base 2^32), enough to decide m^(2^s) > 2^E exactly.
using big = std::vector<std::uint32_t>;
big square(const big& a) {
  big r(a.size() * 2, 0);
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::uint64_t carry = 0;
    for (std::size_t j = 0; j < a.size(); ++j) {
      const std::uint64_t t = std::uint64_t{a[i]} * a[j] + r[i + j] + carry;
      r[i + j] = static_cast<std::uint32_t>(t);
      carry = t >> 32;
    }
    std::size_t k = i + a.size();
    while (carry != 0) {
      const std::uint64_t t = std::uint64_t{r[k]} + carry;
      r[k++] = static_cast<std::uint32_t>(t);
      carry = t >> 32;
    }
  }
  while (!r.empty() && r.back() == 0) r.pop_back();
  return r;
}
// Exact: is m (a double in [1, 2)) above 2^(k / 2^s)? <=> (2^52 m)^(2^s) > 2^(52 2^s + k).
bool above_boundary(double m, int s, std::uint64_t k) {
  const auto mi = static_cast<std::uint64_t>(std::ldexp(m, 52));
  big p{static_cast<std::uint32_t>(mi), static_cast<std::uint32_t>(mi >> 32)};
  for (int i = 0; i < s; ++i) p = square(p);
  const std::uint64_t e = (std::uint64_t{52} << s) + k;
  const std::uint64_t top =
      (p.size() - 1) * 32 + static_cast<std::uint64_t>(31 - __builtin_clz(p.back()));
  if (top != e) return top > e;
  for (std::size_t i = 0; i + 1 < p.size(); ++i)
    if (p[i] != 0) return true;
  return (p.back() & ~(1u << (top % 32))) != 0;
}
// The OTel index by logarithm, or no answer when the value is too close to a boundary for
// long double to decide.
bool log_reference(double x, int s, std::int32_t& index) {
  const long double t = std::log2l(static_cast<long double>(x)) * std::ldexp(1.0L, s);
  const long double c = std::ceil(t);
  if (c - t < 1e-9L || t - (c - 1) < 1e-9L) return false;
  index = static_cast<std::int32_t>(c) - 1;
  return true;
}
}  // namespace

TEST_CASE("log_histogram: the estimator contract and the alpha -> scale rule") {
  static_assert(tokchron::is_quantile_estimator_v<log_histogram>);
  static_assert(tokchron::is_mergeable_estimator_v<log_histogram>);
  CHECK(log_histogram::scale_for(0.01) == 6);
  CHECK(log_histogram{}.scale() == 6);
  CHECK(log_histogram{}.relative_error() == doctest::Approx(0.005415).epsilon(1e-3));
  CHECK(log_histogram::scale_for(0.0109) == 5);
  CHECK(log_histogram::scale_for(0.5) == 0);  // scale 0: base 2, bound 1/3
  CHECK(log_histogram::scale_for(0.3) == 1);  // scale 1: (sqrt2 - 1)/(sqrt2 + 1) = 0.17
  for (int s = log_histogram::min_scale; s <= log_histogram::max_scale; ++s) {
    const double b = std::exp2(std::ldexp(1.0, -s));
    const double bound = std::isinf(b) ? 1.0 : (b - 1) / (b + 1);
    CHECK(log_histogram::relative_error_for(s) == doctest::Approx(bound).epsilon(1e-12));
    if (log_histogram::relative_error_for(s) < 1.0)  // the coarsest scale that meets alpha
      CHECK(log_histogram::scale_for(log_histogram::relative_error_for(s)) == s);
  }
  CHECK_THROWS_AS(log_histogram(0.0), std::invalid_argument);
  CHECK_THROWS_AS(log_histogram(1.0), std::invalid_argument);
  CHECK_THROWS_AS(log_histogram(std::nan("")), std::invalid_argument);
  CHECK_THROWS_AS(log_histogram(0.01, -1.0), std::invalid_argument);
  CHECK_THROWS_AS((void)log_histogram::with_scale(13), std::invalid_argument);
  CHECK_THROWS_AS((void)log_histogram::with_scale(-11), std::invalid_argument);
  CHECK_THROWS_AS((void)log_histogram::with_mantissa_bits(-1), std::invalid_argument);
  CHECK(log_histogram::with_mantissa_bits(7).scale() == 7);
}

TEST_CASE("log_histogram: the sub-octave tables are decided far above double-double error") {
  for (int s = 0; s <= log_histogram::max_scale; ++s) {
    const auto& t = tokchron::detail::log_index_table_for(s);
    INFO("scale " << s);
    // Each boundary is at least this far (in units of 2^-52) from a representable mantissa;
    // double-double error is about 2^-100 relative, i.e. 2^-48 in these units.
    CHECK(t.min_margin > std::ldexp(1.0, -40));
  }
}

TEST_CASE("log_histogram: the index is exact at every boundary (big-integer reference)") {
  std::mt19937_64 rng(7);
  for (int s = 0; s <= 9; ++s) {
    const log_histogram h = log_histogram::with_scale(s);
    const auto& t = tokchron::detail::log_index_table_for(s);
    const std::uint64_t n = std::uint64_t{1} << s;
    std::vector<std::uint64_t> ks;
    if (s <= 7) {
      for (std::uint64_t k = 1; k < n; ++k) ks.push_back(k);
    } else {
      for (int i = 0; i < 16; ++i) ks.push_back(1 + rng() % (n - 1));
    }
    for (std::uint64_t k : ks) {
      const double bk = t.bounds[k];
      for (double m : {std::nextafter(bk, 0.0), bk, std::nextafter(bk, 2.0)}) {
        const bool above = above_boundary(m, s, k);
        for (int e : {-20, 0, 11}) {
          const double x = std::ldexp(m, e);
          const auto want = static_cast<std::int32_t>(e * static_cast<std::int64_t>(n) +
                                                      static_cast<std::int64_t>(k) - 1 + above);
          INFO("scale " << s << " k " << k << " e " << e);
          REQUIRE(h.index_of(x) == want);
          REQUIRE(h.index_of(-x) == want);
        }
      }
    }
    // Powers of two are the upper edge of the bucket below them (OTel: (base^i, base^(i+1)]).
    for (int e : {-1074, -1030, -1022, -3, 0, 1, 1023}) {
      const double x = std::ldexp(1.0, e);
      const std::int64_t i = static_cast<std::int64_t>(e) * static_cast<std::int64_t>(n);
      CHECK(h.index_of(x) == i - 1);
      if (e > -1074 && e < 1023) CHECK(h.index_of(std::nextafter(x, 1e308)) == i);
      CHECK(h.bucket_upper(static_cast<std::int32_t>(i - 1)) == x);
    }
  }
}

TEST_CASE("log_histogram: the index agrees with log2 on random values, every scale") {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> expo(-1074.0, 1024.0);
  for (int s = log_histogram::min_scale; s <= log_histogram::max_scale; ++s) {
    const log_histogram h = log_histogram::with_scale(s);
    int checked = 0;
    for (int i = 0; i < 3000; ++i) {
      const double x = std::exp2(expo(rng));
      if (!(x > 0) || !std::isfinite(x)) continue;
      std::int32_t want;
      if (!log_reference(x, s, want)) continue;
      INFO("scale " << s << " x " << x);
      REQUIRE(h.index_of(x) == want);
      // and the value lies inside its bucket's edges (OTel convention)
      const std::int32_t bi = h.index_of(x);
      if (x >= std::numeric_limits<double>::min() && x < 1e307) {
        CHECK(h.bucket_lower(bi) <= x);
        CHECK(x <= h.bucket_upper(bi) * (1 + 1e-15));
      }
      ++checked;
    }
    CHECK(checked > 2500);
  }
}

TEST_CASE("log_histogram: bucket edges and values follow base = 2^(2^-scale)") {
  const log_histogram h;  // scale 6
  const double base = std::exp2(1.0 / 64);
  CHECK(h.base() == doctest::Approx(base).epsilon(1e-15));
  CHECK(h.bucket_lower(0) == 1.0);
  CHECK(h.bucket_upper(63) == 2.0);
  CHECK(h.bucket_lower(-64) == 0.5);
  for (std::int32_t i : {-1300, -65, -1, 0, 1, 63, 64, 700}) {
    CHECK(h.bucket_upper(i) / h.bucket_lower(i) == doctest::Approx(base).epsilon(1e-14));
    const double v = h.bucket_value(i), lo = h.bucket_lower(i), hi = h.bucket_upper(i);
    CHECK((v - lo) / lo <= h.relative_error());
    CHECK((hi - v) / hi <= h.relative_error());
  }
  const log_histogram c = log_histogram::with_scale(-2);  // base 16
  CHECK(c.bucket_lower(0) == 1.0);
  CHECK(c.bucket_upper(0) == 16.0);
  CHECK(c.index_of(16.0) == 0);
  CHECK(c.index_of(17.0) == 1);
  CHECK(c.index_of(1.0) == -1);
  CHECK(c.index_of(1.0 / 16) == -2);
}

TEST_CASE("log_histogram: exact below exact_capacity samples, for every method") {
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> d(-3.0, 1.0);
  for (std::uint64_t n = 1; n <= log_histogram::exact_capacity; ++n) {
    log_histogram h;
    exact_quantiles<> e;
    for (std::uint64_t i = 0; i < n; ++i) {
      const double x = d(rng);
      h.add(x);
      e.add(x);
    }
    REQUIRE(h.is_exact());
    for (double q = 0; q <= 1.0; q += 0.01)
      for (auto m :
           {quantile_method::linear, quantile_method::lower, quantile_method::nearest_rank})
        REQUIRE(*h.quantile(q, m) == *e.quantile(q, m));
    const double mid = *e.quantile(0.5);
    CHECK(h.rank(mid) == e.rank(mid));
  }
}

TEST_CASE("log_histogram: empty, rejected and edge values") {
  log_histogram h;
  CHECK(h.empty());
  CHECK(!h.quantile(0.5));
  CHECK(!h.mean());
  CHECK(!h.min());
  CHECK(!h.max());
  CHECK(!h.cdf(1.0));
  CHECK(h.rank(1.0) == 0);
  CHECK(h.positive_buckets().empty());
  CHECK_THROWS_AS((void)h.quantile(1.5), std::invalid_argument);
  CHECK(!h.add(std::numeric_limits<double>::quiet_NaN()));
  CHECK(!h.add(std::numeric_limits<double>::infinity()));
  CHECK(!h.add(-std::numeric_limits<double>::infinity()));
  CHECK(h.rejected() == 3);
  CHECK(h.count() == 0);
  CHECK(h.add(0.0));
  CHECK(h.add(-0.0));
  CHECK(h.add(-2.5));
  CHECK(h.add(4e-320));  // subnormal: its own bucket, not zero
  CHECK(h.add(1.0));
  CHECK(h.count() == 5);
  CHECK(h.zero_count() == 2);
  CHECK(*h.min() == -2.5);
  CHECK(*h.max() == 1.0);
  CHECK(h.sum() == doctest::Approx(-1.5));
  CHECK(h.negative_buckets().first_index() == h.index_of(2.5));
  CHECK(h.positive_buckets().first_index() == h.index_of(4e-320));
  CHECK(h.positive_buckets().last_index() == -1);  // 1.0 = base^0 is the top of bucket -1
}

TEST_CASE("log_histogram: mixed signs and the zero threshold, beyond exact mode") {
  log_histogram h(0.01, 1e-6);
  exact_quantiles<> e;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> d(0.0, 1.0);
  for (int i = 0; i < 20000; ++i) {
    double x = d(rng);
    if (i % 50 == 0) x = 1e-9 * (i % 3);  // into the zero bucket
    h.add(x);
    e.add(x);
  }
  CHECK(h.zero_count() == 400);
  for (double q : {0.001, 0.01, 0.1, 0.3, 0.7, 0.9, 0.99, 0.999})
    for (auto m : {quantile_method::lower, quantile_method::nearest_rank}) {
      const double want = *e.quantile(q, m), got = *h.quantile(q, m);
      INFO("q " << q);
      CHECK(std::fabs(got - want) <= h.relative_error() * std::fabs(want));
    }
  // rank(x) is the exact rank at the upper edge of x's bucket
  for (double x : {-1.5, -0.2, 0.3, 1.7}) {
    const std::int32_t i = h.index_of(x);
    const double edge = x > 0 ? h.bucket_upper(i) : -h.bucket_lower(i);
    const std::uint64_t want = x > 0 ? e.rank(edge) : e.rank(std::nextafter(edge, -10.0));
    CHECK(h.rank(x) == want);
  }
  CHECK(h.rank(1e-7) == e.rank(1e-6));
  CHECK(*h.cdf(100.0) == 1.0);
  CHECK(*h.cdf(-100.0) == 0.0);
}

TEST_CASE("log_histogram: merging shards gives the one-stream histogram") {
  std::mt19937_64 rng(9);
  std::lognormal_distribution<double> d(std::log(0.05), 0.8);
  log_histogram all;
  std::vector<log_histogram> shards(8);
  for (int i = 0; i < 40000; ++i) {
    const double x = i % 97 == 0 ? -d(rng) : d(rng);
    all.add(x);
    shards[static_cast<std::size_t>(i % 8)].add(x);
  }
  log_histogram merged;
  for (const auto& s : shards) merged.merge(s);
  CHECK(merged.count() == all.count());
  CHECK(merged.sum() == doctest::Approx(all.sum()).epsilon(1e-12));
  CHECK(*merged.min() == *all.min());
  CHECK(*merged.max() == *all.max());
  std::vector<log_histogram::bucket> a(all.positive_buckets().begin(),
                                       all.positive_buckets().end());
  std::vector<log_histogram::bucket> b(merged.positive_buckets().begin(),
                                       merged.positive_buckets().end());
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].index == b[i].index);
    CHECK(a[i].count == b[i].count);
  }
  for (double q = 0; q <= 1.0; q += 0.001) REQUIRE(*merged.quantile(q) == *all.quantile(q));

  // small shards stay exact while the total fits
  log_histogram x, y;
  x.add(3.0);
  y.add(1.0);
  y.add(2.0);
  x.merge(y);
  CHECK(x.is_exact());
  CHECK(*x.quantile(0.5) == 2.0);
  CHECK_THROWS_AS(x.merge(log_histogram(0.01, 1e-3)), std::invalid_argument);
}

TEST_CASE("log_histogram: downscaling merges adjacent buckets without losing counts") {
  std::mt19937_64 rng(13);
  std::lognormal_distribution<double> d(0.0, 2.0);
  log_histogram fine = log_histogram::with_scale(8);
  std::vector<double> xs;
  for (int i = 0; i < 5000; ++i) xs.push_back(i % 10 == 0 ? -d(rng) : d(rng));
  for (double x : xs) fine.add(x);
  for (int s : {7, 4, 0, -3, -10}) {
    const log_histogram c = fine.downscaled(s);
    CHECK(c.scale() == s);
    CHECK(c.count() == fine.count());
    std::uint64_t total = c.zero_count();
    for (auto bk : c.positive_buckets()) {
      std::uint64_t want = 0;  // fine buckets i with floor(i / 2^(8 - s)) == bk.index
      for (auto f : fine.positive_buckets())
        if ((f.index >> (8 - s)) == bk.index) want += f.count;
      CHECK(bk.count == want);
      total += bk.count;
    }
    for (auto bk : c.negative_buckets()) total += bk.count;
    CHECK(total == fine.count());
    // identical to the histogram built at the coarse scale from the same samples
    log_histogram direct = log_histogram::with_scale(s);
    for (double x : xs) direct.add(x);
    CHECK(c == direct);
  }
  CHECK_THROWS_AS((void)fine.downscaled(9), std::invalid_argument);
  // merging different scales downscales the finer one
  log_histogram a = log_histogram::with_scale(6), b = log_histogram::with_scale(3);
  std::mt19937_64 r2(1);
  log_histogram both = log_histogram::with_scale(3);
  for (int i = 0; i < 1000; ++i) {
    const double x = d(r2);
    (i % 2 ? a : b).add(x);
    both.add(x);
  }
  a.merge(b);
  CHECK(a.scale() == 3);
  CHECK(a.count() == 1000);
  for (double q : {0.1, 0.5, 0.9}) CHECK(*a.quantile(q) == *both.quantile(q));
}

TEST_CASE("log_histogram: counters widen instead of overflowing") {
  log_histogram h;
  for (int i = 0; i < 70000; ++i) h.add(1.5);
  for (int i = 0; i < 10; ++i) h.add(3.0);
  CHECK(h.positive_buckets().count_at(h.index_of(1.5)) == 70000);
  CHECK(h.positive_buckets().count_at(h.index_of(3.0)) == 10);
  CHECK(*h.quantile(0.5) == doctest::Approx(1.5).epsilon(h.relative_error()));
  log_histogram g = h;
  g.merge(h);
  CHECK(g.positive_buckets().count_at(g.index_of(1.5)) == 140000);
  g.clear();
  CHECK(g.empty());
  CHECK(g.positive_buckets().empty());
}

TEST_CASE("log_histogram: memory grows with the range, not the count (1 us .. 1 h at 1 %)") {
  log_histogram h;
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> u(std::log(1e-6), std::log(3600.0));
  for (int i = 0; i < 200000; ++i) h.add(std::exp(u(rng)));
  const auto range = h.positive_buckets().last_index() - h.positive_buckets().first_index() + 1;
  CHECK(range <= h.index_of(3600.0) - h.index_of(1e-6) + 1);  // 2033 buckets
  MESSAGE("1 us..1 h at 1 %: " << range << " buckets, " << h.memory_bytes() << " bytes");
  CHECK(h.memory_bytes() <= 8192);
  const std::size_t before = h.memory_bytes();
  for (int i = 0; i < 200000; ++i) h.add(std::exp(u(rng)));
  CHECK(h.memory_bytes() == before);
}

TEST_CASE("log_histogram: merge copes with windows that overhang each other") {
  // b's window grows from 1000 down to 1e-3 with slack on both sides; a's covers only [1, 2].
  for (int order = 0; order < 2; ++order) {
    log_histogram a, b, both;
    for (int i = 0; i < 100; ++i) {
      a.add(1.0 + i / 100.0);
      both.add(1.0 + i / 100.0);
    }
    for (double x : {1000.0, 1e-3, 1.5, 5.0}) {
      b.add(x);
      both.add(x);
    }
    if (order == 0) {
      a.merge(b);
      CHECK(a == both);
    } else {
      b.merge(a);
      CHECK(b.count() == both.count());
      for (double q : {0.0, 0.25, 0.5, 0.75, 1.0}) CHECK(*b.quantile(q) == *both.quantile(q));
    }
  }
}

namespace {
std::uint64_t count_at(const log_histogram& h, std::int32_t index) {
  for (auto b : h.positive_buckets())
    if (b.index == index) return b.count;
  return 0;
}
}  // namespace

TEST_CASE("log_histogram: the fast insert path counts every value in the bucket index_of names") {
  // add(x) takes values inside the counters' window through a shortcut; whatever path a value
  // takes, it must land in bucket index_of(x), whose bounds contain x. Values right at bucket
  // edges and at the window's ends probe the shortcut's limits.
  for (int scale : {0, 2, 5, 8, 12}) {
    for (double threshold : {0.0, 1e-3}) {
      CAPTURE(scale);
      CAPTURE(threshold);
      log_histogram h = log_histogram::with_scale(scale, threshold);
      std::mt19937_64 rng(static_cast<std::uint64_t>(scale) * 7 + 1);
      std::lognormal_distribution<double> d(std::log(0.05), 1.0);
      for (std::uint64_t i = 0; i < log_histogram::exact_capacity + 100; ++i) h.add(d(rng));
      std::vector<double> probes;
      const auto first = h.positive_buckets().first_index();
      const auto last = h.positive_buckets().last_index();
      for (std::int32_t i = first - 2; i <= last + 2; i += std::max(1, (last - first) / 40)) {
        const double lo = h.bucket_lower(i), hi = h.bucket_upper(i);
        probes.insert(probes.end(), {lo, std::nextafter(lo, 0.0), std::nextafter(lo, 1e300), hi,
                                     std::nextafter(hi, 0.0), std::nextafter(hi, 1e300)});
      }
      for (int i = 0; i < 2000; ++i) probes.push_back(d(rng));
      probes.insert(probes.end(), {threshold, std::nextafter(threshold, 1.0), 1e-300, 1e300,
                                   std::numeric_limits<double>::min(),
                                   std::numeric_limits<double>::denorm_min()});
      for (double x : probes) {
        CAPTURE(x);
        const std::uint64_t count = h.count(), zeros = h.zero_count();
        const double sum = h.sum();
        REQUIRE(h.add(x));
        REQUIRE(h.count() == count + 1);
        if (x <= threshold) {
          CHECK(h.zero_count() == zeros + 1);
          continue;
        }
        const std::int32_t k = h.index_of(x);
        // bucket_lower is the double nearest base^k, so x may equal it (documented)
        CHECK(h.bucket_lower(k) <= x);
        CHECK(x <= h.bucket_upper(k));
        // the bucket gained exactly this sample: re-adding through a fresh histogram agrees
        log_histogram one = log_histogram::with_scale(scale, threshold);
        for (std::uint64_t j = 0; j < log_histogram::exact_capacity; ++j) one.add(1.0);
        one.add(x);
        CHECK(count_at(one, k) == 1 + (k == one.index_of(1.0) ? log_histogram::exact_capacity : 0));
        CHECK(h.sum() >= sum);
        CHECK(h.min() <= x);
        CHECK(h.max() >= x);
      }
      // every bucket's count equals the number of samples index_of puts there
      std::vector<double> all;
      log_histogram g = log_histogram::with_scale(scale, threshold);
      for (int i = 0; i < 3000; ++i) all.push_back(d(rng));
      all.insert(all.end(), probes.begin(), probes.end());
      for (double x : all) g.add(x);
      std::map<std::int32_t, std::uint64_t> want;
      std::uint64_t zero = 0;
      for (double x : all) (x <= threshold ? zero : want[g.index_of(x)]) += 1;
      CHECK(g.zero_count() == zero);
      std::map<std::int32_t, std::uint64_t> got;
      for (auto b : g.positive_buckets()) got[b.index] = b.count;
      CHECK(got == want);
    }
  }
}

TEST_CASE("log_histogram: a batch add equals the same samples added one by one, bit for bit") {
  std::mt19937_64 rng(29);
  std::lognormal_distribution<double> d(std::log(0.05), 2.0);
  std::vector<double> xs;
  for (int i = 0; i < 20000; ++i) {
    const double x = d(rng);
    // mostly fast-path values, with zeros, negatives, rejects and new extremes mixed in
    xs.push_back(i % 97 == 0 ? 0.0 : i % 89 == 0 ? -x : i % 503 == 0 ? std::nan("") : x);
  }
  xs.push_back(1e-200);
  xs.push_back(1e200);
  for (std::size_t split : {std::size_t{0}, std::size_t{1}, std::size_t{31}, std::size_t{7777}}) {
    CAPTURE(split);
    log_histogram one, batch;
    for (double x : xs) one.add(x);
    const auto mid = xs.begin() + static_cast<std::ptrdiff_t>(split);
    const std::size_t taken = batch.add(xs.begin(), mid) + batch.add(mid, xs.end());
    CHECK(taken == one.count());
    CHECK(batch == one);
    CHECK(batch.sum() == one.sum());  // bitwise: the same partial sums in the same order
    CHECK(batch.rejected() == one.rejected());
    CHECK(*batch.quantile(0.99) == *one.quantile(0.99));
  }
  // a copy and a moved-to histogram keep taking the fast path correctly
  log_histogram a;
  for (double x : xs) a.add(x);
  log_histogram b = a;
  log_histogram c = std::move(a);
  for (int i = 0; i < 1000; ++i) {
    const double x = d(rng);
    b.add(x);
    c.add(x);
  }
  CHECK(b == c);
  std::uint64_t total = b.zero_count();
  for (auto k : b.positive_buckets()) total += k.count;
  for (auto k : b.negative_buckets()) total += k.count;
  CHECK(total == b.count());
}
