// SPDX-License-Identifier: MIT
// Bad input to the recording layer (docs/bad-input.md, rows T1-T9): every
// misuse is refused with a status, counted, and leaves what was recorded exactly as it was.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fuzz/timeline_calls.hpp"
#include "tokchron/clock.hpp"
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

TEST_CASE("bad input T4: the event order makes every metric non-negative by construction") {
  // The reproducers of issue 19: each used to be accepted and give a negative metric.
  {
    full_tl tl{manual_clock()};
    REQUIRE(tl.send(at(0us)) == record_status::ok);
    REQUIRE(tl.scheduled(at(1us)) == record_status::ok);
    refused(
        tl, [](full_tl& t) { return t.queued(at(2us)); }, record_status::out_of_order);
    REQUIRE(tl.finish(at(3us)) == record_status::ok);
    CHECK(*tokchron::queue_time(tl) == 1us);  // scheduled - send: queued was refused
  }
  {
    full_tl tl{manual_clock()};
    REQUIRE(tl.send(at(0us)) == record_status::ok);
    REQUIRE(tl.chunk(at(1us), 1) == record_status::ok);
    refused(
        tl, [](full_tl& t) { return t.scheduled(at(2us)); }, record_status::out_of_order);
    REQUIRE(tl.finish(at(3us)) == record_status::ok);
    CHECK_FALSE(tokchron::prefill_time(tl));  // never scheduled before the token: undefined
    CHECK_FALSE(tokchron::ttft_from_scheduled(tl));
  }
  // Every pair that would break a metric is refused, the rest of the order is free.
  full_tl tl = in_progress();  // arrived 0, scheduled 10 ms, tokens at 50 and 60 ms
  refused(
      tl, [](full_tl& t) { return t.queued(at(70ms)); }, record_status::out_of_order);
  full_tl unscheduled{manual_clock()};
  REQUIRE(unscheduled.arrive(at(0ms)) == record_status::ok);
  REQUIRE(unscheduled.chunk(at(5ms), 0, chunk_kind::empty) == record_status::ok);
  refused(
      unscheduled, [](full_tl& t) { return t.queued(at(6ms)); }, record_status::out_of_order);
  refused(
      unscheduled, [](full_tl& t) { return t.scheduled(at(6ms)); }, record_status::out_of_order);
  // Repeated and interleaved calls: a second queued keeps the first; preemption and
  // rescheduling interleave with chunks; the first scheduled stands.
  full_tl again{manual_clock()};
  REQUIRE(again.arrive(at(0ms)) == record_status::ok);
  REQUIRE(again.queued(at(1ms)) == record_status::ok);
  REQUIRE(again.queued(at(2ms)) == record_status::ok);
  REQUIRE(again.scheduled(at(3ms)) == record_status::ok);
  REQUIRE(again.chunk(at(4ms), 1) == record_status::ok);
  REQUIRE(again.preempted(at(5ms)) == record_status::ok);
  REQUIRE(again.scheduled(at(6ms)) == record_status::ok);
  REQUIRE(again.chunk(at(7ms), 2) == record_status::ok);
  REQUIRE(again.chunk(at(8ms), 0, chunk_kind::done) == record_status::ok);
  // nothing streams after [DONE]: its time is the end of every "last chunk" rule
  refused(
      again, [](full_tl& t) { return t.chunk(at(9ms), 1); }, record_status::out_of_order);
  refused(
      again, [](full_tl& t) { return t.chunk(at(9ms), 0, chunk_kind::done); },
      record_status::out_of_order);
  REQUIRE(again.finish(at(9ms)) == record_status::ok);
  CHECK(*tokchron::queue_time(again) == 2ms);
  CHECK(*tokchron::prefill_time(again) == 1ms);
  CHECK(*again.last_scheduled() == at(6ms));
  CHECK(again.misuse_count() == 2);
}

TEST_CASE("bad input T4: random call sequences never give a negative metric, refusals counted") {
  // 20000 sequences of 1..40 calls (any call, times stepping +-127 ms or jumping to the edges
  // of the time range and of int64, any token count including 2^32 - 1): every refusal is
  // counted once and changes nothing; every canonical metric, every profile's per-request value
  // and every pooled ITL sample is non-negative. Fixed seed; runs under ASan+UBSan in CI.
  std::mt19937_64 rng(19);
  std::vector<std::uint8_t> bytes;
  std::uint64_t calls = 0, refusals = 0;
  for (int seq = 0; seq < 20000; ++seq) {
    bytes.resize(3 * (1 + rng() % 40));
    for (auto& b : bytes) {
      const std::uint64_t r = rng();
      // time bytes: mostly small steps, forward more often than backward
      b = static_cast<std::uint8_t>(r % 8 == 0 ? r >> 8 : (r >> 8) % 16);
    }
    for (std::size_t i = 0; i < bytes.size(); i += 3) bytes[i] = static_cast<std::uint8_t>(rng());
    const tokchron_test::call_sequence_result res =
        tokchron_test::check_call_sequence(bytes.data(), bytes.size());
    INFO("sequence ", seq);
    REQUIRE(res.failure == "");
    calls += res.calls;
    refusals += res.refused;
  }
  // the sequences exercised both sides of the contract
  CHECK(refusals > calls / 10);
  CHECK(refusals < calls);
}

TEST_CASE("bad input T8: times outside the time range are refused by every recording call") {
  using ns = std::chrono::nanoseconds;
  constexpr std::int64_t limit = tokchron::time_range_ticks;  // 2^62 ns, about 146 years
  const auto edge = [](std::int64_t v) { return manual_clock::at(ns(v)); };
  for (std::int64_t bad :
       {limit, -limit, std::numeric_limits<std::int64_t>::max(),
        std::numeric_limits<std::int64_t>::min() + 1, std::numeric_limits<std::int64_t>::min()}) {
    CAPTURE(bad);
    full_tl fresh{manual_clock()};
    refused(
        fresh, [&](full_tl& t) { return t.arrive(edge(bad)); }, record_status::time_out_of_range);
    refused(
        fresh, [&](full_tl& t) { return t.send(edge(bad)); }, record_status::time_out_of_range);
    full_tl tl{manual_clock()};
    REQUIRE(tl.arrive(edge(-(limit - 1))) == record_status::ok);
    refused(
        tl, [&](full_tl& t) { return t.queued(edge(bad)); }, record_status::time_out_of_range);
    refused(
        tl, [&](full_tl& t) { return t.scheduled(edge(bad)); }, record_status::time_out_of_range);
    refused(
        tl, [&](full_tl& t) { return t.preempted(edge(bad)); }, record_status::time_out_of_range);
    refused(
        tl, [&](full_tl& t) { return t.chunk(edge(bad), 1); }, record_status::time_out_of_range);
    refused(
        tl, [&](full_tl& t) { return t.finish(edge(bad)); }, record_status::time_out_of_range);
  }
  // The widest timeline the range allows: every difference fits (2^63 - 2 ns), no overflow.
  full_tl wide{manual_clock()};
  REQUIRE(wide.arrive(edge(-(limit - 1))) == record_status::ok);
  REQUIRE(wide.scheduled(edge(-(limit - 1))) == record_status::ok);
  REQUIRE(wide.chunk(edge(0), 1) == record_status::ok);
  REQUIRE(wide.chunk(edge(limit - 1), 3) == record_status::ok);
  REQUIRE(wide.finish(edge(limit - 1)) == record_status::ok);
  CHECK(tokchron::e2e(wide)->count() == 2 * (limit - 1));
  CHECK(tokchron::ttft(wide)->count() == limit - 1);
  CHECK(tokchron::decode_time(wide)->count() == limit - 1);
  const tokchron::request_metrics m = tokchron::canonical_metrics(wide);
  CHECK(*m.e2e == doctest::Approx(2 * 4.611686018427388e9));
  CHECK(*m.output_rate > 0);
}

TEST_CASE("bad input T9: from_seconds never overflows: out-of-range seconds saturate, NaN is 0") {
  using ns = std::chrono::nanoseconds;
  constexpr double inf = std::numeric_limits<double>::infinity();
  CHECK(tokchron::from_seconds<ns>(1e300) == ns::max());
  CHECK(tokchron::from_seconds<ns>(-1e300) == ns::min());
  CHECK(tokchron::from_seconds<ns>(inf) == ns::max());
  CHECK(tokchron::from_seconds<ns>(-inf) == ns::min());
  CHECK(tokchron::from_seconds<ns>(std::numeric_limits<double>::quiet_NaN()) == ns::zero());
  CHECK(tokchron::from_seconds<ns>(9.3e9) == ns::max());                // past 2^63 ns
  CHECK(tokchron::from_seconds<ns>(9.2e9) == ns(9200000000000000000));  // just inside
  // the checked form, for input: finite and inside the time range (|t| < 2^62 ns)
  CHECK(tokchron::seconds_in_time_range<ns>(4.6e9));
  CHECK_FALSE(tokchron::seconds_in_time_range<ns>(4.7e9));
  CHECK_FALSE(tokchron::seconds_in_time_range<ns>(-8.9e9));
  CHECK_FALSE(tokchron::seconds_in_time_range<ns>(std::numeric_limits<double>::quiet_NaN()));
  CHECK_FALSE(tokchron::seconds_in_time_range<ns>(inf));
  using us = std::chrono::duration<std::uint32_t, std::micro>;  // unsigned, narrow
  CHECK(tokchron::from_seconds<us>(-5.0) == us(0));
  CHECK(tokchron::from_seconds<us>(1e300) == us(std::numeric_limits<std::uint32_t>::max()));
  CHECK(tokchron::from_seconds<us>(1.5) == us(1500000));
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

TEST_CASE("bad input T10: speculative accepted > drafted is refused and counted") {
  full_tl tl{manual_clock()};
  REQUIRE(tl.arrive(manual_clock::at(0ms)) == record_status::ok);
  REQUIRE(tl.set_speculative(8, 5) == record_status::ok);
  CHECK(tl.set_speculative(4, 5) == record_status::invalid_count);
  CHECK(tl.misuse_count() == 1);
  CHECK(tl.last_misuse() == record_status::invalid_count);
  CHECK(*tl.speculative_drafted_tokens() == 8);  // the earlier totals stand
  CHECK(*tl.speculative_accepted_tokens() == 5);
  // A cached count above the prompt is kept as given, and the uncached rate is empty, not
  // negative (the trace reader refuses such a record: row R11).
  tl.set_prompt_tokens(4);
  tl.set_cached_prompt_tokens(6);
  REQUIRE(tl.chunk(manual_clock::at(10ms), 1) == record_status::ok);
  CHECK(tokchron::prefill_tps(tl));
  CHECK_FALSE(tokchron::uncached_prefill_tps(tl));
}
