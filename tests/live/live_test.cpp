// SPDX-License-Identifier: MIT
// Exact semantics of live/recorder.hpp + live/scrape.hpp on hand-built event sequences: per-step
// and per-token ITL counts, when counters move, gauges, finish reasons, one-token TPOT, the
// inclusion policy, label overflow, misuse, and record(timeline) = the same events one by one.
#include "tokchron/live/recorder.hpp"

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "live/helpers.hpp"
#include "tokchron/export/prometheus.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/live/scrape.hpp"
#include "tokchron/timeline/request_timeline.hpp"

namespace {
using namespace live_test;  // the live tests' helpers (tests/live/helpers.hpp)
using tokchron::finish_reason;
using tokchron::live_histogram;
using tokchron::record_status;
using tokchron::scrape;

// arrive 0 (prompt 10, max_tokens 64), queued 1, scheduled 5, chunks at 50 (1 token), 70 (3),
// 80 (0: an empty chunk), 100 (2), finish 100: N = 6, TTFT 50 ms, decode 50 ms, TPOT 10 ms,
// per-step gaps 20 and 30 ms, per-token gaps 3 x 20/3 and 2 x 15 ms.
void six_tokens(metrics& m, request& r, finish_reason why = finish_reason::stop) {
  CHECK(m.arrive(r, ms(0), {tokchron::live_series{}, 10, 64}) == record_status::ok);
  CHECK(m.queued(r, ms(1)) == record_status::ok);
  CHECK(m.scheduled(r, ms(5)) == record_status::ok);
  CHECK(m.chunk(r, ms(50), 1) == record_status::ok);
  CHECK(m.chunk(r, ms(70), 3) == record_status::ok);
  CHECK(m.chunk(r, ms(80), 0, tokchron::chunk_kind::empty) == record_status::ok);
  CHECK(m.chunk(r, ms(100), 2) == record_status::ok);
  CHECK(m.finish(r, ms(100), why) == record_status::ok);
}
}  // namespace

TEST_CASE("live vllm: per-step ITL, TTFT, TPOT and the phase histograms of one request") {
  metrics m(tokchron::vllm_live_options("m", 1000));
  request r;
  six_tokens(m, r);
  const auto s = scrape(m);
  const auto& itl = hist(s, "vllm:inter_token_latency_seconds", {{"model_name", "m"}});
  CHECK(itl.count == 2);  // one per step with tokens after the first, not one per token
  CHECK(itl.sum == doctest::Approx(0.050).epsilon(1e-12));
  CHECK(itl.buckets[1].upper_bound == 0.025);
  CHECK(itl.buckets[1].cumulative_count == 1);  // the 20 ms gap
  CHECK(itl.buckets[2].cumulative_count == 2);  // and the 30 ms one
  // The deprecated alias the example dashboard queries carries the same samples.
  const auto& alias = hist(s, "vllm:time_per_output_token_seconds");
  CHECK(alias.count == itl.count);
  CHECK(alias.sum == itl.sum);
  CHECK(hist(s, "vllm:time_to_first_token_seconds").count == 1);
  CHECK(hist(s, "vllm:time_to_first_token_seconds").sum == doctest::Approx(0.050));
  CHECK(hist(s, "vllm:request_time_per_output_token_seconds").sum == doctest::Approx(0.010));
  CHECK(hist(s, "vllm:e2e_request_latency_seconds").sum == doctest::Approx(0.100));
  CHECK(hist(s, "vllm:request_queue_time_seconds").sum == doctest::Approx(0.004));  // queued
  CHECK(hist(s, "vllm:request_prefill_time_seconds").sum == doctest::Approx(0.045));
  CHECK(hist(s, "vllm:request_decode_time_seconds").sum == doctest::Approx(0.050));
  CHECK(hist(s, "vllm:request_inference_time_seconds").sum == doctest::Approx(0.095));
  CHECK(hist(s, "vllm:request_prompt_tokens").sum == 10);
  CHECK(hist(s, "vllm:request_generation_tokens").sum == 6);
  CHECK(hist(s, "vllm:request_max_num_generation_tokens").sum == 64);
  CHECK(hist(s, "vllm:request_params_max_tokens").sum == 64);
  CHECK(value(s, "vllm:request_success", {{"finished_reason", "stop"}}) == 1);
  CHECK(value(s, "vllm:prompt_tokens") == 10);
  CHECK(value(s, "vllm:generation_tokens") == 6);
  CHECK(value(s, "vllm:num_requests_running") == 0);
  CHECK(value(s, "vllm:num_requests_waiting") == 0);
  CHECK(value(s, "tokchron_misuse") == 0);
  // vLLM's length buckets: build_1_2_5_buckets(max_model_len = 1000).
  const auto& len = hist(s, "vllm:request_prompt_tokens");
  REQUIRE(len.buckets.size() == 10);
  CHECK(len.buckets.front().upper_bound == 1);
  CHECK(len.buckets.back().upper_bound == 1000);
}

TEST_CASE("live tokchron: per-token ITL (N - 1 samples summing to decode time), canonical TPOT") {
  metrics m(tokchron::tokchron_live_options());
  request r;
  six_tokens(m, r);
  const auto s = scrape(m);
  const auto& itl = hist(s, "tokchron_itl_seconds");
  CHECK(itl.count == 5);
  CHECK(itl.sum == doctest::Approx(0.050).epsilon(1e-12));
  CHECK(hist(s, "tokchron_tpot_seconds").sum == doctest::Approx(0.010));
  CHECK(value(s, "tokchron_requests", {{"outcome", "stop"}}) == 1);
  CHECK(value(s, "tokchron_output_tokens") == 6);
  CHECK(tokchron::to_prometheus(s).find("tokchron_itl_seconds_count 5\n") != std::string::npos);
}

TEST_CASE("live: counters and gauges move with the events, not at finish") {
  metrics m(tokchron::vllm_live_options("m", 1000));
  request r;
  REQUIRE(m.arrive(r, ms(0), {tokchron::live_series{}, 10, 0}) == record_status::ok);
  auto s = scrape(m);
  CHECK(value(s, "vllm:num_requests_waiting") == 1);
  CHECK(value(s, "vllm:num_requests_running") == 0);
  REQUIRE(m.scheduled(r, ms(5)) == record_status::ok);
  s = scrape(m);
  CHECK(value(s, "vllm:num_requests_waiting") == 0);
  CHECK(value(s, "vllm:num_requests_running") == 1);
  CHECK(value(s, "vllm:prompt_tokens") == 0);  // counted at the end of prefill, as vLLM does
  REQUIRE(m.chunk(r, ms(50), 1) == record_status::ok);
  s = scrape(m);
  CHECK(value(s, "vllm:prompt_tokens") == 10);
  CHECK(value(s, "vllm:generation_tokens") == 1);
  CHECK(hist(s, "vllm:time_to_first_token_seconds").count == 1);
  CHECK(hist(s, "vllm:e2e_request_latency_seconds").count == 0);
  REQUIRE(m.preempted(r, ms(60)) == record_status::ok);
  s = scrape(m);
  CHECK(value(s, "vllm:num_preemptions") == 1);
  CHECK(value(s, "vllm:num_requests_waiting") == 1);
  CHECK(value(s, "vllm:num_requests_running") == 0);
  REQUIRE(m.scheduled(r, ms(65)) == record_status::ok);
  REQUIRE(m.chunk(r, ms(70), 4) == record_status::ok);
  s = scrape(m);
  CHECK(value(s, "vllm:generation_tokens") == 5);
  CHECK(hist(s, "vllm:inter_token_latency_seconds").count == 1);
  CHECK(value(s, "vllm:num_requests_running") == 1);
  REQUIRE(m.finish(r, ms(70), finish_reason::length) == record_status::ok);
  s = scrape(m);
  CHECK(value(s, "vllm:num_requests_running") == 0);
  CHECK(value(s, "vllm:request_success", {{"finished_reason", "length"}}) == 1);
  CHECK(hist(s, "vllm:e2e_request_latency_seconds").count == 1);
  // The queue histogram measures to the FIRST scheduling (vLLM ignores re-scheduling).
  CHECK(hist(s, "vllm:request_queue_time_seconds").sum == doctest::Approx(0.005));
}

TEST_CASE("live: one-token answers: vLLM observes TPOT 0, tokchron leaves TPOT undefined") {
  for (const bool vllm : {true, false}) {
    CAPTURE(vllm);
    metrics m(vllm ? tokchron::vllm_live_options("m", 100) : tokchron::tokchron_live_options());
    request r;
    REQUIRE(m.arrive(r, ms(0)) == record_status::ok);
    REQUIRE(m.scheduled(r, ms(1)) == record_status::ok);
    REQUIRE(m.chunk(r, ms(10), 1) == record_status::ok);
    REQUIRE(m.finish(r, ms(10)) == record_status::ok);
    const auto s = scrape(m);
    const auto& tpot =
        hist(s, vllm ? "vllm:request_time_per_output_token_seconds" : "tokchron_tpot_seconds");
    CHECK(tpot.count == (vllm ? 1u : 0u));
    CHECK(tpot.sum == 0);
    if (vllm) CHECK(tpot.buckets.front().cumulative_count == 1);
    CHECK(hist(s, vllm ? "vllm:inter_token_latency_seconds" : "tokchron_itl_seconds").count == 0);
  }
}

TEST_CASE("live vllm: finish reasons are vLLM's label values; rejected requests are not in it") {
  metrics m(tokchron::vllm_live_options("m", 100));
  request r;
  auto run = [&](finish_reason why, bool schedule) {
    REQUIRE(m.arrive(r, ms(0), {tokchron::live_series{}, 7, 0}) == record_status::ok);
    if (schedule) {
      REQUIRE(m.scheduled(r, ms(1)) == record_status::ok);
      REQUIRE(m.chunk(r, ms(2), 1) == record_status::ok);
    }
    REQUIRE(m.finish(r, ms(3), why) == record_status::ok);
  };
  run(finish_reason::stop, true);
  run(finish_reason::length, true);
  run(finish_reason::aborted, true);
  run(finish_reason::timed_out, true);
  run(finish_reason::error, true);
  run(finish_reason::rejected, false);
  const auto s = scrape(m);
  CHECK(value(s, "vllm:request_success", {{"finished_reason", "stop"}}) == 1);
  CHECK(value(s, "vllm:request_success", {{"finished_reason", "length"}}) == 1);
  CHECK(value(s, "vllm:request_success", {{"finished_reason", "abort"}}) == 2);
  CHECK(value(s, "vllm:request_success", {{"finished_reason", "error"}}) == 1);
  CHECK(value(s, "vllm:request_success", {{"finished_reason", "repetition"}}) == 0);
  CHECK(live_test::family(s, "vllm:request_success")->points.size() == 5);
  CHECK(value(s, "tokchron_rejected_requests") == 1);
  // The default inclusion: the five scheduled requests, not the rejected one.
  CHECK(hist(s, "vllm:e2e_request_latency_seconds").count == 5);
  CHECK(value(s, "vllm:prompt_tokens") == 35);
  CHECK(value(s, "vllm:num_requests_waiting") == 0);
}

TEST_CASE("live: the inclusion policy") {
  // One completed request, one aborted after its first token, one aborted while queued, one
  // rejected; prompt 10 each, 3 output tokens for the first, 1 for the second.
  auto run = [](tokchron::live_inclusion inc) {
    auto o = tokchron::tokchron_live_options();
    o.inclusion = inc;
    metrics m(o);
    request a, b, c, d;
    const tokchron::live_request_info info{tokchron::live_series{}, 10, 0};
    REQUIRE(m.arrive(a, ms(0), info) == record_status::ok);
    REQUIRE(m.arrive(b, ms(0), info) == record_status::ok);
    REQUIRE(m.arrive(c, ms(0), info) == record_status::ok);
    REQUIRE(m.arrive(d, ms(0), info) == record_status::ok);
    REQUIRE(m.scheduled(a, ms(1)) == record_status::ok);
    REQUIRE(m.scheduled(b, ms(1)) == record_status::ok);
    REQUIRE(m.chunk(a, ms(10), 1) == record_status::ok);
    REQUIRE(m.chunk(b, ms(10), 1) == record_status::ok);
    REQUIRE(m.chunk(a, ms(20), 2) == record_status::ok);
    REQUIRE(m.abort(b, ms(25)) == record_status::ok);
    REQUIRE(m.abort(c, ms(30)) == record_status::ok);
    REQUIRE(m.reject(d, ms(0.5)) == record_status::ok);
    REQUIRE(m.finish(a, ms(40)) == record_status::ok);
    return scrape(m);
  };
  {
    const auto s = run(tokchron::live_inclusion::scheduled);
    CHECK(hist(s, "tokchron_e2e_seconds").count == 2);  // a and b
    CHECK(hist(s, "tokchron_ttft_seconds").count == 2);
    CHECK(value(s, "tokchron_prompt_tokens") == 20);
    CHECK(value(s, "tokchron_output_tokens") == 4);
    CHECK(hist(s, "tokchron_request_prompt_tokens").count == 2);
    CHECK(value(s, "tokchron_requests", {{"outcome", "rejected"}}) == 1);
    CHECK(value(s, "tokchron_requests", {{"outcome", "aborted"}}) == 2);
  }
  {
    const auto s = run(tokchron::live_inclusion::completed);
    CHECK(hist(s, "tokchron_e2e_seconds").count == 1);
    CHECK(hist(s, "tokchron_ttft_seconds").count == 1);
    CHECK(value(s, "tokchron_prompt_tokens") == 10);
    CHECK(value(s, "tokchron_output_tokens") == 3);
    CHECK(hist(s, "tokchron_itl_seconds").count == 2);  // ITL streams: a's two tokens
    CHECK(value(s, "tokchron_requests", {{"outcome", "aborted"}}) == 2);
  }
  {
    const auto s = run(tokchron::live_inclusion::all);
    CHECK(hist(s, "tokchron_e2e_seconds").count == 4);
    CHECK(hist(s, "tokchron_e2e_seconds").sum == doctest::Approx(0.0955));
    CHECK(hist(s, "tokchron_queue_seconds").count == 2);  // undefined for c and d
    CHECK(value(s, "tokchron_prompt_tokens") == 40);
    CHECK(value(s, "tokchron_output_tokens") == 4);
  }
}

TEST_CASE(
    "bad input L2: live: label values are interned up to max_series, then the overflow series") {
  auto o = tokchron::tokchron_live_options({"model"}, {"a"});
  o.max_series = 2;
  metrics m(o);
  const tokchron::live_series a = m.series({"a"}), b = m.series({"b"});
  CHECK(a.index == 0);
  CHECK(b.index == 1);
  const tokchron::live_series c = m.series({"c"});
  CHECK(c.index == 2);  // the overflow series
  CHECK(m.series({"b"}).index == 1);
  CHECK(m.series({"d"}).index == 2);
  CHECK(m.overflowed_lookups() == 2);
  CHECK(m.label_values(c) == std::vector<std::string>{"__overflow__"});
  CHECK(m.label_values(b) == std::vector<std::string>{"b"});
  CHECK(m.misuse() == 0);
  CHECK(m.series({"x", "y"}).index == 2);  // wrong arity: overflow and misuse
  CHECK(m.misuse() == 1);

  request r;
  for (const auto& s : {a, b, c, c}) {
    REQUIRE(m.arrive(r, ms(0), {s, 1, 0}) == record_status::ok);
    REQUIRE(m.reject(r, ms(1)) == record_status::ok);
  }
  const auto s = scrape(m);
  CHECK(value(s, "tokchron_requests", {{"model", "a"}, {"outcome", "rejected"}}) == 1);
  CHECK(value(s, "tokchron_requests", {{"model", "b"}, {"outcome", "rejected"}}) == 1);
  CHECK(value(s, "tokchron_requests", {{"model", "__overflow__"}, {"outcome", "rejected"}}) == 2);
  CHECK(value(s, "tokchron_label_overflow") == 2);
  CHECK(live_test::family(s, "tokchron_e2e_seconds")->points.size() == 3);
}

TEST_CASE("bad input L1: live: misuse is refused, counted and changes nothing else") {
  metrics m(tokchron::vllm_live_options("m", 100));
  metrics other(tokchron::vllm_live_options("m", 100));
  request r, stranger, foreign;
  const auto clean = [&] {
    metrics c(tokchron::vllm_live_options("m", 100));
    request q;
    six_tokens(c, q);
    return tokchron::to_prometheus(scrape(c));
  }();

  CHECK(m.chunk(stranger, ms(1), 1) == record_status::not_started);  // never arrived
  CHECK(m.finish(stranger, ms(1)) == record_status::not_started);
  REQUIRE(other.arrive(foreign, ms(0)) == record_status::ok);
  CHECK(m.chunk(foreign, ms(1), 1) == record_status::not_started);  // another object's
  CHECK(m.arrive(foreign, ms(0)) == record_status::already_started);
  CHECK(m.arrive(r, ms(0), {tokchron::live_series{}, 10, 64}) == record_status::ok);
  CHECK(m.arrive(r, ms(0)) == record_status::already_started);  // twice
  CHECK(m.queued(r, ms(1)) == record_status::ok);
  CHECK(m.scheduled(r, ms(5)) == record_status::ok);
  CHECK(m.chunk(r, ms(50), 1) == record_status::ok);
  CHECK(m.chunk(r, ms(40), 1) == record_status::time_went_backwards);
  CHECK(m.set_prompt_tokens(r, 99) == record_status::out_of_order);  // after the first token
  CHECK(m.chunk(r, ms(70), 3) == record_status::ok);
  CHECK(m.chunk(r, ms(80), 0, tokchron::chunk_kind::empty) == record_status::ok);
  CHECK(m.chunk(r, ms(100), 2) == record_status::ok);
  CHECK(m.finish(r, ms(100)) == record_status::ok);
  CHECK(m.finish(r, ms(101)) == record_status::after_finish);  // finish twice
  CHECK(m.chunk(r, ms(102), 1) == record_status::after_finish);
  CHECK(m.misuse() == 9);

  const auto s = scrape(m);
  CHECK(value(s, "tokchron_misuse") == 9);
  // Apart from the misuse counter, the exposition is the clean run's.
  std::string text = tokchron::to_prometheus(s);
  const std::string nine = "tokchron_misuse_total 9\n", zero = "tokchron_misuse_total 0\n";
  const auto at = text.find(nine);
  REQUIRE(at != std::string::npos);
  text.replace(at, nine.size(), zero);
  CHECK(text == clean);
}

TEST_CASE(
    "bad input L4: live: record(timeline) gives what the same events one by one give; an "
    "unfinished timeline is refused") {
  // Every preset, with a request that completes and one that is aborted (which TGI and
  // trtllm-serve keep out of their per-request series).
  const std::pair<const char*, tokchron::live_options> presets[] = {
      {"vllm", tokchron::vllm_live_options("m", 100)},
      {"tokchron", tokchron::tokchron_live_options()},
      {"sglang", tokchron::sglang_live_options("m")},
      {"tgi", tokchron::tgi_live_options(99, 100)},
      {"llamacpp", tokchron::llamacpp_live_options()},
      {"trtllm", tokchron::trtllm_live_options("m")}};
  for (const auto& preset : presets)
    for (const finish_reason why : {finish_reason::aborted, finish_reason::stop}) {
      CAPTURE(preset.first);
      CAPTURE(static_cast<int>(why));
      auto opts = [&] { return preset.second; };
      metrics one_by_one(opts()), at_finish(opts());
      request r;
      six_tokens(one_by_one, r, why);

      tokchron::basic_request_timeline<tokchron::manual_clock> tl;
      REQUIRE(tl.arrive(ms(0)) == record_status::ok);
      REQUIRE(tl.queued(ms(1)) == record_status::ok);
      REQUIRE(tl.scheduled(ms(5)) == record_status::ok);
      REQUIRE(tl.chunk(ms(50), 1) == record_status::ok);
      REQUIRE(tl.chunk(ms(70), 3) == record_status::ok);
      REQUIRE(tl.chunk(ms(80), 0, tokchron::chunk_kind::empty) == record_status::ok);
      REQUIRE(tl.chunk(ms(100), 2) == record_status::ok);
      tl.set_prompt_tokens(10);
      CHECK(at_finish.record(tl) == record_status::not_started);  // not finished yet: misuse
      REQUIRE(tl.finish(ms(100), why) == record_status::ok);
      CHECK(at_finish.record(tl, tokchron::live_series{}, 64) == record_status::ok);

      std::string a = tokchron::to_prometheus(scrape(one_by_one));
      const std::string b = tokchron::to_prometheus(scrape(at_finish));
      const auto at = a.find("tokchron_misuse_total 0\n");
      REQUIRE(at != std::string::npos);
      a.replace(at, 24, "tokchron_misuse_total 1\n");
      CHECK(a == b);
    }
}

TEST_CASE("live: server-fed gauges and counters appear once fed") {
  metrics m(tokchron::vllm_live_options("m", 100));
  auto s = scrape(m);
  CHECK(live_test::family(s, "vllm:kv_cache_usage_perc") == nullptr);
  CHECK(live_test::family(s, "vllm:prefix_cache_queries") == nullptr);
  m.set_kv_cache_usage(tokchron::live_series{}, 0.25);
  m.add_prefix_cache(tokchron::live_series{}, 100, 40);
  m.add_prefix_cache(tokchron::live_series{}, 50, 10);
  s = scrape(m);
  CHECK(value(s, "vllm:kv_cache_usage_perc") == 0.25);
  CHECK(value(s, "vllm:gpu_cache_usage_perc") == 0.25);
  CHECK(value(s, "vllm:prefix_cache_queries") == 150);
  CHECK(value(s, "vllm:prefix_cache_hits") == 50);
}

TEST_CASE("bad input L3: live: bad options throw std::invalid_argument") {
  auto o = tokchron::tokchron_live_options({"model"}, {"a"});
  o.max_series = 0;
  CHECK_THROWS_AS((void)metrics(o), std::invalid_argument);
  o = tokchron::tokchron_live_options({"model"}, {"a"});
  o.default_label_values.clear();
  CHECK_THROWS_AS((void)metrics(o), std::invalid_argument);
  o = tokchron::tokchron_live_options({"le"}, {"a"});
  CHECK_THROWS_AS((void)metrics(o), std::invalid_argument);
  o = tokchron::tokchron_live_options({"9x"}, {"a"});
  CHECK_THROWS_AS((void)metrics(o), std::invalid_argument);
  o = tokchron::tokchron_live_options();
  o.families[0].buckets = {1.0, 1.0};
  CHECK_THROWS_AS((void)metrics(o), std::invalid_argument);
  CHECK_THROWS_AS((void)tokchron::tokchron_live_options({"a"}, {}), std::invalid_argument);
}

TEST_CASE("live: a server that never reports scheduling: tokens mean running, and included") {
  metrics m(tokchron::tokchron_live_options());
  request r;
  REQUIRE(m.arrive(r, ms(0), {tokchron::live_series{}, 4, 0}) == record_status::ok);
  REQUIRE(m.chunk(r, ms(30), 1) == record_status::ok);
  auto s = scrape(m);
  CHECK(value(s, "tokchron_requests_waiting") == 0);
  CHECK(value(s, "tokchron_requests_running") == 1);
  REQUIRE(m.chunk(r, ms(40), 1) == record_status::ok);
  REQUIRE(m.finish(r, ms(40)) == record_status::ok);
  s = scrape(m);
  CHECK(value(s, "tokchron_requests_running") == 0);
  CHECK(hist(s, "tokchron_e2e_seconds").count == 1);
  CHECK(hist(s, "tokchron_queue_seconds").count == 0);  // undefined without scheduling
  CHECK(hist(s, "tokchron_ttft_seconds").sum == doctest::Approx(0.030));

  // A client-side timeline (no scheduling event) recorded in one call is included too.
  tokchron::basic_request_timeline<tokchron::manual_clock> tl;
  REQUIRE(tl.arrive(ms(0)) == record_status::ok);
  REQUIRE(tl.chunk(ms(10), 2) == record_status::ok);
  REQUIRE(tl.finish(ms(10)) == record_status::ok);
  REQUIRE(m.record(tl) == record_status::ok);
  CHECK(hist(scrape(m), "tokchron_e2e_seconds").count == 2);
}
