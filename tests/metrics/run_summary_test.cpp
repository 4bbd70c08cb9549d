// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>
#include <vector>

#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/testing.hpp"

using namespace std::chrono_literals;
namespace tc = tokchron;
using tl_t = tc::testing::scripted_timeline;

namespace {
std::vector<tl_t> two_requests() {
  std::vector<tl_t> tls;
  tls.push_back(tc::testing::script()
                    .send(0ms)
                    .chunk(100ms, 1)
                    .chunk(200ms, 1)
                    .finish()
                    .prompt_tokens(10)
                    .timeline());
  tls.push_back(tc::testing::script()
                    .send(100ms)
                    .chunk(300ms, 1)
                    .chunk(400ms, 3)
                    .finish()
                    .prompt_tokens(20)
                    .timeline());
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
  CHECK(s.user_output_rate.count == 2);  // N / E2E: 2/0.2 and 4/0.3
  CHECK(*s.user_output_rate.max == doctest::Approx(4 / 0.3).epsilon(1e-12));
  CHECK(s.queue.count == 0);  // not recorded: no samples, every value empty
  CHECK_FALSE(s.queue.mean);
  CHECK_FALSE(s.queue.at(50));
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
  const std::vector<tl_t> none;
  const auto s = tc::summarize(none, tc::profiles::vllm);
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

TEST_CASE("run_summary: the radix sort orders like std::sort") {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> d(0.0, 1e3);
  std::vector<double> v(20000);
  for (double& x : v) x = d(rng);
  v[5] = 0.0;
  v[6] = -0.0;
  v[7] = 1e-310;  // subnormal
  std::vector<double> w = v;
  tc::detail::sort_samples(v);
  std::sort(w.begin(), w.end());
  CHECK(v == w);
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

TEST_CASE("run_summary: keep_requests keeps every profiled request") {
  tc::summary_options o;
  o.keep_requests = true;
  const auto s = tc::summarize(two_requests(), tc::profiles::vllm, o);
  REQUIRE(s.requests_detail.size() == 2);
  CHECK(s.requests_detail[1].output_tokens == 4);
  CHECK(*s.requests_detail[0].ttft == doctest::Approx(0.1).epsilon(1e-12));
}
