// SPDX-License-Identifier: MIT
// The vLLM mode's whole exposition for a scripted run, byte for byte against
// tests/live/golden/vllm_scripted.prom (TOKCHRON_UPDATE_GOLDEN=1 rewrites it; review the diff).
// The run: live_test::scripted_run on two engines' series (engine "0" and "1") of one model
// (requests of every outcome, a preemption, a one-token answer, multi-token steps), and the
// server-fed KV-cache gauge.
#include <doctest/doctest.h>

#include <string>

#include "live/helpers.hpp"
#include "tokchron/export/prometheus.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/live/recorder.hpp"
#include "tokchron/live/scrape.hpp"

TEST_CASE("live vllm: the exposition of a scripted run") {
  tokchron::basic_live_metrics<tokchron::manual_clock> m(
      tokchron::vllm_live_options("llama-3-8b", 4096));
  const tokchron::live_series e0{}, e1 = m.series({"llama-3-8b", "1"});
  live_test::scripted_run(m, e0, e1);
  m.set_kv_cache_usage(e0, 0.5);
  m.set_kv_cache_usage(e1, 0.125);

  live_test::check_golden("vllm_scripted.prom", tokchron::to_prometheus(tokchron::scrape(m)));

  // The points the golden file must show, checked by value here so a careless rewrite of the
  // golden file cannot hide a semantic change.
  const auto s = tokchron::scrape(m);
  using live_test::hist;
  using live_test::value;
  const std::vector<std::pair<std::string, std::string>> eng0{{"engine", "0"}},
      eng1{{"engine", "1"}};
  CHECK(hist(s, "vllm:inter_token_latency_seconds", eng0).count == 3);  // a: 2 steps, b: 1
  CHECK(hist(s, "vllm:inter_token_latency_seconds", eng1).count == 1);  // d: 1 step
  CHECK(hist(s, "vllm:request_time_per_output_token_seconds", eng1).count == 2);  // c (0), d
  CHECK(hist(s, "vllm:request_time_per_output_token_seconds", eng1).sum ==
        doctest::Approx(0.050));                            // c: 0; d: 50 ms / (2 - 1)
  CHECK(value(s, "vllm:num_requests_waiting", eng0) == 1);  // f
  CHECK(value(s, "vllm:num_requests_running", eng0) == 0);
  CHECK(value(s, "vllm:num_preemptions", eng0) == 1);
  CHECK(value(s, "vllm:prompt_tokens", eng0) == 112);
  CHECK(value(s, "vllm:prompt_tokens", eng1) == 2007);  // not e's: rejected before prefill
  CHECK(value(s, "vllm:generation_tokens", eng1) == 3);
  CHECK(value(s, "vllm:request_success", {{"engine", "1"}, {"finished_reason", "abort"}}) == 1);
  CHECK(value(s, "tokchron_rejected_requests", eng1) == 1);
  CHECK(value(s, "vllm:gpu_cache_usage_perc", eng1) == 0.125);
}
