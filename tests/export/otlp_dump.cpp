// SPDX-License-Identifier: MIT
// tokchron_otlp_dump OUT_OTLP_JSON OUT_SAMPLES_JSON [OUT_OTLP_PROTOBUF]: writes tokchron's
// OTLP/JSON export (export/otlp.hpp) of log_histograms filled with known, seeded samples, beside
// it the samples and every field the export is meant to carry, and the same request as OTLP/HTTP
// protobuf (export/otlp_protobuf.hpp; only when built with tokchron::otlp_protobuf). CI stage 41
// decodes the first and third files with OpenTelemetry's own JavaScript packages and checks them
// against the second
// (tests/export/otlp_node/otlp_check.js;
// docs/library/exporters.md#otlp-checked-by-opentelemetrys-own-code). With --genai first, the
// GenAI server metrics of a seeded run instead (tests/export/otlp_node/genai_check.js).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokchron/clock.hpp"
#include "tokchron/export/otlp.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/live/recorder.hpp"
#include "tokchron/live/scrape.hpp"
#include "tokchron/metrics/canonical.hpp"
#ifdef TOKCHRON_OTLP_PROTOBUF
#include "tokchron/export/otlp_protobuf.hpp"
#endif

namespace {

struct case_spec {
  const char* name;
  int scale;
  double zero_threshold;
  bool negatives;
  std::size_t n;  // random samples besides the fixed ones
};

// Latency-like samples (log-normal around 0.2 s, from 10 us to minutes), exact powers of two
// (the mapping's boundary case), zeros, values at and below the zero threshold, and, where asked,
// negative values (the negative buckets).
std::vector<double> samples_for(const case_spec& c, std::mt19937_64& rng) {
  std::vector<double> xs;
  std::normal_distribution<double> z(std::log(0.2), 1.5);
  for (std::size_t i = 0; i < c.n; ++i) xs.push_back(std::exp(z(rng)));
  for (int e = -12; e <= 8; ++e) xs.push_back(std::ldexp(1.0, e));
  xs.push_back(0.0);
  xs.push_back(1e-300);
  if (c.zero_threshold > 0) {
    xs.push_back(c.zero_threshold);
    xs.push_back(c.zero_threshold / 2);
    xs.push_back(-c.zero_threshold);
  }
  if (c.negatives)
    for (std::size_t i = 0; i < c.n / 10; ++i) xs.push_back(-std::exp(z(rng)));
  std::shuffle(xs.begin(), xs.end(), rng);
  return xs;
}

// --genai: OpenTelemetry's GenAI server metrics of a seeded run of requests (some failed, cut,
// timed out or rejected) recorded under otel_live_options, scraped, exported as explicit-bucket
// histograms; the known file holds, per metric and per error.type ("" for a successful
// response), the samples tokchron observed, and the attributes.
int genai(int argc, char** argv) {
  using clock = tokchron::manual_clock;
  tokchron::basic_live_metrics<clock> m(
      tokchron::otel_live_options("llama-3-8b", "tokchron", "chat"));
  std::mt19937_64 rng(20261207);
  std::lognormal_distribution<double> ttft_ms(std::log(150.0), 0.8), gap_ms(std::log(25.0), 0.5);
  std::uniform_int_distribution<int> chunks(1, 40), tokens(1, 3), outcome(0, 19);
  const char* const names[] = {"gen_ai.server.request.duration",
                               "gen_ai.server.time_per_output_token",
                               "gen_ai.server.time_to_first_token"};
  nlohmann::ordered_json samples;
  for (const char* n : names) samples[n] = nlohmann::ordered_json::object();
  auto add = [&](const char* metric, std::string_view error_type, double v) {
    auto& by = samples[metric];
    const std::string k(error_type);
    if (!by.contains(k)) by[k] = nlohmann::ordered_json::array();
    by[k].push_back(v);
  };
  auto at = [](double ms) {
    return clock::time_point(
        std::chrono::duration_cast<clock::duration>(std::chrono::duration<double, std::milli>(ms)));
  };
  int failed = 0;
  for (int i = 0; i < 300; ++i) {
    tokchron::basic_live_request<clock> r;
    const double t0 = 10.0 * i;
    if (m.arrive(r, at(t0), {tokchron::live_series{}, 100, 0}) != tokchron::record_status::ok)
      return 1;
    tokchron::finish_reason why = tokchron::finish_reason::rejected;
    double t = t0 + 0.5;
    if (i % 29 != 7) {  // the others refused before being scheduled
      if (m.scheduled(r, at(t0 + 1)) != tokchron::record_status::ok) return 1;
      t = t0 + 1 + ttft_ms(rng);
      const int n = chunks(rng);
      for (int c = 0; c < n; ++c) {
        if (m.chunk(r, at(t), static_cast<std::uint32_t>(tokens(rng))) !=
            tokchron::record_status::ok)
          return 1;
        t += gap_ms(rng);
      }
      const int o = outcome(rng);
      why = o < 15   ? tokchron::finish_reason::stop
            : o < 17 ? tokchron::finish_reason::length
            : o < 18 ? tokchron::finish_reason::aborted
            : o < 19 ? tokchron::finish_reason::error
                     : tokchron::finish_reason::timed_out;
    }
    if (m.finish(r, at(t), why) != tokchron::record_status::ok) return 1;
    const auto& tl = r.timeline();
    // Every request's duration, arrival to finish; a failed one's under its error.type.
    const std::string_view error_type =
        tokchron::otel_genai_error_types[static_cast<std::size_t>(why)];
    add(names[0], error_type, tokchron::to_seconds(*tl.finish_time() - *tl.arrival()));
    if (!tokchron::is_success(why)) {  // "for successful responses": TPOT and TTFT not observed
      ++failed;
      continue;
    }
    if (const auto v = tokchron::tpot(tl)) add(names[1], "", tokchron::to_seconds(*v));
    add(names[2], "", tokchron::to_seconds(*tl.first_token_time() - *tl.arrival()));
  }
  const auto hs = tokchron::otlp_genai_histograms(tokchron::scrape(m));
  const std::uint64_t start_ns = 1764979200000000000ULL, time_ns = start_ns + 3'000'000'000ULL;
  const tokchron::label_set resource = {{"service.name", "tokchron-serve"}};
  nlohmann::ordered_json known;
  known["kind"] = "server";
  known["failed"] = failed;
  known["samples"] = samples;
  known["attributes"] = {{"gen_ai.operation.name", "chat"},
                         {"gen_ai.provider.name", "tokchron"},
                         {"gen_ai.request.model", "llama-3-8b"}};
  std::ofstream(argv[2]) << tokchron::otlp_metrics({}, hs, resource, start_ns, time_ns).dump()
                         << "\n";
  std::ofstream(argv[3]) << known.dump() << "\n";
#ifdef TOKCHRON_OTLP_PROTOBUF
  if (argc == 5)
    std::ofstream(argv[4], std::ios::binary)
        << tokchron::otlp_metrics_protobuf({}, hs, resource, start_ns, time_ns);
#else
  if (argc == 5) {
    std::cerr << "tokchron_otlp_dump: built without protobuf (tokchron::otlp_protobuf)\n";
    return 2;
  }
#endif
  std::cout << "tokchron_otlp_dump --genai: " << hs.size() << " GenAI data points, " << failed
            << " failed requests (their durations under error.type), to " << argv[2] << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--genai") {
    if (argc != 4 && argc != 5) {
      std::cerr << "usage: tokchron_otlp_dump --genai OUT_OTLP_JSON OUT_KNOWN_JSON "
                   "[OUT_OTLP_PROTOBUF]\n";
      return 2;
    }
    return genai(argc, argv);
  }
  if (argc != 3 && argc != 4) {
    std::cerr << "usage: tokchron_otlp_dump OUT_OTLP_JSON OUT_SAMPLES_JSON [OUT_OTLP_PROTOBUF]\n";
    return 2;
  }
#ifndef TOKCHRON_OTLP_PROTOBUF
  if (argc == 4) {
    std::cerr << "tokchron_otlp_dump: built without protobuf (tokchron::otlp_protobuf)\n";
    return 2;
  }
#endif
  // Scales on both of OpenTelemetry's mappings (exponent: scale <= 0; logarithm: scale > 0),
  // tokchron's default (6, 1 % accuracy) and a fine one; one histogram stays empty.
  const case_spec cases[] = {{"tokchron.test.scale_m3", -3, 0.0, false, 500},
                             {"tokchron.test.scale_0", 0, 0.0, true, 500},
                             {"tokchron.test.scale_3", 3, 1e-3, true, 2000},
                             {"tokchron.test.scale_6", 6, 0.0, false, 5000},
                             {"tokchron.test.scale_12", 12, 1e-6, true, 2000},
                             {"tokchron.test.empty", 4, 0.0, false, 0}};
  std::mt19937_64 rng(20261206);
  const std::uint64_t start_ns = 1764979200000000000ULL;  // 2025-12-06T00:00:00Z
  const std::uint64_t time_ns = start_ns + 60'000'000'123ULL;
  const tokchron::label_set resource = {{"service.name", "tokchron-otlp-dump"},
                                        {"service.instance.id", "replica-1"}};
  std::vector<tokchron::otlp_histogram> hs;
  nlohmann::ordered_json known;
  known["resource"] = nlohmann::ordered_json::object();
  for (const auto& a : resource) known["resource"][a.name] = a.value;
  known["scope"] = {{"name", "tokchron"}, {"version", TOKCHRON_VERSION_STRING}};
  known["startTimeUnixNano"] = std::to_string(start_ns);
  known["timeUnixNano"] = std::to_string(time_ns);
  known["aggregationTemporality"] = 2;
  known["metrics"] = nlohmann::ordered_json::array();
  for (const auto& c : cases) {
    const bool empty = c.n == 0;
    const std::vector<double> xs = empty ? std::vector<double>{} : samples_for(c, rng);
    auto h = tokchron::log_histogram::with_scale(c.scale, c.zero_threshold);
    for (const double x : xs)
      if (!h.add(x)) {
        std::cerr << "tokchron_otlp_dump: " << c.name << " rejected " << x << "\n";
        return 1;
      }
    tokchron::otlp_histogram o;
    o.name = c.name;
    o.description = std::string("Known samples at scale ") + std::to_string(c.scale) + ".";
    o.unit = "s";
    o.data = tokchron::exponential_histogram(h);
    o.attributes = {{"case", c.name}, {"model", "m\"1"}};
    nlohmann::ordered_json k;
    k["name"] = o.name;
    k["description"] = o.description;
    k["unit"] = o.unit;
    k["scale"] = c.scale;
    k["zeroThreshold"] = c.zero_threshold;
    k["attributes"] = nlohmann::ordered_json::object();
    for (const auto& a : o.attributes) k["attributes"][a.name] = a.value;
    k["samples"] = xs;  // shortest round-trip decimal: the same doubles on the reader's side
    known["metrics"].push_back(std::move(k));
    hs.push_back(std::move(o));
  }
  const auto req = tokchron::otlp_metrics(hs, resource, start_ns, time_ns);
  std::ofstream(argv[1]) << req.dump() << "\n";
  std::ofstream(argv[2]) << known.dump() << "\n";
#ifdef TOKCHRON_OTLP_PROTOBUF
  if (argc == 4) {
    std::ofstream(argv[3], std::ios::binary)
        << tokchron::otlp_metrics_protobuf(hs, resource, start_ns, time_ns);
    std::cout << "tokchron_otlp_dump: the same request as protobuf to " << argv[3] << "\n";
  }
#endif
  std::cout << "tokchron_otlp_dump: " << hs.size() << " histograms to " << argv[1] << "\n";
  return 0;
}
