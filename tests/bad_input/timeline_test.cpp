// SPDX-License-Identifier: MIT
// Bad input to the recording layer (README "Bad input and concurrency", rows T1-T7): every
// misuse is refused with a status, counted, and leaves what was recorded exactly as it was.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "tokchron/metrics/canonical.hpp"
#include "tokchron/timeline/request_timeline.hpp"

using namespace std::chrono_literals;
using tokchron::chunk_kind;
using tokchron::finish_reason;
using tokchron::manual_clock;
using tokchron::record_status;

namespace {
using full_tl = tokchron::basic_request_timeline<manual_clock>;

struct gap_count {
  std::uint64_t* calls;
  void operator()(manual_clock::duration, std::uint32_t) const noexcept { ++*calls; }
};
using stream_tl =
    tokchron::basic_request_timeline<manual_clock, tokchron::streaming_store<gap_count>>;

manual_clock::time_point at(manual_clock::duration d) { return manual_clock::at(d); }

// Everything a timeline exposes, to compare before and after a refused call.
struct observed {
  tokchron::request_metrics m;
  std::vector<std::pair<std::int64_t, std::uint32_t>> chunks;
  std::optional<manual_clock::time_point> arrival, send, queued, scheduled, finish;
  std::optional<finish_reason> reason;
  std::uint32_t preemptions;
  bool operator==(const observed& o) const {
    auto same = [](const std::optional<double>& a, const std::optional<double>& b) {
      return a.has_value() == b.has_value() && (!a || *a == *b);
    };
    return same(m.ttft, o.m.ttft) && same(m.tpot, o.m.tpot) && same(m.e2e, o.m.e2e) &&
           same(m.queue_time, o.m.queue_time) && same(m.decode_time, o.m.decode_time) &&
           m.output_tokens == o.m.output_tokens && chunks == o.chunks && arrival == o.arrival &&
           send == o.send && queued == o.queued && scheduled == o.scheduled && finish == o.finish &&
           reason == o.reason && preemptions == o.preemptions;
  }
};
observed observe(const full_tl& tl) {
  observed o{tokchron::canonical_metrics(tl),
             {},
             tl.arrival(),
             tl.send_time(),
             tl.queued_time(),
             tl.first_scheduled(),
             tl.finish_time(),
             tl.reason(),
             tl.preemptions()};
  for (const auto& c : tl.store().chunks())
    o.chunks.emplace_back(c.time.time_since_epoch().count(), c.tokens);
  return o;
}

// A request in progress: arrived at 0, scheduled at 10 ms, tokens at 50 and 60 ms.
full_tl in_progress() {
  full_tl tl{manual_clock()};
  REQUIRE(tl.arrive(at(0ms)) == record_status::ok);
  REQUIRE(tl.scheduled(at(10ms)) == record_status::ok);
  REQUIRE(tl.chunk(at(50ms), 1) == record_status::ok);
  REQUIRE(tl.chunk(at(60ms), 2) == record_status::ok);
  return tl;
}

// Checks that `call` is refused with `expected`, counted once, and changes nothing else.
template <class F>
void refused(full_tl& tl, F&& call, record_status expected) {
  const observed before = observe(tl);
  const std::uint32_t misuses = tl.misuse_count();
  CHECK(call(tl) == expected);
  CHECK(tl.misuse_count() == misuses + 1);
  CHECK(tl.last_misuse() == expected);
  CHECK(observe(tl) == before);
}
}  // namespace

TEST_CASE("bad input T1: time going backwards is refused by every recording call") {
  full_tl tl = in_progress();
  refused(
      tl, [](full_tl& t) { return t.chunk(at(55ms), 1); }, record_status::time_went_backwards);
  refused(
      tl, [](full_tl& t) { return t.queued(at(5ms)); }, record_status::time_went_backwards);
  refused(
      tl, [](full_tl& t) { return t.scheduled(at(59ms)); }, record_status::time_went_backwards);
  refused(
      tl, [](full_tl& t) { return t.preempted(at(1ms)); }, record_status::time_went_backwards);
  refused(
      tl, [](full_tl& t) { return t.finish(at(59ms)); }, record_status::time_went_backwards);
  // Equal times are not backwards: a burst of chunks with one timestamp is legal.
  CHECK(tl.chunk(at(60ms), 1) == record_status::ok);
  CHECK(tl.misuse_count() == 5);
  // The streaming store refuses the same way and does not call its sink.
  std::uint64_t calls = 0;
  stream_tl s{manual_clock(), stream_tl::store_type(gap_count{&calls})};
  s.arrive(at(0ms));
  s.chunk(at(50ms), 1);
  s.chunk(at(60ms), 1);
  const std::uint64_t before = calls;
  CHECK(s.chunk(at(40ms), 5) == record_status::time_went_backwards);
  CHECK(calls == before);
  CHECK(s.output_tokens() == 2);
  CHECK(*tokchron::decode_time(s) == 10ms);
}

TEST_CASE("bad input T2: events out of order (before arrival, arrival twice or after send)") {
  full_tl tl{manual_clock()};
  refused(
      tl, [](full_tl& t) { return t.chunk(at(1ms), 1); }, record_status::not_started);
  refused(
      tl, [](full_tl& t) { return t.queued(at(1ms)); }, record_status::not_started);
  refused(
      tl, [](full_tl& t) { return t.scheduled(at(1ms)); }, record_status::not_started);
  refused(
      tl, [](full_tl& t) { return t.preempted(at(1ms)); }, record_status::not_started);
  refused(
      tl, [](full_tl& t) { return t.finish(at(1ms)); }, record_status::not_started);
  CHECK_FALSE(tl.finished());
  REQUIRE(tl.send(at(2ms)) == record_status::ok);
  refused(
      tl, [](full_tl& t) { return t.arrive(at(0ms)); }, record_status::already_started);
  refused(
      tl, [](full_tl& t) { return t.send(at(3ms)); }, record_status::already_started);
  full_tl started = in_progress();
  refused(
      started, [](full_tl& t) { return t.arrive(at(70ms)); }, record_status::already_started);
  refused(
      started, [](full_tl& t) { return t.send(at(70ms)); }, record_status::already_started);
  CHECK(*tokchron::ttft(started) == 50ms);  // the first arrival stands
}

TEST_CASE("bad input T3: tokens (and any event) after finish, finishing twice") {
  full_tl tl = in_progress();
  REQUIRE(tl.finish(at(70ms), finish_reason::length) == record_status::ok);
  refused(
      tl, [](full_tl& t) { return t.chunk(at(80ms), 4); }, record_status::after_finish);
  refused(
      tl, [](full_tl& t) { return t.chunk(at(70ms), 0, chunk_kind::done); },
      record_status::after_finish);
  refused(
      tl, [](full_tl& t) { return t.queued(at(80ms)); }, record_status::after_finish);
  refused(
      tl, [](full_tl& t) { return t.scheduled(at(80ms)); }, record_status::after_finish);
  refused(
      tl, [](full_tl& t) { return t.preempted(at(80ms)); }, record_status::after_finish);
  refused(
      tl, [](full_tl& t) { return t.finish(at(90ms), finish_reason::error); },
      record_status::finished_twice);
  CHECK(*tl.reason() == finish_reason::length);
  CHECK(tl.output_tokens() == 3);
  CHECK(*tokchron::e2e(tl) == 70ms);
}

TEST_CASE("bad input T4: no metric can come out negative, whatever the call order") {
  // Every order of these events, each at its own time, tried in every permutation: refused
  // calls aside, the recorded metrics are never negative durations.
  using step = record_status (*)(full_tl&);
  const std::vector<step> steps = {[](full_tl& t) { return t.arrive(at(30ms)); },
                                   [](full_tl& t) { return t.send(at(20ms)); },
                                   [](full_tl& t) { return t.queued(at(25ms)); },
                                   [](full_tl& t) { return t.scheduled(at(10ms)); },
                                   [](full_tl& t) { return t.chunk(at(40ms), 1); },
                                   [](full_tl& t) { return t.chunk(at(35ms), 2); },
                                   [](full_tl& t) { return t.finish(at(38ms)); }};
  std::vector<std::size_t> order(steps.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::size_t tried = 0;
  do {
    full_tl tl{manual_clock()};
    for (std::size_t i : order) (void)steps[i](tl);
    const tokchron::request_metrics m = tokchron::canonical_metrics(tl);
    for (const auto& v : {m.ttft, m.ttft_from_send, m.ttft_from_scheduled, m.tpot, m.e2e,
                          m.queue_time, m.prefill_time, m.decode_time, m.normalized_latency})
      REQUIRE((!v || *v >= 0));
    ++tried;
  } while (std::next_permutation(order.begin(), order.end()));
  CHECK(tried == 5040);
}

TEST_CASE("bad input T5: token counts cannot overflow (32-bit per chunk, 64-bit totals)") {
  full_tl tl{manual_clock()};
  tl.arrive(at(0ms));
  constexpr std::uint32_t most = std::numeric_limits<std::uint32_t>::max();
  for (int i = 1; i <= 3; ++i) CHECK(tl.chunk(at(i * 1ms), most) == record_status::ok);
  CHECK(tl.output_tokens() == 3 * std::uint64_t{most});  // no 32-bit wrap
  const auto tpot = tokchron::tpot(tl);
  REQUIRE(tpot);
  CHECK(tpot->count() > 0);
  // per-request counters (prompt, reported output) take 64-bit values unchanged
  tl.set_prompt_tokens(std::numeric_limits<std::uint64_t>::max());
  CHECK(*tl.prompt_tokens() == std::numeric_limits<std::uint64_t>::max());
}

TEST_CASE("bad input T6: a 0-token chunk before any token defines no token metric") {
  full_tl tl{manual_clock()};
  tl.arrive(at(0ms));
  tl.chunk(at(5ms), 0, chunk_kind::empty);
  tl.chunk(at(6ms), 0, chunk_kind::usage);
  tl.finish(at(7ms));
  CHECK_FALSE(tokchron::ttft(tl));
  CHECK_FALSE(tokchron::tpot(tl));
  CHECK_FALSE(tokchron::normalized_latency(tl));
  CHECK_FALSE(tokchron::output_rate(tl));
  CHECK(*tokchron::e2e(tl) == 7ms);
  CHECK(tl.misuse_count() == 0);
}

TEST_CASE("bad input T7: recording calls are noexcept, so misuse never throws") {
  full_tl tl{manual_clock()};
  const auto t = at(1ms);
  static_assert(
      noexcept(tl.arrive(t))&& noexcept(tl.send(t))&& noexcept(tl.queued(t))&& noexcept(tl.scheduled(t))&& noexcept(
          tl.preempted(
              t))&& noexcept(tl
                                 .chunk(
                                     t,
                                     1))&& noexcept(tl
                                                        .finish(
                                                            t))&& noexcept(tl.arrive())&& noexcept(tl
                                                                                                       .chunk(
                                                                                                           1))&& noexcept(tl
                                                                                                                              .finish()));
  static_assert(std::is_same_v<decltype(tl.chunk(t, 1)), record_status>);
  // every refusal is counted (the counter saturates at 2^32 - 1 rather than wrapping)
  for (int i = 0; i < 1000; ++i) (void)tl.chunk(t, 1);
  CHECK(tl.misuse_count() == 1000);
  CHECK(tl.last_misuse() == record_status::not_started);
}
