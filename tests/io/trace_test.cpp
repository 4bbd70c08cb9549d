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

TEST_CASE("trace: shift_times moves every time and nothing else") {
  tc::trace_record r;
  r.id = "7";
  r.benchmark_start = 0.25;
  r.clock_mono = 0.75;
  r.clock_wall_ns = 1700000000000000000ULL;
  r.clock_gap_ns = 900;
  r.arrival = 0.5;
  r.send = 1;
  r.queued = 1.5;
  r.scheduled = 1.75;
  r.preempted = {2.5, 2.75};
  r.prompt_tokens = 7;
  r.chunks = {{2, 3, tc::chunk_kind::text}, {3, 0, tc::chunk_kind::done}};
  r.end = 3;
  r.usage_output_tokens = 3;
  r.cached_prompt_tokens = 2;
  const tc::trace_record before = r;

  tc::shift_times(r, 10);
  CHECK(*r.benchmark_start == 10.25);
  CHECK(*r.clock_mono == 10.75);
  CHECK(*r.arrival == 10.5);
  CHECK(r.send == 11);
  CHECK(*r.queued == 11.5);
  CHECK(*r.scheduled == 11.75);
  CHECK(r.preempted == std::vector<double>{12.5, 12.75});
  CHECK(r.chunks[0].time == 12);
  CHECK(r.chunks[1].time == 13);
  CHECK(*r.end == 13);
  // Counts, kinds, ids and the wall clock are not times on the trace's clock.
  CHECK(r.id == before.id);
  CHECK(r.clock_wall_ns == before.clock_wall_ns);
  CHECK(r.clock_gap_ns == before.clock_gap_ns);
  CHECK(r.prompt_tokens == before.prompt_tokens);
  CHECK(r.chunks[0].tokens == 3);
  CHECK(r.chunks[1].kind == tc::chunk_kind::done);
  CHECK(r.usage_output_tokens == before.usage_output_tokens);
  CHECK(r.cached_prompt_tokens == before.cached_prompt_tokens);

  // Shifting back restores the record; absent times stay absent.
  tc::shift_times(r, -10);
  CHECK(r == before);
  tc::trace_record bare;
  bare.send = 4;
  tc::shift_times(bare, -1);
  CHECK(bare.send == 3);
  CHECK(!bare.arrival);
  CHECK(!bare.benchmark_start);
  CHECK(!bare.end);
}

TEST_CASE("trace: trace_time is the nanosecond of a time in seconds") {
  CHECK(tc::trace_time(0).time_since_epoch().count() == 0);
  CHECK(tc::trace_time(1.5).time_since_epoch().count() == 1500000000);
  CHECK(tc::trace_time(-2e-9).time_since_epoch().count() == -2);
  // The nearest nanosecond: 1.0000000004 s and 1.0000000006 s round apart.
  CHECK(tc::trace_time(1.0000000004).time_since_epoch().count() == 1000000000);
  CHECK(tc::trace_time(1.0000000006).time_since_epoch().count() == 1000000001);
}
