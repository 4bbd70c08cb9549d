// SPDX-License-Identifier: MIT
// basic_request_recorder: one call per event feeds the live metrics and the full timeline, the
// terminal call hands the timeline to the sink, misuse is refused on both and counted.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "helpers.hpp"
#include "tokchron/export/prometheus.hpp"
#include "tokchron/live/options.hpp"
#include "tokchron/live/request_recorder.hpp"
#include "tokchron/live/scrape.hpp"
#include "tokchron/metrics/canonical.hpp"

namespace {
using live_test::ms;
using metrics = tokchron::basic_live_metrics<tokchron::manual_clock>;
using request = tokchron::basic_live_request<tokchron::manual_clock>;
using recorder = tokchron::basic_request_recorder<tokchron::manual_clock>;
using timeline = recorder::timeline_type;
using tokchron::finish_reason;
using tokchron::record_status;

struct sink : tokchron::basic_trace_sink<tokchron::manual_clock> {
  struct row {
    std::string id;
    std::string error;
    std::uint64_t tokens;
    finish_reason reason;
  };
  std::vector<row> rows;
  bool throw_next = false;
  void write(const timeline& tl, std::string_view id, std::string_view error) override {
    if (throw_next) {
      throw_next = false;
      throw std::runtime_error("disk full");
    }
    rows.push_back({std::string(id), std::string(error), tl.output_tokens(), *tl.reason()});
  }
};
}  // namespace

TEST_CASE("request_recorder: one call per event gives the same metrics as two records") {
  metrics a(tokchron::vllm_live_options("m", 1000));
  metrics b(tokchron::vllm_live_options("m", 1000));
  sink out;
  recorder rec(a, &out);
  request live;
  timeline tl;
  // The recorder, against the double-recording path on b.
  CHECK(rec.arrive(ms(0), {tokchron::live_series{}, 10, 64}, 7) == record_status::ok);
  CHECK(b.arrive(live, ms(0), {tokchron::live_series{}, 10, 64}) == record_status::ok);
  tl.arrive(ms(0));
  tl.set_prompt_tokens(10);
  CHECK(rec.queued(ms(1)) == record_status::ok);
  b.queued(live, ms(1));
  tl.queued(ms(1));
  CHECK(rec.scheduled(ms(5)) == record_status::ok);
  b.scheduled(live, ms(5));
  tl.scheduled(ms(5));
  for (auto [t, n] : {std::pair<double, std::uint32_t>{50, 1}, {70, 3}, {100, 2}}) {
    CHECK(rec.chunk(ms(t), n) == record_status::ok);
    b.chunk(live, ms(t), n);
    tl.chunk(ms(t), n);
  }
  CHECK(rec.finish(ms(100), finish_reason::length) == record_status::ok);
  b.finish(live, ms(100), finish_reason::length);
  tl.finish(ms(100), finish_reason::length);

  CHECK(tokchron::to_prometheus(tokchron::scrape(a)) ==
        tokchron::to_prometheus(tokchron::scrape(b)));
  CHECK(tokchron::ttft(rec.timeline()) == tokchron::ttft(tl));
  CHECK(tokchron::e2e(rec.timeline()) == tokchron::e2e(tl));
  CHECK(rec.timeline().store().chunk_count() == 3);
  REQUIRE(out.rows.size() == 1);
  CHECK(out.rows[0].id == "7");
  CHECK(out.rows[0].tokens == 6);
  CHECK(out.rows[0].reason == finish_reason::length);
  CHECK(rec.misuse() == 0);
  CHECK(rec.diverged() == 0);
}

TEST_CASE("request_recorder: misuse is refused on both records, counted, never corrupting") {
  metrics m(tokchron::tokchron_live_options());
  sink out;
  recorder rec(m, &out);
  CHECK(rec.chunk(ms(1), 1) != record_status::ok);  // before arrive
  CHECK(rec.misuse() == 1);
  CHECK(rec.arrive(ms(10)) == record_status::ok);
  CHECK(rec.arrive(ms(11)) != record_status::ok);  // already started
  CHECK(rec.chunk(ms(20), 2) == record_status::ok);
  CHECK(rec.chunk(ms(15), 1) == record_status::time_went_backwards);
  CHECK(rec.queued(ms(25)) == record_status::out_of_order);  // queued after a chunk
  CHECK(rec.timeline().output_tokens() == 2);
  CHECK(rec.live().timeline().output_tokens() == 2);
  CHECK(rec.fail(ms(30), "worker fault") == record_status::ok);
  CHECK(rec.chunk(ms(31), 1) != record_status::ok);  // after the finish
  CHECK(rec.finish(ms(32)) != record_status::ok);    // finished twice
  CHECK(rec.misuse() == 6);
  CHECK(m.misuse() == 6);  // every refusal also reached the metrics' counter
  CHECK(rec.diverged() == 0);
  REQUIRE(out.rows.size() == 1);  // written once, at the one accepted finish
  CHECK(out.rows[0].error == "worker fault");
  CHECK(out.rows[0].reason == finish_reason::error);
  CHECK(rec.timeline().output_tokens() == 2);
}

TEST_CASE("request_recorder: a throwing sink is counted; the recorder is reusable") {
  metrics m(tokchron::tokchron_live_options());
  sink out;
  out.throw_next = true;
  recorder rec(m, &out);
  CHECK(rec.arrive(ms(0), {}, 1) == record_status::ok);
  CHECK(rec.reject(ms(1), "queue full") == record_status::ok);  // the throw stays here
  CHECK(rec.sink_failures() == 1);
  CHECK(out.rows.empty());
  CHECK(rec.arrive(ms(2), {}, 2) == record_status::ok);  // afresh
  CHECK(rec.timeline().store().chunk_count() == 0);
  CHECK(rec.chunk(ms(3), 4) == record_status::ok);
  CHECK(rec.abort(ms(4)) == record_status::ok);
  REQUIRE(out.rows.size() == 1);
  CHECK(out.rows[0].id == "2");
  CHECK(out.rows[0].tokens == 4);
  CHECK(out.rows[0].reason == finish_reason::aborted);
  CHECK(rec.misuse() == 0);
}

TEST_CASE("request_recorder: without a sink no full timeline is kept") {
  metrics m(tokchron::tokchron_live_options());
  recorder rec(m);
  CHECK_FALSE(rec.keeps_timeline());
  CHECK(rec.arrive(ms(0)) == record_status::ok);
  CHECK(rec.chunk(ms(1), 3) == record_status::ok);
  CHECK(rec.finish(ms(2)) == record_status::ok);
  CHECK(rec.timeline().store().chunk_count() == 0);
  CHECK(rec.live().timeline().output_tokens() == 3);
}

TEST_CASE("request_recorder: string ids reach the sink; numeric ids as their digits") {
  metrics m(tokchron::tokchron_live_options());
  sink out;
  recorder rec(m, &out);
  std::string header = "host1-42";  // an X-Request-Id, gone before the finish
  CHECK(rec.arrive(ms(0), {}, header) == record_status::ok);
  header.assign("overwritten");
  CHECK(rec.id() == "host1-42");
  CHECK(rec.finish(ms(1)) == record_status::ok);
  CHECK(rec.arrive(ms(2), {}, std::uint64_t{18446744073709551615u}) == record_status::ok);
  CHECK(rec.finish(ms(3)) == record_status::ok);
  CHECK(rec.arrive(ms(4), {}, 0) == record_status::ok);
  CHECK(rec.finish(ms(5)) == record_status::ok);
  CHECK(rec.arrive(ms(6)) == record_status::ok);  // no id
  CHECK(rec.finish(ms(7)) == record_status::ok);
  REQUIRE(out.rows.size() == 4);
  CHECK(out.rows[0].id == "host1-42");
  CHECK(out.rows[1].id == "18446744073709551615");
  CHECK(out.rows[2].id == "0");
  CHECK(out.rows[3].id.empty());
}

TEST_CASE("request_recorder: destroyed unfinished, the request ends as aborted and is counted") {
  metrics m(tokchron::vllm_live_options("m", 1000));
  sink out;
  m.clock().set(std::chrono::milliseconds(40));
  {
    recorder rec(m, &out);
    CHECK(rec.arrive(ms(0), {tokchron::live_series{}, 5}, "dropped-in-queue") == record_status::ok);
    CHECK(rec.queued(ms(1)) == record_status::ok);
  }  // a server that discarded its queued request object
  {
    recorder rec(m, &out);
    CHECK(rec.arrive(ms(2), {}, "finished") == record_status::ok);
    CHECK(rec.finish(ms(3)) == record_status::ok);
  }  // finished: the destructor adds nothing
  { recorder idle(m, &out); }
  REQUIRE(out.rows.size() == 2);
  CHECK(out.rows[0].id == "dropped-in-queue");
  CHECK(out.rows[0].reason == finish_reason::aborted);
  CHECK(out.rows[0].error == recorder::unfinished_error);
  CHECK(out.rows[1].id == "finished");
  CHECK(m.misuse() == 0);
  const auto s = tokchron::scrape(m);
  CHECK(live_test::value(s, "vllm:num_requests_waiting") == 0);
  CHECK(live_test::value(s, "vllm:request_success", {{"finished_reason", "abort"}}) == 1);
  CHECK(live_test::value(s, "vllm:request_success", {{"finished_reason", "stop"}}) == 1);
}

TEST_CASE("request_recorder: moves hand the request over; assigning over one finishes it") {
  metrics m(tokchron::tokchron_live_options());
  sink out;
  m.clock().set(std::chrono::milliseconds(50));
  recorder a(m, &out);
  CHECK(a.arrive(ms(0), {}, "a") == record_status::ok);
  recorder b(std::move(a));  // the request moves with its owner (a task moved through a queue)
  CHECK_FALSE(a.active());   // NOLINT(bugprone-use-after-move): moved-from is idle
  CHECK(a.id().empty());     // NOLINT(bugprone-use-after-move)
  CHECK(b.active());
  CHECK(b.chunk(ms(5), 2) == record_status::ok);
  recorder c(m, &out);
  CHECK(c.arrive(ms(1), {}, "c") == record_status::ok);
  c = std::move(b);  // c's own request is finished first
  REQUIRE(out.rows.size() == 1);
  CHECK(out.rows[0].id == "c");
  CHECK(out.rows[0].reason == finish_reason::aborted);
  CHECK(c.id() == "a");
  CHECK(c.finish(ms(6), finish_reason::length) == record_status::ok);
  REQUIRE(out.rows.size() == 2);
  CHECK(out.rows[1].id == "a");
  CHECK(out.rows[1].tokens == 2);
  CHECK(m.misuse() == 0);
}
