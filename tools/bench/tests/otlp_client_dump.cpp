// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
// tokchron_bench_otlp_dump OUT_OTLP_JSON OUT_KNOWN_JSON: tokchron-bench's GenAI client metrics
// (otel_export.hpp, what --otlp writes) of a run against its scripted SSE server whose requests
// succeed, answer 500 and 503, stream an error object, end with finish_reason "abort" and are
// cut, written as OTLP/JSON; the known file holds, per metric and attribute set, the samples
// computed here from each request's timeline, each failed request's error.type as the script
// says it must be, and the attributes. CI stage 41 decodes both with OpenTelemetry's npm
// packages (tests/export/otlp_node/genai_check.js).
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client.hpp"
#include "otel_export.hpp"
#include "scripted_server.hpp"

namespace tb = tokchron_bench;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: tokchron_bench_otlp_dump OUT_OTLP_JSON OUT_KNOWN_JSON\n";
    return 2;
  }
  // Each request's behaviour in order of arrival, and the error.type its failure must carry
  // (docs/tools/tokchron-bench.md: the HTTP status, else the failure's kind).
  const std::vector<std::pair<std::string, std::string>> script = {{"ok", ""},
                                                                   {"ok", ""},
                                                                   {"http500", "500"},
                                                                   {"ok", ""},
                                                                   {"error", "server_error"},
                                                                   {"ok", ""},
                                                                   {"abort", "server_finish"},
                                                                   {"ok", ""},
                                                                   {"cut", "ended_early"},
                                                                   {"http503", "503"},
                                                                   {"ok", ""},
                                                                   {"ok", ""}};
  std::vector<std::string> models;
  for (const auto& s : script) models.push_back(s.first);
  tb::scripted_server srv({4ms, 2ms, 2, models});
  tb::load_options o;
  o.tgt = tb::parse_target("http://127.0.0.1:" + std::to_string(srv.port()), "chat", "llama-3-8b");
  o.work.mode = tokchron_loadgen::arrival_mode::closed;
  o.work.users = 1;
  o.work.max_requests = script.size();
  o.work.duration_s = 60;
  o.work.prompt =
      tokchron_loadgen::distribution::fixed(9, tokchron_loadgen::quantity::prompt_length);
  o.work.output =
      tokchron_loadgen::distribution::fixed(7, tokchron_loadgen::quantity::output_length);
  const tb::load_result r = tb::run_load(o);
  if (r.requests.size() != script.size()) {
    std::cerr << "tokchron_bench_otlp_dump: " << r.requests.size() << " requests, not "
              << script.size() << "\n";
    return 1;
  }
  tb::genai_client_target t{"chat",      "openai",   "llama-3-8b",
                            "127.0.0.1", srv.port(), tokchron::otel_genai_semconv::latest};
  tb::genai_client_metrics m(t);
  const char* const names[] = {"gen_ai.client.operation.duration", "gen_ai.client.token.usage",
                               "gen_ai.client.operation.time_to_first_chunk",
                               "gen_ai.client.operation.time_per_output_chunk"};
  nlohmann::ordered_json samples;
  for (const char* n : names) samples[n] = nlohmann::ordered_json::object();
  auto add = [&](const char* metric, const std::string& key, double v) {
    auto& by = samples[metric];
    if (!by.contains(key)) by[key] = nlohmann::ordered_json::array();
    by[key].push_back(v);
  };
  auto seconds = [](tb::clock::duration d) { return std::chrono::duration<double>(d).count(); };
  int failed = 0;
  for (std::size_t i = 0; i < r.requests.size(); ++i) {
    const tb::request_outcome& q = r.requests[i];
    m.add(q);
    const std::string& error = script[i].second;
    if (error.empty() != q.error.empty()) {
      std::cerr << "tokchron_bench_otlp_dump: request " << i << " (" << script[i].first
                << ") failed: '" << q.error << "', expected " << (error.empty() ? "not" : "so")
                << "\n";
      return 1;
    }
    const auto& tl = q.tl;
    add(names[0], error, seconds(*tl.finish_time() - *tl.send_time()));
    bool first = true;
    tb::clock::time_point previous{};
    for (const auto& c : tl.store().chunks()) {
      if (c.kind == tokchron::chunk_kind::done) continue;
      add(first ? names[2] : names[3], "", seconds(c.time - (first ? *tl.send_time() : previous)));
      first = false;
      previous = c.time;
    }
    if (!error.empty()) {
      ++failed;
      continue;
    }
    add(names[1], "input", static_cast<double>(*tl.prompt_tokens()));
    add(names[1], "output", static_cast<double>(*tl.reported_output_tokens()));
  }
  const auto now =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  std::ofstream(argv[1]) << m.otlp_json(now - 1'000'000'000ULL, now);
  nlohmann::ordered_json known;
  known["kind"] = "client";
  known["failed"] = failed;
  known["samples"] = samples;
  known["attributes"] = {{"gen_ai.operation.name", "chat"},
                         {"gen_ai.provider.name", "openai"},
                         {"gen_ai.request.model", "llama-3-8b"},
                         {"server.address", "127.0.0.1"},
                         {"server.port", srv.port()}};
  std::ofstream(argv[2]) << known.dump() << "\n";
  std::cout << "tokchron_bench_otlp_dump: " << r.requests.size() << " requests (" << failed
            << " failed) against the scripted server, to " << argv[1] << "\n";
  return 0;
}
