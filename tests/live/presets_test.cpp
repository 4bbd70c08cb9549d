// SPDX-License-Identifier: MIT
// The server presets (live/presets.hpp: SGLang, TGI, llama.cpp, trtllm-serve): each one's whole
// exposition of the same scripted run, byte for byte against tests/live/golden/<preset>_
// scripted.prom (TOKCHRON_UPDATE_GOLDEN=1 rewrites them; review the diff), then each rule the
// preset takes from its server's source checked by value, so that a careless rewrite of a golden
// file cannot hide a semantic change. The sources are cited in presets.hpp and
// docs/library/live-metrics.md.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "live/helpers.hpp"
#include "tokchron/export/prometheus.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/live/recorder.hpp"
#include "tokchron/live/scrape.hpp"

namespace {
using live_test::hist;
using live_test::ms;
using live_test::value;
using tokchron::finish_reason;
using tokchron::record_status;
using metrics = tokchron::basic_live_metrics<tokchron::manual_clock>;
using request = tokchron::basic_live_request<tokchron::manual_clock>;

// The run: live_test::scripted_run on the default series (a .. f), and
//   g: 40-token prompt, 30 of them cached, scheduled 1.7 ms after arrival, first token 2.9 ms
//      later, 3 tokens 1.4 ms after that, stop (sub-millisecond phases for llama.cpp).
void run(metrics& m) {
  const tokchron::live_series s{};
  live_test::scripted_run(m, s, s);
  request g;
  auto ok = [](record_status st) { REQUIRE(st == record_status::ok); };
  tokchron::live_request_info gi{s, 40, 0};
  gi.cached_prompt_tokens = 30;
  ok(m.arrive(g, ms(1000), gi));
  ok(m.scheduled(g, ms(1001.7)));
  ok(m.chunk(g, ms(1004.6), 1));
  ok(m.chunk(g, ms(1006.0), 3));
  ok(m.finish(g, ms(1006.0), finish_reason::stop));
}

std::string text(const metrics& m) { return tokchron::to_prometheus(tokchron::scrape(m)); }
}  // namespace

TEST_CASE("live presets: SGLang's exposition of the scripted run") {
  metrics m(tokchron::sglang_live_options("llama-3-8b"));
  run(m);
  live_test::check_golden("sglang_scripted.prom", text(m));
  const auto s = tokchron::scrape(m);
  // ITL: k samples of g / k per later batch, none for a first batch's extra tokens:
  // a 2 + 2, b 2, d 1, g 3 (its first batch has 1 token) = 10; the sum is the intervals.
  const auto& itl = hist(s, "sglang:inter_token_latency_seconds");
  CHECK(itl.count == 10);
  CHECK(itl.sum == doctest::Approx(0.020 + 0.025 + 0.340 + 0.050 + 0.0014));
  CHECK(hist(s, "sglang:time_to_first_token_seconds").count == 5);  // a, b, c, d, g
  CHECK(hist(s, "sglang:e2e_request_latency_seconds").count == 5);  // every scheduled one
  // Queue time when first scheduled (b once, from queued at 11 ms): a 3, b 9, c 1, d 2, g 1.7.
  const auto& q = hist(s, "sglang:queue_time_seconds");
  CHECK(q.count == 5);
  CHECK(q.sum == doctest::Approx(0.003 + 0.009 + 0.001 + 0.002 + 0.0017));
  // Token counters at the finish: f (waiting) and e (rejected) count nothing.
  CHECK(value(s, "sglang:prompt_tokens") == 12 + 100 + 7 + 2000 + 40);
  CHECK(value(s, "sglang:generation_tokens") == 5 + 3 + 1 + 2 + 4);
  CHECK(value(s, "sglang:cached_tokens") == 30);
  // observability/metrics_collector.py at 44cedc2: a count without a breakdown by source.
  CHECK(live_test::family(s, "sglang:cached_tokens")->points.at(0).labels.back().value == "total");
  CHECK(value(s, "sglang:num_requests") == 5);
  CHECK(value(s, "sglang:num_aborted_requests") == 1);
  CHECK(value(s, "sglang:num_queue_reqs") == 1);
  CHECK(value(s, "sglang:num_running_reqs") == 0);
  CHECK(value(s, "sglang:num_retracted_requests") == 1);
  CHECK(value(s, "tokchron_rejected_requests") == 1);
}

TEST_CASE("live presets: TGI's exposition of the scripted run") {
  metrics m(tokchron::tgi_live_options(4095, 4096));
  run(m);
  const std::string t = text(m);
  live_test::check_golden("tgi_scripted.prom", t);
  // Counters without _total, as TGI's exporter writes them; tokchron's own keep it.
  CHECK(t.find("\ntgi_request_success 4\n") != std::string::npos);
  CHECK(t.find("\ntgi_request_count 7\n") != std::string::npos);
  CHECK(t.find("\ntokchron_misuse_total 0\n") != std::string::npos);
  const auto s = tokchron::scrape(m);
  CHECK(value(s, "tgi_request_failure", {{"err", "dropped"}}) == 1);     // d
  CHECK(value(s, "tgi_request_failure", {{"err", "overloaded"}}) == 1);  // e
  CHECK(value(s, "tgi_request_failure", {{"err", "generation"}}) == 0);
  // Per-request histograms for the successes only (a, b, c, g).
  CHECK(hist(s, "tgi_request_duration").count == 4);
  CHECK(hist(s, "tgi_request_duration").sum == doctest::Approx(0.085 + 0.420 + 0.025 + 0.006));
  // Mean time per token: (last token - first scheduled) / N.
  const auto& tpt = hist(s, "tgi_request_mean_time_per_token_duration");
  CHECK(tpt.count == 4);
  CHECK(tpt.sum == doctest::Approx(0.082 / 5 + 0.410 / 3 + 0.024 / 1 + 0.0043 / 4));
  CHECK(hist(s, "tgi_request_inference_duration").sum ==
        doctest::Approx(0.082 + 0.410 + 0.024 + 0.0043));
  CHECK(hist(s, "tgi_request_validation_duration").sum == doctest::Approx(0.001));  // b
  CHECK(hist(s, "tgi_request_queue_duration").sum ==
        doctest::Approx(0.003 + 0.009 + 0.001 + 0.0017));
  // Prompt length and max_new_tokens at validation: every arrival, whatever became of it.
  CHECK(hist(s, "tgi_request_input_length").count == 7);
  CHECK(hist(s, "tgi_request_max_new_tokens").count == 2);  // a, b gave one
  CHECK(hist(s, "tgi_request_generated_tokens").sum == 5 + 3 + 1 + 4);
  CHECK(value(s, "tgi_queue_size") == 1);
  CHECK(value(s, "tgi_batch_current_size") == 0);
  // OpenMetrics requires the suffix: the writer adds it there.
  tokchron::prometheus_options om;
  om.openmetrics = true;
  CHECK(tokchron::to_prometheus(s, om).find("\ntgi_request_success_total 4\n") !=
        std::string::npos);
}

TEST_CASE("live presets: llama.cpp's exposition of the scripted run") {
  metrics m(tokchron::llamacpp_live_options());
  run(m);
  live_test::check_golden("llamacpp_scripted.prom", text(m));
  // The golden scrape opened the throughput window; this scrape's window is empty.
  const auto s0 = tokchron::scrape(m);
  CHECK(value(s0, "llamacpp:predicted_tokens_seconds") == 0);
  // Prompt tokens computed (not cached) at the first token: a, b, c, d, g's 40 - 30.
  CHECK(value(s0, "llamacpp:prompt_tokens") == 12 + 100 + 7 + 2000 + 10);
  CHECK(value(s0, "llamacpp:prompt_tokens_cached") == 30);
  // Output tokens and decode times of every request with a token, at its finish, the aborted
  // d included: a 45 ms, b 340 ms, c 1 us (one token: max(1 us, 0)), d 50 ms, g 1.4 ms.
  CHECK(value(s0, "llamacpp:tokens_predicted") == 5 + 3 + 1 + 2 + 4);
  const double decode_us = 45000 + 340000 + 1 + 50000 + 1400;
  CHECK(value(s0, "llamacpp:tokens_predicted_seconds") == decode_us / 1e6);
  CHECK(value(s0, "llamacpp:requests_deferred") == 1);
  CHECK(value(s0, "llamacpp:requests_processing") == 0);
  // llama.cpp counts no requests: tokchron's outcome counter is beside its families.
  CHECK(value(s0, "tokchron_requests", {{"outcome", "stop"}}) == 3);  // a, c, g
  CHECK(value(s0, "tokchron_requests", {{"outcome", "length"}}) == 1);
  CHECK(value(s0, "tokchron_requests", {{"outcome", "aborted"}}) == 1);
  CHECK(value(s0, "tokchron_requests", {{"outcome", "rejected"}}) == 1);
  CHECK(value(s0, "tokchron_requests", {{"outcome", "error"}}) == 0);
  // Not derivable from request events, so not exported (docs/library/live-metrics.md).
  for (const char* name : {"llamacpp:prompt_seconds", "llamacpp:prompt_tokens_seconds",
                           "llamacpp:n_decode", "llamacpp:n_tokens_max"}) {
    bool found = false;
    for (const auto& f : s0.families) found = found || f.name == name;
    CHECK_MESSAGE(!found, name);
  }

  // A fresh object: the first scrape's window holds everything. The rate is decode steps
  // (N - 1: a 4, b 2, c 0, d 1, g 3) over decode time, as llama.cpp's
  // server_metrics::bucket::n_per_second computes it: steps / us * 1e6.
  metrics m2(tokchron::llamacpp_live_options());
  run(m2);
  const auto s = tokchron::scrape(m2);
  CHECK(value(s, "llamacpp:predicted_tokens_seconds") == 10.0 / decode_us * 1e6);
  // The next window: one request of one token; its step count is 0, its time 1 us: rate 0.
  request h;
  REQUIRE(m2.arrive(h, ms(2000), {tokchron::live_series{}, 8, 0}) == record_status::ok);
  REQUIRE(m2.scheduled(h, ms(2000)) == record_status::ok);
  REQUIRE(m2.chunk(h, ms(2000.5), 1) == record_status::ok);
  const auto s1 = tokchron::scrape(m2);
  CHECK(value(s1, "llamacpp:tokens_predicted") == 15);  // not finished yet
  REQUIRE(m2.finish(h, ms(2000.5), finish_reason::stop) == record_status::ok);
  const auto s2 = tokchron::scrape(m2);
  CHECK(value(s2, "llamacpp:predicted_tokens_seconds") == 0);
  CHECK(value(s2, "llamacpp:tokens_predicted") == 16);
  CHECK(value(s2, "llamacpp:tokens_predicted_seconds") == (decode_us + 1) / 1e6);
  // A request that failed after two tokens 250 us apart counts too (llama.cpp counts every
  // released slot): 1 step over 250 us.
  request k;
  REQUIRE(m2.arrive(k, ms(3000), {tokchron::live_series{}, 8, 0}) == record_status::ok);
  REQUIRE(m2.chunk(k, ms(3001), 1) == record_status::ok);
  REQUIRE(m2.chunk(k, ms(3001.25), 1) == record_status::ok);
  REQUIRE(m2.fail(k, ms(3002)) == record_status::ok);
  const auto s3 = tokchron::scrape(m2);
  CHECK(value(s3, "llamacpp:predicted_tokens_seconds") == 1.0 / 250.0 * 1e6);
  CHECK(value(s3, "llamacpp:tokens_predicted") == 18);
  CHECK(value(s3, "tokchron_requests", {{"outcome", "error"}}) == 1);
}

TEST_CASE("live presets: an n > 1 answer's shared prompt counts once") {
  metrics m(tokchron::llamacpp_live_options());
  const tokchron::live_series s{};
  auto ok = [](record_status st) { REQUIRE(st == record_status::ok); };
  // The parent computes 32 of a 40-token prompt (8 cached); two children copy its KV cache.
  request parent, c1, c2;
  ok(m.arrive(parent, ms(0), {s, 40, 16}));
  ok(m.arrive(c1, ms(0), {s, 40, 16}));
  ok(m.arrive(c2, ms(0), {s, 40, 16}));
  ok(m.scheduled(parent, ms(1)));
  ok(m.set_cached_prompt_tokens(parent, 8));
  for (request* c : {&c1, &c2}) {
    ok(m.scheduled(*c, ms(1)));  // the shared prompt's start
    ok(m.set_shared_prompt(*c));
    CHECK(c->timeline().cached_prompt_tokens() == 40u);
  }
  for (request* r : {&parent, &c1, &c2}) {
    ok(m.chunk(*r, ms(5), 1));
    ok(m.chunk(*r, ms(6), 1));
    ok(m.finish(*r, ms(6), finish_reason::stop));
  }
  const auto snap = tokchron::scrape(m);
  CHECK(value(snap, "llamacpp:prompt_tokens") == 32);
  CHECK(value(snap, "llamacpp:prompt_tokens_cached") == 8);
  CHECK(value(snap, "llamacpp:tokens_predicted") == 6);
  CHECK(m.misuse() == 0);

  // tokchron's own names: the prompt once, each answer's tokens and prompt length its own.
  metrics t(tokchron::tokchron_live_options());
  request p2, k2;
  ok(t.arrive(p2, ms(0), {s, 40, 0}));
  ok(t.arrive(k2, ms(0), {s, 40, 0}));
  ok(t.scheduled(p2, ms(1)));
  ok(t.scheduled(k2, ms(1)));
  ok(t.set_shared_prompt(k2));
  ok(t.chunk(p2, ms(5), 1));
  ok(t.chunk(k2, ms(5), 1));
  ok(t.finish(p2, ms(5), finish_reason::stop));
  ok(t.finish(k2, ms(5), finish_reason::stop));
  const auto ts = tokchron::scrape(t);
  CHECK(value(ts, "tokchron_prompt_tokens") == 40);
  CHECK(value(ts, "tokchron_output_tokens") == 2);
  CHECK(hist(ts, "tokchron_request_prompt_tokens").count == 2);
  CHECK(hist(ts, "tokchron_ttft_seconds").count == 2);

  // Refused: no prompt length yet; after the first token; a request not started.
  request u, v, w;
  ok(m.arrive(u, ms(10)));
  CHECK(m.set_shared_prompt(u) == record_status::invalid_count);
  ok(m.arrive(v, ms(10), {s, 4, 0}));
  ok(m.chunk(v, ms(11), 1));
  CHECK(m.set_shared_prompt(v) == record_status::out_of_order);
  CHECK(m.set_shared_prompt(w) == record_status::not_started);
  CHECK(m.misuse() == 3);
}

TEST_CASE("live presets: outcome counters beside any preset") {
  const auto has = [](const tokchron::live_options& o, const std::string& name) {
    std::size_t n = 0;
    for (const auto& f : o.families) n += f.name == name;
    return n;
  };
  // A preset without a requests-by-reason family gains tokchron's, before the own counters.
  const auto tgi = tokchron::live_with_outcomes(tokchron::tgi_live_options(4095, 4096));
  REQUIRE(has(tgi, "tokchron_requests") == 1);
  CHECK(tgi.families.size() == tokchron::tgi_live_options(4095, 4096).families.size() + 1);
  CHECK(tgi.families[tgi.families.size() - 5].name == "tokchron_requests");
  // vLLM's own counter is by its own reason strings; tokchron's spelling is added beside it.
  CHECK(has(tokchron::live_with_outcomes(tokchron::vllm_live_options("m", 4096)),
            "tokchron_requests") == 1);
  // Those that have it already are left as they are.
  for (const auto& o : {tokchron::tokchron_live_options(), tokchron::llamacpp_live_options()}) {
    const auto w = tokchron::live_with_outcomes(o);
    CHECK(w.families.size() == o.families.size());
  }
  metrics m(tokchron::live_with_outcomes(tokchron::sglang_live_options("m")));
  run(m);
  const auto s = tokchron::scrape(m);
  CHECK(value(s, "tokchron_requests", {{"model_name", "m"}, {"outcome", "stop"}}) == 3);
  CHECK(value(s, "tokchron_requests", {{"model_name", "m"}, {"outcome", "aborted"}}) == 1);
  CHECK(value(s, "tokchron_requests", {{"model_name", "m"}, {"outcome", "rejected"}}) == 1);
}

TEST_CASE("live presets: trtllm-serve's exposition of the scripted run") {
  metrics m(tokchron::trtllm_live_options("llama-3-8b"));
  run(m);
  live_test::check_golden("trtllm_scripted.prom", text(m));
  const auto s = tokchron::scrape(m);
  const std::vector<std::pair<std::string, std::string>> engine{{"engine_type", "trtllm"}};
  CHECK(value(s, "trtllm_request_success", {{"finished_reason", "stop"}}) == 3);  // a, c, g
  CHECK(value(s, "trtllm_request_success", {{"finished_reason", "length"}}) == 1);
  CHECK(value(s, "trtllm_request_success", {{"finished_reason", "timeout"}}) == 0);
  // Cancelled (d) and failed requests have no finish reason: not in any series.
  const auto& ttft = hist(s, "trtllm_time_to_first_token_seconds", engine);
  CHECK(ttft.count == 4);
  // From the executor's arrival (b: queued at 11 ms) to the first token.
  CHECK(ttft.sum == doctest::Approx(0.040 + 0.079 + 0.025 + 0.0046));
  // E2E to the last token.
  CHECK(hist(s, "trtllm_e2e_request_latency_seconds").sum ==
        doctest::Approx(0.085 + 0.419 + 0.025 + 0.006));
  // TPOT decode / (N - 1), N > 1 only (c gives none).
  const auto& tpot = hist(s, "trtllm_time_per_output_token_seconds");
  CHECK(tpot.count == 3);
  CHECK(tpot.sum == doctest::Approx(0.045 / 4 + 0.340 / 2 + 0.0014 / 3));
  // c's decode time is 0: not observed.
  CHECK(hist(s, "trtllm_request_decode_time_seconds").count == 3);
  CHECK(hist(s, "trtllm_request_queue_time_seconds").count == 4);
  CHECK(value(s, "trtllm_prompt_tokens") == 12 + 100 + 7 + 40);
  CHECK(value(s, "trtllm_generation_tokens") == 5 + 3 + 1 + 4);
  CHECK(value(s, "trtllm_num_requests_waiting") == 1);
}

TEST_CASE("live presets: NVIDIA Dynamo's frontend exposition of the scripted run") {
  metrics m(tokchron::dynamo_live_options("Llama-3-8B"));
  run(m);
  live_test::check_golden("dynamo_scripted.prom", text(m));
  const auto s = tokchron::scrape(m);
  // The model as given (Dynamo keeps its case); endpoint and request_type are the preset's
  // constants; status and error_type by finish reason (metrics.rs ErrorType::as_str).
  const std::vector<std::pair<std::string, std::string>> ok{{"model", "Llama-3-8B"},
                                                            {"endpoint", "chat_completions"},
                                                            {"request_type", "stream"},
                                                            {"status", "success"},
                                                            {"error_type", ""}};
  CHECK(value(s, "dynamo_frontend_requests", ok) == 4);  // a, b, c, g
  CHECK(value(s, "dynamo_frontend_requests", {{"status", "error"}, {"error_type", "cancelled"}}) ==
        1);  // d aborted
  CHECK(value(s, "dynamo_frontend_requests", {{"status", "error"}, {"error_type", "overload"}}) ==
        1);  // e rejected
  CHECK(value(s, "dynamo_frontend_requests", {{"status", "error"}, {"error_type", "internal"}}) ==
        0);
  CHECK(value(s, "dynamo_frontend_requests",
              {{"status", "error"}, {"error_type", "response_timeout"}}) == 0);
  CHECK(live_test::family(s, "dynamo_frontend_requests")->points.size() == 5);
  for (const auto& p : live_test::family(s, "dynamo_frontend_requests")->points) {
    REQUIRE(p.labels.size() == 5);
    CHECK(p.labels[3].name == "status");
    CHECK(p.labels[4].name == "error_type");
  }
  // Every arrival, f (still waiting) and the rejected e too.
  CHECK(value(s, "dynamo_frontend_requests_started",
              {{"endpoint", "chat_completions"}, {"request_type", "stream"}}) == 7);
  CHECK(value(s, "dynamo_frontend_inflight_requests") == 1);  // f
  CHECK(value(s, "dynamo_frontend_active_requests") == 1);    // f
  CHECK(value(s, "dynamo_frontend_queued_requests") == 1);    // f: no token yet
  const auto& disconnected = live_test::point(s, "dynamo_frontend_disconnected_clients");
  CHECK(disconnected.value == 1);  // d
  CHECK(disconnected.labels.empty());
  CHECK(value(s, "dynamo_frontend_model_cancellation", {{"request_type", "stream"}}) == 1);  // d
  const auto& rejection = live_test::point(s, "dynamo_frontend_model_rejection");
  CHECK(rejection.value == 1);          // e
  CHECK(rejection.labels.size() == 2);  // model, endpoint
  // ITL: k samples of g / k per later response, none for a first response's extra tokens.
  const auto& itl = hist(s, "dynamo_frontend_inter_token_latency_seconds");
  CHECK(itl.count == 10);
  CHECK(itl.sum == doctest::Approx(0.020 + 0.025 + 0.340 + 0.050 + 0.0014));
  CHECK(hist(s, "dynamo_frontend_time_to_first_token_seconds").count == 5);
  // The prompt length at the first token: e (rejected) and f (waiting) have none.
  const auto& isl = hist(s, "dynamo_frontend_input_sequence_tokens");
  CHECK(isl.count == 5);
  CHECK(isl.sum == 12 + 100 + 7 + 2000 + 40);
  // Every request as it ends: the rejected e too.
  const auto& duration = hist(s, "dynamo_frontend_request_duration_seconds");
  CHECK(duration.count == 6);
  CHECK(duration.buckets.size() == 10);
  CHECK(duration.buckets.back().upper_bound == 510.0);  // 512 to two significant figures
  // The output length of every request that produced a token (the collector's Drop observes
  // osl > 0 only): not the rejected e.
  CHECK(hist(s, "dynamo_frontend_output_sequence_tokens").count == 5);
  CHECK(hist(s, "dynamo_frontend_output_sequence_tokens").sum == 5 + 3 + 1 + 2 + 4);
  CHECK(hist(s, "dynamo_frontend_cached_tokens").count == 1);  // g reported 30
  CHECK(hist(s, "dynamo_frontend_cached_tokens").sum == 30);
  CHECK(value(s, "dynamo_frontend_output_tokens") == 5 + 3 + 1 + 2 + 4);
  // generate_log_buckets with Dynamo's defaults (0, then log-spaced, two significant figures),
  // as metrics.rs computes them.
  CHECK(tokchron::dynamo_log_buckets(1.0, 512.0, 10) ==
        std::vector<double>{0.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 130.0, 260.0, 510.0});
  CHECK(tokchron::dynamo_log_buckets(1.0, 256.0, 10) ==
        std::vector<double>{0.0, 1.9, 3.4, 6.3, 12.0, 22.0, 40.0, 75.0, 140.0, 260.0});
  CHECK(tokchron::dynamo_log_buckets(0.001, 480.0, 18) ==
        std::vector<double>{0.0, 0.0022, 0.0047, 0.01, 0.022, 0.047, 0.1, 0.22, 0.47, 1.0, 2.2, 4.7,
                            10.0, 22.0, 48.0, 100.0, 220.0, 480.0});
  CHECK(tokchron::dynamo_log_buckets(0.001, 2.0, 13) ==
        std::vector<double>{0.0, 0.0019, 0.0035, 0.0067, 0.013, 0.024, 0.045, 0.084, 0.16, 0.3,
                            0.56, 1.1, 2.0});
  CHECK(tokchron::dynamo_log_buckets(50.0, 128000.0, 12) ==
        std::vector<double>{0.0, 100.0, 210.0, 430.0, 870.0, 1800.0, 3600.0, 7400.0, 15000.0,
                            31000.0, 63000.0, 130000.0});
  CHECK(tokchron::dynamo_log_buckets(50.0, 32000.0, 10) ==
        std::vector<double>{0.0, 100.0, 210.0, 430.0, 880.0, 1800.0, 3700.0, 7600.0, 16000.0,
                            32000.0});
  CHECK(tokchron::dynamo_log_buckets(1.0, 2.0, 0).empty());
  CHECK(tokchron::dynamo_log_buckets(1.0, 2.0, 1) == std::vector<double>{0.0});
  CHECK_THROWS_AS((void)tokchron::dynamo_log_buckets(0.0, 2.0, 5), std::invalid_argument);
  CHECK_THROWS_AS((void)tokchron::dynamo_log_buckets(1.0, 2.0, 513), std::invalid_argument);
}

TEST_CASE("live presets: LMDeploy's exposition of the scripted run") {
  metrics m(tokchron::lmdeploy_live_options("llama-3-8b"));
  run(m);
  live_test::check_golden("lmdeploy_scripted.prom", text(m));
  const auto s = tokchron::scrape(m);
  // One TPOT sample per engine step after the first: a 2, b 1, d 1, g 1.
  const auto& tpot = hist(s, "lmdeploy:time_per_output_token_seconds");
  CHECK(tpot.count == 5);
  CHECK(tpot.sum == doctest::Approx(0.020 + 0.025 + 0.340 + 0.050 + 0.0014));
  CHECK(hist(s, "lmdeploy:time_to_first_token_seconds").count == 5);
  // Every finished request that was scheduled (a, b, c, d, g).
  CHECK(hist(s, "lmdeploy:e2e_request_latency_seconds").count == 5);
  CHECK(hist(s, "lmdeploy:request_prompt_tokens").count == 5);
  // max_model_len fixed at 4096 in loggers.py: 1-2-5 edges up to 2000.
  CHECK(hist(s, "lmdeploy:request_prompt_tokens").buckets.back().upper_bound == 2000);
  CHECK(value(s, "lmdeploy:prompt_tokens") == 12 + 100 + 7 + 2000 + 40);
  CHECK(value(s, "lmdeploy:generation_tokens") == 5 + 3 + 1 + 2 + 4);
  CHECK(value(s, "lmdeploy:num_requests_waiting") == 1);
  CHECK(live_test::family(s, "lmdeploy:request_success") == nullptr);  // commented out there
}

TEST_CASE("live presets: OpenTelemetry's GenAI server metrics of the scripted run") {
  metrics m(tokchron::otel_live_options("llama-3-8b", "tokchron"));
  run(m);
  live_test::check_golden("otel_scripted.prom", text(m));
  const auto s = tokchron::scrape(m);
  const std::vector<std::pair<std::string, std::string>> attrs{
      {"gen_ai_operation_name", "chat"},
      {"gen_ai_provider_name", "tokchron"},
      {"gen_ai_request_model", "llama-3-8b"}};
  // Successful responses only (a, b, c, g): not d (aborted), e (rejected), f (waiting).
  const auto& ttft = hist(s, "gen_ai_server_time_to_first_token_seconds", attrs);
  CHECK(ttft.count == 4);
  CHECK(ttft.sum == doctest::Approx(0.040 + 0.080 + 0.025 + 0.0046));
  // (last token - first token) / (tokens after the first); c (one token) has none.
  const auto& tpot = hist(s, "gen_ai_server_time_per_output_token_seconds");
  CHECK(tpot.count == 3);
  CHECK(tpot.sum == doctest::Approx(0.045 / 4 + 0.340 / 2 + 0.0014 / 3));
  // Every finished request, arrival to finish: the successful ones without error.type, d
  // (aborted) under error_type="cancelled", e (rejected at once) under "rejected".
  const auto* fam = live_test::family(s, "gen_ai_server_request_duration_seconds");
  REQUIRE(fam != nullptr);
  CHECK(fam->points.size() == 3);
  const auto& duration = hist(s, "gen_ai_server_request_duration_seconds");
  CHECK(duration.count == 4);
  CHECK(duration.sum == doctest::Approx(0.085 + 0.420 + 0.025 + 0.006));
  for (const auto& l : fam->points.front().labels) CHECK(l.name != "error_type");
  const auto& cancelled =
      hist(s, "gen_ai_server_request_duration_seconds", {{"error_type", "cancelled"}});
  CHECK(cancelled.count == 1);
  CHECK(cancelled.sum == doctest::Approx(0.755));
  const auto& rejected =
      hist(s, "gen_ai_server_request_duration_seconds", {{"error_type", "rejected"}});
  CHECK(rejected.count == 1);
  CHECK(rejected.sum == 0.0);
  // No point for an error type never seen (an SDK exports an attribute set once recorded).
  for (const auto& p : fam->points)
    for (const auto& l : p.labels) CHECK(!(l.name == "error_type" && l.value == "timeout"));
  // The conventions' recommended boundaries.
  CHECK(ttft.buckets.size() == 16);
  CHECK(ttft.buckets.back().upper_bound == 10.0);
  CHECK(tpot.buckets.back().upper_bound == 2.5);
  CHECK(duration.buckets.back().upper_bound == 81.92);
  // The stability transition: v1.36.0's attribute unless the opt-in names the latest.
  CHECK(tokchron::otel_genai_semconv_from("") == tokchron::otel_genai_semconv::v1_36);
  CHECK(tokchron::otel_genai_semconv_from("http, gen_ai_latest_experimental") ==
        tokchron::otel_genai_semconv::latest);
  CHECK(tokchron::otel_genai_semconv_from("gen_ai_latest_experimentalx") ==
        tokchron::otel_genai_semconv::v1_36);
  metrics old(tokchron::otel_live_options("llama-3-8b", "tokchron", "chat",
                                          tokchron::otel_genai_semconv::v1_36));
  run(old);
  CHECK(hist(tokchron::scrape(old), "gen_ai_server_time_to_first_token_seconds",
             {{"gen_ai_system", "tokchron"}})
            .count == 4);
}

TEST_CASE("live presets: a server's own buckets on every family of a histogram") {
  auto o = tokchron::vllm_live_options("llama-3-8b", 4096);
  // vLLM's ITL histogram has two families (the deprecated alias too): both change.
  const std::vector<double> edges{0.001, 0.005, 0.02, 0.1};
  CHECK(tokchron::live_set_buckets(o.families, tokchron::live_histogram::itl, edges) == 2);
  metrics m(o);
  run(m);
  const auto s = tokchron::scrape(m);
  for (const char* f : {"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"}) {
    const auto& h = hist(s, f);
    REQUIRE(h.buckets.size() == 4);
    CHECK(h.buckets[0].upper_bound == 0.001);
    CHECK(h.buckets[3].upper_bound == 0.1);
  }
  // One family alone on other edges than its alias is refused.
  o.families[1].buckets = {0.5};
  CHECK_THROWS_AS(metrics{o}, std::invalid_argument);
}

TEST_CASE("live presets: vLLM's bucket lists by release, prompt tokens computed in prefill") {
  using tokchron::vllm_buckets;
  // vllm/v1/metrics/buckets.py at 139b1c3 (every release since PR 15202): 22, 19, 21 edges.
  const auto now = tokchron::vllm_bucket_lists_of(vllm_buckets::current);
  CHECK(now.ttft.size() == 22);
  CHECK(now.ttft.back() == 2560.0);
  CHECK(now.itl.size() == 19);
  CHECK(now.itl.back() == 80.0);
  CHECK(now.request_latency.size() == 21);
  CHECK(now.request_latency.front() == 0.3);
  CHECK(now.request_latency.back() == 7680.0);
  // vLLM 0.8.2: the lists PR 15202 extended.
  const auto old = tokchron::vllm_bucket_lists_of(vllm_buckets::v0_8_2);
  CHECK(old.ttft == std::vector<double>{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
                                        0.75, 1.0, 2.5, 5.0, 7.5, 10.0});
  CHECK(old.itl == std::vector<double>{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                                       0.75, 1.0, 2.5});
  CHECK(old.request_latency == std::vector<double>{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0,
                                                   15.0, 20.0, 30.0, 40.0, 50.0, 60.0});
  metrics m(tokchron::vllm_live_options("llama-3-8b", 4096, "0", vllm_buckets::v0_8_2));
  run(m);
  const auto s = tokchron::scrape(m);
  for (const char* f : {"vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds",
                        "vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds",
                        "vllm:request_inference_time_seconds"})
    CHECK(hist(s, f).buckets.size() == 15);
  CHECK(hist(s, "vllm:time_to_first_token_seconds").buckets.size() == 16);
  CHECK(hist(s, "vllm:inter_token_latency_seconds").buckets.size() == 13);
  CHECK(hist(s, "vllm:request_time_per_output_token_seconds").buckets.size() == 13);
  // vllm:request_prefill_kv_computed_tokens: prompt - cached per finished request whose prompt
  // vLLM counts (stats.py, PR 30189), on the length buckets: g 40 - 30 = 10, the others their
  // whole prompt (no cached count), like vllm:request_prompt_tokens.
  const auto& computed = hist(s, "vllm:request_prefill_kv_computed_tokens");
  const auto& prompts = hist(s, "vllm:request_prompt_tokens");
  CHECK(computed.count == prompts.count);
  CHECK(computed.sum == prompts.sum - 30);
  CHECK(computed.buckets.size() == prompts.buckets.size());
}

TEST_CASE("bad input L10: live presets: arguments no server preset can carry are refused") {
  CHECK_THROWS_AS((void)tokchron::tgi_live_options(0, 4096), std::invalid_argument);
  using tokchron::live_source;
  using tokchron::metric_kind;
  const tokchron::live_options good = tokchron::sglang_live_options("m");
  CHECK_NOTHROW(metrics{good});
  // Each change makes a preset the scrape could not write, or rules the recorder lacks.
  const std::pair<const char*, void (*)(tokchron::live_options&)> bad[] = {
      {"rules: an ITL grain the recorder lacks",
       [](tokchron::live_options& o) { o.rules.itl = tokchron::itl_grain::per_request_tpot; }},
      {"rules: a TPOT span the recorder lacks",
       [](tokchron::live_options& o) { o.rules.tpot = tokchron::tpot_span::e2e_minus_ttft; }},
      {"rules: a small-N rule the recorder lacks",
       [](tokchron::live_options& o) { o.rules.tpot_small_n = tokchron::small_n_rule::negative; }},
      {"rules: reasons beyond the finish reasons",
       [](tokchron::live_options& o) { o.rules.reasons = 0x80; }},
      {"a family without a name", [](tokchron::live_options& o) { o.families[0].name.clear(); }},
      {"a name twice", [](tokchron::live_options& o) { o.families[1].name = o.families[0].name; }},
      {"an unknown source",
       [](tokchron::live_options& o) { o.families[4].source = static_cast<live_source>(200); }},
      {"a counter written as a histogram",
       [](tokchron::live_options& o) { o.families[4].kind = metric_kind::histogram; }},
      {"a histogram written as a counter",
       [](tokchron::live_options& o) { o.families[0].kind = metric_kind::counter; }},
      {"a gauge written as a counter",
       [](tokchron::live_options& o) {
         o.families.push_back(tokchron::live_source_family("g", live_source::running));
         o.families.back().kind = metric_kind::counter;
       }},
      {"an unknown histogram",
       [](tokchron::live_options& o) {
         o.families[0].histogram = static_cast<tokchron::live_histogram>(200);
       }},
      {"edges not increasing",
       [](tokchron::live_options& o) {
         o.families[0].buckets = {1.0, 0.5};
       }},
      {"two families of one histogram on other edges",
       [](tokchron::live_options& o) {
         o.families.push_back(tokchron::live_histogram_family(
             "alias_seconds", tokchron::live_histogram::ttft, {1.0}));
       }},
      {"edges on a counter", [](tokchron::live_options& o) { o.families[4].buckets = {1.0}; }},
      {"a label on a counter that adds none",
       [](tokchron::live_options& o) { o.families[4].label = "x"; }},
      {"a requests counter without a label",
       [](tokchron::live_options& o) {
         o.families.push_back(
             tokchron::live_requests_family("r", "", {"a", "b", "c", "d", "e", "f"}));
       }},
      {"a requests counter labelled like a series",
       [](tokchron::live_options& o) {
         o.families.push_back(
             tokchron::live_requests_family("r", "model_name", {"a", "b", "c", "d", "e", "f"}));
       }},
      {"a requests counter with a value missing (five reasons)",
       [](tokchron::live_options& o) {
         o.families.push_back(
             tokchron::live_requests_family("r", "reason", {"a", "b", "c", "d", "e"}));
       }},
      {"a reason value not UTF-8",
       [](tokchron::live_options& o) {
         o.families.push_back(
             tokchron::live_requests_family("r", "reason", {"a", "b", "c", "d", "e", "\xff"}));
       }},
      {"a second label on a family other than the requests counter",
       [](tokchron::live_options& o) {
         o.families[4].second_label = "kind";
         o.families[4].second_label_values = {"a"};
       }},
      {"second label values without a second label",
       [](tokchron::live_options& o) {
         auto f = tokchron::live_requests_family("r", "reason", {"a", "b", "c", "d", "e", "f"});
         f.second_label_values = {"a", "b", "c", "d", "e", "f"};
         o.families.push_back(f);
       }},
      {"a second label named like the first",
       [](tokchron::live_options& o) {
         auto f = tokchron::live_requests_family("r", "reason", {"a", "b", "c", "d", "e", "f"});
         f.second_label = "reason";
         f.second_label_values = {"a", "b", "c", "d", "e", "f"};
         o.families.push_back(f);
       }},
      {"a second label named like a series label",
       [](tokchron::live_options& o) {
         auto f = tokchron::live_requests_family("r", "reason", {"a", "b", "c", "d", "e", "f"});
         f.second_label = "model_name";
         f.second_label_values = {"a", "b", "c", "d", "e", "f"};
         o.families.push_back(f);
       }},
      {"a second label named like a constant label",
       [](tokchron::live_options& o) {
         auto f = tokchron::live_requests_family("r", "reason", {"a", "b", "c", "d", "e", "f"});
         f.const_labels = {tokchron::label{"kind", "x"}};
         f.second_label = "kind";
         f.second_label_values = {"a", "b", "c", "d", "e", "f"};
         o.families.push_back(f);
       }},
      {"a second label with a value missing",
       [](tokchron::live_options& o) {
         auto f = tokchron::live_requests_family("r", "reason", {"a", "b", "c", "d", "e", "f"});
         f.second_label = "kind";
         f.second_label_values = {"a", "b", "c", "d", "e"};
         o.families.push_back(f);
       }},
      {"a second label value not UTF-8",
       [](tokchron::live_options& o) {
         auto f = tokchron::live_requests_family("r", "reason", {"a", "b", "c", "d", "e", "f"});
         f.second_label = "kind";
         f.second_label_values = {"a", "b", "c", "d", "e", "\xff"};
         o.families.push_back(f);
       }},
      {"prompt tokens by source with two values",
       [](tokchron::live_options& o) {
         auto f = tokchron::live_source_family("p", live_source::prompt_tokens_by_source);
         f.label = "source";
         f.label_values = {"a", "b"};
         o.families.push_back(f);
       }},
      {"a constant label named like a series label",
       [](tokchron::live_options& o) {
         o.families[4].const_labels = {tokchron::label{"model_name", "x"}};
       }},
      {"a constant label twice",
       [](tokchron::live_options& o) {
         o.families[4].const_labels = {tokchron::label{"a", "x"}, tokchron::label{"a", "y"}};
       }},
      {"a constant label value not UTF-8",
       [](tokchron::live_options& o) {
         o.families[4].const_labels = {tokchron::label{"a", "\xff"}};
       }},
      {"a sum over the series of a histogram",
       [](tokchron::live_options& o) { o.families[0].sum_series = true; }},
      {"a finished counter of reasons beyond the finish reasons",
       [](tokchron::live_options& o) {
         o.families.push_back(tokchron::live_finished_family("f", 0xC0, "h"));
       }},
  };
  for (const auto& b : bad) {
    CAPTURE(b.first);
    tokchron::live_options o = good;
    b.second(o);
    CHECK_THROWS_AS(metrics{o}, std::invalid_argument);
  }
  // A counter may be written as a gauge.
  tokchron::live_options o = good;
  o.families[4].kind = metric_kind::gauge;
  CHECK_NOTHROW(metrics{o});
}

TEST_CASE("live presets: a histogram kept by finish reason, and the options it refuses") {
  // E2E of every request, by reason: successes unlabelled, the rest labelled; E2E's other family
  // counts the successes only, from the same buckets.
  tokchron::live_options o;
  o.inclusion = tokchron::live_inclusion::all;
  tokchron::live_family all =
      tokchron::live_histogram_family("e2e_seconds", tokchron::live_histogram::e2e, {0.1, 1.0});
  all.label = "outcome";
  all.label_values = {"", "", "gone", "failed", "failed", "refused"};
  tokchron::live_family ok =
      tokchron::live_histogram_family("e2e_ok_seconds", tokchron::live_histogram::e2e, {0.1, 1.0});
  ok.reasons = static_cast<std::uint8_t>(tokchron::live_reason_bit(finish_reason::stop));
  o.families = {all, ok};
  metrics m(o);
  run(m);
  const auto s = tokchron::scrape(m);
  CHECK(hist(s, "e2e_seconds").count == 4);                            // a, b, c, g
  CHECK(hist(s, "e2e_seconds", {{"outcome", "gone"}}).count == 1);     // d
  CHECK(hist(s, "e2e_seconds", {{"outcome", "refused"}}).count == 1);  // e
  CHECK(live_test::family(s, "e2e_seconds")->points.size() == 3);      // no "failed" point yet
  CHECK(hist(s, "e2e_ok_seconds").count == 3);                         // a, c, g (b: length)
  CHECK(hist(s, "e2e_ok_seconds").sum == doctest::Approx(0.085 + 0.025 + 0.006));
  CHECK(live_test::family(s, "e2e_ok_seconds")->points.size() == 1);

  auto refused = [](tokchron::live_options x) {
    CHECK_THROWS_AS(metrics{x}, std::invalid_argument);
  };
  tokchron::live_options bad = o;
  bad.families[0].label_values.pop_back();  // one value per reason
  refused(bad);
  bad = o;
  bad.families[0].label = "le";
  refused(bad);
  bad = o;  // TTFT is observed at the first token unless ttft_at_finish
  bad.families[1].histogram = tokchron::live_histogram::ttft;
  refused(bad);
  bad.rules.ttft_at_finish = true;
  CHECK_NOTHROW(metrics{bad});
  bad = o;  // ITL is observed per chunk, never at the finish
  bad.families[1].histogram = tokchron::live_histogram::itl;
  refused(bad);
}
