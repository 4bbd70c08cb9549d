// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/testing.hpp"

using namespace std::chrono_literals;
namespace tc = tokchron;

TEST_CASE("run_summary: counts, duration and throughput of two requests") {
  std::vector<tc::testing::scripted_timeline> tls;
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
  const tc::run_summary s = tc::summarize(tls, tc::profiles::vllm);
  CHECK(s.completed == 2);
  CHECK(*s.duration == doctest::Approx(0.4).epsilon(1e-12));
  CHECK(*s.output_throughput == doctest::Approx(6 / 0.4).epsilon(1e-12));
  CHECK(*s.total_token_throughput == doctest::Approx(36 / 0.4).epsilon(1e-12));
  CHECK(s.peak_concurrency == 2);
}
