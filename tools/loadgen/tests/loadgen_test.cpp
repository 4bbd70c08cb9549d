// SPDX-License-Identifier: MIT
// tools/loadgen: length and think-time distributions (parsing, errors, seeded draws, trace
// files), the arrival processes (the open loop's rate, the closed loop's users) and the
// workload's options.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "loadgen/arrivals.hpp"
#include "loadgen/distribution.hpp"
#include "loadgen/options.hpp"
#include "loadgen/random.hpp"

using namespace tokchron_loadgen;

namespace {
// Sample mean of n draws; checked against the exact mean within 5 standard errors.
double sample_mean(const distribution& d, int n, double* sd = nullptr) {
  tokchron_loadgen::rng r(42);
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
  tokchron_loadgen::rng r(1);
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

TEST_CASE("arrivals: the open loop at the configured rate, gamma bursts keep the mean") {
  for (double k : {1.0, 0.25}) {
    CAPTURE(k);
    workload w;
    w.mode = arrival_mode::open;
    w.rate = 50;
    w.burstiness = k;
    w.duration_s = 200;
    arrival_generator g(w);
    std::vector<arrival> got;
    g.release(time_point(std::chrono::seconds(200)) - duration(1), got);
    // a renewal process: count ~ rate T, variance ~ rate T CV^2 with CV^2 = 1/k
    const double expect = 50 * 200, sd = std::sqrt(expect / k);
    CHECK(std::abs(double(got.size()) - expect) < 5 * sd);
    for (std::size_t i = 1; i < got.size(); ++i) {
      CHECK(got[i].at >= got[i - 1].at);
      CHECK(got[i].id == i);
    }
    CHECK(count_open_arrivals(w, 0, 1000000).total == got.size());
  }
}

TEST_CASE("arrivals: a closed-loop user sends its next request a think time after its last") {
  workload w;
  w.users = 3;
  w.think = distribution::fixed(2, quantity::seconds);
  w.duration_s = 100;
  w.shared_prefix = 7;
  w.reasoning_fraction = 0.5;
  w.output = distribution::fixed(10, quantity::output_length);
  arrival_generator g(w);
  std::vector<arrival> first;
  g.release(time_point(std::chrono::seconds(2)), first);
  REQUIRE(first.size() == 3);  // each user's first request after one think time
  for (const arrival& a : first) {
    CHECK(a.at == time_point(std::chrono::seconds(2)));
    CHECK_FALSE(a.think_s);
    CHECK(a.prefix_tokens == 7);
    CHECK(a.prompt_tokens > 7);
    CHECK(a.reasoning_tokens == 5);
  }
  CHECK_FALSE(g.next_arrival());  // nothing until a request ends
  g.on_finish(first[1], time_point(std::chrono::seconds(5)));
  REQUIRE(g.next_arrival() == time_point(std::chrono::seconds(7)));
  std::vector<arrival> next;
  g.release(time_point(std::chrono::seconds(7)), next);
  REQUIRE(next.size() == 1);
  CHECK(next[0].user == first[1].user);
  CHECK(next[0].think_s == 2.0);
  CHECK(next[0].id == 3);
  // Users whose state alone passes the memory limit are refused before anything is allocated.
  w.users = 1000000;
  w.memory_limit = 64u << 20;
  CHECK_THROWS_WITH_AS(arrival_generator{w}, doctest::Contains("1000000 users keep"),
                       std::invalid_argument);
}

TEST_CASE("options: each workload option sets its field; a bad value names the option") {
  workload w;
  double warmup = 0;
  set_workload_option(w, warmup, "rate", "4");
  CHECK(w.mode == arrival_mode::open);
  CHECK(w.rate == 4);
  set_workload_option(w, warmup, "prompt-len", "uniform:10,20");
  CHECK(w.prompt.spec() == "uniform:10,20");
  set_workload_option(w, warmup, "warmup", "500ms");
  CHECK(warmup == 0.5);
  set_workload_option(w, warmup, "users", "8");
  CHECK(w.mode == arrival_mode::closed);
  CHECK(w.users == 8);
  CHECK(is_workload_option("think-time"));
  CHECK_FALSE(is_workload_option("max_batch_size"));
  CHECK_THROWS_WITH_AS(set_workload_option(w, warmup, "reasoning-fraction", "1.5"),
                       "--reasoning-fraction '1.5': must be in [0, 1]", std::invalid_argument);
  CHECK_THROWS_WITH_AS(set_workload_option(w, warmup, "duration", "1e-12"),
                       doctest::Contains("below the clock's resolution of 1 ns"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(set_workload_option(w, warmup, "prompt_len", "gauss:3,1"),
                       doctest::Contains("--prompt-len 'gauss:3,1': distribution"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(set_workload_option(w, warmup, "max_batch_size", "4"),
                       "unknown option 'max_batch_size'", std::invalid_argument);
  CHECK(workload_options().front().name == "seed");
  CHECK(workload_options().size() == 15);
}
