// SPDX-License-Identifier: MIT
// Live metrics of reasoning tokens, prefix-cached prompt tokens and speculative decoding: exact
// counts in a scrape, vLLM's names and label values in vLLM mode (vllm/v1/metrics/loggers.py,
// vllm/v1/spec_decode/metrics.py), tokchron's names otherwise, families absent until fed,
// inclusion policy, record(timeline), and the refusals.
#include <doctest/doctest.h>

#include <string>

#include "live/helpers.hpp"
#include "tokchron/export/prometheus.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/live/recorder.hpp"
#include "tokchron/live/scrape.hpp"
#include "tokchron/timeline/request_timeline.hpp"

namespace {
using namespace live_test;  // the live tests' helpers (tests/live/helpers.hpp)
using tokchron::chunk_kind;
using tokchron::finish_reason;
using tokchron::record_status;
using tokchron::scrape;

// A reasoning request: prompt 100 of which `cached` from the prefix cache; 4 reasoning tokens
// (chunks of 1 and 3), then 2 answer tokens; two speculative drafts (3 drafted, 2 accepted;
// 3 drafted, 0 accepted).
void reasoning_request(metrics& m, request& r, std::uint64_t cached) {
  tokchron::live_request_info info;
  info.prompt_tokens = 100;
  CHECK(m.arrive(r, ms(0), info) == record_status::ok);
  CHECK(m.set_cached_prompt_tokens(r, cached) == record_status::ok);
  CHECK(m.scheduled(r, ms(1)) == record_status::ok);
  CHECK(m.chunk(r, ms(10), 1, chunk_kind::reasoning) == record_status::ok);
  CHECK(m.speculative(r, 3, 2) == record_status::ok);
  CHECK(m.chunk(r, ms(20), 3, chunk_kind::reasoning) == record_status::ok);
  CHECK(m.speculative(r, 3, 0) == record_status::ok);
  CHECK(m.chunk(r, ms(30), 2) == record_status::ok);
  CHECK(m.finish(r, ms(40)) == record_status::ok);
}
}  // namespace

TEST_CASE("live vllm: reasoning, cached prompt and speculative counters under vLLM's names") {
  tokchron::live_options o = tokchron::vllm_live_options("m", 1000);
  o.speculative_positions = 3;
  metrics m(std::move(o));
  auto s = scrape(m);
  // Absent until fed, as vLLM exports spec decoding only when it is configured.
  for (const char* name :
       {"vllm:prompt_tokens_cached", "vllm:prompt_tokens_by_source", "tokchron_reasoning_tokens",
        "vllm:spec_decode_num_drafts", "vllm:spec_decode_num_accepted_tokens_per_pos"})
    CHECK_MESSAGE(live_test::family(s, name) == nullptr, name);

  request a, b;
  reasoning_request(m, a, 40);
  reasoning_request(m, b, 99);  // all but one cached: vLLM recomputes the last token
  s = scrape(m);
  CHECK(value(s, "vllm:prompt_tokens") == 200);
  CHECK(value(s, "vllm:prompt_tokens_cached") == 139);
  CHECK(value(s, "vllm:prompt_tokens_by_source", {{"source", "local_compute"}}) == 60 + 1);
  CHECK(value(s, "vllm:prompt_tokens_by_source", {{"source", "local_cache_hit"}}) == 40 + 100);
  CHECK(value(s, "vllm:prompt_tokens_by_source", {{"source", "external_kv_transfer"}}) == 0);
  CHECK(value(s, "vllm:prompt_tokens_recomputed") == 1);
  CHECK(value(s, "vllm:generation_tokens") == 12);  // reasoning tokens are generation tokens
  CHECK(value(s, "tokchron_reasoning_tokens", {{"model_name", "m"}, {"engine", "0"}}) == 8);
  CHECK(value(s, "vllm:spec_decode_num_drafts") == 4);
  CHECK(value(s, "vllm:spec_decode_num_draft_tokens") == 12);
  CHECK(value(s, "vllm:spec_decode_num_accepted_tokens") == 4);
  CHECK(value(s, "vllm:spec_decode_num_accepted_tokens_per_pos", {{"position", "0"}}) == 2);
  CHECK(value(s, "vllm:spec_decode_num_accepted_tokens_per_pos", {{"position", "1"}}) == 2);
  CHECK(value(s, "vllm:spec_decode_num_accepted_tokens_per_pos", {{"position", "2"}}) == 0);
  // The request's timeline keeps the totals (canonical spec_acceptance reads them).
  CHECK(a.timeline().speculative_drafted_tokens() == 6u);
  CHECK(a.timeline().speculative_accepted_tokens() == 2u);
  CHECK(a.timeline().cached_prompt_tokens() == 40u);
  CHECK(a.timeline().reasoning_tokens() == 4u);
  // The text exposition carries them with the _total suffix.
  const std::string text = tokchron::to_prometheus(s);
  CHECK(text.find("vllm:prompt_tokens_cached_total{model_name=\"m\",engine=\"0\"} 139") !=
        std::string::npos);
  CHECK(text.find("vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"m\",engine="
                  "\"0\",position=\"1\"} 2") != std::string::npos);
  CHECK(m.misuse() == 0);
}

TEST_CASE("live tokchron: the same counters under tokchron's names; record(timeline)") {
  metrics m(tokchron::tokchron_live_options());
  request r;
  reasoning_request(m, r, 40);
  // The one-call path from a full timeline: totals only (no drafts, no positions).
  tokchron::basic_request_timeline<tokchron::manual_clock> tl(m.clock());
  CHECK(tl.arrive(ms(0)) == record_status::ok);
  tl.set_prompt_tokens(10);
  tl.set_cached_prompt_tokens(4);
  CHECK(tl.set_speculative(5, 3) == record_status::ok);
  CHECK(tl.scheduled(ms(1)) == record_status::ok);
  CHECK(tl.chunk(ms(5), 2, chunk_kind::reasoning) == record_status::ok);
  CHECK(tl.chunk(ms(6), 1) == record_status::ok);
  CHECK(tl.finish(ms(7)) == record_status::ok);
  CHECK(m.record(tl) == record_status::ok);
  const auto s = scrape(m);
  CHECK(value(s, "tokchron_reasoning_tokens") == 4 + 2);
  CHECK(value(s, "tokchron_cached_prompt_tokens") == 40 + 4);
  CHECK(value(s, "tokchron_spec_decode_drafts") == 2);
  CHECK(value(s, "tokchron_spec_decode_draft_tokens") == 6 + 5);
  CHECK(value(s, "tokchron_spec_decode_accepted_tokens") == 2 + 3);
  CHECK(live_test::family(s, "vllm:prompt_tokens_by_source") == nullptr);
  CHECK(live_test::family(s, "tokchron_spec_decode_accepted_tokens_per_pos") == nullptr);
}

TEST_CASE("live: under live_inclusion::completed reasoning and cached tokens count at finish") {
  tokchron::live_options o = tokchron::vllm_live_options("m", 1000);
  o.inclusion = tokchron::live_inclusion::completed;
  metrics m(std::move(o));
  request r;
  tokchron::live_request_info info;
  info.prompt_tokens = 100;
  info.cached_prompt_tokens = 30;
  CHECK(m.arrive(r, ms(0), info) == record_status::ok);
  CHECK(m.chunk(r, ms(10), 5, chunk_kind::reasoning) == record_status::ok);
  CHECK(live_test::family(scrape(m), "tokchron_reasoning_tokens") == nullptr);
  CHECK(m.chunk(r, ms(20), 1) == record_status::ok);
  CHECK(m.finish(r, ms(30)) == record_status::ok);
  const auto s = scrape(m);
  CHECK(value(s, "tokchron_reasoning_tokens") == 5);
  CHECK(value(s, "vllm:prompt_tokens_cached") == 30);
  CHECK(value(s, "vllm:prompt_tokens_by_source", {{"source", "local_compute"}}) == 70);
  // An aborted request is not completed: none of its counters move.
  request x;
  CHECK(m.arrive(x, ms(40), info) == record_status::ok);
  CHECK(m.chunk(x, ms(50), 5, chunk_kind::reasoning) == record_status::ok);
  CHECK(m.abort(x, ms(60)) == record_status::ok);
  CHECK(value(scrape(m), "tokchron_reasoning_tokens") == 5);
}

TEST_CASE("bad input L9: live: contradictory counts are refused, counted and change nothing") {
  tokchron::live_options o = tokchron::vllm_live_options("m", 1000);
  o.speculative_positions = 2;
  metrics m(std::move(o));
  request r;
  tokchron::live_request_info info;
  info.prompt_tokens = 10;
  info.cached_prompt_tokens = 11;
  CHECK(m.arrive(r, ms(0), info) == record_status::invalid_count);
  CHECK(!r.active());
  info.cached_prompt_tokens = 4;
  CHECK(m.arrive(r, ms(0), info) == record_status::ok);
  CHECK(m.set_cached_prompt_tokens(r, 12) == record_status::invalid_count);
  CHECK(m.set_prompt_tokens(r, 3) == record_status::invalid_count);  // below the cached 4
  CHECK(m.speculative(r, 2, 3) == record_status::invalid_count);     // accepted > drafted
  CHECK(m.speculative(r, 4, 3) == record_status::invalid_count);     // beyond 2 positions
  CHECK(m.chunk(r, ms(1), 1) == record_status::ok);
  CHECK(m.set_cached_prompt_tokens(r, 2) == record_status::out_of_order);  // after counting
  CHECK(m.misuse() == 6);
  const auto s = scrape(m);
  CHECK(value(s, "vllm:prompt_tokens_cached") == 4);
  CHECK(live_test::family(s, "vllm:spec_decode_num_drafts") == nullptr);
  CHECK(value(s, "tokchron_misuse") == 6);
  // Labels that would collide with the source and position labels are refused up front.
  tokchron::live_options bad = tokchron::vllm_live_options("m", 1000);
  bad.label_names = {"source"};
  bad.default_label_values = {"x"};
  CHECK_THROWS_AS(metrics{bad}, std::invalid_argument);
  bad = tokchron::vllm_live_options("m", 1000);
  bad.speculative_positions = 65;
  CHECK_THROWS_AS(metrics{bad}, std::invalid_argument);
}
