// SPDX-License-Identifier: MIT
// Malformed JSON Lines trace input and vLLM result files (docs/bad-input.md, rows R1, R3-R6,
// R9, R11, R12): each
// bad line gives a trace_error naming its line number and field, is skipped, and reading goes
// on; no exception escapes the reader. Built as tokchron_bad_input_json_tests (needs
// nlohmann-json; see tests.cmake).
#include <doctest/doctest.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tokchron/io/trace_json_reader.hpp"
#include "tokchron/io/trace_json_writer.hpp"
#include "tokchron/io/vllm_result.hpp"

namespace {
struct bad_line {
  const char* line;
  const char* field;    // JSON path the error names ("" when the line is not a JSON object)
  const char* message;  // a fragment of the message
};

// `c.line`, read as line `line_no`, is refused with an error naming that line and c's field.
void check_refused(const bad_line& c, std::size_t line_no) {
  CAPTURE(c.line);
  const auto r = tokchron::parse_trace_line(c.line, line_no);
  REQUIRE(r.error);
  CHECK_FALSE(r.record);
  CHECK(r.error->line == line_no);
  CHECK(r.error->field == c.field);
  CHECK(r.error->message.find(c.message) != std::string::npos);
}
}  // namespace

TEST_CASE("bad input R1: a malformed trace line names its line and field, and is skipped") {
  const bad_line cases[] = {
      {"this is not json", "", "not valid JSON"},
      {"[1,2,3]", "", "JSON object"},
      {R"({"send":0,"chunks":[[1,1]])", "", "not valid JSON"},
      {R"({"chunks":[]})", "send", "required"},
      {R"({"send":"soon","chunks":[]})", "send", "number"},
      {R"({"send":0})", "chunks", "required"},
      {R"({"send":0,"chunks":{}})", "chunks", "array"},
      {R"({"send":0,"chunks":[[1]]})", "chunks[0]", "[time, tokens]"},
      {R"({"send":0,"chunks":[[1,-3]]})", "chunks[0][1]", "non-negative integer"},
      {R"({"send":0,"chunks":[[1,2.5]]})", "chunks[0][1]", "non-negative integer"},
      {R"({"send":0,"chunks":[[1,1,"texty"]]})", "chunks[0][2]", "\"text\""},
      {R"({"send":0,"chunks":[[1,1],[0.5,1]]})", "chunks[1][0]", "earlier"},
      {R"({"send":0,"chunks":[],"ok":"yes"})", "ok", "true or false"},
      {R"({"send":0,"chunks":[],"finish_reason":"exploded"})", "finish_reason", "one of"},
      {R"({"send":0,"chunks":[],"id":[1]})", "id", "string"},
      {R"({"send":1e300,"chunks":[]})", "send", "finite"},
  };
  std::string text;
  for (const auto& c : cases) {
    text += c.line;
    text += '\n';
  }
  text += R"({"id":"fine","send":0,"chunks":[[1,1]]})";
  text += '\n';
  std::istringstream in(text);
  std::vector<tokchron::trace_error> errors;
  std::vector<tokchron::trace_record> records;
  const auto st = tokchron::read_trace(
      in, [&](tokchron::trace_record&& r) { records.push_back(std::move(r)); },
      [&](const tokchron::trace_error& e) { errors.push_back(e); });
  const std::size_t n = sizeof(cases) / sizeof(cases[0]);
  CHECK(st.lines == n + 1);
  CHECK(st.skipped == n);
  REQUIRE(records.size() == 1);  // the good line after all the bad ones is still read
  CHECK(records[0].id == "fine");
  REQUIRE(errors.size() == n);
  for (std::size_t i = 0; i < n; ++i) {
    CAPTURE(cases[i].line);
    CHECK(errors[i].line == i + 1);
    CHECK(errors[i].field == cases[i].field);
    CHECK(errors[i].message.find(cases[i].message) != std::string::npos);
    CHECK(errors[i].to_string().find("line " + std::to_string(i + 1)) == 0);
  }
}

TEST_CASE("bad input R4: token counts that overflow their field are refused") {
  const bad_line cases[] = {
      {R"({"send":0,"chunks":[[1,4294967296]]})", "chunks[0][1]", "too large"},
      {R"({"send":0,"chunks":[[1,4294967296.0]]})", "chunks[0][1]", ""},
      {R"({"send":0,"chunks":[],"prompt_tokens":-1})", "prompt_tokens", "non-negative"},
  };
  for (const auto& c : cases) check_refused(c, 4);
  // the largest values that fit are kept exactly
  const auto ok = tokchron::parse_trace_line(
      R"({"send":0,"chunks":[[1,4294967295]],"prompt_tokens":18446744073709551615})", 1);
  REQUIRE(ok.record);
  CHECK(ok.record->chunks[0].tokens == 4294967295u);
  CHECK(*ok.record->prompt_tokens == 18446744073709551615u);
}

// Findings of the trace_line fuzz target. 1e400 used to let nlohmann-json's out_of_range escape
// (now a trace_error; tests/fuzz/regressions/trace_line/number_overflow_1e400).
TEST_CASE("bad input R5: numbers beyond double range are refused, nothing escapes") {
  tokchron::trace_line_result r;
  CHECK_NOTHROW(r = tokchron::parse_trace_line(R"({"send":1e400,"chunks":[]})", 2));
  REQUIRE(r.error);
  CHECK_FALSE(r.record);
  CHECK(r.error->line == 2);
}

// Exactly 2^64 as a count: trace_reader::count once cast the double 2^64 to uint64_t (undefined
// behaviour; fuzz regression tests/fuzz/regressions/trace_line/count_2pow64_float_cast).
TEST_CASE("bad input R6: a count of exactly 2^64 is refused") {
  const auto r = tokchron::parse_trace_line(
      R"({"send":0,"chunks":[],"prompt_tokens":18446744073709551616})", 2);
  REQUIRE(r.error);
  CHECK(r.error->field == "prompt_tokens");
  CHECK(r.error->message.find("too large") != std::string::npos);
}

// issue 19's reproducers as lines: times that passed the old |t| < 9e9 s check and overflowed
// every difference (UBSan: signed overflow in detail::diff; negative TTFT, E2E, duration).
TEST_CASE("bad input R3: a line with times outside the time range names the field") {
  const bad_line cases[] = {
      {R"({"send":-8.9e9,"chunks":[[8.9e9,1]]})", "send", "2^62"},
      {R"({"send":0,"chunks":[[8.9e9,1]]})", "chunks[0][0]", "2^62"},
      {R"({"send":0,"arrival":-4.7e9,"chunks":[]})", "arrival", "2^62"},
      {R"({"send":0,"chunks":[],"end":1e300})", "end", "2^62"},
      {R"({"send":0,"chunks":[],"preempted":[5e9]})", "preempted[0]", "2^62"},
  };
  for (const bad_line& c : cases) check_refused(c, 3);
}

namespace {
std::string vllm_file(const std::string& output_len, const std::string& errors) {
  return R"({"duration":1.0,"ttfts":[0.1],"itls":[[0.01]],"input_lens":[5],"output_lens":[)" +
         output_len + "]" + (errors.empty() ? "" : R"(,"errors":[)" + errors + "]") + "}";
}
std::string vllm_error(const std::string& text) {
  std::istringstream in(text);
  try {
    (void)tokchron::read_vllm_result(in);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("bad input R9: vLLM result lengths up to 2^64 - 1 read exactly; bad entries named") {
  std::istringstream in(vllm_file("18446744073709551615", R"("")"));
  const tokchron::vllm_result v = tokchron::read_vllm_result(in);
  REQUIRE(v.records.size() == 1);
  CHECK(*v.records[0].usage_output_tokens == 18446744073709551615u);
  CHECK(v.records[0].ok);
  CHECK(vllm_error(vllm_file("-1", "")).find("output_lens[0] is negative") != std::string::npos);
  CHECK(vllm_error(vllm_file("2.5", "")).find("output_lens[0] must be an integer") !=
        std::string::npos);
  CHECK(vllm_error(vllm_file("18446744073709551616", "")).find("output_lens[0]") !=
        std::string::npos);
  // a non-string errors entry is refused naming it, never counted as a success
  for (const char* e : {"null", "1", "false", R"({"msg":"boom"})", R"(["boom"])"}) {
    CAPTURE(e);
    CHECK(vllm_error(vllm_file("3", e)).find("field errors[0] must be a string") !=
          std::string::npos);
  }
  CHECK(vllm_error(R"({"ttfts":[],"itls":[],"input_lens":[],"output_lens":[],"errors":"x"})")
            .find("field errors must be a list") != std::string::npos);
  CHECK(vllm_error(R"({"ttfts":[],"itls":[],"input_lens":[],"output_lens":[],"duration":"1"})")
            .find("field duration must be a number") != std::string::npos);
  // a failed request keeps its message
  std::istringstream failed(vllm_file("3", R"("boom")"));
  const tokchron::vllm_result f = tokchron::read_vllm_result(failed);
  CHECK_FALSE(f.records[0].ok);
  CHECK(f.records[0].error == "boom");
}

TEST_CASE("bad input R11: inconsistent cached, reasoning and speculative counts name the field") {
  for (const bad_line& c : {
           bad_line{R"({"send":0,"prompt_tokens":5,"cached_prompt_tokens":6,"chunks":[]})",
                    "cached_prompt_tokens", "is greater than prompt_tokens"},
           bad_line{R"({"send":0,"usage_output_tokens":2,"usage_reasoning_tokens":3,"chunks":[]})",
                    "usage_reasoning_tokens", "is greater than usage_output_tokens"},
           bad_line{R"({"send":0,"spec_draft_tokens":2,"spec_accepted_tokens":3,"chunks":[]})",
                    "spec_accepted_tokens", "is greater than spec_draft_tokens"},
           bad_line{R"({"send":0,"spec_accepted_tokens":3,"chunks":[]})", "spec_accepted_tokens",
                    "needs spec_draft_tokens"},
           bad_line{R"({"send":0,"spec_draft_tokens":3,"chunks":[]})", "spec_draft_tokens",
                    "needs spec_accepted_tokens"},
           bad_line{R"({"send":0,"cached_prompt_tokens":-1,"chunks":[]})", "cached_prompt_tokens",
                    ""},
           bad_line{R"({"send":0,"chunks":[[0.1,1,"thinking"]]})", "chunks[0][2]", ""},
       })
    check_refused(c, 7);
  // A line without the new fields still reads, and is counted as good next to a bad one.
  std::istringstream in(
      "{\"send\":0,\"chunks\":[[0.1,1,\"reasoning\"]]}\n"
      "{\"send\":0,\"prompt_tokens\":1,\"cached_prompt_tokens\":2,\"chunks\":[]}\n");
  std::size_t good = 0;
  std::vector<tokchron::trace_error> errors;
  tokchron::read_trace(
      in, [&](const tokchron::trace_record&) { ++good; },
      [&](const tokchron::trace_error& e) { errors.push_back(e); });
  CHECK(good == 1);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].line == 2);
  CHECK(errors[0].field == "cached_prompt_tokens");
}

TEST_CASE("bad input R12: ids and errors that are not UTF-8 are written, never thrown on") {
  // A reason cut inside a character, a Latin-1 body, gzip bytes, a lone continuation byte, an
  // overlong form and a surrogate: each invalid byte becomes U+FFFD, the rest is kept.
  const std::string bad[] = {"caf\xc3", "caf\xe9",  "\x1f\x8b\x08\x00",
                             "a\x80z",  "\xc0\xaf", "\xed\xa0\x80"};
  for (const std::string& b : bad) {
    CAPTURE(b);
    tokchron::trace_record r;
    r.id = "id-" + b;
    r.error = "HTTP 500: " + b;
    r.ok = false;
    std::string line;
    REQUIRE_NOTHROW(line = tokchron::to_json_line(r));
    const auto back = tokchron::parse_trace_line(line, 1);
    REQUIRE(back.record);
    CHECK(back.record->id.rfind("id-", 0) == 0);
    CHECK(back.record->error.rfind("HTTP 500: ", 0) == 0);
    CHECK(back.record->error.find("\xef\xbf\xbd") != std::string::npos);
    CHECK_FALSE(back.record->ok);
  }
  // Valid text, multi-byte characters included, is written unchanged.
  tokchron::trace_record r;
  r.id = "r\xc3\xa9q-\xe2\x82\xac";
  r.error = "\xf0\x9f\x98\x80 boom";
  const auto back = tokchron::parse_trace_line(tokchron::to_json_line(r), 1);
  REQUIRE(back.record);
  CHECK(back.record->id == r.id);
  CHECK(back.record->error == r.error);
}
