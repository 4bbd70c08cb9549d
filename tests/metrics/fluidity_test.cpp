// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>
#include <vector>

#include "tokchron/metrics/fluidity.hpp"
#include "tokchron/testing.hpp"

using namespace std::chrono_literals;
using tokchron::fluidity_counter;
using tokchron::fluidity_deadlines;
using tokchron::testing::script;

TEST_CASE("fluidity-index follows Etalon's slack rule token by token") {
  // D_p = 300 ms, D_d = 30 ms (Etalon's TBT default).
  fluidity_counter c(fluidity_deadlines{0.300, 0.030});
  c.token(0.200);  // first token 100 ms early: met, slack 100 ms
  CHECK(c.result().total == 1);
  CHECK(c.slack() == doctest::Approx(0.100));
  c.token(0.050);  // 50 ms <= 30 + 100: met, slack 100 - 20 = 80 ms
  CHECK(c.result().missed == 0);
  CHECK(c.slack() == doctest::Approx(0.080));
  c.token(0.150);  // 150 > 30 + 80: floor((150 - 80) / 30) = 2 missed deadlines, slack reset
  CHECK(c.result().missed == 2);
  CHECK(c.result().total == 4);
  CHECK(c.slack() == 0);
  c.token(0.010);  // met, slack 20 ms
  CHECK(c.result().total == 5);
  CHECK(c.result().index() == doctest::Approx(1 - 2.0 / 5));

  // a late first token misses 1 + floor((gap - D_p) / D_d) deadlines
  fluidity_counter late(fluidity_deadlines{0.300, 0.030});
  late.token(0.400);  // 1 + floor(100 / 30) = 4
  CHECK(late.result().missed == 4);
  CHECK(late.result().total == 4);
  CHECK(late.result().index() == 0);
  CHECK(fluidity_counter(fluidity_deadlines{}).result().index() == 1);
}

TEST_CASE("fluidity of a timeline: chunked tokens share the chunk's time") {
  const fluidity_deadlines d{0.300, 0.030};
  // arrival 0, role chunk, first token at 250 ms, a chunk of 3 at 320 ms, 1 token at 500 ms
  auto tl = script()
                .arrive(0ms)
                .chunk(100ms, 0, tokchron::chunk_kind::empty)
                .chunk(250ms, 1)
                .chunk(320ms, 3)
                .chunk(500ms, 1)
                .finish()
                .timeline();
  const auto r = tokchron::fluidity(tl, d);
  REQUIRE(r);
  // 250: met (slack 50). 320: gap 70 <= 30 + 50, met (slack 10); two more at gap 0: met (slack
  // 40, 70). 500: gap 180 > 30 + 70: floor((180 - 70) / 30) = 3 missed.
  CHECK(r->missed == 3);
  CHECK(r->total == 4 + 3);
  CHECK(*tokchron::fluidity_index(tl, d) == doctest::Approx(1 - 3.0 / 7));
  // no token: undefined
  auto none = script().arrive(0ms).finish(10ms).timeline();
  CHECK(!tokchron::fluidity(none, d));
  CHECK_THROWS_AS((void)tokchron::fluidity(tl, fluidity_deadlines{0, 0.03}), std::invalid_argument);
}

TEST_CASE("fluid token generation rate") {
  // 100 requests: first token exactly at D_p (no slack), then 40 tokens every 20 ms (50 tok/s).
  std::vector<tokchron::testing::scripted_timeline> tls;
  for (int i = 0; i < 100; ++i)
    tls.push_back(script().arrive(0ms).first_token(300ms).tokens(40, 20ms).finish().timeline());
  const auto rate = tokchron::fluid_token_rate(tls, 0.300);
  REQUIRE(rate);
  // at D_d >= 20 ms every deadline is met; just below, every later token misses one
  CHECK(*rate == doctest::Approx(50.0).epsilon(1e-6));

  // One slow request in 100 is tolerated at the 99% share, two are not.
  tls[0] = script().arrive(0ms).first_token(300ms).tokens(40, 100ms).finish().timeline();
  CHECK(*tokchron::fluid_token_rate(tls, 0.300) == doctest::Approx(50.0).epsilon(1e-6));
  tls[1] = tls[0];
  const auto slow = tokchron::fluid_token_rate(tls, 0.300);
  REQUIRE(slow);
  CHECK(*slow == doctest::Approx(10.0).epsilon(1e-6));

  // the returned rate is the edge: fluid just below it, not just above (property check)
  tokchron::fluid_rate_options o;
  auto fluid_share = [&](double r) {
    int ok = 0;
    for (const auto& tl : tls) {
      fluidity_counter c(fluidity_deadlines{0.300, 1.0 / r});
      tokchron::detail::for_each_token_chunk_gap(
          tl, [&](std::uint32_t k, double g) { c.tokens(k, g); });
      if (c.result().index() >= o.min_index) ++ok;
    }
    return ok / 100.0;
  };
  CHECK(fluid_share(*slow * (1 - 1e-6)) >= 0.99);
  CHECK(fluid_share(*slow * (1 + 1e-6)) < 0.99);

  // first tokens that always miss: nothing is fluid
  std::vector<tokchron::testing::scripted_timeline> late;
  for (int i = 0; i < 10; ++i)
    late.push_back(script().arrive(0ms).first_token(2s).tokens(5, 20ms).finish().timeline());
  CHECK(!tokchron::fluid_token_rate(late, 0.300));
  CHECK(!tokchron::fluid_token_rate(std::vector<tokchron::testing::scripted_timeline>{}, 0.3));
}
