// SPDX-License-Identifier: MIT
// Clock anchors and the alignment of several hosts' traces (align.hpp, io/clock_anchor.hpp).
#include <doctest/doctest.h>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/report.hpp"
#include "test_util.hpp"
#include "tokchron/io/clock_anchor.hpp"
#include "tokchron/io/trace_json_writer.hpp"

namespace tr = tokchron_report;
namespace tc = tokchron;

using namespace trace_report_test;

namespace {

using steady = std::chrono::steady_clock;

/// One client process: `requests` requests whose events happen at real steady-clock instants
/// (send at start + phase + k * spacing, two chunks 6 and 9 ms later), recorded twice: in
/// `aligned` as seconds since a zero `origin_s` seconds away from the process's start, with the
/// clock anchor of that zero; in `reference` as absolute steady-clock seconds (one clock for
/// every process on this machine), without an anchor.
void client_process(steady::time_point start, double phase_s, double origin_s,
                    const std::string& aligned, const std::string& reference) {
  constexpr int requests = 30;
  // The clock zero is taken from `start`, which both processes share, not from each one's own
  // start: the two zeros are then exactly origin_s apart, however late either process began.
  const auto zero =
      start + std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(origin_s));
  struct ev {
    steady::time_point at;
    int req, kind;  // 0 send, 1 first chunk, 2 last chunk
  };
  std::vector<ev> evs;
  auto d = [](double s) {
    return std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(s));
  };
  for (int k = 0; k < requests; ++k) {
    const auto send = start + d(phase_s + k * 0.004);
    evs.push_back({send, k, 0});
    evs.push_back({send + d(0.006), k, 1});
    evs.push_back({send + d(0.009), k, 2});
  }
  std::stable_sort(evs.begin(), evs.end(), [](const ev& a, const ev& b) { return a.at < b.at; });
  std::vector<std::array<steady::time_point, 3>> t(requests);
  for (const ev& e : evs) {
    std::this_thread::sleep_until(e.at);
    t[static_cast<std::size_t>(e.req)][static_cast<std::size_t>(e.kind)] = steady::now();
  }
  const tc::clock_anchor anchor = tc::read_clock_anchor<steady>(zero);
  std::ofstream a(aligned), r(reference);
  for (int k = 0; k < requests; ++k) {
    const auto& x = t[static_cast<std::size_t>(k)];
    for (int which = 0; which < 2; ++which) {
      const steady::time_point z = which == 0 ? zero : steady::time_point{};
      auto s = [&](steady::time_point p) { return tc::to_seconds(p - z); };
      tc::trace_record rec;
      rec.id = std::to_string(k);
      rec.send = s(x[0]);
      rec.chunks = {{s(x[1]), 1, tc::chunk_kind::text}, {s(x[2]), 4, tc::chunk_kind::text}};
      rec.end = s(x[2]);
      if (which == 0) tc::set_clock_anchor(rec, anchor);
      tc::write_trace_line(which == 0 ? a : r, rec);
    }
  }
}

}  // namespace

TEST_CASE("clock anchor: read, written and read back, validated") {
  const auto zero = steady::now();
  const tc::clock_anchor a = tc::read_clock_anchor<steady>(zero);
  CHECK(a.wall_ns > 1500000000ull * 1000000000ull);  // after 2017
  CHECK(a.gap_ns < 1000000);                         // a read triple takes well under 1 ms
  CHECK(a.mono >= 0);
  CHECK(a.mono < 1);
  tc::trace_record r;
  r.send = 1;
  tc::set_clock_anchor(r, a);
  const auto back = tc::parse_trace_line(tc::to_json_line(r));
  REQUIRE(back.record);
  CHECK(*back.record == r);
  CHECK(tc::clock_anchor_of(*back.record) == a);
  // Old lines read unchanged: no anchor.
  const auto old = tc::parse_trace_line(R"({"send":1,"chunks":[[2,1]]})");
  REQUIRE(old.record);
  CHECK(!tc::clock_anchor_of(*old.record));
  // Bad anchors name the line and the field.
  auto error_of = [](const char* line) {
    const auto x = tc::parse_trace_line(line, 7);
    return x.error ? x.error->to_string() : std::string("ok");
  };
  CHECK(error_of(R"({"send":1,"chunks":[],"clock_mono":1,"clock_wall_ns":5})") ==
        "line 7: field clock_gap_ns: is missing: a clock anchor has clock_mono, clock_wall_ns and "
        "clock_gap_ns");
  CHECK(
      error_of(R"({"send":1,"chunks":[],"clock_mono":1e300,"clock_wall_ns":5,"clock_gap_ns":1})") ==
      "line 7: field clock_mono: must be a finite time in seconds within +-4.61e9 (2^62 ns)");
  CHECK(error_of(R"({"send":1,"chunks":[],"clock_mono":1,"clock_wall_ns":0,"clock_gap_ns":1})") ==
        "line 7: field clock_wall_ns: must be Unix time in nanoseconds, from 1 to 2^63-1");
  CHECK(
      error_of(
          R"({"send":1,"chunks":[],"clock_mono":1,"clock_wall_ns":9223372036854775808,"clock_gap_ns":1})") ==
      "line 7: field clock_wall_ns: must be Unix time in nanoseconds, from 1 to 2^63-1");
  CHECK(
      error_of(
          R"({"send":1,"chunks":[],"clock_mono":1,"clock_wall_ns":5,"clock_gap_ns":1000000001})") ==
      "line 7: field clock_gap_ns: is over 1 s (1000000000 ns): not an anchor");
  CHECK(error_of(R"({"send":1,"chunks":[],"clock_mono":1,"clock_wall_ns":-5,"clock_gap_ns":1})") ==
        "line 7: field clock_wall_ns: must be a non-negative integer");
  CHECK(error_of(R"({"send":1,"chunks":[],"clock_mono":"1","clock_wall_ns":5,"clock_gap_ns":1})") ==
        "line 7: field clock_mono: must be a number (seconds)");
}

TEST_CASE("clock anchor: the shift between two clocks") {
  // Host A's clock reads 10 s at wall W; host B's reads 5000 s at wall W + 2 s: a time t on A
  // is t + 4990 - 2 on B.
  const tc::clock_anchor a{10.0, 1700000000000000000ull, 1000};
  const tc::clock_anchor b{5000.0, 1700000002000000000ull, 3000};
  CHECK(tc::clock_shift(a, b) == doctest::Approx(4988.0).epsilon(1e-15));
  CHECK(tc::clock_shift(b, a) == doctest::Approx(-4988.0).epsilon(1e-15));
  CHECK(tc::clock_shift(a, a) == 0);
  CHECK(a.error() == doctest::Approx(0.5e-6));
  // Nanoseconds survive whatever the epoch: 1 ns of wall difference is 1e-9 s of shift.
  const tc::clock_anchor c{10.0, 1700000000000000001ull, 0};
  CHECK(tc::clock_shift(c, a) == doctest::Approx(1e-9).epsilon(1e-6));
}

TEST_CASE("align: lines that cannot be placed named") {
  const std::string dir = tmp_dir("align_input");
  const std::string anchor_a =
      R"("clock_mono":10,"clock_wall_ns":1700000000000000000,"clock_gap_ns":1000)";
  const std::string anchor_b =
      R"("clock_mono":100,"clock_wall_ns":1700000000000000000,"clock_gap_ns":3000)";
  write_lines(dir + "/a.jsonl", {"{" + anchor_a + R"(,"send":1,"chunks":[[2,1]]})"});
  write_lines(dir + "/b.jsonl", {"{" + anchor_b + R"(,"send":91,"chunks":[[93,1]]})",
                                 R"({"send":92,"chunks":[[93,1]]})"});
  write_lines(dir + "/plain.jsonl", {R"({"send":1,"chunks":[[2,1]]})"});
  // b's times are 90 s ahead: after the shift, a's request spans [1, 2] and b's [1, 3].
  const auto both = report({"--format", "json", dir + "/a.jsonl", dir + "/b.jsonl"});
  CHECK(both.rc == 1);  // b's second line has no anchor: skipped and named
  CHECK(both.err.find("b.jsonl: line 2: field clock_mono: is missing: the file's first line has "
                      "a clock anchor") != std::string::npos);
  CHECK(both.err.find("clock alignment: 2 hosts") != std::string::npos);
  const auto j = nlohmann::json::parse(both.out);
  CHECK(j["duration"].get<double>() == doctest::Approx(2.0));
  CHECK(j["completed"].get<int>() == 2);
  CHECK(j["clock_alignment"]["hosts"][1]["shift_min"].get<double>() == -90.0);
  CHECK(j["clock_alignment"]["error"].get<double>() == doctest::Approx(2e-6));
  // An unanchored file beside anchored ones cannot be placed: nothing is reported.
  const auto mixed = report({dir + "/a.jsonl", dir + "/plain.jsonl"});
  CHECK(mixed.rc == 1);
  CHECK(mixed.out.empty());
  CHECK(mixed.err.find("has no clock anchor") != std::string::npos);
  // One anchored file, or unanchored files, read as before: no alignment said.
  const auto one = report({"--format", "json", dir + "/a.jsonl"});
  CHECK(one.rc == 0);
  CHECK(nlohmann::json::parse(one.out).count("clock_alignment") == 0);
}

TEST_CASE("align: two client processes with different monotonic origins, one timeline") {
  // Two real processes record the same kind of load, interleaved in time, each on its own
  // clock zero (1000 s before and 123.456789 s after its start). Aligned by their anchors, the
  // run-level figures equal those of the same requests on the one steady clock they share
  // (CLOCK_MONOTONIC on this machine), within the error bound the report states.
  const std::string dir = tmp_dir("align_processes");
  const auto start = steady::now() + std::chrono::milliseconds(50);
  const double origins[2] = {-1000.0, 123.456789};
  std::vector<pid_t> kids;
  for (int h = 0; h < 2; ++h) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      client_process(start, h * 0.0005, origins[h], dir + "/host" + std::to_string(h) + ".jsonl",
                     dir + "/ref" + std::to_string(h) + ".jsonl");
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int st = 0;
    REQUIRE(::waitpid(k, &st, 0) == k);
    REQUIRE(WIFEXITED(st));
    REQUIRE(WEXITSTATUS(st) == 0);
  }
  const auto aligned = report({"--format", "json", dir + "/host0.jsonl", dir + "/host1.jsonl"});
  const auto single = report({"--format", "json", dir + "/ref0.jsonl", dir + "/ref1.jsonl"});
  REQUIRE(aligned.rc == 0);
  REQUIRE(single.rc == 0);
  const auto a = nlohmann::json::parse(aligned.out), s = nlohmann::json::parse(single.out);
  REQUIRE(a.count("clock_alignment") == 1);
  const double bound = a["clock_alignment"]["error"].get<double>();
  MESSAGE("alignment error bound " << bound * 1e6 << " us; shifts "
                                   << a["clock_alignment"]["hosts"][0]["shift_min"] << ", "
                                   << a["clock_alignment"]["hosts"][1]["shift_min"]);
  CHECK(bound > 0);
  CHECK(bound < 1e-3);
  // Without alignment the origins would be 1123 s apart; aligned, host 1's shift is their
  // difference within the stated bound (times round to about 1e-10 s: add 1e-9).
  CHECK(std::abs(a["clock_alignment"]["hosts"][1]["shift_min"].get<double>() -
                 (origins[1] - origins[0])) <= bound + 1e-9);
  // Times round to about 1e-10 s (absolute steady seconds in the reference): add 1e-9.
  const double e = bound + 1e-9;
  const double d_a = a["duration"].get<double>(), d_s = s["duration"].get<double>();
  CHECK(std::abs(d_a - d_s) <= e);
  CHECK(a["completed"] == s["completed"]);
  CHECK(a["completed"].get<int>() == 60);
  for (const char* rate : {"request_throughput", "output_throughput", "mean_concurrency"}) {
    const double x = a[rate].get<double>(), y = s[rate].get<double>();
    CAPTURE(rate);
    CHECK(std::abs(x - y) <= y * e / (d_s - e) + 1e-12);
  }
  const double tw_a = a["time_weighted_concurrency"].get<double>(),
               tw_s = s["time_weighted_concurrency"].get<double>();
  // The in-flight integral moves by at most (requests x 2 x bound) over the duration.
  CHECK(std::abs(tw_a - tw_s) <= (60 * 2 * e + tw_s * e) / (d_s - e));
  // The peak is a count: it can only differ when a send of one host and an end of the other
  // lie within the bound (their order is then uncertain); check it when none do.
  std::vector<std::pair<double, int>> edges;  // (reference time, host)
  for (int h = 0; h < 2; ++h) {
    std::ifstream f(dir + "/ref" + std::to_string(h) + ".jsonl");
    tc::read_trace(
        f,
        [&](tc::trace_record&& rec) {
          edges.emplace_back(rec.send, h);
          edges.emplace_back(*rec.end, h);
        },
        [](const tc::trace_error&) {});
  }
  std::sort(edges.begin(), edges.end());
  double closest = 1;
  for (std::size_t i = 1; i < edges.size(); ++i)
    if (edges[i].second != edges[i - 1].second)
      closest = std::min(closest, edges[i].first - edges[i - 1].first);
  if (closest > 2 * e)
    CHECK(a["peak_concurrency"] == s["peak_concurrency"]);
  else
    MESSAGE("two hosts' events " << closest * 1e6 << " us apart: peak concurrency not compared");
}
