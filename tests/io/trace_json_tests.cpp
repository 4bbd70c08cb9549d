// SPDX-License-Identifier: MIT
// Tests of the JSON trace adaptor: io/trace_json_reader.hpp, io/trace_json_writer.hpp and
// io/vllm_result.hpp (built as tokchron_io_tests: needs nlohmann-json).
#include <doctest/doctest.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tokchron/io/trace_json_reader.hpp"
#include "tokchron/io/trace_json_writer.hpp"
#include "tokchron/io/vllm_result.hpp"
#include "tokchron/metrics/run_summary.hpp"

namespace tc = tokchron;
using K = tc::chunk_kind;

namespace {
const std::string data_dir = std::string(TOKCHRON_SOURCE_DIR) + "/tests/data/traces/";
}

TEST_CASE("trace_json: the trace-format example line parses and round-trips") {
  const auto r = tc::parse_trace_line(
      R"({"id":"r1","arrival":12.000,"send":12.003,"scheduled":12.40,"prompt_tokens":300,)"
      R"("chunks":[[12.52,1],[12.56,0,"empty"],[12.61,2],[12.62,0,"usage"]],"end":12.62,)"
      R"("usage_output_tokens":3,"ok":true})");
  REQUIRE(r.record);
  CHECK(r.record->chunks.size() == 4);
  CHECK(r.record->chunks[1].kind == K::empty);
  CHECK(*r.record->usage_output_tokens == 3);
  CHECK(*r.record->arrival == 12.0);
  const auto again = tc::parse_trace_line(tc::to_json_line(*r.record));
  REQUIRE(again.record);
  CHECK(*again.record == *r.record);
}

TEST_CASE("trace_json: the fast scanner and nlohmann-json read lines identically") {
  const char* lines[] = {
      R"({"send":1,"chunks":[]})",
      R"( { "id" : "a b", "send" : 1.5e0 , "chunks" : [ [ 2 , 1 ] , [2.25,0,"done"] ] } )",
      R"({"send":-0.5,"arrival":-1,"chunks":[[0,3,"text"]],"ok":false,"error":"x","finish_reason":"aborted"})",
      R"({"send":1,"chunks":[[1.1,1]],"preempted":[1.05],"queued":1.01,"scheduled":1.02,"end":null})",
      R"({"send":1,"chunks":[[1.1,4294967295]],"prompt_tokens":18446744073709551615})",
      R"({"send":1,"chunks":[[1.1,1]],"usage_output_tokens":2.0})",   // fast path declines 2.0
      R"({"id":"\u00e9","send":1,"chunks":[[1.1,1]]})",               // and escapes
      R"({"id":7,"send":1,"chunks":[[1.1,1]],"unknown":{"a":[1]}})",  // and unknown fields
  };
  for (const char* l : lines) {
    CAPTURE(l);
    const auto fast = tc::parse_trace_line(l);
    const auto json = tc::detail::parse_trace_line_json(l, 1);
    REQUIRE(fast.record);
    REQUIRE(json.record);
    CHECK(*fast.record == *json.record);
  }
  // Random lines written by to_json_line read back the same both ways.
  std::mt19937 rng(3);
  for (int i = 0; i < 200; ++i) {
    tc::trace_record r;
    r.id = "r" + std::to_string(i);
    r.send = std::uniform_real_distribution<double>(-1e6, 1e6)(rng);
    double t = r.send;
    for (int k = 0; k < 5; ++k) {
      t += std::uniform_real_distribution<double>(0, 1)(rng);
      // any kind, [DONE] only last (nothing may follow it: docs/bad-input.md row R8)
      r.chunks.push_back(
          {t, static_cast<std::uint32_t>(rng() % 5), static_cast<K>(rng() % (k == 4 ? 4 : 3))});
    }
    const std::string line = tc::to_json_line(r);
    const auto fast = tc::parse_trace_line(line);
    REQUIRE(fast.record);
    CHECK(*fast.record == r);
    CHECK(*tc::detail::parse_trace_line_json(line, 1).record == r);
  }
}

TEST_CASE("trace_json: malformed lines name their line and field, and are skipped") {
  struct bad {
    const char* line;
    const char* field;
  };
  const bad cases[] = {
      {R"({"send":1,"chunks":[[2,1],[3,-1]]})", "chunks[1][1]"},
      {R"({"chunks":[[2,1]]})", "send"},
      {R"({"send":1})", "chunks"},
      {R"({"send":"1","chunks":[]})", "send"},
      {R"({"send":1,"chunks":[[2]]})", "chunks[0]"},
      {R"({"send":1,"chunks":[[2,1,"bold"]]})", "chunks[0][2]"},
      {R"({"send":1,"chunks":[[2,4294967296]]})", "chunks[0][1]"},
      {R"({"send":1,"chunks":[[2,1.5]]})", "chunks[0][1]"},
      {R"({"send":1,"chunks":[[3,1],[2,1]]})", "chunks[1][0]"},
      {R"({"send":1,"chunks":[[0.5,1]]})", "chunks[0][0]"},
      {R"({"send":1,"arrival":2,"chunks":[]})", "arrival"},
      {R"({"send":1,"chunks":[[2,1]],"end":1.5})", "end"},
      {R"({"send":1,"chunks":[],"ok":"yes"})", "ok"},
      {R"({"send":1,"chunks":[],"ok":true,"finish_reason":"error"})", "finish_reason"},
      {R"({"send":1,"chunks":[],"prompt_tokens":-3})", "prompt_tokens"},
      {R"({"send":1e400,"chunks":[]})", ""},  // nlohmann: number overflow
      {R"({"send":1,"chunks":[],"preempted":[0.5]})", "preempted[0]"},
      {R"([1,2])", ""},
      {R"({"send":1,"chunks":[)", ""},
  };
  for (const bad& b : cases) {
    CAPTURE(b.line);
    const auto r = tc::parse_trace_line(b.line, 42);
    REQUIRE(r.error);
    CHECK_FALSE(r.record);
    CHECK(r.error->line == 42);
    CHECK(r.error->field == b.field);
    CHECK(!r.error->message.empty());
  }
  std::ifstream in(data_dir + "malformed.jsonl");
  REQUIRE(in);
  std::vector<std::string> ids;
  std::vector<std::size_t> bad_lines;
  const auto st = tc::read_trace(
      in, [&](tc::trace_record&& r) { ids.push_back(r.id); },
      [&](const tc::trace_error& e) { bad_lines.push_back(e.line); });
  CHECK(st.lines == 10);
  CHECK(st.records == 2);
  CHECK(st.skipped == 7);
  CHECK(ids == std::vector<std::string>{"good-1", "good-2"});
  CHECK(bad_lines == std::vector<std::size_t>{2, 3, 4, 6, 7, 9, 10});
}

TEST_CASE("trace_json: a vLLM --save-detailed file recomputes vLLM's summary") {
  std::ifstream in(data_dir + "vllm_result.json");
  REQUIRE(in);
  const tc::vllm_result v = tc::read_vllm_result(in);
  REQUIRE(v.records.size() == 5);
  CHECK(*v.duration == 0.45);
  CHECK_FALSE(v.records[4].ok);
  CHECK(v.summary.at("completed") == 4);
  std::vector<tc::trace_timeline> tls;
  for (const auto& r : v.records) tls.push_back(tc::to_timeline(r));
  tc::summary_options o;
  o.duration = v.duration;
  o.percentiles = {50, 99};
  const auto s = tc::summarize(tls, tc::profiles::vllm, o);
  CHECK(s.completed == 4);
  CHECK(*s.request_throughput ==
        doctest::Approx(v.summary.at("request_throughput").get<double>()).epsilon(1e-12));
  CHECK(s.output_tokens == v.summary.at("total_output_tokens").get<std::uint64_t>());
  // The same requests as separating.jsonl: vLLM's TTFT and ITL statistics.
  CHECK(*s.ttft.mean == doctest::Approx((0.100 + 0.088 + 0.0 + 0.050) / 4).epsilon(1e-12));
  CHECK(s.itl.count == 8);
  CHECK(*s.itl.at(50) == doctest::Approx(0.030).epsilon(1e-12));

  std::istringstream not_vllm(R"({"ttfts":[0.1],"itls":[]})");
  CHECK_THROWS_AS((void)tc::read_vllm_result(not_vllm), std::invalid_argument);
}

TEST_CASE("trace_json: the plain-decimal fast path converts exactly as std::from_chars") {
  // Random plain decimals of every length the fast path takes (and some it declines), bit for
  // bit against from_chars; an exponent or too many digits is declined.
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int> digits(1, 19), point(0, 19), digit(0, 9), sign(0, 3);
  std::size_t taken = 0, declined = 0, wrong = 0;
  for (int i = 0; i < 200000; ++i) {
    std::string s = sign(rng) == 0 ? "-" : "";
    const int n = digits(rng), at = point(rng);
    for (int d = 0; d < n; ++d) {
      if (d == at && d > 0) s += '.';
      s += static_cast<char>('0' + (d == 0 && n > 1 && at != 1 ? 1 + digit(rng) % 9 : digit(rng)));
    }
    double fast = 0, slow = 0;
    const auto res = std::from_chars(s.data(), s.data() + s.size(), slow);
    REQUIRE(res.ec == std::errc());
    if (!tokchron::detail::plain_decimal(s.data(), s.data() + s.size(), fast)) {
      ++declined;
      continue;
    }
    ++taken;
    if (std::memcmp(&fast, &slow, sizeof fast) != 0) {
      ++wrong;
      MESSAGE(s);
    }
  }
  CHECK(wrong == 0);
  CHECK(taken > 150000);
  CHECK(declined > 0);  // 17 or more digits do not fit 2^53
  double v = 7;
  for (const char* s : {"1e3", "1.5E-2", "123456789012345678", "9007199254740993"}) {
    CAPTURE(s);
    CHECK(!tokchron::detail::plain_decimal(s, s + std::strlen(s), v));
  }
  CHECK(v == 7);  // untouched when declined
  const char* exact = "9007199254740992";
  CHECK(tokchron::detail::plain_decimal(exact, exact + 16, v));
  CHECK(v == 9007199254740992.0);
  const char* nz = "-0.0";
  CHECK(tokchron::detail::plain_decimal(nz, nz + 4, v));
  CHECK(std::signbit(v));
}

TEST_CASE("trace_json: benchmark_start reads, writes, and is refused out of range or late") {
  const auto r = tc::parse_trace_line(
      R"({"benchmark_start":11.5,"arrival":12,"send":12.003,"chunks":[[12.5,1]]})");
  REQUIRE(r.record);
  CHECK(*r.record->benchmark_start == 11.5);
  const auto again = tc::parse_trace_line(tc::to_json_line(*r.record));
  REQUIRE(again.record);
  CHECK(*again.record == *r.record);
  CHECK(tc::to_json_line(*r.record).find("\"benchmark_start\":11.5") != std::string::npos);
  // Without it, nothing is written and the record is unchanged.
  const auto plain = tc::parse_trace_line(R"({"send":1,"chunks":[]})");
  REQUIRE(plain.record);
  CHECK_FALSE(plain.record->benchmark_start);
  CHECK(tc::to_json_line(*plain.record).find("benchmark_start") == std::string::npos);
  // A benchmark_start later than the line's arrival (a writer whose time 0 was taken after
  // its first requests arrived) is kept: the run starts at the earliest arrival instead.
  for (const char* late : {R"({"benchmark_start":12.5,"arrival":12,"send":12.003,"chunks":[]})",
                           R"({"benchmark_start":1.5,"send":1,"chunks":[]})"}) {
    CAPTURE(late);
    for (const bool fast : {true, false}) {
      const auto e =
          fast ? tc::parse_trace_line(late, 1) : tc::detail::parse_trace_line_json(late, 1);
      REQUIRE(e.record);
      CHECK_FALSE(e.error);
    }
  }
  struct bad {
    const char* line;
    const char* message;
  };
  const bad cases[] = {
      {R"({"benchmark_start":-5e9,"send":1,"chunks":[]})", "must be a finite time"},
      {R"({"benchmark_start":"0","send":1,"chunks":[]})", ""},
  };
  for (const bad& b : cases) {
    CAPTURE(b.line);
    for (const bool fast : {true, false}) {
      const auto e =
          fast ? tc::parse_trace_line(b.line, 7) : tc::detail::parse_trace_line_json(b.line, 7);
      REQUIRE(e.error);
      CHECK(e.error->line == 7);
      CHECK(e.error->field == "benchmark_start");
      CHECK(e.error->message.find(b.message) != std::string::npos);
    }
  }
}

TEST_CASE("trace_json: reasoning chunks, cached, reasoning and speculative counts round-trip") {
  const std::string line =
      R"({"id":"r","send":0.0,"prompt_tokens":100,"chunks":[[0.2,1,"reasoning"],[0.5,2]],)"
      R"("usage_output_tokens":3,"ok":true,"cached_prompt_tokens":40,)"
      R"("usage_reasoning_tokens":1,"spec_draft_tokens":20,"spec_accepted_tokens":15})";
  const auto r = tc::parse_trace_line(line);
  REQUIRE(r.record);
  CHECK(r.record->chunks[0].kind == K::reasoning);
  CHECK(*r.record->cached_prompt_tokens == 40);
  CHECK(*r.record->usage_reasoning_tokens == 1);
  CHECK(*r.record->spec_draft_tokens == 20);
  CHECK(*r.record->spec_accepted_tokens == 15);
  CHECK(tc::to_json_line(*r.record) == line);
  // A line without the new fields reads as before: all empty.
  const auto old = tc::parse_trace_line(R"({"send":0,"chunks":[[0.1,1]]})");
  REQUIRE(old.record);
  CHECK_FALSE(old.record->cached_prompt_tokens);
  CHECK_FALSE(old.record->spec_draft_tokens);
}

TEST_CASE("trace_json: usage_source reads, writes, reaches the timeline, and is checked") {
  for (const char* src : {"usage_chunk", "content_chunk", "body", "server"}) {
    CAPTURE(src);
    const std::string line = std::string(R"({"id":"u","send":0.0,"chunks":[[0.1,2]],)") +
                             R"("usage_output_tokens":2,"usage_source":")" + src +
                             R"(","ok":true})";
    const auto fast = tc::parse_trace_line(line);
    const auto json = tc::detail::parse_trace_line_json(line, 1);
    REQUIRE(fast.record);
    REQUIRE(json.record);
    CHECK(*fast.record == *json.record);
    REQUIRE(fast.record->usage_from);
    CHECK(tc::to_string(*fast.record->usage_from) == src);
    CHECK(tc::to_json_line(*fast.record) == line);  // written after usage_output_tokens
    const auto tl = tc::to_timeline(*fast.record);
    REQUIRE(tl.reported_output_tokens_source());
    CHECK(*tl.reported_output_tokens_source() == *fast.record->usage_from);
    const auto back = tc::to_trace_record(tl, tc::trace_clock::time_point{}, "u");
    CHECK(back.usage_from == fast.record->usage_from);
    CHECK(back.usage_output_tokens == fast.record->usage_output_tokens);
  }
  // A line without the field reads as before: no source, on the record and on the timeline.
  const auto old = tc::parse_trace_line(R"({"send":0,"chunks":[[0.1,1]],"usage_output_tokens":1})");
  REQUIRE(old.record);
  CHECK_FALSE(old.record->usage_from);
  CHECK_FALSE(tc::to_timeline(*old.record).reported_output_tokens_source());
  // Refused, naming the field: an unknown source, a source of another type, a source without a
  // count.
  for (const char* bad : {R"({"send":0,"chunks":[],"usage_output_tokens":1,"usage_source":"sse"})",
                          R"({"send":0,"chunks":[],"usage_output_tokens":1,"usage_source":1})",
                          R"({"send":0,"chunks":[],"usage_source":"body"})"}) {
    CAPTURE(bad);
    const auto r = tc::parse_trace_line(bad, 3);
    REQUIRE(r.error);
    CHECK(r.error->field == "usage_source");
  }
  // A source given with the count is dropped by a later count given without one.
  tc::trace_timeline tl;
  (void)tl.send(tc::trace_clock::time_point{});
  tl.set_reported_output_tokens(4, tc::usage_source::usage_chunk);
  tl.set_reported_output_tokens(5);
  CHECK_FALSE(tl.reported_output_tokens_source());
}
