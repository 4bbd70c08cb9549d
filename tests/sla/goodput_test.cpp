// SPDX-License-Identifier: MIT
#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>
#include <vector>

#include "tokchron/sla/goodput.hpp"
#include "tokchron/testing.hpp"

using namespace std::chrono_literals;
using tokchron::request_slo;
using tokchron::testing::script;

TEST_CASE("per-request SLOs parse, and bad ones name the part") {
  const auto s = request_slo::parse("ttft:1.5s,tpot:100ms, e2el = 10s");
  CHECK(*s.ttft_s == 1.5);
  CHECK(*s.tpot_s == doctest::Approx(0.1).epsilon(1e-15));
  CHECK(*s.e2e_s == 10);
  CHECK(s.to_string() == "ttft:1.5s,tpot:100ms,e2e:10s");
  CHECK(request_slo::parse(s.to_string()).to_string() == s.to_string());
  const char* bad[][2] = {{"ttft:1.5", "needs a unit"}, {"ttfx:1s", "unknown per-request limit"},
                          {"ttft:1s,ttft:2s", "twice"}, {"ttft", "name:value"},
                          {"ttft:fast", "number"},      {"ttft:1h", "unknown time unit"},
                          {"", "empty limit"}};
  for (const auto& b : bad) {
    CAPTURE(b[0]);
    const auto r = tokchron::parse_request_slo(b[0]);
    CHECK(!r);
    CHECK(std::string(r.error.message).find(b[1]) != std::string::npos);
    CHECK_THROWS_AS((void)request_slo::parse(b[0]), std::invalid_argument);
  }
  CHECK(tokchron::parse_request_slo("ttft:1h").error.part("ttft:1h") == "h");
}

TEST_CASE("goodput: vLLM counts a missing TPOT as met, AIPerf as not good") {
  std::vector<tokchron::testing::scripted_timeline> tls;
  // good: TTFT 100 ms, TPOT 20 ms
  tls.push_back(script().arrive(0ms).first_token(100ms).tokens(10, 20ms).finish().timeline());
  // TTFT too slow
  tls.push_back(script().arrive(0ms).first_token(2s).tokens(10, 20ms).finish().timeline());
  // TPOT too slow
  tls.push_back(script().arrive(0ms).first_token(100ms).tokens(10, 200ms).finish().timeline());
  // one token only: no TPOT
  tls.push_back(script().arrive(0ms).first_token(100ms).finish().timeline());
  // failed
  tls.push_back(script().arrive(0ms).finish(50ms, tokchron::finish_reason::error).timeline());
  const auto slo = request_slo::parse("ttft:1.5s,tpot:100ms");

  tokchron::goodput_counter vllm(slo, {tokchron::missing_metric_rule::met});
  tokchron::goodput_counter aiperf(slo, {tokchron::missing_metric_rule::not_good});
  for (const auto& tl : tls) {
    vllm.add_timeline(tl);
    aiperf.add_timeline(tl);
  }
  const auto v = vllm.result(10.0), a = aiperf.result(10.0);
  CHECK(v.requests == 5);
  CHECK(v.completed == 4);
  CHECK(v.good == 2);
  CHECK(a.good == 1);
  CHECK(a.missing == 1);
  CHECK(v.missed_ttft == 1);
  CHECK(v.missed_tpot == 1);
  CHECK(*v.attainment() == doctest::Approx(0.4));
  CHECK(*v.goodput() == doctest::Approx(0.2));
  CHECK(*a.goodput() == doctest::Approx(0.1));
  CHECK(!vllm.result(0).goodput());
  // a value equal to the limit is good (vLLM and GenAI-Perf: value <= SLO)
  tokchron::goodput_counter edge(request_slo::parse("ttft:100ms"));
  CHECK(edge.add_timeline(tls[0]));

  // the rule comes from each tool's profile
  CHECK(tokchron::goodput_options_for(tokchron::profiles::vllm).missing ==
        tokchron::missing_metric_rule::met);
  CHECK(tokchron::goodput_options_for(tokchron::profiles::aiperf).missing ==
        tokchron::missing_metric_rule::not_good);
  tokchron::summary_options so;
  so.keep_requests = true;
  so.duration = 10.0;
  const auto sum_a = tokchron::summarize(tls, tokchron::profiles::aiperf, so);
  CHECK(tokchron::goodput(sum_a, slo, tokchron::profiles::aiperf).good == 1);
  const auto sum_v = tokchron::summarize(tls, tokchron::profiles::vllm, so);
  CHECK(tokchron::goodput(sum_v, slo, tokchron::profiles::vllm).good == 2);
  so.keep_requests = false;
  CHECK_THROWS_AS((void)tokchron::goodput(tokchron::summarize(tls, tokchron::profiles::vllm, so),
                                          slo, tokchron::profiles::vllm),
                  std::invalid_argument);
}

TEST_CASE("goodput: GuideLLM's population, errored in, undetermined out; token goodput") {
  // GuideLLM (tests/unit/benchmark/schemas/generative/test_metrics.py, TestGoodputPopulation and
  // test_single_token_requests_are_undetermined_under_tpot): an errored request counts against
  // attainment, a request the objectives cannot judge is left out of the population.
  std::vector<tokchron::testing::scripted_timeline> tls;
  // good: TTFT 100 ms, TPOT 20 ms, 11 output tokens, 40 prompt tokens
  tls.push_back(script()
                    .arrive(0ms)
                    .prompt_tokens(40)
                    .first_token(100ms)
                    .tokens(10, 20ms)
                    .finish()
                    .timeline());
  // good, without a prompt count: 6 output tokens
  tls.push_back(script().arrive(0ms).first_token(200ms).tokens(5, 30ms).finish().timeline());
  // one token only: no TPOT, undetermined under a TPOT limit
  tls.push_back(script().arrive(0ms).prompt_tokens(7).first_token(100ms).finish().timeline());
  // one token and a TTFT over its limit: the failed limit decides, so it is in and not good
  tls.push_back(script().arrive(0ms).prompt_tokens(7).first_token(3s).finish().timeline());
  // errored: in the population, not good
  tls.push_back(script().arrive(0ms).finish(50ms, tokchron::finish_reason::error).timeline());
  const auto slo = request_slo::parse("ttft:1.5s,tpot:100ms");
  tokchron::goodput_counter guidellm(slo, {tokchron::missing_metric_rule::excluded});
  tokchron::goodput_counter vllm(slo, {tokchron::missing_metric_rule::met});
  std::vector<bool> verdicts;
  for (const auto& tl : tls) {
    verdicts.push_back(guidellm.add_timeline(tl));
    vllm.add_timeline(tl);
  }
  CHECK(verdicts == std::vector<bool>{true, true, false, false, false});
  const auto g = guidellm.result(2.0), v = vllm.result(2.0);
  CHECK(g.requests == 5);
  CHECK(g.completed == 4);
  CHECK(g.excluded == 1);
  CHECK(g.good == 2);
  CHECK(g.missing == 0);
  CHECK(g.missed_ttft == 1);
  CHECK(*g.attainment() == doctest::Approx(2.0 / 4.0));  // 2 good of the 4 judged
  CHECK(*g.goodput() == doctest::Approx(1.0));
  // inference-perf: prompt and output tokens of the good requests; GuideLLM: output tokens
  CHECK(g.good_output_tokens == 17);
  CHECK(g.good_prompt_tokens == 40);
  CHECK(g.good_without_prompt_count == 1);
  CHECK(*g.token_goodput() == doctest::Approx(57.0 / 2.0));
  CHECK(*g.output_token_goodput() == doctest::Approx(17.0 / 2.0));
  // vLLM's rule lets the 1-token request pass: 3 good of 5, its 1 token and 7 prompt tokens in
  CHECK(v.excluded == 0);
  CHECK(v.good == 3);
  CHECK(*v.attainment() == doctest::Approx(3.0 / 5.0));
  CHECK(v.good_output_tokens == 18);
  CHECK(*v.token_goodput() == doctest::Approx((18.0 + 47.0) / 2.0));
  CHECK(!guidellm.result(0).token_goodput());
  // nothing judged: no attainment (not 0)
  tokchron::goodput_counter none(request_slo::parse("tpot:1s"),
                                 {tokchron::missing_metric_rule::excluded});
  none.add_timeline(tls[2]);
  CHECK(none.result(1.0).excluded == 1);
  CHECK(!none.result(1.0).attainment());
  CHECK(*none.result(1.0).goodput() == 0);
}

TEST_CASE("DistServe goodput interpolates the target crossing between load points") {
  using tokchron::attainment_point;
  const std::vector<attainment_point> pts = {{4, 0.5}, {1, 0.99}, {3, 0.85}, {2, 0.95}};
  const auto g = tokchron::distserve_goodput(pts, 0.9, 2);
  REQUIRE(g.rate);
  CHECK(*g.rate == doctest::Approx(2.5));  // halfway from 0.95 at 2 rps to 0.85 at 3 rps
  CHECK(*g.per_gpu == doctest::Approx(1.25));
  CHECK(!g.at_least);
  // a later recovery does not extend the range: attainment must *stay* above the target
  const auto dip = tokchron::distserve_goodput({{1, 0.95}, {2, 0.85}, {3, 0.95}}, 0.9);
  CHECK(*dip.rate == doctest::Approx(1.5));
  const auto all = tokchron::distserve_goodput({{1, 0.99}, {2, 0.97}});
  CHECK(all.at_least);
  CHECK(*all.rate == 2);
  CHECK(!tokchron::distserve_goodput({{1, 0.5}}).rate);
  CHECK(!tokchron::distserve_goodput({}).rate);
  CHECK_THROWS_AS((void)tokchron::distserve_goodput({{1, 1.5}}), std::invalid_argument);
  CHECK_THROWS_AS((void)tokchron::distserve_goodput({{1, 0.5}}, 0), std::invalid_argument);
}

TEST_CASE("goodput: limits on any per-request time metric of the table, time to first answer") {
  const auto s = request_slo::parse("ttft:1s,ttfa:400ms,reasoning_time:300ms");
  CHECK(*s.limit(tokchron::metric_id::ttfa) == doctest::Approx(0.4).epsilon(1e-15));
  CHECK(s.to_string() == "ttft:1s,ttfa:400ms,reasoning_time:300ms");
  CHECK(request_slo::parse("ttfo:1s").limit(tokchron::metric_id::ttfa));  // AIPerf's name
  for (const char* bad : {"icl:1s", "itl:1s", "prefill_tps:1s", "spec_acceptance:1s"}) {
    CAPTURE(bad);  // pooled samples, or not a time: no per-request limit
    CHECK_FALSE(tokchron::parse_request_slo(bad));
  }
  using K = tokchron::chunk_kind;
  // Thinks 300 ms then answers at 350 ms: TTFT 50 ms, TTFA 350 ms, reasoning 300 ms (good).
  const auto quick =
      script().arrive(0ms).chunk(50ms, 1, K::reasoning).chunk(350ms, 1).finish(360ms).timeline();
  // Thinks 500 ms: TTFT 50 ms still, TTFA 550 ms misses both limits.
  const auto slow =
      script().arrive(0ms).chunk(50ms, 1, K::reasoning).chunk(550ms, 1).finish(560ms).timeline();
  // Never answers: no TTFA; met under the canonical rule, not good under AIPerf's.
  const auto silent = script().arrive(0ms).chunk(50ms, 1, K::reasoning).finish(60ms).timeline();
  tokchron::goodput_counter c(s);
  CHECK(c.add_timeline(quick));
  CHECK_FALSE(c.add_timeline(slow));
  CHECK(c.add_timeline(silent));
  const auto r = c.result(1.0);
  CHECK(r.good == 2);
  CHECK(r.missed_other[static_cast<std::size_t>(tokchron::metric_id::ttfa)] == 1);
  CHECK(r.missed_other[static_cast<std::size_t>(tokchron::metric_id::reasoning_time)] == 1);
  CHECK(r.missed_ttft == 0);
  tokchron::goodput_counter a(s, tokchron::goodput_options_for(tokchron::profiles::aiperf));
  CHECK_FALSE(a.add(tokchron::evaluate(tokchron::profiles::aiperf, silent)));
  CHECK(a.result(1.0).missing == 1);
}
