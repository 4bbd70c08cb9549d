// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include "tokchron/metrics/profiles.hpp"
#include "tokchron/testing.hpp"

using namespace std::chrono_literals;
namespace tc = tokchron;

TEST_CASE("profiles: every built-in profile is found by name") {
  for (const tc::profile* p : tc::all_profiles()) {
    REQUIRE(tc::find_profile(p->name) == p);
    CHECK(!p->description.empty());
  }
  CHECK(tc::find_profile("nope") == nullptr);
}

TEST_CASE("profiles: vllm counts an empty role chunk, legacy vllm skips it") {
  const auto tl = tc::testing::script()
                      .send(0ms)
                      .chunk(100ms, 0, tc::chunk_kind::empty)
                      .chunk(120ms, 1)
                      .chunk(150ms, 3)
                      .chunk(170ms, 1)
                      .chunk(180ms, 0, tc::chunk_kind::usage)
                      .finish(180ms)
                      .timeline();
  std::vector<double> itl;
  const auto v = tc::evaluate(tc::profiles::vllm, tl, [&](double g) noexcept { itl.push_back(g); });
  CHECK(*v.ttft == doctest::Approx(0.100).epsilon(1e-12));
  CHECK(*v.e2el == doctest::Approx(0.170).epsilon(1e-12));
  REQUIRE(itl.size() == 3);
  const auto l = tc::evaluate(tc::profiles::vllm_legacy, tl);
  CHECK(*l.ttft == doctest::Approx(0.120).epsilon(1e-12));
}
