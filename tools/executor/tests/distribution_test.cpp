// SPDX-License-Identifier: MIT
// Length and think-time distributions: parsing, errors, seeded draws, trace files; the open-loop
// arrival rate.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include "distribution.hpp"
#include "engine.hpp"
#include "loadgen.hpp"
#include "sim_backend.hpp"

using namespace batching;

namespace {
// Sample mean of n draws; checked against the exact mean within 5 standard errors.
double sample_mean(const distribution& d, int n, double* sd = nullptr) {
  rng r(42);
  double s = 0, s2 = 0;
  for (int i = 0; i < n; ++i) {
    const double x = d.sample(r);
    s += x;
    s2 += x * x;
  }
  if (sd) *sd = std::sqrt(s2 / n - (s / n) * (s / n));
  return s / n;
}
}  // namespace

TEST_CASE("distribution: every kind draws around its mean") {
  const int n = 20000;
  struct c {
    const char* spec;
    quantity q;
    double mean, sd;
  } cases[] = {{"300", quantity::prompt_length, 300, 0},
               {"uniform:75,225", quantity::output_length, 150, std::sqrt((151.0 * 151 - 1) / 12)},
               {"normal:300,90", quantity::prompt_length, 300, 90},
               {"lognormal:150,60", quantity::output_length, 150, 60},
               {"exp:25", quantity::seconds, 25, 25},
               {"exp:500ms", quantity::seconds, 0.5, 0.5}};
  for (const auto& k : cases) {
    CAPTURE(k.spec);
    const distribution d = distribution::parse(k.spec, k.q);
    CHECK(d.mean() == doctest::Approx(k.mean));
    double sd = 0;
    const double m = sample_mean(d, n, &sd);
    CHECK(std::abs(m - k.mean) <= 5 * k.sd / std::sqrt(double(n)) + 0.5);  // + rounding
    if (k.sd > 0) CHECK(sd == doctest::Approx(k.sd).epsilon(0.05));
  }
  rng r(1);
  const distribution u = distribution::parse("uniform:75,225", quantity::output_length);
  for (int i = 0; i < 2000; ++i) {
    const double x = u.sample(r);
    CHECK(x >= 75);
    CHECK(x <= 225);
    CHECK(x == std::floor(x));
  }
  const distribution tight = distribution::parse("normal:2,5", quantity::prompt_length);
  for (int i = 0; i < 2000; ++i) CHECK(tight.sample(r) >= 1);  // redrawn below 1 token
}

TEST_CASE("distribution: bad specs name the problem") {
  auto msg = [](const char* spec, quantity q) {
    try {
      (void)distribution::parse(spec, q);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(msg("normal:300", quantity::prompt_length).find("expected 2 numbers") != std::string::npos);
  CHECK(msg("gauss:3,1", quantity::prompt_length).find("unknown kind 'gauss'") !=
        std::string::npos);
  CHECK(msg("uniform:9,3", quantity::prompt_length).find("a <= b") != std::string::npos);
  CHECK(msg("0", quantity::prompt_length).find("at least 1") != std::string::npos);
  CHECK(msg("12.5", quantity::output_length).find("integer") != std::string::npos);
  CHECK(msg("exp:x", quantity::seconds).find("not a number") != std::string::npos);
  CHECK(parse_seconds("500ms") == doctest::Approx(0.5));
  CHECK_THROWS_AS((void)parse_seconds("5 minutes"), std::invalid_argument);
}

TEST_CASE("distribution: trace files, plain and tokchron JSONL, errors name line and field") {
  const std::string plain = "bx_lengths.txt", jsonl = "bx_trace.jsonl", bad = "bx_bad.jsonl";
  {
    std::ofstream(plain) << "# lengths\n100\n\n200\n";
    std::ofstream(jsonl) << R"({"send":0,"prompt_tokens":30,"chunks":[[0.1,1],[0.2,2]]})" << '\n'
                         << R"({"send":1,"prompt_tokens":50,"chunks":[],"usage_output_tokens":7})"
                         << '\n';
    std::ofstream(bad) << R"({"send":0,"prompt_tokens":30,"chunks":[]})" << '\n'
                       << R"({"send":0,"prompt_tokens":-3,"chunks":[]})" << '\n';
  }
  CHECK(parse_trace_values(plain, quantity::prompt_length) == std::vector<double>{100, 200});
  CHECK(parse_trace_values(jsonl, quantity::prompt_length) == std::vector<double>{30, 50});
  CHECK(parse_trace_values(jsonl, quantity::output_length) == std::vector<double>{3, 7});
  const distribution d = distribution::parse("trace:" + jsonl, quantity::prompt_length);
  CHECK(d.mean() == 40);
  std::string what;
  try {
    (void)parse_trace_values(bad, quantity::prompt_length);
  } catch (const std::invalid_argument& e) {
    what = e.what();
  }
  CHECK(what.find("bx_bad.jsonl:2: field 'prompt_tokens'") != std::string::npos);
  CHECK_THROWS_AS((void)parse_trace_values("no_such_file", quantity::prompt_length),
                  std::invalid_argument);
  std::remove(plain.c_str());
  std::remove(jsonl.c_str());
  std::remove(bad.c_str());
}

TEST_CASE("loadgen: open-loop arrivals at the configured rate, gamma bursts keep the mean") {
  for (double k : {1.0, 0.25}) {
    CAPTURE(k);
    workload w;
    w.mode = arrival_mode::open;
    w.rate = 50;
    w.burstiness = k;
    w.duration_s = 200;
    clock_type clock;
    load_generator g(w, clock);
    std::vector<request*> got;
    g.release(time_point(std::chrono::seconds(200)) - duration(1), got);
    // a renewal process: count ~ rate T, variance ~ rate T CV^2 with CV^2 = 1/k
    const double expect = 50 * 200, sd = std::sqrt(expect / k);
    CHECK(std::abs(double(got.size()) - expect) < 5 * sd);
    for (std::size_t i = 1; i < got.size(); ++i) CHECK(got[i]->arrival >= got[i - 1]->arrival);
  }
}
