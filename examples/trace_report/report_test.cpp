// SPDX-License-Identifier: MIT
// Doctests of the functions tokchron-report is made of (report.hpp).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
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

TEST_CASE("report: the pipelined reader hands on what the plain reader does, in order") {
  const std::vector<std::string> files{data + "separating.jsonl", data + "malformed.jsonl"};
  std::vector<std::string> plain, piped;
  const auto a = tr::read_inputs(files, "auto", [&](tokchron::trace_timeline&& tl) {
    plain.push_back(std::to_string(tl.store().chunk_count()) + "@" +
                    std::to_string(tl.arrival()->time_since_epoch().count()));
  });
  const auto b = tr::read_inputs_pipelined(files, "auto", [&](tokchron::trace_timeline&& tl) {
    piped.push_back(std::to_string(tl.store().chunk_count()) + "@" +
                    std::to_string(tl.arrival()->time_since_epoch().count()));
  });
  CHECK(plain.size() > 5);
  CHECK(piped == plain);
  CHECK(b.lines == a.lines);
  CHECK(b.requests == a.requests);
  CHECK(b.errors.size() == a.errors.size());

  // Many batches: a generated trace larger than the batch and queue sizes.
  const std::string big = std::string(TOKCHRON_BINARY_DIR) + "/pipelined.jsonl";
  {
    std::ifstream src(data + "separating.jsonl");
    const std::string one((std::istreambuf_iterator<char>(src)), std::istreambuf_iterator<char>());
    std::ofstream out(big);
    for (int i = 0; i < 2000; ++i) out << one;
  }
  std::size_t n_plain = 0, n_piped = 0;
  tr::report_settings s;
  s.profiles = tr::select_profiles("all");
  s.threads = 1;
  tr::input_stats st1, st2;
  const auto one_thread = tr::to_json(tr::summarize_files({big}, "auto", s, st1)).dump();
  s.threads = 2;
  const auto two_threads = tr::to_json(tr::summarize_files({big}, "auto", s, st2)).dump();
  CHECK(one_thread == two_threads);  // same summaries, bit for bit
  CHECK(st1.requests == st2.requests);
  (void)tr::read_inputs({big}, "auto", [&](tokchron::trace_timeline&&) { ++n_plain; });
  (void)tr::read_inputs_pipelined({big}, "auto", [&](tokchron::trace_timeline&&) { ++n_piped; });
  CHECK(n_piped == n_plain);

  // A file that cannot be read after a good one: the good one's requests first, then the error.
  std::size_t before_error = 0;
  CHECK_THROWS_AS(tr::read_inputs_pipelined({big, data + "missing.jsonl"}, "auto",
                                            [&](tokchron::trace_timeline&&) { ++before_error; }),
                  tr::input_error);
  CHECK(before_error == n_plain);

  // The consumer fails part-way: the reader stops and the consumer's exception comes out.
  std::size_t taken = 0;
  CHECK_THROWS_AS(tr::read_inputs_pipelined({big}, "auto",
                                            [&](tokchron::trace_timeline&&) {
                                              if (++taken == 1500) throw std::logic_error("x");
                                            }),
                  std::logic_error);
  CHECK(taken == 1500);
  std::remove(big.c_str());
}
