// SPDX-License-Identifier: MIT
// The sim with its default constants against every published measurement of
// tests/data/published_points.txt (sources cited there): every ratio sim / published within
// [0.67, 1.5] and the RMS of the log ratios at most 0.15 (the acceptance bounds of the cost
// model, docs/tools/executor.md "Fitting the defaults").
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "published_points.hpp"

using namespace batching;

TEST_CASE("sim: every published point within [0.67, 1.5], RMS log ratio <= 0.15") {
  const std::string file = std::string(BX_TEST_DATA) + "/published_points.txt";
  std::ifstream in(file);
  REQUIRE(in);
  const auto pts = read_published_points(in, file);
  REQUIRE(pts.size() == 23);
  double sum = 0;
  for (const auto& p : pts) {
    const double r = simulate_point(p, {}) / p.value;
    CAPTURE(p.id);
    CAPTURE(r);
    CHECK(r >= 0.67);
    CHECK(r <= 1.5);
    sum += std::log(r) * std::log(r);
  }
  const double rms = std::sqrt(sum / double(pts.size()));
  CAPTURE(rms);
  CHECK(rms <= 0.15);
}

TEST_CASE("published points: a malformed line names its line and field") {
  std::istringstream bad("# comment\nR1 | ttft_mean | fast | src | --users 1\n");
  CHECK_THROWS_WITH_AS((void)read_published_points(bad, "p.txt"),
                       doctest::Contains("p.txt:2: field 'value'"), std::invalid_argument);
  std::istringstream metric("R1 | p99_ttft | 1 | src | --users 1\n");
  CHECK_THROWS_WITH_AS((void)read_published_points(metric, "p.txt"),
                       doctest::Contains("field 'metric'"), std::invalid_argument);
}
