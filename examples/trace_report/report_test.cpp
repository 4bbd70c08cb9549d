// SPDX-License-Identifier: MIT
// Doctests of the functions tokchron-report is made of (report.hpp).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "report.hpp"

namespace tr = tokchron_report;

namespace {
const std::string data = std::string(TOKCHRON_SOURCE_DIR) + "/tests/data/traces/";
}

TEST_CASE("report: command lines") {
  const auto a = tr::parse_arguments({"--profile=all", "--gpus", "4", "x.jsonl", "--", "--y"});
  CHECK(a.command == "summary");
  CHECK(*a.get("profile") == "all");
  CHECK(*a.get("gpus") == "4");
  CHECK(a.files == std::vector<std::string>{"x.jsonl", "--y"});
  CHECK(tr::parse_arguments({"summary", "f"}).files == std::vector<std::string>{"f"});
  CHECK_THROWS_AS(tr::parse_arguments({"--nope"}), tr::usage_error);
  CHECK_THROWS_AS(tr::parse_arguments({"--gpus"}), tr::usage_error);
  CHECK_THROWS_AS(tr::parse_arguments({"--quiet=1"}), tr::usage_error);
  CHECK_THROWS_AS(tr::settings_from(tr::parse_arguments({"--gpus", "0"})), tr::usage_error);
  CHECK_THROWS_AS(tr::settings_from(tr::parse_arguments({"--format", "xml"})), tr::usage_error);
  CHECK_THROWS_AS(tr::settings_from(tr::parse_arguments({"--percentiles", "5,x"})),
                  tr::usage_error);
  CHECK(tr::select_profiles("all").size() == 11);
  CHECK(tr::select_profiles("vllm,mlperf").size() == 2);
  CHECK_THROWS_AS(tr::select_profiles("vllm,nope"), tr::usage_error);
}

TEST_CASE("report: JSON keys follow the documented schema, in order") {
  const auto in = tr::load_inputs({data + "separating.jsonl"});
  tr::report_settings s;
  s.profiles = tr::select_profiles("vllm");
  s.percentiles = {50, 99.9};
  const auto j = tr::to_json(tr::summarize_all(in, s));
  REQUIRE(j.is_object());
  const std::vector<std::string> head{"profile",
                                      "completed",
                                      "failed",
                                      "duration",
                                      "request_throughput",
                                      "output_throughput",
                                      "total_token_throughput",
                                      "metrics"};
  auto it = j.begin();
  for (const auto& k : head) {
    REQUIRE(it != j.end());
    CHECK(it.key() == k);
    ++it;
  }
  const std::vector<std::string> stats{"count", "mean", "median", "std",
                                       "min",   "max",  "p50",    "p99.9"};
  for (const char* m : {"ttft", "tpot", "itl", "e2el"}) {
    auto st = j["metrics"][m].begin();
    for (const auto& k : stats) CHECK((st++).key() == k);
  }
  s.profiles = tr::select_profiles("all");
  CHECK(tr::to_json(tr::summarize_all(in, s)).size() == 11);  // an array for several
}

TEST_CASE("report: exit codes and messages") {
  std::ostringstream out, err;
  CHECK(tr::run({"--format", "json", data + "separating.jsonl"}, out, err) == tr::exit_ok);
  CHECK(err.str().empty());
  out.str("");
  CHECK(tr::run({data + "malformed.jsonl"}, out, err) == tr::exit_skipped_lines);
  CHECK(err.str().find("line 4: field chunks[1][1]") != std::string::npos);
  CHECK(!out.str().empty());  // the good lines are still reported
  err.str("");
  CHECK(tr::run({"--quiet", data + "malformed.jsonl"}, out, err) == tr::exit_skipped_lines);
  CHECK(err.str().find("line 4") == std::string::npos);
  CHECK(err.str().find("skipped 7 malformed lines of 10") != std::string::npos);
  CHECK(tr::run({}, out, err) == tr::exit_usage);
  CHECK(tr::run({"--profile", "x", "f"}, out, err) == tr::exit_usage);
  CHECK(tr::run({data + "missing.jsonl"}, out, err) == tr::exit_input);
  CHECK(tr::run({data + "all_bad.jsonl"}, out, err) == tr::exit_input);
  CHECK(tr::run({"--help"}, out, err) == tr::exit_ok);
}
