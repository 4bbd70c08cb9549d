// SPDX-License-Identifier: MIT
// Bad trace records (docs/bad-input.md, rows R2, R3, R7, R8; the JSON rows are in
// trace_json_bad_input.cpp): validate() names the field, to_timeline() throws
// std::invalid_argument instead of replaying a record that would corrupt a timeline.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "tokchron/io/trace.hpp"
#include "tokchron/metrics/canonical.hpp"

namespace {
tokchron::trace_record good() {
  tokchron::trace_record r;
  r.arrival = 0.0;
  r.send = 0.001;
  r.queued = 0.002;
  r.scheduled = 0.010;
  r.chunks = {{0.100, 1, tokchron::chunk_kind::text}, {0.120, 2, tokchron::chunk_kind::text}};
  r.end = 0.125;
  return r;
}

void rejected_at(const tokchron::trace_record& r, const std::string& field) {
  const auto issue = tokchron::validate(r);
  REQUIRE(issue);
  CHECK(issue->field == field);
  CHECK_FALSE(issue->message.empty());
  CHECK_THROWS_AS((void)tokchron::to_timeline(r), std::invalid_argument);
}
}  // namespace

TEST_CASE("bad input R2: time going backwards in a trace record names the field") {
  CHECK_FALSE(tokchron::validate(good()));
  auto r = good();
  r.chunks[1].time = 0.090;
  rejected_at(r, "chunks[1][0]");
  r = good();
  r.arrival = 0.5;  // arrival after send
  rejected_at(r, "arrival");
  r = good();
  r.scheduled = 0.0015;  // before queued
  rejected_at(r, "scheduled");
  r = good();
  r.chunks[0].time = 0.005;  // before scheduling
  rejected_at(r, "chunks[0][0]");
  r = good();
  r.end = 0.110;  // before the last chunk
  rejected_at(r, "end");
  r = good();
  r.preempted = {0.05, 0.04};
  rejected_at(r, "preempted[1]");
}

TEST_CASE("bad input R3: NaN, infinite and out-of-range times in a record are refused") {
  // The time range is |t| < 2^62 ns (about 4.61e9 s): -8.9e9 (issue 19's reproducer, which used
  // to pass as |t| < 9e9 and overflow every difference) and 4.62e9 are outside it.
  const double bad[] = {std::nan(""),
                        std::numeric_limits<double>::infinity(),
                        -std::numeric_limits<double>::infinity(),
                        1e300,
                        -1e10,
                        -8.9e9,
                        8.9e9,
                        4.62e9,
                        -4.62e9};
  for (double t : bad) {
    CAPTURE(t);
    auto r = good();
    r.send = t;
    r.arrival.reset();
    r.queued.reset();
    r.scheduled.reset();
    r.chunks.clear();
    r.end.reset();
    rejected_at(r, "send");
    r = good();
    r.chunks[1].time = t;
    rejected_at(r, "chunks[1][0]");
    r = good();
    r.end = t;
    rejected_at(r, "end");
  }
  // the edges of the range replay exactly, and the widest difference fits
  auto wide = good();
  wide.arrival = -4.6e9;
  wide.send = -4.6e9;
  wide.queued.reset();
  wide.scheduled.reset();
  wide.chunks = {{4.6e9, 1, tokchron::chunk_kind::text}};
  wide.end = 4.6e9;
  REQUIRE_FALSE(tokchron::validate(wide));
  const tokchron::trace_timeline tl = tokchron::to_timeline(wide);
  CHECK(tl.misuse_count() == 0);
  CHECK(tokchron::e2e(tl)->count() == 9200000000000000000);
  auto r = good();
  r.ok = true;
  r.reason = tokchron::finish_reason::error;  // contradicts ok
  rejected_at(r, "finish_reason");
}

// Found by the trace_line fuzz target (tests/fuzz/pending/trace_line/default_end_before_queued),
// A valid record without `end` or chunks once defaulted its end to `send`, so a later `queued`
// made the replayed finish go backwards and the timeline stayed unfinished (a fuzz finding).
TEST_CASE("bad input R7: a record without end replays finished at its latest event") {
  tokchron::trace_record r;
  r.send = 0.0;
  r.queued = 1.0;
  REQUIRE_FALSE(tokchron::validate(r));
  const tokchron::trace_timeline tl = tokchron::to_timeline(r);
  CHECK(tl.misuse_count() == 0);
  REQUIRE(tl.finished());
  CHECK(tokchron::to_seconds(*tl.finish_time() - *tl.arrival()) == 1.0);
}

TEST_CASE("bad input R8: a chunk after the [DONE] chunk is refused naming it") {
  auto r = good();
  r.chunks = {{0.100, 1, tokchron::chunk_kind::text},
              {0.110, 0, tokchron::chunk_kind::done},
              {0.120, 2, tokchron::chunk_kind::text}};
  rejected_at(r, "chunks[2]");
  r.chunks[2] = {0.120, 0, tokchron::chunk_kind::done};  // a second [DONE] too
  rejected_at(r, "chunks[2]");
  r.chunks.pop_back();
  CHECK_FALSE(tokchron::validate(r));
}
