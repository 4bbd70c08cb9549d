// SPDX-License-Identifier: MIT
// log_histogram's batch insert, quantile walk and merge (issue 23's faster paths) against their
// plain definitions: add(first, last) against the same add(x) calls, bit for bit; quantile(q)
// against the sorted order statistics read off the public bucket list; merge against one
// stream.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <forward_list>
#include <limits>
#include <random>
#include <vector>

#include "tokchron/quantile/exact.hpp"
#include "tokchron/quantile/log_histogram.hpp"

using tokchron::log_histogram;
using tokchron::quantile_method;

namespace {
// The four shapes the benchmarks time, plus a wide two-sided one.
std::vector<double> shape_data(int shape, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> v(n);
  std::lognormal_distribution<double> logn(std::log(0.05), 0.5);
  std::lognormal_distribution<double> fast(std::log(0.02), 0.3), slow(std::log(0.4), 0.3);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (double& x : v) {
    switch (shape) {
      case 0: x = logn(rng); break;
      case 1: x = u(rng) < 0.3 ? slow(rng) : fast(rng); break;
      case 2: x = 0.01 / std::pow(1.0 - u(rng), 1.0 / 1.5); break;
      default: x = (u(rng) < 0.3 ? -1.0 : 1.0) * std::exp(20 * (u(rng) - 0.5)); break;
    }
  }
  if (shape == 0 && seed % 2 == 0) std::sort(v.begin(), v.end());
  return v;
}

std::uint64_t bits(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
// Everything a histogram records, compared bit for bit (sum, min and max included).
void check_same(const log_histogram& a, const log_histogram& b) {
  CHECK(a == b);
  CHECK(a.count() == b.count());
  CHECK(a.rejected() == b.rejected());
  CHECK(bits(a.min().value_or(0.0)) == bits(b.min().value_or(0.0)));
  CHECK(bits(a.max().value_or(0.0)) == bits(b.max().value_or(0.0)));
  CHECK(bits(a.sum()) == bits(b.sum()));
  CHECK(a.serialize() == b.serialize());
}

// The k-th smallest sample as the class comment defines the answer: min for rank 0, max for
// rank n - 1, otherwise the representative of the bucket holding rank k, clamped to [min, max].
double reference_at_rank(const log_histogram& h, std::uint64_t k) {
  const double mn = *h.min(), mx = *h.max();
  if (k == 0) return mn;
  if (k + 1 >= h.count()) return mx;
  auto clamp = [&](double v) { return std::min(std::max(v, mn), mx); };
  std::vector<log_histogram::bucket> neg(h.negative_buckets().begin(), h.negative_buckets().end());
  std::uint64_t seen = 0;
  for (auto it = neg.rbegin(); it != neg.rend(); ++it) {
    seen += it->count;
    if (k < seen) return clamp(-h.bucket_value(it->index));
  }
  seen += h.zero_count();
  if (k < seen) return clamp(0.0);
  for (auto b : h.positive_buckets()) {
    seen += b.count;
    if (k < seen) return clamp(h.bucket_value(b.index));
  }
  return mx;
}
struct reference_reader {
  const log_histogram* h;
  double operator[](std::ptrdiff_t i) const {
    return reference_at_rank(*h, static_cast<std::uint64_t>(i));
  }
};
}  // namespace

TEST_CASE("log_histogram batch: equal to add(x) bit for bit, every block boundary and shape") {
  for (int scale : {-2, 0, 6, 12}) {
    for (int shape = 0; shape < 4; ++shape) {
      for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{31}, std::size_t{32},
                            std::size_t{33}, std::size_t{63}, std::size_t{64}, std::size_t{65},
                            std::size_t{1000}, std::size_t{5001}}) {
        CAPTURE(scale);
        CAPTURE(shape);
        CAPTURE(n);
        const std::vector<double> xs = shape_data(shape, n, n * 4 + static_cast<unsigned>(shape));
        log_histogram one = log_histogram::with_scale(scale);
        log_histogram batch = log_histogram::with_scale(scale);
        for (double x : xs) one.add(x);
        // in pieces of every length 1..70, so blocks start and end everywhere
        std::size_t at = 0, piece = 1;
        std::size_t taken = 0;
        while (at < xs.size()) {
          const std::size_t e = std::min(xs.size(), at + piece);
          taken += batch.add(xs.data() + at, xs.data() + e);
          at = e;
          piece = piece % 70 + 1;
        }
        CHECK(taken == one.count());
        check_same(batch, one);
      }
    }
  }
}

TEST_CASE("log_histogram batch: forward iterators, other value types, rejects and zeros") {
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> d(std::log(0.05), 1.0);
  std::vector<double> xs;
  for (int i = 0; i < 3000; ++i) {
    const double x = d(rng);
    xs.push_back(i % 41 == 0   ? std::numeric_limits<double>::infinity()
                 : i % 37 == 0 ? 0.0
                 : i % 31 == 0 ? -x
                 : i % 29 == 0 ? std::nan("")
                               : x);
  }
  log_histogram one = log_histogram::with_scale(6, 1e-9);
  for (double x : xs) one.add(x);
  const std::forward_list<double> list(xs.begin(), xs.end());
  log_histogram from_list = log_histogram::with_scale(6, 1e-9);
  CHECK(from_list.add(list.begin(), list.end()) == one.count());
  check_same(from_list, one);
  CHECK(from_list.rejected() == one.rejected());

  std::vector<float> fs;
  for (int i = 0; i < 3000; ++i) fs.push_back(static_cast<float>(d(rng)));
  log_histogram f_one, f_batch;
  for (float x : fs) f_one.add(static_cast<double>(x));
  CHECK(f_batch.add(fs.begin(), fs.end()) == fs.size());
  check_same(f_batch, f_one);
}

TEST_CASE("log_histogram batch: a counter filling up inside a block widens as add(x) does") {
  // 70000 samples of one value pass a 16-bit counter in the middle of a block; values in
  // other buckets around it go on counting.
  std::vector<double> xs(70000, 1.5);
  for (std::size_t i = 0; i < xs.size(); i += 13) xs[i] = 2.5 + static_cast<double>(i % 7);
  log_histogram one, batch;
  for (double x : xs) one.add(x);
  CHECK(batch.add(xs.begin(), xs.end()) == xs.size());
  check_same(batch, one);
  CHECK(batch.positive_buckets().count_at(batch.index_of(1.5)) ==
        static_cast<std::uint64_t>(std::count(xs.begin(), xs.end(), 1.5)));
}

TEST_CASE("log_histogram quantile: equals the order statistics read off the bucket list") {
  // From either end of the walk, at every rank the q grid reaches, for every method; tails
  // included, and with negative samples and zeros.
  for (int shape = 0; shape < 4; ++shape) {
    for (double threshold : {0.0, 1e-3}) {
      CAPTURE(shape);
      CAPTURE(threshold);
      log_histogram h(0.01, threshold);
      for (double x : shape_data(shape, 20000, 11 + static_cast<unsigned>(shape))) h.add(x);
      for (int i = 0; i < 50; ++i) h.add(0.0);
      const auto n = static_cast<std::size_t>(h.count());
      for (quantile_method m :
           {quantile_method::linear, quantile_method::lower, quantile_method::nearest_rank}) {
        for (int i = 0; i <= 2000; ++i) {
          const double q = i / 2000.0;
          CAPTURE(q);
          const double want = tokchron::detail::sorted_quantile(reference_reader{&h}, n, q, m);
          CHECK(*h.quantile(q, m) == want);
        }
        for (double q : {1e-9, 1e-4, 0.001, 0.999, 0.9999, 1 - 1e-9}) {
          const double want = tokchron::detail::sorted_quantile(reference_reader{&h}, n, q, m);
          CHECK(*h.quantile(q, m) == want);
        }
      }
    }
  }
}

TEST_CASE("log_histogram merge: 8 shards of every width give the one-stream histogram") {
  // Shards with 16-, 32- and 64-bit counters, windows that overhang each other, merged in
  // both orders into a fresh histogram.
  std::vector<log_histogram> shards(8);
  log_histogram all;
  for (std::size_t k = 0; k < shards.size(); ++k) {
    const std::vector<double> xs = shape_data(static_cast<int>(k % 4), 20000, 40 + k);
    for (double x : xs) {
      shards[k].add(x);
      all.add(x);
    }
    if (k % 3 == 1)
      for (int i = 0; i < 70000; ++i) {
        shards[k].add(0.05 * static_cast<double>(k + 1));
        all.add(0.05 * static_cast<double>(k + 1));
      }
  }
  log_histogram forward, backward;
  for (const auto& s : shards) forward.merge(s);
  for (auto it = shards.rbegin(); it != shards.rend(); ++it) backward.merge(*it);
  for (const log_histogram* m : {&forward, &backward}) {
    CHECK(m->count() == all.count());
    CHECK(*m->min() == *all.min());
    CHECK(*m->max() == *all.max());
    CHECK(m->zero_count() == all.zero_count());
    std::vector<log_histogram::bucket> want(all.positive_buckets().begin(),
                                            all.positive_buckets().end());
    std::vector<log_histogram::bucket> got(m->positive_buckets().begin(),
                                           m->positive_buckets().end());
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      CHECK(got[i].index == want[i].index);
      CHECK(got[i].count == want[i].count);
    }
    std::vector<log_histogram::bucket> wn(all.negative_buckets().begin(),
                                          all.negative_buckets().end());
    std::vector<log_histogram::bucket> gn(m->negative_buckets().begin(),
                                          m->negative_buckets().end());
    CHECK(gn.size() == wn.size());
    for (double q : {0.0, 0.01, 0.5, 0.99, 1.0}) CHECK(*m->quantile(q) == *all.quantile(q));
  }
}

TEST_CASE("log_histogram merge: a sum that passes the counter width widens, losing nothing") {
  // Both sides have 16-bit counters; 40000 + 40000 in one positive bucket wraps the first
  // adding pass, which is undone (the negative side, which fitted, too) before widening.
  log_histogram a, b, one;
  for (int i = 0; i < 40000; ++i) {
    for (double x : {1.5, -2.0}) {
      a.add(x);
      one.add(x);
    }
    for (double x : {1.5, -3.0}) {
      b.add(x);
      one.add(x);
    }
  }
  for (int order = 0; order < 2; ++order) {
    CAPTURE(order);
    log_histogram m = order == 0 ? a : b;
    m.merge(order == 0 ? b : a);
    CHECK(m.count() == one.count());
    CHECK(m.positive_buckets().count_at(m.index_of(1.5)) == 80000);
    CHECK(m.negative_buckets().count_at(m.index_of(-2.0)) == 40000);
    CHECK(m.negative_buckets().count_at(m.index_of(-3.0)) == 40000);
    CHECK(m.negative_buckets().size() == 2);
    CHECK(m.positive_buckets().size() == 1);
    CHECK(*m.min() == -3.0);
    CHECK(*m.max() == 1.5);
    for (double q : {0.0, 0.3, 0.5, 0.7, 1.0}) CHECK(*m.quantile(q) == *one.quantile(q));
  }
}
