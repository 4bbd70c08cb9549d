// SPDX-License-Identifier: MIT
// Every preset (live/presets.hpp) over one run that reaches every family it can export: the
// scripted run of the golden expositions, plus a request with reasoning chunks, a prefix-cached
// prompt (all but its last token: one recomputed) and speculative drafts, fed prefix-cache and
// KV-cache series, two draft positions. The text exposition of a first scrape, then the
// OpenMetrics exposition (units) of a second, byte for byte against
// tests/live/golden/<preset>_full.prom (TOKCHRON_UPDATE_GOLDEN=1 rewrites them; review the
// diff). What each preset records is checked by value in presets_test.cpp and vllm_text_test.cpp.
#include <doctest/doctest.h>

#include <string>

#include "live/helpers.hpp"
#include "tokchron/export/prometheus.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/live/recorder.hpp"
#include "tokchron/live/scrape.hpp"

namespace {
using live_test::metrics;
using live_test::ms;
using live_test::request;
using tokchron::chunk_kind;
using tokchron::record_status;

void full_run(metrics& m) {
  const tokchron::live_series s{};
  live_test::scripted_run(m, s, s);
  auto ok = [](record_status st) { REQUIRE(st == record_status::ok); };
  request r;
  tokchron::live_request_info info{s, 20, 64};
  info.cached_prompt_tokens = 19;
  ok(m.arrive(r, ms(2000), info));
  ok(m.scheduled(r, ms(2002)));
  ok(m.chunk(r, ms(2010), 1, chunk_kind::reasoning));
  ok(m.speculative(r, 2, 1));
  ok(m.chunk(r, ms(2020), 3, chunk_kind::reasoning));
  ok(m.speculative(r, 2, 2));
  ok(m.chunk(r, ms(2031), 2));
  ok(m.finish(r, ms(2031), tokchron::finish_reason::stop));
  m.add_prefix_cache(s, 20, 19);
  m.set_kv_cache_usage(s, 0.25);
}

void check(const char* name, tokchron::live_options o) {
  o.speculative_positions = 2;
  metrics m(std::move(o));
  full_run(m);
  std::string text = tokchron::to_prometheus(tokchron::scrape(m));
  text += "\n";
  tokchron::prometheus_options om;
  om.openmetrics = true;
  text += tokchron::to_prometheus(tokchron::scrape(m), om);
  live_test::check_golden(std::string(name) + "_full.prom", text);
}
}  // namespace

TEST_CASE("live presets: every family of every preset, text and OpenMetrics") {
  check("tokchron", tokchron::tokchron_live_options({"model_name"}, {"llama-3-8b"}, 4096));
  check("vllm", tokchron::vllm_live_options("llama-3-8b", 4096));
  check("sglang", tokchron::sglang_live_options("llama-3-8b"));
  check("tgi", tokchron::tgi_live_options(4095, 4096));
  check("llamacpp", tokchron::llamacpp_live_options());
  check("trtllm", tokchron::trtllm_live_options("llama-3-8b"));
  check("dynamo", tokchron::dynamo_live_options("llama-3-8b"));
  check("lmdeploy", tokchron::lmdeploy_live_options("llama-3-8b"));
  check("otel", tokchron::otel_live_options("llama-3-8b", "tokchron"));
}
