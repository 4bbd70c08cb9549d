// SPDX-License-Identifier: MIT
#include "tokchron/timeline/replay.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tokchron/metrics/canonical.hpp"
#include "tokchron/testing.hpp"

using namespace std::chrono_literals;
using tokchron::chunk_kind;
using tokchron::finish_reason;
using tokchron::testing::script;
using tp = tokchron::manual_clock::time_point;

namespace {
// Writes every callback as "name@ms[:detail]", to check the exact sequence.
struct event_log : tokchron::replay_callbacks<tp> {
  std::vector<std::string> seen;
  static std::string ms(time_point t) {
    return std::to_string(
        std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count());
  }
  void arrive(time_point t) override { seen.push_back("arrive@" + ms(t)); }
  void send(time_point t) override { seen.push_back("send@" + ms(t)); }
  void queued(time_point t) override { seen.push_back("queued@" + ms(t)); }
  void scheduled(time_point t) override { seen.push_back("scheduled@" + ms(t)); }
  void preempted(time_point t) override { seen.push_back("preempted@" + ms(t)); }
  void chunk(time_point t, std::uint32_t tokens, chunk_kind k) override {
    seen.push_back("chunk@" + ms(t) + ":" + std::to_string(tokens) + ":" +
                   std::string(tokchron::to_string(k)));
  }
  void finish(time_point t, finish_reason r) override {
    seen.push_back("finish@" + ms(t) + ":" + std::string(tokchron::to_string(r)));
  }
};

// A server's own accounting, as a server would keep it: only what it counts is overridden.
struct server_accounting : tokchron::replay_callbacks<tp> {
  std::uint64_t generated = 0, preemptions = 0, failed = 0;
  std::int64_t running = 0, peak_running = 0;
  void scheduled(time_point) override { peak_running = std::max(peak_running, ++running); }
  void preempted(time_point) override {
    --running;
    ++preemptions;
  }
  void chunk(time_point, std::uint32_t tokens, chunk_kind) override { generated += tokens; }
  void finish(time_point, finish_reason r) override {
    if (running > 0) --running;
    if (!tokchron::is_success(r)) ++failed;
  }
};
}  // namespace

TEST_CASE("replay: a preempted request, every event in time order") {
  const auto tl = script()
                      .arrive(0ms)
                      .queued(1ms)
                      .scheduled(2ms)
                      .chunk(3ms, 0, chunk_kind::empty)
                      .first_token(10ms)
                      .tokens(3, 5ms)  // 15, 20, 25 ms
                      .preempted(25ms)
                      .scheduled(40ms)
                      .chunk(45ms, 2)
                      .chunk(46ms, 0, chunk_kind::done)
                      .finish(50ms, finish_reason::length)
                      .timeline();
  event_log log;
  const std::size_t calls = tokchron::replay(tl, log);
  const std::vector<std::string> expected = {
      "arrive@0",        "queued@1",        "scheduled@2",     "chunk@3:0:empty", "chunk@10:1:text",
      "chunk@15:1:text", "chunk@20:1:text", "chunk@25:1:text", "preempted@25",    "scheduled@40",
      "chunk@45:2:text", "chunk@46:0:done", "finish@50:length"};
  CHECK(log.seen == expected);
  CHECK(calls == expected.size());

  server_accounting acct;
  tokchron::replay(tl, acct);
  CHECK(acct.generated == tl.output_tokens());
  CHECK(acct.preemptions == 1);
  CHECK(acct.peak_running == 1);
  CHECK(acct.running == 0);
  CHECK(acct.failed == 0);
}

TEST_CASE("replay: failed requests end with their reason") {
  SUBCASE("rejected before scheduling") {
    const auto tl =
        script().arrive(0ms).queued(0ms).finish(7ms, finish_reason::rejected).timeline();
    event_log log;
    CHECK(tokchron::replay(tl, log) == 3);
    CHECK(log.seen == std::vector<std::string>{"arrive@0", "queued@0", "finish@7:rejected"});
  }
  SUBCASE("aborted mid-stream") {
    const auto tl = script()
                        .arrive(0ms)
                        .scheduled(1ms)
                        .first_token(20ms)
                        .tokens(2, 10ms)
                        .finish(45ms, finish_reason::aborted)
                        .timeline();
    event_log log;
    tokchron::replay(tl, log);
    CHECK(log.seen == std::vector<std::string>{"arrive@0", "scheduled@1", "chunk@20:1:text",
                                               "chunk@30:1:text", "chunk@40:1:text",
                                               "finish@45:aborted"});
    server_accounting acct;
    tokchron::replay(tl, acct);
    CHECK(acct.failed == 1);
    CHECK(acct.generated == 3);
  }
}

TEST_CASE("replay: order among events at equal and interleaved times") {
  SUBCASE("a preemption recorded before a chunk at the same time stays before it") {
    const auto tl = script()
                        .arrive(0ms)
                        .scheduled(1ms)
                        .first_token(5ms)
                        .preempted(9ms)
                        .chunk(9ms, 1)
                        .finish()
                        .timeline();
    event_log log;
    tokchron::replay(tl, log);
    CHECK(log.seen == std::vector<std::string>{"arrive@0", "scheduled@1", "chunk@5:1:text",
                                               "preempted@9", "chunk@9:1:text", "finish@9:stop"});
  }
  SUBCASE("a queueing after an early preemption comes after it") {
    const auto tl =
        script().arrive(0ms).preempted(5ms).queued(7ms).scheduled(8ms).finish(9ms).timeline();
    event_log log;
    tokchron::replay(tl, log);
    CHECK(log.seen == std::vector<std::string>{"arrive@0", "preempted@5", "queued@7", "scheduled@8",
                                               "finish@9:stop"});
  }
  SUBCASE("send-only (client side): arrive and send at the send time") {
    const auto tl = script().send(3ms).first_token(9ms).finish().timeline();
    event_log log;
    tokchron::replay(tl, log);
    CHECK(log.seen ==
          std::vector<std::string>{"arrive@3", "send@3", "chunk@9:1:text", "finish@9:stop"});
  }
}

TEST_CASE("replay: refused events are not replayed; nothing recorded, nothing called") {
  auto s = script();
  s.arrive(10ms).chunk(5ms, 1).first_token(12ms).finish(20ms).finish(30ms);
  REQUIRE(s.timeline().misuse_count() == 2);
  event_log log;
  tokchron::replay(s.timeline(), log);
  CHECK(log.seen == std::vector<std::string>{"arrive@10", "chunk@12:1:text", "finish@20:stop"});

  event_log empty;
  CHECK(tokchron::replay(script().timeline(), empty) == 0);
  CHECK(empty.seen.empty());
}

TEST_CASE("replay into a timeline reproduces it") {
  const auto tl = script()
                      .arrive(0ms)
                      .send(1ms)
                      .queued(2ms)
                      .scheduled(3ms)
                      .chunks(4, 3, 7ms)
                      .preempted(35ms)
                      .preempted(36ms)
                      .scheduled(50ms)
                      .tokens(5, 4ms)
                      .finish(80ms, finish_reason::stop)
                      .prompt_tokens(12)
                      .timeline();
  tokchron::testing::scripted_timeline copy{tokchron::manual_clock{}};
  tokchron::replay(tl, copy);
  CHECK(copy.misuse_count() == 0);
  copy.set_prompt_tokens(12);
  const auto a = tokchron::canonical_metrics(tl), b = tokchron::canonical_metrics(copy);
  for (const auto& d : tokchron::metric_table) CHECK(a.value(d.id) == b.value(d.id));
  CHECK(copy.output_tokens() == tl.output_tokens());
  CHECK(copy.preemptions() == 2);
  REQUIRE(copy.store().schedule_event_count() == 4);
  REQUIRE(tl.store().schedule_event_count() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(copy.store().schedule_event(i).time == tl.store().schedule_event(i).time);
    CHECK(copy.store().schedule_event(i).chunks_before ==
          tl.store().schedule_event(i).chunks_before);
    CHECK(copy.store().schedule_event(i).preempted == tl.store().schedule_event(i).preempted);
  }
  CHECK(tl.store().schedule_event(1).preempted);
  CHECK(tl.store().schedule_event(1).chunks_before == 4);
  CHECK(copy.store().preemption_times() == tl.store().preemption_times());
  event_log x, y;
  tokchron::replay(tl, x);
  tokchron::replay(copy, y);
  CHECK(x.seen == y.seen);
}
