// SPDX-License-Identifier: MIT
// A preset written outside the library, as a user writes one for a server tokchron has no
// preset for (docs/library/live-metrics.md, "Writing a preset"): plain data, its own names,
// help, kinds, labels, bucket edges, finish-reason strings and rules, built from the public
// types of live/options.hpp only. Its scrape is checked line by line and by value, so that
// nothing of the servers' presets leaks into it (before presets were data, a new semantics got
// vLLM's finish-reason strings).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "live/helpers.hpp"
#include "tokchron/export/prometheus.hpp"
#include "tokchron/live/options.hpp"
#include "tokchron/live/recorder.hpp"
#include "tokchron/live/scrape.hpp"

namespace {
using live_test::hist;
using live_test::metrics;
using live_test::ms;
using live_test::request;
using live_test::value;
using tokchron::finish_reason;
using tokchron::live_family;
using tokchron::live_histogram;
using tokchron::live_source;
using tokchron::record_status;

// "acme-serve": label `model`; ITL k samples of g / k per later chunk; TPOT 0 for one-token
// answers; TTFT from the engine's queue; only answered requests (stop, length) in the
// per-request histograms; a `status` label of its own words; output tokens written as a gauge.
tokchron::live_options acme_live_options(std::string model) {
  tokchron::live_options o;
  o.label_names = {"model"};
  o.default_label_values = {std::move(model)};
  o.rules.itl = tokchron::itl_grain::per_token_split;
  o.rules.tpot_small_n = tokchron::small_n_rule::zero;
  o.rules.from_queued = true;
  o.rules.reasons = static_cast<std::uint8_t>(tokchron::live_reason_bit(finish_reason::stop) |
                                              tokchron::live_reason_bit(finish_reason::length));
  auto histogram = [](const char* name, live_histogram h, std::vector<double> edges) {
    live_family f;
    f.name = name;
    f.source = live_source::histogram;
    f.kind = tokchron::metric_kind::histogram;
    f.unit = "seconds";
    f.histogram = h;
    f.buckets = std::move(edges);
    return f;
  };
  auto family = [](const char* name, live_source s, tokchron::metric_kind k, const char* help) {
    live_family f;
    f.name = name;
    f.source = s;
    f.kind = k;
    f.help = help;
    return f;
  };
  using kind = tokchron::metric_kind;
  o.families.push_back(histogram("acme_ttft_seconds", live_histogram::ttft, {0.05, 0.1, 0.5}));
  o.families.push_back(histogram("acme_itl_seconds", live_histogram::itl, {0.011, 0.05}));
  o.families.push_back(histogram("acme_tpot_seconds", live_histogram::tpot, {0.01, 0.05}));
  live_family requests =
      family("acme_requests", live_source::requests, kind::counter, "Requests by how they ended.");
  requests.label = "status";
  // By finish_reason: stop, length, aborted, error, timed_out, rejected; then one never recorded.
  requests.label_values = {"ok",        "truncated", "cancelled", "failed",
                           "cancelled", "refused",   "paused"};
  o.families.push_back(requests);
  live_family done =
      family("acme_answered", live_source::finished, kind::counter, "Requests answered.");
  done.reasons = o.rules.reasons;
  o.families.push_back(done);
  o.families.push_back(
      family("acme_active", live_source::running, kind::gauge, "Requests being decoded."));
  o.families.push_back(family("acme_queue", live_source::waiting, kind::gauge, "Queued."));
  o.families.push_back(family("acme_output_tokens", live_source::generation_tokens, kind::gauge,
                              "Output tokens so far."));
  return o;
}

void acme_run(metrics& m) {
  const tokchron::live_series s{};
  auto ok = [](record_status st) { REQUIRE(st == record_status::ok); };
  request a, b, c, d, e;
  ok(m.arrive(a, ms(0), {s, 10, 0}));  // queued at 2: TTFT 38 ms, TPOT 45 / 4 ms
  ok(m.queued(a, ms(2)));
  ok(m.scheduled(a, ms(5)));
  ok(m.chunk(a, ms(40), 1));
  ok(m.chunk(a, ms(60), 2));  // ITL: 2 x 10 ms
  ok(m.chunk(a, ms(85), 2));  // ITL: 2 x 12.5 ms
  ok(m.finish(a, ms(85), finish_reason::stop));
  ok(m.arrive(b, ms(10), {s, 5, 0}));  // one token, length: TTFT 60 ms, TPOT 0
  ok(m.chunk(b, ms(70), 1));
  ok(m.finish(b, ms(70), finish_reason::length));
  ok(m.arrive(c, ms(20), {s, 5, 0}));  // aborted after a token: not in TPOT
  ok(m.chunk(c, ms(30), 1));
  ok(m.chunk(c, ms(50), 1));  // ITL 20 ms
  ok(m.abort(c, ms(55)));
  ok(m.arrive(d, ms(30), {s, 5, 0}));
  ok(m.reject(d, ms(30)));
  ok(m.arrive(e, ms(90), {s, 5, 0}));  // still queued
}
}  // namespace

TEST_CASE("live: a preset written outside the library records and scrapes by its own data") {
  metrics m(acme_live_options("m1"));
  acme_run(m);
  const auto s = tokchron::scrape(m);
  REQUIRE(s.families.size() == 8);  // exactly its families, nothing of tokchron's added
  const auto& ttft = hist(s, "acme_ttft_seconds");
  CHECK(ttft.count == 3);  // a, b, c (observed at the first token)
  CHECK(ttft.sum == doctest::Approx(0.038 + 0.060 + 0.010));
  CHECK(ttft.buckets[0].cumulative_count == 2);  // 38 and 10 ms <= 50 ms
  const auto& itl = hist(s, "acme_itl_seconds");
  CHECK(itl.count == 5);  // a: 2 + 2, c: 1
  CHECK(itl.sum == doctest::Approx(0.020 + 0.025 + 0.020));
  CHECK(itl.buckets[0].cumulative_count == 2);  // the two 10 ms samples <= 11 ms
  const auto& tpot = hist(s, "acme_tpot_seconds");
  CHECK(tpot.count == 2);  // a and b (0), not the aborted c
  CHECK(tpot.sum == doctest::Approx(0.045 / 4));
  CHECK(value(s, "acme_requests", {{"status", "ok"}}) == 1);
  CHECK(value(s, "acme_requests", {{"status", "truncated"}}) == 1);
  CHECK(value(s, "acme_requests", {{"status", "cancelled"}}) == 1);
  CHECK(value(s, "acme_requests", {{"status", "failed"}}) == 0);
  CHECK(value(s, "acme_requests", {{"status", "refused"}}) == 1);
  CHECK(value(s, "acme_requests", {{"status", "paused"}}) == 0);
  CHECK(live_test::family(s, "acme_requests")->points.size() == 6);  // each value once
  CHECK(value(s, "acme_answered") == 2);
  CHECK(value(s, "acme_active") == 0);
  CHECK(value(s, "acme_queue") == 1);
  CHECK(value(s, "acme_output_tokens") == 8);  // a 5, b 1, c 2

  const std::string text = tokchron::to_prometheus(s);
  for (const char* line :
       {"# HELP acme_requests_total Requests by how they ended.\n",
        "acme_requests_total{model=\"m1\",status=\"refused\"} 1\n",
        "# HELP acme_answered_total Requests answered.\n", "acme_answered_total{model=\"m1\"} 2\n",
        "# TYPE acme_output_tokens gauge\n", "acme_output_tokens{model=\"m1\"} 8\n",
        "acme_ttft_seconds_bucket{model=\"m1\",le=\"0.05\"} 2\n",
        // An empty help takes the default of its source under the preset's rules.
        "# HELP acme_itl_seconds Inter-token latency: each later output batch of k tokens after "
        "a gap g gives k samples of g / k, seconds.\n",
        "# HELP acme_ttft_seconds Time to first token from the engine's arrival, seconds.\n"})
    CHECK_MESSAGE(text.find(line) != std::string::npos, line);
  tokchron::prometheus_options om;
  om.openmetrics = true;
  CHECK(tokchron::to_prometheus(s, om).find("# UNIT acme_ttft_seconds seconds\n") !=
        std::string::npos);

  // The same data is read at record time: with one ITL sample per chunk the same run gives
  // a 2 and c 1.
  auto per_chunk = acme_live_options("m1");
  per_chunk.rules.itl = tokchron::itl_grain::per_chunk;
  metrics m2(per_chunk);
  acme_run(m2);
  const auto s2 = tokchron::scrape(m2);
  CHECK(hist(s2, "acme_itl_seconds").count == 3);
  CHECK(live_test::family(s2, "acme_itl_seconds")->help ==
        "Inter-token latency: one sample per streamed step with tokens after the first, "
        "seconds.");
}
