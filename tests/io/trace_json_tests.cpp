// SPDX-License-Identifier: MIT
// Tests of io/trace_json.hpp (built as tokchron_io_tests: needs nlohmann-json).
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tokchron/io/trace_json.hpp"

namespace tc = tokchron;

TEST_CASE("trace_json: the README example line parses") {
  const auto r = tc::parse_trace_line(
      R"({"id":"r1","arrival":12.000,"send":12.003,"scheduled":12.40,"prompt_tokens":300,)"
      R"("chunks":[[12.52,1],[12.56,0,"empty"],[12.61,2],[12.62,0,"usage"]],"end":12.62,)"
      R"("usage_output_tokens":3,"ok":true})");
  REQUIRE(r.record);
  CHECK(r.record->chunks.size() == 4);
  CHECK(r.record->chunks[1].kind == tc::chunk_kind::empty);
  CHECK(*r.record->usage_output_tokens == 3);
  const auto again = tc::parse_trace_line(tc::to_json_line(*r.record));
  REQUIRE(again.record);
  CHECK(*again.record == *r.record);
}

TEST_CASE("trace_json: a malformed line names its line and field") {
  const auto r = tc::parse_trace_line(R"({"send":1,"chunks":[[2,1],[3,-1]]})", 7);
  REQUIRE(r.error);
  CHECK(r.error->line == 7);
  CHECK(r.error->field == "chunks[1][1]");
}
