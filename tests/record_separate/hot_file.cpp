// SPDX-License-Identifier: MIT
// A server's hot file under TOKCHRON_SEPARATE_INSTANTIATION: it sees record.hpp's extern
// template declarations only, so every recording call below links against instances.cpp. Each
// check prints what differed and the program exits 1 (no test framework: the point is the link).
#include <chrono>
#include <cmath>
#include <cstdio>

#include "tokchron/live/options.hpp"  // constructing a live_metrics needs the options' definition
#include "tokchron/record.hpp"

#ifndef TOKCHRON_SEPARATE_INSTANTIATION
#error "tests.cmake defines TOKCHRON_SEPARATE_INSTANTIATION for this target"
#endif

namespace {
int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what);
    ++failures;
  }
}
// Durations are whole milliseconds on steady_clock (nanoseconds): exact in double seconds to
// far better than 1e-12.
void expect_seconds(const std::optional<double>& got, double want, const char* what) {
  const bool ok = got && std::fabs(*got - want) <= 1e-12;
  if (!ok) std::printf("FAIL: %s = %.9f s, expected %.9f s\n", what, got ? *got : -1.0, want);
  failures += ok ? 0 : 1;
}

template <class Timeline>
void record_one(Timeline& tl, std::chrono::steady_clock::time_point t0) {
  using std::chrono::milliseconds;
  expect(tl.arrive(t0) == tokchron::record_status::ok, "arrive");
  expect(tl.queued(t0 + milliseconds(2)) == tokchron::record_status::ok, "queued");
  expect(tl.scheduled(t0 + milliseconds(5)) == tokchron::record_status::ok, "scheduled");
  expect(tl.chunk(t0 + milliseconds(20), 1) == tokchron::record_status::ok, "first chunk");
  expect(tl.preempted(t0 + milliseconds(25)) == tokchron::record_status::ok, "preempted");
  expect(tl.scheduled(t0 + milliseconds(30)) == tokchron::record_status::ok, "rescheduled");
  expect(tl.chunk(t0 + milliseconds(50), 4) == tokchron::record_status::ok, "second chunk");
  // Misuse goes through the separately compiled members too: refused, counted, nothing changed.
  expect(tl.chunk(t0 + milliseconds(40), 1) == tokchron::record_status::time_went_backwards,
         "chunk back in time is refused");
  expect(tl.finish(t0 + milliseconds(60), tokchron::finish_reason::stop) ==
             tokchron::record_status::ok,
         "finish");
  expect(tl.finish(t0 + milliseconds(70)) == tokchron::record_status::finished_twice,
         "second finish is refused");
  expect(tl.misuse_count() == 2, "two misuses counted");
  expect(tl.output_tokens() == 5, "5 output tokens");
  expect(tl.preemptions() == 1, "one preemption");

  const tokchron::request_metrics m = tokchron::canonical_metrics(tl);
  expect_seconds(m.ttft, 0.020, "ttft");
  expect_seconds(m.e2e, 0.060, "e2e");
  expect_seconds(m.queue_time, 0.003, "queue time");
  expect_seconds(m.tpot, 0.030 / 4, "tpot");  // (t_last - t_first) / (tokens - 1)
}
}  // namespace

int main() {
  const auto t0 = std::chrono::steady_clock::now();
  tokchron::request_timeline full;
  record_one(full, t0);
  expect(full.store().chunks().size() == 2, "the full store keeps both chunks");
  expect(full.store().schedule_event_count() == 3, "two schedulings and a preemption kept");
  tokchron::streaming_request_timeline<> streaming;
  record_one(streaming, t0);

  // The live metrics' recording calls, each compiled in instances.cpp.
  tokchron::live_metrics live{tokchron::live_options{}};
  tokchron::live_request r;
  using std::chrono::milliseconds;
  expect(live.arrive(r, t0) == tokchron::record_status::ok, "live arrive");
  expect(live.set_prompt_tokens(r, 7) == tokchron::record_status::ok, "live prompt tokens");
  expect(live.queued(r, t0 + milliseconds(1)) == tokchron::record_status::ok, "live queued");
  expect(live.scheduled(r, t0 + milliseconds(3)) == tokchron::record_status::ok, "live scheduled");
  expect(live.chunk(r, t0 + milliseconds(10), 2) == tokchron::record_status::ok, "live chunk");
  expect(live.preempted(r, t0 + milliseconds(12)) == tokchron::record_status::ok, "live preempt");
  expect(live.chunk(r, t0 + milliseconds(11), 1) == tokchron::record_status::time_went_backwards,
         "live chunk back in time is refused");
  expect(live.finish(r, t0 + milliseconds(20)) == tokchron::record_status::ok, "live finish");
  expect(live.finish(r, t0 + milliseconds(21)) == tokchron::record_status::after_finish,
         "live second finish is refused");
  expect(live.misuse() == 2, "two live misuses counted");
  expect(!r.active() && r.timeline().output_tokens() == 2, "the live request's timeline");
  expect_seconds(tokchron::canonical_metrics(r.timeline()).ttft, 0.010, "live ttft");
  if (failures == 0) std::printf("record_separate: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
