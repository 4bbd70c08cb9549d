// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/testing.hpp"

using namespace std::chrono_literals;
namespace tc = tokchron;
using tl_t = tc::testing::scripted_timeline;

namespace {
/// A request sent at `send` with one-token and `second`-token chunks at `c1` and `c2`.
tl_t finished_request(std::chrono::milliseconds send, std::chrono::milliseconds c1,
                      std::chrono::milliseconds c2, std::uint32_t second, std::uint64_t prompt) {
  return tc::testing::script()
      .send(send)
      .chunk(c1, 1)
      .chunk(c2, second)
      .finish()
      .prompt_tokens(prompt)
      .timeline();
}
std::vector<tl_t> two_requests() {
  std::vector<tl_t> tls;
  tls.push_back(finished_request(0ms, 100ms, 200ms, 1, 10));
  tls.push_back(finished_request(100ms, 300ms, 400ms, 3, 20));
  return tls;
}
}  // namespace

TEST_CASE("run_summary: counts, duration, throughput, per GPU and concurrency") {
  tc::summary_options o;
  o.gpus = 2;
  const tc::run_summary s = tc::summarize(two_requests(), tc::profiles::vllm, o);
  CHECK(s.profile == "vllm");
  CHECK(s.requests == 2);
  CHECK(s.completed == 2);
  CHECK(s.failed == 0);
  CHECK(*s.duration == doctest::Approx(0.4).epsilon(1e-12));
  CHECK(*s.request_throughput == doctest::Approx(2 / 0.4).epsilon(1e-12));
  CHECK(*s.output_throughput == doctest::Approx(6 / 0.4).epsilon(1e-12));
  CHECK(*s.total_token_throughput == doctest::Approx(36 / 0.4).epsilon(1e-12));
  CHECK(*s.output_throughput_per_gpu == doctest::Approx(6 / 0.4 / 2).epsilon(1e-12));
  // E2E 0.2 and 0.3 over 0.4 s; both in flight during [0.1, 0.2].
  CHECK(*s.mean_concurrency == doctest::Approx(0.5 / 0.4).epsilon(1e-12));
  CHECK(*s.time_weighted_concurrency == doctest::Approx(0.5 / 0.4).epsilon(1e-12));
  CHECK(s.peak_concurrency == 2);
  CHECK(s.prompt_lengths.count == 2);
  CHECK(*s.prompt_lengths.mean == doctest::Approx(15));
  CHECK(*s.output_lengths.max == doctest::Approx(4));
  CHECK(s.output_rate.count == 2);  // N / E2E: 2/0.2 and 4/0.3
  CHECK(*s.output_rate.max == doctest::Approx(4 / 0.3).epsilon(1e-12));
  CHECK(s.queue_time.count == 0);  // not recorded: no samples, every value empty
  CHECK_FALSE(s.queue_time.mean);
  CHECK_FALSE(s.queue_time.at(50));
  CHECK(s.extra.empty());  // room for goodput / SLA fields
}

TEST_CASE("run_summary: failed requests count for duration and in-flight time only") {
  auto tls = two_requests();
  tls.push_back(tc::testing::script()
                    .send(50ms)
                    .chunk(60ms, 1)
                    .finish(900ms, tc::finish_reason::error)
                    .timeline());
  const auto s = tc::summarize(tls, tc::profiles::canonical);
  CHECK(s.completed == 2);
  CHECK(s.failed == 1);
  CHECK(*s.duration == doctest::Approx(0.9).epsilon(1e-12));
  CHECK(s.ttft.count == 2);
  CHECK(*s.time_weighted_concurrency == doctest::Approx((0.2 + 0.3 + 0.85) / 0.9).epsilon(1e-12));
  CHECK(*s.mean_concurrency == doctest::Approx(0.5 / 0.9).epsilon(1e-12));
  CHECK(s.peak_concurrency == 3);
}

TEST_CASE("run_summary: no requests gives counts of 0 and empty values") {
  const std::vector<tl_t> no_timelines;
  const auto s = tc::summarize(no_timelines, tc::profiles::vllm);
  CHECK(s.requests == 0);
  CHECK_FALSE(s.duration);
  CHECK_FALSE(s.request_throughput);
  CHECK(s.ttft.count == 0);
  REQUIRE(s.ttft.percentiles.size() == 1);  // vllm's default: P99
  CHECK_FALSE(s.ttft.percentiles[0].value);
}

TEST_CASE("run_summary: bad options throw std::invalid_argument") {
  tc::summary_options o;
  o.percentiles = {101};
  CHECK_THROWS_AS(tc::run_summarizer<tl_t>(tc::profiles::vllm, o), std::invalid_argument);
  o.percentiles = {};
  o.gpus = 0;
  CHECK_THROWS_AS(tc::run_summarizer<tl_t>(tc::profiles::vllm, o), std::invalid_argument);
  o.gpus.reset();
  o.duration = -1;
  CHECK_THROWS_AS(tc::run_summarizer<tl_t>(tc::profiles::vllm, o), std::invalid_argument);
  tc::run_summarizer<tl_t> s(tc::profiles::vllm);
  CHECK_THROWS_AS(s.set_duration(0), std::invalid_argument);
}

TEST_CASE("run_summary: percentile lists and keys") {
  CHECK(tc::parse_percentiles("50, 90,99.9") == std::vector<double>{50, 90, 99.9});
  CHECK_THROWS_AS((void)tc::parse_percentiles("50,,90"), std::invalid_argument);
  CHECK_THROWS_AS((void)tc::parse_percentiles("x"), std::invalid_argument);
  CHECK_THROWS_AS((void)tc::parse_percentiles("100.5"), std::invalid_argument);
  CHECK(tc::percentile_key(50) == "p50");
  CHECK(tc::percentile_key(99.9) == "p99.9");
  CHECK(tc::percentile_key(99.99) == "p99.99");
  CHECK(tc::percentile_key(0) == "p0");
}

TEST_CASE("run_summary: radix selection finds the order statistics a full sort gives") {
  // Every rank of several shapes (wide, concentrated, few distinct values, all equal, signed
  // zeros, subnormals, extremes), against std::sort by the same total order.
  std::mt19937_64 rng(7);
  std::normal_distribution<double> wide(0.0, 1e3);
  std::lognormal_distribution<double> itl(std::log(0.02), 0.1);
  std::uniform_int_distribution<int> few(0, 3);
  auto check = [](std::vector<double> v) {
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end(), [](double a, double b) {
      return tc::detail::order_key(a) < tc::detail::order_key(b);
    });
    std::vector<std::size_t> ranks;
    for (std::size_t r = 0; r < v.size(); r += 1 + v.size() / 997) ranks.push_back(r);
    ranks.push_back(v.size() - 1);
    std::vector<double> got(ranks.size());
    tc::detail::select_ranks(v.data(), v.size(), ranks.data(), got.data(), ranks.size());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < ranks.size(); ++i)
      if (std::memcmp(&got[i], &sorted[ranks[i]], sizeof(double)) != 0) ++wrong;
    CHECK(wrong == 0);
  };
  for (std::size_t n : {1u, 2u, 1000u, 40000u, 300000u}) {
    CAPTURE(n);
    std::vector<double> v(n);
    for (double& x : v) x = wide(rng);
    v[0] = 0.0;
    if (n > 2) {
      v[1] = -0.0;
      v[2] = 1e-310;  // subnormal
    }
    check(v);
    for (double& x : v) x = itl(rng);  // ITL-like: most keys share their top 16 bits
    check(v);
    for (double& x : v) x = 0.015 + 0.001 * few(rng);  // few distinct values
    check(v);
    std::fill(v.begin(), v.end(), 0.25);  // one value: every level holds everything
    check(v);
    for (std::size_t i = 0; i < n; ++i) v[i] = i % 2 ? 0.0 : -0.0;
    check(v);
    for (double& x : v) x = wide(rng);
    v[n / 2] = std::numeric_limits<double>::max();
    v[n / 3] = -std::numeric_limits<double>::max();
    check(v);
  }
}

TEST_CASE("run_summary: shared ITL streams diverge correctly") {
  // vllm_legacy and sglang_openai pool the same per-chunk gaps until a first token arrives at
  // the send time (both drop that gap) ... and vllm counts the empty role chunk from the start.
  std::vector<tl_t> tls;
  tls.push_back(tc::testing::script().send(0ms).chunk(10ms, 1).chunk(30ms, 1).finish().timeline());
  tls.push_back(tc::testing::script()
                    .send(0ms)
                    .chunk(5ms, 0, tc::chunk_kind::empty)
                    .chunk(10ms, 1)
                    .chunk(30ms, 2)
                    .finish()
                    .timeline());
  tls.push_back(tc::testing::script().send(0ms).chunk(10ms, 1).chunk(15ms, 1).finish().timeline());
  const std::vector<const tc::profile*> ps{&tc::profiles::vllm_legacy, &tc::profiles::vllm,
                                           &tc::profiles::sglang_native,
                                           &tc::profiles::sglang_openai, &tc::profiles::canonical};
  const auto together = tc::summarize(tls, ps);
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const auto alone = tc::summarize(tls, *ps[i]);
    CAPTURE(ps[i]->name);
    CHECK(together[i].itl.count == alone.itl.count);
    CHECK(together[i].itl.mean == alone.itl.mean);
    CHECK(together[i].itl.at(99) == alone.itl.at(99));
  }
  CHECK(together[1].itl.count == 4);  // vllm: 5 ms role gap, 20 ms; 20 ms; 5 ms
  CHECK(together[2].itl.count == 4);  // sglang_native: 20; 10, 10; 5
}

namespace {
/// Requests of several shapes: an empty role chunk, multi-token chunks, a failure.
std::vector<tl_t> mixed_requests() {
  std::vector<tl_t> tls = two_requests();
  tls.push_back(tc::testing::script()
                    .send(20ms)
                    .chunk(25ms, 0, tc::chunk_kind::empty)
                    .chunk(40ms, 1)
                    .chunk(70ms, 4)
                    .chunk(75ms, 2)
                    .finish()
                    .prompt_tokens(30)
                    .timeline());
  tls.push_back(tc::testing::script()
                    .send(50ms)
                    .chunk(60ms, 1)
                    .finish(900ms, tc::finish_reason::error)
                    .timeline());
  return tls;
}
void check_same(const tc::run_summary& a, const tc::run_summary& b) {
  CHECK(a.profile == b.profile);
  CHECK(a.requests == b.requests);
  CHECK(a.completed == b.completed);
  CHECK(a.inclusion == b.inclusion);
  CHECK(a.output_tokens == b.output_tokens);
  CHECK(a.duration == b.duration);
  CHECK(a.request_throughput == b.request_throughput);
  for (const auto m : {&tc::run_summary::ttft, &tc::run_summary::tpot, &tc::run_summary::itl,
                       &tc::run_summary::e2e}) {
    CHECK((a.*m).count == (b.*m).count);
    CHECK((a.*m).mean == (b.*m).mean);
    CHECK((a.*m).max == (b.*m).max);
    CHECK((a.*m).at(99) == (b.*m).at(99));
  }
}
}  // namespace

TEST_CASE("multi_profile_summarizer: each profile as summarised alone, with its own options") {
  const auto tls = mixed_requests();
  const std::vector<const tc::profile*> ps{&tc::profiles::vllm, &tc::profiles::sglang_openai,
                                           &tc::profiles::vllm_legacy, &tc::profiles::canonical};
  std::vector<tc::summary_options> each(ps.size());
  each[1].inclusion = tc::inclusion_policy::all;
  each[3].inclusion = tc::inclusion_policy::scheduled;
  each[2].percentiles = {50, 99.9};
  tc::multi_profile_summarizer<tl_t> m(ps, each, {});
  REQUIRE(m.size() == ps.size());
  for (const auto& tl : tls) m.add(tl);
  // Moving keeps the summarizers (and the samples they share) in place.
  tc::multi_profile_summarizer<tl_t> moved(std::move(m));
  moved.set_duration(2.5);
  moved.set_benchmark_start(tl_t::time_point{} - 10ms);
  const auto together = moved.take_summaries();
  REQUIRE(together.size() == ps.size());
  for (std::size_t i = 0; i < ps.size(); ++i) {
    CAPTURE(ps[i]->name);
    CHECK(&moved[i].profile_used() == ps[i]);
    tc::run_summarizer<tl_t> alone(*ps[i], each[i]);
    for (const auto& tl : tls) alone.add(tl);
    alone.set_duration(2.5);
    alone.set_benchmark_start(tl_t::time_point{} - 10ms);
    check_same(together[i], alone.take_summary());
    CHECK(*together[i].duration == 2.5);
  }
  CHECK(together[1].inclusion == tc::inclusion_policy::all);
  CHECK(together[2].itl.percentiles.size() == 2);
}

TEST_CASE("multi_profile_summarizer: fed per profile from two threads, as add feeds it") {
  const auto tls = mixed_requests();
  std::vector<const tc::profile*> ps;
  for (const tc::profile* p : tc::all_profiles()) ps.push_back(p);
  tc::multi_profile_summarizer<tl_t> serial(ps);
  for (const auto& tl : tls) serial.add(tl);
  // The profiles that pool ITL samples (they may share them) on one thread, the others on
  // another, each in index order.
  tc::multi_profile_summarizer<tl_t> split(ps);
  auto feed = [&](bool pooled) {
    for (const auto& tl : tls)
      for (std::size_t i = 0; i < split.size(); ++i)
        if (tc::pools_samples(split[i].profile_used().itl) == pooled) split[i].add(tl);
  };
  std::thread other(feed, false);
  feed(true);
  other.join();
  const auto a = serial.take_summaries(), b = split.take_summaries();
  for (std::size_t i = 0; i < ps.size(); ++i) {
    CAPTURE(ps[i]->name);
    check_same(a[i], b[i]);
  }
}

TEST_CASE("multi_profile_summarizer: bad options are refused") {
  const std::vector<const tc::profile*> ps{&tc::profiles::vllm, &tc::profiles::canonical};
  using multi = tc::multi_profile_summarizer<tl_t>;
  CHECK_THROWS_AS(multi(ps, std::vector<tc::summary_options>(1), {}), std::invalid_argument);
  CHECK_THROWS_AS(multi({&tc::profiles::vllm, nullptr}), std::invalid_argument);
  tc::summary_options bad;
  bad.percentiles = {101};
  CHECK_THROWS_AS(multi(ps, bad), std::invalid_argument);
  CHECK(multi(std::vector<const tc::profile*>{}).take_summaries().empty());
}

TEST_CASE("run_summary: keep_requests keeps every profiled request") {
  tc::summary_options o;
  o.keep_requests = true;
  const auto s = tc::summarize(two_requests(), tc::profiles::vllm, o);
  REQUIRE(s.requests_detail.size() == 2);
  CHECK(s.requests_detail[1].output_tokens == 4);
  CHECK(*s.requests_detail[0].ttft == doctest::Approx(0.1).epsilon(1e-12));
}

TEST_SUITE("concurrency") {
  TEST_CASE("run_summary: distributions computed on several threads equal one thread's") {
    // 3000 requests of random shape, every profile: more than 32768 pooled ITL samples, so the
    // radix selection runs its counting levels; the TTFT distribution is checked against
    // exact_quantiles, which sorts.
    std::mt19937_64 rng(11);
    std::uniform_int_distribution<int> us(1, 40000), tokens(1, 3), chunks(1, 40);
    std::vector<tl_t> tls;
    for (int r = 0; r < 3000; ++r) {
      auto s = tc::testing::script();
      auto t = std::chrono::microseconds(r * 1000);
      s.send(t);
      t += std::chrono::microseconds(us(rng)) * 5;
      if (r % 7 == 0) s.chunk(t, 0, tc::chunk_kind::empty);
      for (int c = chunks(rng); c > 0; --c) {
        s.chunk(t, static_cast<std::uint32_t>(tokens(rng)));
        t += std::chrono::microseconds(us(rng));
      }
      tls.push_back(s.finish().timeline());
    }
    std::vector<const tc::profile*> ps;
    for (const tc::profile* p : tc::all_profiles()) ps.push_back(p);
    tc::summary_options o;
    o.percentiles = {0, 1, 50, 90, 99, 99.9, 100};
    o.keep_requests = true;
    const auto one = tc::summarize(tls, ps, o);
    // An executor that runs every task on a thread of its own, all at once.
    std::size_t tasks = 0;
    o.executor = [&tasks](std::size_t n, const std::function<void(std::size_t)>& task) {
      std::vector<std::thread> pool;
      for (std::size_t i = 0; i < n; ++i) pool.emplace_back(task, i);
      for (auto& t : pool) t.join();
      tasks = n;
    };
    const auto three = tc::summarize(tls, ps, o);
    CHECK(tasks > 1);  // the distinct sample sets ran concurrently
    auto same = [](const tc::distribution& a, const tc::distribution& b) {
      CHECK(a.count == b.count);
      CHECK(a.mean == b.mean);
      CHECK(a.median == b.median);
      CHECK(a.stddev == b.stddev);
      CHECK(a.min == b.min);
      CHECK(a.max == b.max);
      REQUIRE(a.percentiles.size() == b.percentiles.size());
      for (std::size_t i = 0; i < a.percentiles.size(); ++i)
        CHECK(a.percentiles[i].value == b.percentiles[i].value);
    };
    for (std::size_t i = 0; i < ps.size(); ++i) {
      CAPTURE(ps[i]->name);
      same(one[i].ttft, three[i].ttft);
      same(one[i].tpot, three[i].tpot);
      same(one[i].itl, three[i].itl);
      same(one[i].e2e, three[i].e2e);
      same(one[i].output_lengths, three[i].output_lengths);
      tc::exact_quantiles<double> q;
      for (const auto& r : one[i].requests_detail)
        if (r.completed && r.ttft) q.add(*r.ttft);
      same(one[i].ttft, tc::make_distribution(q, *ps[i], o.percentiles, true));  // a latency
    }
    CHECK(one[0].itl.count > 32768);
  }
}

TEST_CASE("run_summary: per-token ITL stored as runs gives the expanded samples' statistics") {
  // Random requests with chunks of 1..60 tokens, under the per-token grains (canonical keeps the
  // first chunk's extra tokens as zeros, sglang_native splits every gap): the summary, which
  // stores a k-token chunk as one run (value, k), must give exactly the order statistics of the
  // samples expanded one per token, and their mean and std to rounding.
  std::mt19937_64 rng(7);
  std::vector<tl_t> tls;
  for (int r = 0; r < 300; ++r) {
    auto s = tc::testing::script().send(std::chrono::milliseconds(r));
    auto t = std::chrono::milliseconds(r + 10);
    const int chunks = 1 + static_cast<int>(rng() % 8);
    for (int c = 0; c < chunks; ++c) {
      t += std::chrono::milliseconds(1 + rng() % 30);
      s.chunk(t, static_cast<std::uint32_t>(rng() % 3 == 0 ? 1 + rng() % 60 : 1));
    }
    tls.push_back(s.finish().timeline());
  }
  for (const tc::profile* p : {&tc::profiles::canonical, &tc::profiles::sglang_native}) {
    CAPTURE(p->name);
    tc::summary_options o;
    o.percentiles = {0, 1, 10, 25, 50, 75, 90, 99, 99.9, 100};
    const tc::run_summary s = tc::summarize(tls, *p, o);
    std::vector<double> expanded;  // one sample per token (a one-argument sink)
    for (const auto& tl : tls)
      (void)tc::evaluate(*p, tl, [&](double g) noexcept { expanded.push_back(g); });
    const tc::distribution d = tc::make_distribution(expanded, *p, o.percentiles);
    REQUIRE(s.itl.count == d.count);
    CHECK(s.itl.count > 1000);
    CHECK(*s.itl.min == *d.min);
    CHECK(*s.itl.max == *d.max);
    CHECK(*s.itl.median == *d.median);
    for (double pc : o.percentiles) CHECK(*s.itl.at(pc) == *d.at(pc));
    CHECK(*s.itl.mean == doctest::Approx(*d.mean).epsilon(1e-12));
    CHECK(*s.itl.stddev == doctest::Approx(*d.stddev).epsilon(1e-9));
  }
}
