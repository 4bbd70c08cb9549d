// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include "tokchron/io/trace.hpp"
#include "tokchron/metrics/canonical.hpp"

namespace tc = tokchron;

TEST_CASE("trace: a record replays into a timeline and back") {
  tc::trace_record r;
  r.id = "r1";
  r.arrival = 12.0;
  r.send = 12.003;
  r.scheduled = 12.40;
  r.prompt_tokens = 300;
  r.chunks = {{12.52, 1, tc::chunk_kind::text},
              {12.56, 0, tc::chunk_kind::empty},
              {12.61, 2, tc::chunk_kind::text},
              {12.62, 0, tc::chunk_kind::usage}};
  r.end = 12.62;
  r.usage_output_tokens = 3;
  REQUIRE_FALSE(tc::validate(r));
  const tc::trace_timeline tl = tc::to_timeline(r);
  CHECK(tl.misuse_count() == 0);
  CHECK(tl.output_tokens() == 3);
  CHECK(tc::to_seconds(*tc::ttft(tl)) == doctest::Approx(0.52).epsilon(1e-12));
  const tc::trace_record back = tc::to_trace_record(tl, tc::trace_clock::time_point{}, "r1");
  CHECK(back.chunks.size() == 4);
  CHECK(back.send == doctest::Approx(12.003).epsilon(1e-15));
  CHECK(back.usage_output_tokens == r.usage_output_tokens);
}
