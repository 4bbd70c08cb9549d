// SPDX-License-Identifier: MIT
// Hostile use of live/recorder.hpp + live/scrape.hpp: label values the exposition cannot carry
// as given, label-value sets that would duplicate the overflow series, duplicate label names,
// counters pushed past 2^64, non-finite server-fed gauges, times at the clock's extremes, many
// threads created and destroyed, concurrent interning at the max_series boundary. Every case
// checks that the output stays a valid exposition (one series per label set) and that what was
// recorded is not lost.
#include "tokchron/live/recorder.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "live/helpers.hpp"
#include "tokchron/export/prometheus.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/live/scrape.hpp"

namespace {
using namespace live_test;  // the live tests' helpers (tests/live/helpers.hpp)
using tokchron::record_status;
using tokchron::scrape;

// The label sets of family `name`, each once; CHECKs that no set appears twice.
std::size_t distinct_series(const tokchron::metrics_snapshot& s, std::string_view name) {
  const auto* f = live_test::family(s, name);
  REQUIRE(f != nullptr);
  std::set<std::vector<std::pair<std::string, std::string>>> seen;
  for (const auto& p : f->points) {
    std::vector<std::pair<std::string, std::string>> key;
    for (const auto& l : p.labels) key.emplace_back(l.name, l.value);
    CHECK_MESSAGE(seen.insert(key).second, "a label set appears twice in ", name);
  }
  return seen.size();
}

void one_request(metrics& m, tokchron::live_series s, double at_ms) {
  request r;
  REQUIRE(m.arrive(r, ms(at_ms), {s, 3}) == record_status::ok);
  REQUIRE(m.scheduled(r, ms(at_ms + 1)) == record_status::ok);
  REQUIRE(m.chunk(r, ms(at_ms + 2), 1) == record_status::ok);
  REQUIRE(m.finish(r, ms(at_ms + 3)) == record_status::ok);
}
}  // namespace

TEST_CASE(
    "bad input L5: live: label values the exposition cannot carry as a series of their own are "
    "the overflow series (misuse); every other value is escaped") {
  auto o = tokchron::vllm_live_options("m", 100);
  o.max_series = 8;
  metrics m(o);
  // The overflow series' own label set: before the fix it was interned as an ordinary series
  // and the real overflow series then wrote the same labels again (a duplicate series).
  const auto spoof = m.series({o.overflow_value, o.overflow_value});
  CHECK(m.misuse() == 1);
  const auto bad_utf8 = m.series({"m\xff", "0"});          // not UTF-8
  const auto overlong = m.series({"\xc0\xaf", "0"});       // an overlong '/'
  const auto surrogate = m.series({"\xed\xa0\x80", "0"});  // U+D800
  const auto cut = m.series({"\xe2\x82", "0"});            // truncated sequence
  CHECK(m.misuse() == 5);
  for (const auto s : {spoof, bad_utf8, overlong, surrogate, cut})
    CHECK(m.label_values(s) == std::vector<std::string>{o.overflow_value, o.overflow_value});
  // Hostile but valid values are their own series, escaped by the writers.
  const auto quote = m.series({"a\"b\\c\nd", "0"});
  const auto empty = m.series({"", ""});
  const auto euro = m.series({"\xe2\x82\xac", "0"});
  CHECK(m.misuse() == 5);
  CHECK(m.label_values(quote) == std::vector<std::string>{"a\"b\\c\nd", "0"});
  CHECK(m.label_values(empty) == std::vector<std::string>{"", ""});
  CHECK(m.label_values(euro) == std::vector<std::string>{"\xe2\x82\xac", "0"});
  double at = 0;
  for (const auto s : {spoof, bad_utf8, overlong, surrogate, cut, quote, empty, euro})
    one_request(m, s, at += 10);
  const auto snap = scrape(m);
  for (const char* f : {"vllm:num_requests_running", "vllm:prompt_tokens", "vllm:request_success",
                        "vllm:e2e_request_latency_seconds"})
    CHECK(distinct_series(snap, f) == live_test::family(snap, f)->points.size());
  // default, quote, empty, euro, then the overflow series holding the five refused sets.
  CHECK(live_test::family(snap, "vllm:prompt_tokens")->points.size() == 5);
  CHECK(value(snap, "vllm:prompt_tokens", {{"model_name", o.overflow_value}}) == 15);
  CHECK(value(snap, "tokchron_label_overflow") == 5);
  const std::string text = tokchron::to_prometheus(snap);
  CHECK(text.find("model_name=\"a\\\"b\\\\c\\nd\"") != std::string::npos);
  CHECK(text.find('\xff') == std::string::npos);
}

TEST_CASE("bad input L3: live: options whose series the exposition cannot carry throw") {
  auto o = tokchron::tokchron_live_options({"model", "model"}, {"a", "b"});  // duplicate name
  CHECK_THROWS_AS((void)metrics(o), std::invalid_argument);
  o = tokchron::tokchron_live_options({"model"}, {"a\xff"});  // default value not UTF-8
  CHECK_THROWS_AS((void)metrics(o), std::invalid_argument);
  o = tokchron::tokchron_live_options({"model"}, {"a"});
  o.default_label_values = {o.overflow_value};  // the default series = the overflow series
  CHECK_THROWS_AS((void)metrics(o), std::invalid_argument);
  o = tokchron::tokchron_live_options({"model"}, {"a"});
  o.overflow_value = "\x80";
  CHECK_THROWS_AS((void)metrics(o), std::invalid_argument);
  o = tokchron::tokchron_live_options();
  o.families[1].buckets = {0.1, std::numeric_limits<double>::quiet_NaN()};
  CHECK_THROWS_AS((void)metrics(o), std::invalid_argument);
  o.families[1].buckets = {0.1, std::numeric_limits<double>::infinity()};
  CHECK_THROWS_AS((void)metrics(o), std::invalid_argument);
}

TEST_CASE("bad input L6: live: an unlabelled object has one series, whatever index it is given") {
  metrics m(tokchron::tokchron_live_options());
  one_request(m, tokchron::live_series{}, 0);
  one_request(m, tokchron::live_series{12345}, 10);  // a forged index
  m.set_kv_cache_usage(tokchron::live_series{~std::uint32_t{0}}, 0.5);
  const auto s = scrape(m);
  // Before the fix the forged index recorded into the overflow series, whose label set (none)
  // is the default series' too: two series with the same (empty) labels.
  CHECK(live_test::family(s, "tokchron_prompt_tokens")->points.size() == 1);
  CHECK(value(s, "tokchron_prompt_tokens") == 6);
  CHECK(value(s, "tokchron_kv_cache_usage_ratio") == 0.5);
}

TEST_CASE("bad input L7: live: counters saturate at 2^64 - 1 instead of wrapping") {
  metrics m(tokchron::tokchron_live_options());
  const std::uint64_t huge = std::uint64_t{3} << 62;  // 0.75 x 2^64: two of them wrap to 2^63
  for (int i = 0; i < 2; ++i) {
    request r;
    REQUIRE(m.arrive(r, ms(i * 10.0), {tokchron::live_series{}, huge}) == record_status::ok);
    REQUIRE(m.chunk(r, ms(i * 10.0 + 1), std::numeric_limits<std::uint32_t>::max()) ==
            record_status::ok);
    REQUIRE(m.finish(r, ms(i * 10.0 + 2)) == record_status::ok);
    // Scrape between the two, so the saturation must also hold when merging into the total.
    (void)scrape(m);
  }
  m.add_prefix_cache({}, huge, huge);
  m.add_prefix_cache({}, huge, huge);
  const auto s = scrape(m);
  const double top = static_cast<double>(std::numeric_limits<std::uint64_t>::max());
  // Before the fix: huge + huge wrapped to 2^63, smaller than after the first request, which
  // Prometheus reads as a counter reset.
  CHECK(value(s, "tokchron_prompt_tokens") == top);
  CHECK(value(s, "tokchron_prefix_cache_queries") == top);
  CHECK(value(s, "tokchron_prefix_cache_hits") == top);
  CHECK(value(s, "tokchron_output_tokens") ==
        2.0 * static_cast<double>(std::numeric_limits<std::uint32_t>::max()));
  CHECK(value(s, "tokchron_requests_running") == 0);  // the gauges still net to zero
  CHECK(value(s, "tokchron_requests_waiting") == 0);
  CHECK(m.misuse() == 0);
}

TEST_CASE("bad input L8: live: a KV-cache usage that is not a finite number >= 0 is refused") {
  metrics m(tokchron::vllm_live_options("m", 100));
  m.set_kv_cache_usage({}, 0.25);
  for (const double bad :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
        -std::numeric_limits<double>::infinity(), -0.5, tokchron::detail::live_state::not_set()})
    m.set_kv_cache_usage({}, bad);
  CHECK(m.misuse() == 5);
  const auto s = scrape(m);
  // Before the fix NaN and infinities were exported, and -1 silently unset the gauge.
  CHECK(value(s, "vllm:kv_cache_usage_perc") == 0.25);
  CHECK(value(s, "tokchron_misuse") == 5);
}

TEST_CASE("bad input L1: live: times at the clock's extremes are refused, never overflow") {
  metrics m(tokchron::tokchron_live_options());
  using tp = tokchron::manual_clock::time_point;
  request r;
  CHECK(m.arrive(r, tp::min()) != record_status::ok);
  CHECK(m.arrive(r, tp::max()) != record_status::ok);
  REQUIRE(m.arrive(r, ms(0)) == record_status::ok);
  CHECK(m.chunk(r, tp::max(), 1) != record_status::ok);
  CHECK(m.finish(r, tp::max()) != record_status::ok);
  CHECK(m.chunk(r, ms(1), 0) == record_status::ok);  // an empty chunk: nothing counted
  REQUIRE(m.finish(r, ms(2)) == record_status::ok);
  CHECK(m.misuse() == 4);
  const auto s = scrape(m);
  CHECK(value(s, "tokchron_output_tokens") == 0);
  CHECK(value(s, "tokchron_requests_waiting") == 0);
}

TEST_CASE("live: interning from many threads at the max_series boundary gives exactly max_series") {
  auto o = tokchron::tokchron_live_options({"tenant"}, {"t0"});
  o.max_series = 16;
  for (int round = 0; round < 20; ++round) {
    metrics m(o);
    constexpr int threads = 8, sets = 40;
    std::vector<std::vector<std::uint32_t>> got(threads, std::vector<std::uint32_t>(sets));
    std::atomic<int> ready{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < threads) {
        }
        for (int k = 0; k < sets; ++k) {
          const std::string v = "t" + std::to_string((k * 7 + t * 3) % sets);
          got[t][static_cast<std::size_t>((k * 7 + t * 3) % sets)] = m.series({v}).index;
        }
      });
    for (auto& t : ts) t.join();
    std::set<std::uint32_t> real;
    for (int k = 0; k < sets; ++k)
      for (int t = 0; t < threads; ++t) {
        CHECK(got[t][k] == got[0][k]);  // every thread got the same series for a set
        if (got[t][k] < 16) real.insert(got[t][k]);
      }
    CHECK(real.size() == 16);  // "t0" is the default, index 0: 15 more, then overflow
    const auto s = scrape(m);
    CHECK(live_test::family(s, "tokchron_requests_running")->points.size() == 16);
    CHECK(m.overflowed_lookups() == static_cast<std::uint64_t>(threads) * (sets - 16));
  }
}

TEST_CASE("live: threads created and destroyed reuse shards: memory bounded by peak threads") {
  metrics m(tokchron::tokchron_live_options());
  for (int wave = 0; wave < 50; ++wave) {
    std::vector<std::thread> ts;
    for (int t = 0; t < 3; ++t)
      ts.emplace_back([&, wave, t] { one_request(m, {}, wave * 100.0 + t * 10); });
    for (auto& t : ts) t.join();
    if (wave % 7 == 0) (void)scrape(m);
  }
  std::size_t shards = 0;
  for (auto* s = tokchron::detail::live_access::state(m).head.load(); s != nullptr; s = s->next)
    ++shards;
  CHECK(shards <= 3 + 1);  // the peak, plus one a thread may create while a scrape drains
  const auto s = scrape(m);
  CHECK(value(s, "tokchron_requests", {{"outcome", "stop"}}) == 150);
  CHECK(value(s, "tokchron_prompt_tokens") == 450);
}

TEST_CASE(
    "live: the exposition of a hostile scripted run, for promtool (build dir live_hostile.*)") {
  // Writes <build>/live_hostile_{vllm,tokchron}.{prom,om}: `promtool check metrics < FILE`
  // checks them (docs/library/live-metrics.md, "Exposition validity"). Here: one series per label
  // set.
  for (const bool vllm : {true, false}) {
    CAPTURE(vllm);
    auto o = vllm ? tokchron::vllm_live_options("m\"1\\\n", 100)
                  : tokchron::tokchron_live_options({"model", "adapter"}, {"m\"1\\\n", ""});
    o.max_series = 6;
    metrics m(o);
    double at = 0;
    for (const auto* v : {"\xff", "", "\"", "\\", "\n", "\xe2\x82\xac", "a,b=c}", "x", "y", "z"}) {
      const auto s = m.series({v, "0"});
      request r;
      REQUIRE(m.arrive(r, ms(at), {s, 5, 8}) == record_status::ok);
      REQUIRE(m.scheduled(r, ms(at + 1)) == record_status::ok);
      REQUIRE(m.chunk(r, ms(at + 2), 1) == record_status::ok);
      REQUIRE(m.chunk(r, ms(at + 3), 2) == record_status::ok);
      REQUIRE(m.finish(r, ms(at + 4),
                       at < 30 ? tokchron::finish_reason::aborted
                               : tokchron::finish_reason::stop) == record_status::ok);
      m.set_kv_cache_usage(s, 0.5);
      at += 10;
    }
    const auto snap = scrape(m);
    for (const auto& f : snap.families) CHECK(distinct_series(snap, f.name) == f.points.size());
    tokchron::prometheus_options om;
    om.openmetrics = true;
    const std::string base =
        std::string(TOKCHRON_BINARY_DIR) + "/live_hostile_" + (vllm ? "vllm" : "tokchron");
    std::FILE* f = std::fopen((base + ".prom").c_str(), "wb");
    REQUIRE(f != nullptr);
    const std::string text = tokchron::to_prometheus(snap);
    CHECK(std::fwrite(text.data(), 1, text.size(), f) == text.size());
    std::fclose(f);
    f = std::fopen((base + ".om").c_str(), "wb");
    REQUIRE(f != nullptr);
    const std::string otext = tokchron::to_prometheus(snap, om);
    CHECK(std::fwrite(otext.data(), 1, otext.size(), f) == otext.size());
    std::fclose(f);
  }
}

TEST_CASE(
    "bad input L11: live: a label value longer than max_label_value_bytes is cut on a character "
    "boundary (or refused into the overflow series), counted, and bounds the scrape's size") {
  auto o = tokchron::vllm_live_options("m", 100);
  o.max_series = 8;
  o.max_label_value_bytes = 8;
  o.overflow_value = "__over__";
  SUBCASE("cut") {
    metrics m(o);
    // 1 MiB of one value: before the bound every point of every family repeated it, so one
    // request made each scrape hundreds of MB.
    const std::string huge(std::size_t{1} << 20, 'x');
    const auto a = m.series({huge, "0"});
    const auto b = m.series({huge + "y", "0"});  // the same first 8 bytes: the same series
    CHECK(a.index == b.index);
    CHECK(m.label_values(a) == std::vector<std::string>{"xxxxxxxx", "0"});
    // "abcdefg" then a 3-byte euro sign across the bound: the whole character is left out.
    const auto euro = m.series({"abcdefg\xe2\x82\xac", "0"});
    CHECK(m.label_values(euro) == std::vector<std::string>{"abcdefg", "0"});
    const auto exact = m.series({"12345678", "0"});  // at the bound: kept, not counted
    CHECK(m.label_values(exact) == std::vector<std::string>{"12345678", "0"});
    // A value that is only the overflow value once cut is refused as a spoof (misuse).
    auto p = o;
    p.overflow_value = "__overfl";
    metrics spoofed(p);
    CHECK(spoofed.label_values(spoofed.series({"__overflow__", "__overflow__"})) ==
          std::vector<std::string>{"__overfl", "__overfl"});
    CHECK(spoofed.misuse() == 1);
    CHECK(m.long_label_values() == 3);
    CHECK(m.misuse() == 0);
    one_request(m, a, 10);
    one_request(m, euro, 20);
    const auto snap = scrape(m);
    CHECK(value(snap, "tokchron_long_label_values") == 3);
    CHECK(value(snap, "vllm:prompt_tokens", {{"model_name", "xxxxxxxx"}}) == 3);
    CHECK(value(snap, "tokchron_label_overflow") == 0);
    const std::string text = tokchron::to_prometheus(snap);
    CHECK(text.find("xxxxxxxxx") == std::string::npos);
    // The whole exposition (the vLLM preset, four series) is smaller than one uncut copy of the
    // value: every point carried it before.
    CHECK(text.size() < huge.size());
  }
  SUBCASE("refused") {
    o.long_label_value = tokchron::live_long_label_value::overflow;
    metrics m(o);
    const auto a = m.series({"123456789", "0"});
    CHECK(m.label_values(a) == std::vector<std::string>{o.overflow_value, o.overflow_value});
    CHECK(m.long_label_values() == 1);
    CHECK(m.overflowed_lookups() == 1);
    CHECK(m.misuse() == 0);
    one_request(m, a, 10);
    const auto snap = scrape(m);
    CHECK(value(snap, "tokchron_long_label_values") == 1);
    CHECK(value(snap, "tokchron_label_overflow") == 1);
  }
  SUBCASE("options") {
    o.max_label_value_bytes = 0;
    CHECK_THROWS_AS((void)metrics(o), std::invalid_argument);
    o.max_label_value_bytes = 1;  // the default value "m" fits; "__over__" does not
    CHECK_THROWS_AS((void)metrics(o), std::invalid_argument);
    o.overflow_value = "_";
    CHECK_NOTHROW((void)metrics(o));
    o.default_label_values = {"mm", "0"};  // a default value over the bound
    CHECK_THROWS_AS((void)metrics(o), std::invalid_argument);
  }
}
