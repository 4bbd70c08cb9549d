// SPDX-License-Identifier: MIT
// Disaggregated prefill and decode (`kv_transfer`, `live_options::role`, `live_with_role`):
// vLLM's prompt tokens by source on a decode node (vllm/v1/metrics/stats.py
// `PromptTokenStats.update_from_output`), tokchron's transfer families, SGLang's last-transfer
// gauges on a prefill node, the role label, and misuse refused without changing anything.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "live/helpers.hpp"
#include "tokchron/export/prometheus.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/live/recorder.hpp"
#include "tokchron/live/scrape.hpp"

namespace {
using live_test::metrics;
using live_test::ms;
using live_test::request;
using live_test::value;
using tokchron::finish_reason;
using tokchron::live_role;
using tokchron::record_status;

// One request of `prompt` tokens on `m`: arrives at `t0` ms, `local` tokens cached here
// (unless 0), its KV cache of `moved` tokens transferred, scheduled 1 ms later, a first token 5 ms
// later, a second 10 ms later, stop.
void decode_request(metrics& m, double t0, std::uint64_t prompt, std::uint64_t local,
                    std::uint64_t moved) {
  request r;
  REQUIRE(m.arrive(r, ms(t0), {tokchron::live_series{}, prompt}) == record_status::ok);
  REQUIRE(m.kv_transfer(r, {moved * 1024, 0.002, moved}) == record_status::ok);
  if (local > 0) REQUIRE(m.set_cached_prompt_tokens(r, local) == record_status::ok);
  REQUIRE(m.scheduled(r, ms(t0 + 1)) == record_status::ok);
  REQUIRE(m.chunk(r, ms(t0 + 5), 1) == record_status::ok);
  REQUIRE(m.chunk(r, ms(t0 + 10), 1) == record_status::ok);
  REQUIRE(m.finish(r, ms(t0 + 10), finish_reason::stop) == record_status::ok);
}

double by_source(const tokchron::metrics_snapshot& s, const char* source) {
  return value(s, "vllm:prompt_tokens_by_source", {{"source", source}});
}
}  // namespace

TEST_CASE("disaggregated: a decode node's prompt tokens by source, as vLLM splits them") {
  metrics m(tokchron::live_with_role(tokchron::vllm_live_options("m", 4096), live_role::decode));
  SUBCASE("the whole prompt transferred but one token (vLLM recomputes the last)") {
    decode_request(m, 0, 100, 0, 99);
    const auto s = tokchron::scrape(m);
    // computed = prompt - cached; external = transferred; local_cache_hit = cached +
    // recomputed - external: 1, 1, 99 (and computed + hit + external - recomputed = 100).
    CHECK(by_source(s, "local_compute") == 1);
    CHECK(by_source(s, "local_cache_hit") == 1);
    CHECK(by_source(s, "external_kv_transfer") == 99);
    CHECK(value(s, "vllm:prompt_tokens_recomputed") == 1);
    CHECK(value(s, "vllm:prompt_tokens_cached") == 99);
    CHECK(value(s, "vllm:prompt_tokens") == 100);
    CHECK(live_test::hist(s, "vllm:request_prefill_kv_computed_tokens").sum == 1);
  }
  SUBCASE("cached tokens equal the prompt: nothing computed") {
    decode_request(m, 0, 100, 0, 100);
    const auto s = tokchron::scrape(m);
    CHECK(by_source(s, "local_compute") == 0);
    CHECK(by_source(s, "local_cache_hit") == 0);
    CHECK(by_source(s, "external_kv_transfer") == 100);
    CHECK(value(s, "vllm:prompt_tokens_cached") == 100);
    CHECK(live_test::hist(s, "vllm:request_prefill_kv_computed_tokens").sum == 0);
  }
  SUBCASE("local prefix-cache hits beside the transferred tokens, in either order") {
    decode_request(m, 0, 100, 20, 50);
    request r;
    REQUIRE(m.arrive(r, ms(100), {tokchron::live_series{}, 40}) == record_status::ok);
    REQUIRE(m.set_cached_prompt_tokens(r, 10) == record_status::ok);
    REQUIRE(m.kv_transfer(r, {0, 0, 25}) == record_status::ok);
    // The local hits given again after the transfer replace the earlier ones.
    REQUIRE(m.set_cached_prompt_tokens(r, 5) == record_status::ok);
    REQUIRE(m.chunk(r, ms(110), 1) == record_status::ok);
    REQUIRE(m.finish(r, ms(110), finish_reason::stop) == record_status::ok);
    const auto s = tokchron::scrape(m);
    CHECK(by_source(s, "local_compute") == 30 + 10);
    CHECK(by_source(s, "local_cache_hit") == 20 + 5);
    CHECK(by_source(s, "external_kv_transfer") == 50 + 25);
    CHECK(value(s, "vllm:prompt_tokens") == 140);
  }
  SUBCASE("every point carries role=\"decode\"") {
    decode_request(m, 0, 10, 0, 9);
    for (const auto& f : tokchron::scrape(m).families)
      for (const auto& p : f.points) {
        bool role = false;
        for (const auto& l : p.labels) role = role || (l.name == "role" && l.value == "decode");
        CHECK_MESSAGE(role, f.name);
      }
  }
}

TEST_CASE("disaggregated: tokchron's transfer families, exported once a transfer was recorded") {
  metrics m(tokchron::tokchron_live_options({"model"}, {"m"}, 4096));
  request a;
  REQUIRE(m.arrive(a, ms(0), {tokchron::live_series{}, 64}) == record_status::ok);
  REQUIRE(m.chunk(a, ms(10), 1) == record_status::ok);
  REQUIRE(m.finish(a, ms(10)) == record_status::ok);
  const auto before = tokchron::scrape(m);
  CHECK(live_test::family(before, "tokchron_kv_transfers") == nullptr);
  CHECK(live_test::family(before, "tokchron_kv_transfer_seconds") == nullptr);
  request b;
  REQUIRE(m.arrive(b, ms(20), {tokchron::live_series{}, 64}) == record_status::ok);
  REQUIRE(m.kv_transfer(b, {3 << 20, 0.0125, 64}) == record_status::ok);
  REQUIRE(m.chunk(b, ms(30), 1) == record_status::ok);
  REQUIRE(m.finish(b, ms(30)) == record_status::ok);
  const auto s = tokchron::scrape(m);
  CHECK(value(s, "tokchron_kv_transfers") == 1);
  CHECK(value(s, "tokchron_kv_transfer_bytes") == 3 << 20);
  CHECK(value(s, "tokchron_kv_transfer_tokens") == 64);
  const auto& h = live_test::hist(s, "tokchron_kv_transfer_seconds");
  CHECK(h.count == 1);
  CHECK(h.sum == 0.0125);
  // Transferred tokens are cached prompt tokens on the default role (`both`).
  CHECK(value(s, "tokchron_cached_prompt_tokens") == 64);
  CHECK(value(s, "tokchron_prompt_tokens") == 128);
}

TEST_CASE("disaggregated: SGLang's prefill node sets the last-transfer gauges") {
  metrics m(tokchron::live_with_role(tokchron::sglang_live_options("m"), live_role::prefill, ""));
  CHECK(live_test::family(tokchron::scrape(m), "sglang:kv_transfer_latency_ms") == nullptr);
  request r;
  REQUIRE(m.arrive(r, ms(0), {tokchron::live_series{}, 1000}) == record_status::ok);
  REQUIRE(m.scheduled(r, ms(1)) == record_status::ok);
  REQUIRE(m.chunk(r, ms(50), 1) == record_status::ok);
  // A prefill node sends the KV cache after computing the prompt's first token.
  REQUIRE(m.kv_transfer(r, {512u << 20, 0.25, 1000}) == record_status::ok);
  REQUIRE(m.finish(r, ms(300), finish_reason::length) == record_status::ok);
  const auto s = tokchron::scrape(m);
  CHECK(value(s, "sglang:kv_transfer_latency_ms") == 250);
  CHECK(value(s, "sglang:kv_transfer_total_mb") == 512);
  CHECK(value(s, "sglang:kv_transfer_speed_gb_s") == 2);  // 0.5 GiB in 0.25 s
  // The prompt was computed here: no cached tokens.
  CHECK(live_test::family(s, "sglang:cached_tokens") == nullptr);
  CHECK(value(s, "sglang:prompt_tokens") == 1000);
  // The most recent transfer replaces the gauges; one of 0 s has speed 0.
  request q;
  REQUIRE(m.arrive(q, ms(400), {tokchron::live_series{}, 10}) == record_status::ok);
  REQUIRE(m.kv_transfer(q, {1u << 20, 0, 10}) == record_status::ok);
  const auto t = tokchron::scrape(m);
  CHECK(value(t, "sglang:kv_transfer_latency_ms") == 0);
  CHECK(value(t, "sglang:kv_transfer_total_mb") == 1);
  CHECK(value(t, "sglang:kv_transfer_speed_gb_s") == 0);
}

TEST_CASE("disaggregated: misuse of kv_transfer is refused, counted, and changes nothing") {
  metrics m(tokchron::live_with_role(tokchron::tokchron_live_options({"model"}, {"m"}, 4096),
                                     live_role::decode));
  request r;
  REQUIRE(m.arrive(r, ms(0), {tokchron::live_series{}, 100}) == record_status::ok);
  REQUIRE(m.kv_transfer(r, {4096, 0.5, 90}) == record_status::ok);
  const std::string before = tokchron::to_prometheus(tokchron::scrape(m));
  const std::uint64_t misuse = m.misuse();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(m.kv_transfer(r, {4096, 0.5, 90}) == record_status::already_started);  // twice
  request fresh;
  REQUIRE(m.arrive(fresh, ms(1), {tokchron::live_series{}, 100}) == record_status::ok);
  CHECK(m.kv_transfer(fresh, {1, -0.001, 1}) == record_status::invalid_count);
  CHECK(m.kv_transfer(fresh, {1, std::nan(""), 1}) == record_status::invalid_count);
  CHECK(m.kv_transfer(fresh, {1, inf, 1}) == record_status::invalid_count);
  CHECK(m.kv_transfer(fresh, {1, 0.1, 101}) == record_status::invalid_count);  // > prompt
  CHECK(m.kv_transfer(fresh, {1, 0.1, ~std::uint64_t{0}}) == record_status::invalid_count);
  // The transferred tokens and the local hits together may not exceed the prompt.
  CHECK(m.set_cached_prompt_tokens(r, 11) == record_status::invalid_count);
  CHECK(m.set_prompt_tokens(r, 89) == record_status::invalid_count);
  request late;
  REQUIRE(m.arrive(late, ms(2), {tokchron::live_series{}, 100}) == record_status::ok);
  REQUIRE(m.chunk(late, ms(3), 1) == record_status::ok);
  CHECK(m.kv_transfer(late, {1, 0.1, 1}) == record_status::out_of_order);  // after the token
  request never;
  CHECK(m.kv_transfer(never, {1, 0.1, 1}) == record_status::not_started);
  REQUIRE(m.finish(late, ms(4)) == record_status::ok);
  CHECK(m.kv_transfer(late, {1, 0.1, 1}) == record_status::after_finish);
  CHECK(m.misuse() == misuse + 11);
  // Nothing moved but the misuse counter and what `late` recorded: r's transfer is the only one.
  const auto s = tokchron::scrape(m);
  CHECK(value(s, "tokchron_kv_transfers") == 1);
  CHECK(value(s, "tokchron_kv_transfer_tokens") == 90);
  CHECK(live_test::hist(s, "tokchron_kv_transfer_seconds").sum == 0.5);
  CHECK(value(s, "tokchron_misuse") == static_cast<double>(misuse + 11));
  CHECK(before.find("tokchron_kv_transfers_total{model=\"m\",role=\"decode\"} 1") !=
        std::string::npos);
  // r still records as before: 90 transferred + 10 local of 100.
  REQUIRE(m.set_cached_prompt_tokens(r, 10) == record_status::ok);
  REQUIRE(m.chunk(r, ms(5), 1) == record_status::ok);
  REQUIRE(m.finish(r, ms(5)) == record_status::ok);
  CHECK(value(tokchron::scrape(m), "tokchron_cached_prompt_tokens") == 100);
}

TEST_CASE("disaggregated: the role label may not clash with a series label") {
  CHECK_THROWS_AS(metrics(tokchron::live_with_role(tokchron::tokchron_live_options({"role"}, {"x"}),
                                                   live_role::decode)),
                  std::invalid_argument);
  tokchron::live_options o = tokchron::tokchron_live_options();
  o.role = static_cast<live_role>(7);
  CHECK_THROWS_AS(metrics(std::move(o)), std::invalid_argument);
}

TEST_CASE("disaggregated: a scrape reads the time and size of one transfer, never of two") {
  // Writers record transfers whose size in MiB equals their time in seconds; a scraper running
  // beside them must always read latency_ms / 1000 == total_mb (a torn pair would not).
  metrics m(tokchron::live_with_role(tokchron::sglang_live_options("m"), live_role::prefill, ""));
  constexpr int writers = 4, per_writer = 2000;
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w)
    threads.emplace_back([&m, &done, w] {
      for (int i = 0; i < per_writer; ++i) {
        request r;
        const auto mib = static_cast<std::uint64_t>(1 + w * per_writer + i);
        (void)m.arrive(r, ms(i), {tokchron::live_series{}, 10});
        (void)m.kv_transfer(r, {mib << 20, static_cast<double>(mib), 10});
        (void)m.finish(r, ms(i + 1), finish_reason::stop);
      }
      done.fetch_add(1);
    });
  int torn = 0, scrapes = 0;
  while (done.load() < writers || scrapes == 0) {
    const auto s = tokchron::scrape(m);
    ++scrapes;
    if (live_test::family(s, "sglang:kv_transfer_latency_ms") == nullptr) continue;
    const double latency_ms = value(s, "sglang:kv_transfer_latency_ms");
    const double total_mb = value(s, "sglang:kv_transfer_total_mb");
    if (latency_ms / 1000 != total_mb) ++torn;
  }
  for (auto& t : threads) t.join();
  CHECK(torn == 0);
  CHECK(m.misuse() == 0);
  CHECK(value(tokchron::scrape(m), "tokchron_misuse") == 0);
}
