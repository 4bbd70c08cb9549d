// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include "tokchron/metrics/canonical.hpp"
#include "tokchron/testing.hpp"
#include "tokchron/timeline/request_timeline.hpp"

using namespace std::chrono_literals;
using tokchron::chunk_kind;
using tokchron::finish_reason;
using tokchron::manual_clock;
using tokchron::record_status;
using full_tl = tokchron::basic_request_timeline<manual_clock>;

namespace {
struct gap_log {
  std::vector<std::pair<manual_clock::duration, std::uint32_t>>* out;
  void operator()(manual_clock::duration g, std::uint32_t k) const noexcept {
    out->emplace_back(g, k);
  }
};
using stream_tl =
    tokchron::basic_request_timeline<manual_clock, tokchron::streaming_store<gap_log>>;
}  // namespace

TEST_CASE("a chunk is 16 bytes") {
  static_assert(sizeof(full_tl::store_type::chunk_type) <= 16);
  static_assert(sizeof(tokchron::basic_token_chunk<std::chrono::steady_clock::time_point>) <= 16);
}

TEST_CASE("recording without timestamps reads the injected clock") {
  manual_clock clock;
  full_tl tl(clock);
  CHECK(tl.arrive() == record_status::ok);
  clock.advance(10ms);
  CHECK(tl.queued() == record_status::ok);
  clock.advance(40ms);
  CHECK(tl.scheduled() == record_status::ok);
  clock.advance(70ms);
  CHECK(tl.chunk(1) == record_status::ok);
  clock.advance(20ms);
  CHECK(tl.chunk(2) == record_status::ok);
  clock.advance(5ms);
  CHECK(tl.finish(finish_reason::length) == record_status::ok);
  CHECK(*tokchron::ttft(tl) == 120ms);
  CHECK(*tokchron::queue_time(tl) == 40ms);
  CHECK(*tokchron::prefill_time(tl) == 70ms);
  CHECK(*tokchron::e2e(tl) == 145ms);
  CHECK(tl.output_tokens() == 3);
  CHECK(tl.succeeded());
  CHECK(*tl.reason() == finish_reason::length);
  CHECK(tl.misuse_count() == 0);
}

TEST_CASE("misuse is reported, counted and changes nothing") {
  manual_clock clock;
  full_tl tl(clock);
  SUBCASE("a chunk before the request started") {
    CHECK(tl.chunk(manual_clock::at(1ms), 1) == record_status::not_started);
    CHECK(tl.output_tokens() == 0);
    CHECK(tl.store().chunks().empty());
  }
  SUBCASE("scheduling or finishing before start") {
    CHECK(tl.scheduled(manual_clock::at(1ms)) == record_status::not_started);
    CHECK(tl.finish(manual_clock::at(1ms)) == record_status::not_started);
    CHECK(!tl.finished());
    CHECK(tl.misuse_count() == 2);
  }
  SUBCASE("time going backwards") {
    REQUIRE(tl.arrive(manual_clock::at(100ms)) == record_status::ok);
    REQUIRE(tl.chunk(manual_clock::at(200ms), 1) == record_status::ok);
    CHECK(tl.chunk(manual_clock::at(150ms), 1) == record_status::time_went_backwards);
    CHECK(tl.scheduled(manual_clock::at(199ms)) == record_status::time_went_backwards);
    CHECK(tl.finish(manual_clock::at(10ms)) == record_status::time_went_backwards);
    CHECK(tl.output_tokens() == 1);
    CHECK(tl.store().chunks().size() == 1);
    CHECK(!tl.first_scheduled());
    CHECK(!tl.finished());
    CHECK(tl.misuse_count() == 3);
    CHECK(tl.last_misuse() == record_status::time_went_backwards);
  }
  SUBCASE("a chunk before arrival time") {
    REQUIRE(tl.arrive(manual_clock::at(100ms)) == record_status::ok);
    CHECK(tl.chunk(manual_clock::at(50ms), 1) == record_status::time_went_backwards);
  }
  SUBCASE("tokens after finish and finishing twice") {
    REQUIRE(tl.arrive(manual_clock::at(0ms)) == record_status::ok);
    REQUIRE(tl.chunk(manual_clock::at(10ms), 1) == record_status::ok);
    REQUIRE(tl.finish(manual_clock::at(20ms)) == record_status::ok);
    CHECK(tl.chunk(manual_clock::at(30ms), 5) == record_status::after_finish);
    CHECK(tl.finish(manual_clock::at(40ms), finish_reason::error) == record_status::finished_twice);
    CHECK(tl.output_tokens() == 1);
    CHECK(*tl.finish_time() == manual_clock::at(20ms));
    CHECK(*tl.reason() == finish_reason::stop);
    CHECK(*tokchron::e2e(tl) == 20ms);
  }
  SUBCASE("arrival twice, or after send") {
    REQUIRE(tl.arrive(manual_clock::at(0ms)) == record_status::ok);
    CHECK(tl.arrive(manual_clock::at(1ms)) == record_status::already_started);
    REQUIRE(tl.send(manual_clock::at(2ms)) == record_status::ok);
    CHECK(tl.send(manual_clock::at(3ms)) == record_status::already_started);
    CHECK(*tl.arrival() == manual_clock::at(0ms));
    CHECK(*tl.send_time() == manual_clock::at(2ms));
  }
  SUBCASE("a token count that would overflow is refused") {
    REQUIRE(tl.arrive(manual_clock::at(0ms)) == record_status::ok);
    REQUIRE(tl.chunk(manual_clock::at(1ms), UINT32_MAX) == record_status::ok);
    CHECK(tl.output_tokens() == UINT32_MAX);
  }
}

TEST_CASE("send without arrival: arrival defaults to send") {
  full_tl tl;
  REQUIRE(tl.send(manual_clock::at(5ms)) == record_status::ok);
  CHECK(!tl.has_explicit_arrival());
  CHECK(*tl.arrival() == manual_clock::at(5ms));
  REQUIRE(tl.chunk(manual_clock::at(25ms), 1) == record_status::ok);
  CHECK(*tokchron::ttft(tl) == 20ms);
  CHECK(*tokchron::ttft_from_send(tl) == 20ms);
}

TEST_CASE("intended arrival keeps coordinated omission visible") {
  full_tl tl;
  REQUIRE(tl.arrive(manual_clock::at(0ms)) == record_status::ok);  // scheduled send time
  REQUIRE(tl.send(manual_clock::at(300ms)) == record_status::ok);  // generator fell behind
  REQUIRE(tl.chunk(manual_clock::at(400ms), 1) == record_status::ok);
  CHECK(*tokchron::ttft(tl) == 400ms);
  CHECK(*tokchron::ttft_from_send(tl) == 100ms);
}

TEST_CASE("preemption: first scheduling kept, preemptions counted with their times") {
  full_tl tl;
  REQUIRE(tl.arrive(manual_clock::at(0ms)) == record_status::ok);
  REQUIRE(tl.scheduled(manual_clock::at(10ms)) == record_status::ok);
  REQUIRE(tl.preempted(manual_clock::at(30ms)) == record_status::ok);
  REQUIRE(tl.scheduled(manual_clock::at(80ms)) == record_status::ok);
  REQUIRE(tl.chunk(manual_clock::at(100ms), 1) == record_status::ok);
  REQUIRE(tl.preempted(manual_clock::at(110ms)) == record_status::ok);
  REQUIRE(tl.scheduled(manual_clock::at(150ms)) == record_status::ok);
  REQUIRE(tl.chunk(manual_clock::at(160ms), 1) == record_status::ok);
  REQUIRE(tl.finish(manual_clock::at(160ms)) == record_status::ok);
  CHECK(tl.preemptions() == 2);
  CHECK(*tl.first_scheduled() == manual_clock::at(10ms));
  CHECK(*tl.last_scheduled() == manual_clock::at(150ms));
  CHECK(*tl.last_preempted() == manual_clock::at(110ms));
  CHECK(tl.store().preemption_times() ==
        std::vector<manual_clock::time_point>{manual_clock::at(30ms), manual_clock::at(110ms)});
  CHECK(*tokchron::queue_time(tl) == 10ms);
  CHECK(*tokchron::prefill_time(tl) == 90ms);
  CHECK(*tokchron::ttft_from_scheduled(tl) == 90ms);
}

TEST_CASE("full and streaming stores give the same metrics on the same events") {
  std::vector<std::pair<manual_clock::duration, std::uint32_t>> gaps;
  full_tl f;
  stream_tl s(manual_clock{}, stream_tl::store_type(gap_log{&gaps}));
  auto both = [&](auto&& rec) {
    CHECK(rec(f) == record_status::ok);
    CHECK(rec(s) == record_status::ok);
  };
  both([](auto& t) { return t.arrive(manual_clock::at(0ms)); });
  both([](auto& t) { return t.queued(manual_clock::at(1ms)); });
  both([](auto& t) { return t.scheduled(manual_clock::at(20ms)); });
  both([](auto& t) { return t.chunk(manual_clock::at(100ms), 0, chunk_kind::empty); });
  both([](auto& t) { return t.chunk(manual_clock::at(120ms), 3); });
  both([](auto& t) { return t.chunk(manual_clock::at(150ms), 1); });
  both([](auto& t) { return t.preempted(manual_clock::at(160ms)); });
  both([](auto& t) { return t.scheduled(manual_clock::at(170ms)); });
  both([](auto& t) { return t.chunk(manual_clock::at(250ms), 4); });
  both([](auto& t) { return t.chunk(manual_clock::at(260ms), 0, chunk_kind::usage); });
  both([](auto& t) { return t.finish(manual_clock::at(261ms)); });

  const auto mf = tokchron::canonical_metrics(f);
  const auto ms = tokchron::canonical_metrics(s);
  CHECK(mf.ttft == ms.ttft);
  CHECK(mf.tpot == ms.tpot);
  CHECK(mf.e2e == ms.e2e);
  CHECK(mf.queue_time == ms.queue_time);
  CHECK(mf.prefill_time == ms.prefill_time);
  CHECK(mf.decode_time == ms.decode_time);
  CHECK(mf.normalized_latency == ms.normalized_latency);
  CHECK(mf.output_rate == ms.output_rate);
  CHECK(mf.output_tokens == ms.output_tokens);
  CHECK(mf.preemptions == ms.preemptions);
  CHECK(f.store().max_token_gap() == s.store().max_token_gap());
  CHECK(*s.store().max_token_gap() == 100ms);
  CHECK(f.store().chunk_count() == s.store().chunk_count());
  CHECK(f.store().token_chunk_count() == 3);

  // The sink saw the same per-token ITL the full store yields.
  std::vector<double> from_full;
  tokchron::for_each_itl_per_token(f,
                                   [&](auto g) { from_full.push_back(tokchron::to_seconds(g)); });
  std::vector<double> from_sink;
  for (auto [g, k] : gaps)
    for (std::uint32_t i = 0; i < k; ++i) from_sink.push_back(tokchron::to_seconds(g) / k);
  REQUIRE(from_full.size() == from_sink.size());
  for (std::size_t i = 0; i < from_full.size(); ++i)
    CHECK(from_full[i] == doctest::Approx(from_sink[i]));
}

namespace {
int g_allocations = 0;
template <class T>
struct counting_allocator {
  using value_type = T;
  counting_allocator() = default;
  template <class U>
  counting_allocator(const counting_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    ++g_allocations;
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
  friend bool operator==(const counting_allocator&, const counting_allocator&) { return true; }
  friend bool operator!=(const counting_allocator&, const counting_allocator&) { return false; }
};
}  // namespace

TEST_CASE("full store is allocator-aware; reserve makes recording allocation-free") {
  using tl_t =
      tokchron::basic_request_timeline<manual_clock,
                                       tokchron::full_store<counting_allocator<std::byte>>>;
  tl_t tl;
  tl.store().reserve(64);
  const int before = g_allocations;
  CHECK(before >= 1);
  REQUIRE(tl.arrive(manual_clock::at(0ms)) == record_status::ok);
  for (int i = 1; i <= 64; ++i)
    REQUIRE(tl.chunk(manual_clock::at(i * 1ms), 1) == record_status::ok);
  CHECK(g_allocations == before);
  REQUIRE(tl.chunk(manual_clock::at(100ms), 1) == record_status::ok);
  CHECK(g_allocations == before + 1);
}

TEST_CASE("reasoning chunks: first answer, first reasoning, second token, on both stores") {
  full_tl f;
  tokchron::basic_request_timeline<manual_clock, tokchron::streaming_store<>> s;
  auto both = [&](auto&& rec) {
    CHECK(rec(f) == record_status::ok);
    CHECK(rec(s) == record_status::ok);
  };
  both([](auto& t) { return t.arrive(manual_clock::at(0ms)); });
  both([](auto& t) { return t.chunk(manual_clock::at(10ms), 0, chunk_kind::empty); });
  both([](auto& t) { return t.chunk(manual_clock::at(40ms), 1, chunk_kind::reasoning); });
  both([](auto& t) { return t.chunk(manual_clock::at(60ms), 2, chunk_kind::reasoning); });
  both([](auto& t) { return t.chunk(manual_clock::at(90ms), 3); });
  both([](auto& t) { return t.chunk(manual_clock::at(95ms), 1, chunk_kind::reasoning); });
  both([](auto& t) { return t.finish(manual_clock::at(100ms)); });
  auto check = [](const auto& t) {
    CHECK(*t.first_token_time() == manual_clock::at(40ms));
    CHECK(*t.second_token_time() == manual_clock::at(60ms));
    CHECK(*t.first_reasoning_token_time() == manual_clock::at(40ms));
    CHECK(*t.first_answer_token_time() == manual_clock::at(90ms));
    CHECK(t.reasoning_tokens() == 4);
    CHECK(t.output_tokens() == 7);
    CHECK(t.store().reasoning_chunk_count() == 3);
    CHECK(*tokchron::ttfa(t) == 90ms);
    CHECK(*tokchron::reasoning_time(t) == 50ms);
    CHECK(*tokchron::ttst(t) == 20ms);
  };
  check(f);
  check(s);
  // A first chunk of two or more tokens holds the second token too; one token has none.
  full_tl two;
  REQUIRE(two.arrive(manual_clock::at(0ms)) == record_status::ok);
  REQUIRE(two.chunk(manual_clock::at(5ms), 2) == record_status::ok);
  CHECK(*two.second_token_time() == manual_clock::at(5ms));
  CHECK(*tokchron::ttst(two) == 0ms);
  CHECK(*tokchron::ttfa(two) == *tokchron::ttft(two));
  full_tl one;
  REQUIRE(one.arrive(manual_clock::at(0ms)) == record_status::ok);
  REQUIRE(one.chunk(manual_clock::at(5ms), 1) == record_status::ok);
  CHECK_FALSE(one.second_token_time());
  CHECK_FALSE(tokchron::ttst(one));
  CHECK_FALSE(tokchron::reasoning_time(one));
}
