// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <chrono>
#include <numeric>
#include <vector>

#include "tokchron/metrics/canonical.hpp"
#include "tokchron/testing.hpp"

using namespace std::chrono_literals;
using tokchron::chunk_kind;
using tokchron::finish_reason;
using tokchron::testing::script;

namespace {
std::vector<double> itl_per_token(const tokchron::testing::scripted_timeline& tl) {
  std::vector<double> v;
  tokchron::for_each_itl_per_token(tl, [&](auto g) { v.push_back(tokchron::to_seconds(g)); });
  return v;
}
std::vector<double> itl_per_chunk(const tokchron::testing::scripted_timeline& tl) {
  std::vector<double> v;
  tokchron::for_each_itl_per_chunk(tl, [&](auto g) { v.push_back(tokchron::to_seconds(g)); });
  return v;
}
}  // namespace

TEST_CASE("the one-line script: arrive 0, first token 120 ms, 10 tokens every 20 ms") {
  const auto tl = script().arrive(0ms).first_token(120ms).tokens(10, 20ms).finish().timeline();
  const auto m = tokchron::canonical_metrics(tl);
  CHECK(*m.ttft == doctest::Approx(0.120));
  CHECK(m.output_tokens == 11);
  CHECK(*m.tpot == doctest::Approx(0.020));
  CHECK(*m.e2e == doctest::Approx(0.320));
  CHECK(*m.decode_time == doctest::Approx(0.200));
  CHECK(*m.normalized_latency == doctest::Approx(0.320 / 11));
  CHECK(*m.output_rate == doctest::Approx(11 / 0.320));
  CHECK(!m.queue_time);  // never scheduled: no queue or prefill time, not a silent 0
  CHECK(!m.prefill_time);
  CHECK(itl_per_token(tl).size() == 10);
}

TEST_CASE("a 1-token response: TPOT is undefined, never 0") {
  const auto tl = script().arrive(0ms).first_token(50ms).finish(60ms).timeline();
  CHECK(tokchron::ttft(tl) == 50ms);
  CHECK(!tokchron::tpot(tl));
  CHECK(tokchron::decode_time(tl) == 0ms);
  CHECK(itl_per_token(tl).empty());
  CHECK(itl_per_chunk(tl).empty());
  CHECK(*tokchron::e2e(tl) == 60ms);
}

TEST_CASE("no tokens at all: only E2E is defined") {
  const auto tl = script().arrive(0ms).chunk(5ms, 0, chunk_kind::empty).finish(9ms).timeline();
  CHECK(!tokchron::ttft(tl));
  CHECK(!tokchron::tpot(tl));
  CHECK(!tokchron::decode_time(tl));
  CHECK(!tokchron::normalized_latency(tl));
  CHECK(!tokchron::output_rate(tl));
  CHECK(tokchron::e2e(tl) == 9ms);
}

TEST_CASE("a chunk carrying several tokens") {
  // tokens: 1 at 100 ms, 3 at 160 ms, 2 at 180 ms -> N = 6
  const auto tl =
      script().arrive(0ms).chunk(100ms, 1).chunk(160ms, 3).chunk(180ms, 2).finish().timeline();
  CHECK(tl.output_tokens() == 6);
  CHECK(tokchron::tpot(tl)->count() == doctest::Approx(80e6 / 5));  // ns
  const auto per_token = itl_per_token(tl);
  REQUIRE(per_token.size() == 5);  // N - 1
  CHECK(per_token[0] == doctest::Approx(0.020));
  CHECK(per_token[2] == doctest::Approx(0.020));
  CHECK(per_token[3] == doctest::Approx(0.010));
  CHECK(per_token[4] == doctest::Approx(0.010));
  const auto per_chunk = itl_per_chunk(tl);
  REQUIRE(per_chunk.size() == 2);  // one sample per gap, whatever it carried
  CHECK(per_chunk[0] == doctest::Approx(0.060));
  CHECK(per_chunk[1] == doctest::Approx(0.020));
}

TEST_CASE("per-token ITL: N - 1 samples whose sum is decode time and whose mean is TPOT") {
  // the first token chunk carries 4 tokens: its 3 extra tokens arrive with no gap
  const auto tl =
      script().arrive(0ms).chunk(90ms, 4).chunk(130ms, 2).chunk(135ms, 1).finish().timeline();
  const auto v = itl_per_token(tl);
  REQUIRE(v.size() == tl.output_tokens() - 1);
  CHECK(v[0] == 0.0);
  CHECK(v[2] == 0.0);
  const double sum = std::accumulate(v.begin(), v.end(), 0.0);
  CHECK(sum == doctest::Approx(tokchron::to_seconds(*tokchron::decode_time(tl))));
  CHECK(sum / static_cast<double>(v.size()) ==
        doctest::Approx(tokchron::to_seconds(*tokchron::tpot(tl))));
}

TEST_CASE("an empty role chunk does not count as the first token") {
  const auto tl = script()
                      .arrive(0ms)
                      .chunk(30ms, 0, chunk_kind::empty)
                      .chunk(80ms, 1)
                      .chunk(100ms, 1)
                      .finish()
                      .timeline();
  CHECK(tokchron::ttft(tl) == 80ms);
  CHECK(itl_per_chunk(tl) == std::vector<double>{tokchron::to_seconds(20ms)});
}

TEST_CASE("a trailing usage-only chunk ends E2E but not decode") {
  const auto tl = script()
                      .arrive(0ms)
                      .chunk(100ms, 1)
                      .chunk(120ms, 1)
                      .chunk(140ms, 1)
                      .chunk(190ms, 0, chunk_kind::usage)
                      .chunk(191ms, 0, chunk_kind::done)
                      .finish(191ms)
                      .timeline();
  CHECK(tokchron::e2e(tl) == 191ms);
  CHECK(tokchron::decode_time(tl) == 40ms);
  CHECK(tokchron::tpot(tl)->count() == doctest::Approx(20e6));
  CHECK(tl.store().chunk_count() == 5);
  CHECK(tl.store().token_chunk_count() == 3);
}

TEST_CASE("a failed request keeps its metrics and is not a success") {
  const auto tl = script()
                      .arrive(0ms)
                      .chunk(100ms, 1)
                      .chunk(150ms, 1)
                      .finish(200ms, finish_reason::error)
                      .timeline();
  CHECK(!tl.succeeded());
  const auto m = tokchron::canonical_metrics(tl);
  CHECK(!m.succeeded);
  CHECK(*m.ttft == doctest::Approx(0.1));
  CHECK(*m.e2e == doctest::Approx(0.2));
}

TEST_CASE("a rejected request: E2E only") {
  const auto tl = script().arrive(0ms).queued(0ms).finish(2s, finish_reason::rejected).timeline();
  CHECK(!tl.succeeded());
  CHECK(tokchron::e2e(tl) == 2s);
  CHECK(!tokchron::queue_time(tl));
  CHECK(!tokchron::ttft(tl));
}

TEST_CASE("TTFT of exactly 0 is a value, not 'not measured'") {
  const auto tl = script().arrive(10ms).chunk(10ms, 1).chunk(30ms, 1).finish().timeline();
  REQUIRE(tokchron::ttft(tl).has_value());
  CHECK(*tokchron::ttft(tl) == 0ms);
  CHECK(tokchron::tpot(tl)->count() == doctest::Approx(20e6));
}

TEST_CASE("queue time falls back to arrival when queueing was not recorded") {
  const auto a = script().arrive(0ms).scheduled(30ms).chunk(50ms, 1).finish().timeline();
  CHECK(tokchron::queue_time(a) == 30ms);
  const auto b =
      script().arrive(0ms).queued(10ms).scheduled(30ms).chunk(50ms, 1).finish().timeline();
  CHECK(tokchron::queue_time(b) == 20ms);
  CHECK(tokchron::prefill_time(b) == 20ms);
}

TEST_CASE("the timeline's duration type is kept") {
  const auto tl = script().arrive(0ms).chunk(7ns, 1).finish().timeline();
  static_assert(
      std::is_same_v<decltype(tokchron::ttft(tl)), std::optional<std::chrono::nanoseconds>>);
  static_assert(std::is_same_v<decltype(tokchron::tpot(tl)),
                               std::optional<std::chrono::duration<double, std::nano>>>);
  CHECK(*tokchron::ttft(tl) == 7ns);
}
