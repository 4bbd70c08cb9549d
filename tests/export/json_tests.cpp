// SPDX-License-Identifier: MIT
// JSON of summaries, verdicts and audits (export/json.hpp, an nlohmann-json adaptor): the one
// schema tokchron-report and batching-executor write.
#include <doctest/doctest.h>

#include <cmath>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "export/golden.hpp"
#include "tokchron/export/json.hpp"
#include "tokchron/metrics/builtin_profiles.hpp"
#include "tokchron/sla/evaluator.hpp"

namespace {
/// The words of `text`, split at spaces.
std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}
std::vector<std::string> keys(const nlohmann::ordered_json& j) {
  std::vector<std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) out.push_back(it.key());
  return out;
}
}  // namespace

TEST_CASE("json: a summary of the docs/library/definitions.md timeline, key for key (golden)") {
  const std::vector<tokchron::testing::scripted_timeline> tls{tokchron_test::readme_timeline()};
  tokchron::summary_options o;
  o.percentiles = {50, 99.9};
  o.gpus = 2;
  auto s = tokchron::summarize(tls.begin(), tls.end(), tokchron::profiles::canonical, o);
  s.extra.emplace_back("goodput", 0.5);
  s.extra.emplace_back("attainment", std::nullopt);
  const auto j = tokchron::summary_json(s);
  CHECK(keys(j) == words("profile completed failed requests_by_reason inclusion duration "
                         "request_throughput output_throughput "
                         "total_token_throughput metrics requests input_tokens output_tokens "
                         "mean_concurrency time_weighted_concurrency peak_concurrency gpus "
                         "request_throughput_per_gpu output_throughput_per_gpu "
                         "total_token_throughput_per_gpu lengths goodput attainment"));
  // The hand-checked values of the docs/library/definitions.md timeline: TTFT 0.120 s, E2E 0.180 s,
  // 5 tokens.
  CHECK(j["metrics"]["ttft"]["p50"] == 0.12);
  CHECK(j["metrics"]["e2e"]["max"] == 0.18);
  CHECK(j["output_tokens"] == 5);
  CHECK(j["metrics"]["ttft"].contains("p99.9"));
  CHECK(!j["metrics"]["ttft"].contains("invalid"));  // only when a request was refused
  CHECK(j["attainment"].is_null());
  CHECK(keys(j["metrics"]["tpot"]) == words("count mean median std min max p50 p99.9"));
  tokchron_test::check_golden("summary.json", j.dump(2) + "\n");
}

TEST_CASE("json: undefined and infinite values are null; invalid counts appear when set") {
  tokchron::distribution d;
  d.count = 0;
  d.invalid = 3;
  d.percentiles.push_back({95, std::nullopt});
  const auto j = tokchron::distribution_json(d);
  CHECK(j["mean"].is_null());
  CHECK(j["p95"].is_null());
  CHECK(j["invalid"] == 3);
  CHECK(tokchron::detail::json_number(std::numeric_limits<double>::infinity()).is_null());
  CHECK(tokchron::detail::json_number(std::nan("")).is_null());
}

TEST_CASE("json: verdicts, the SLA and an audit (golden)") {
  tokchron::slo_distributions<> dist;
  for (const double v : {0.1, 0.2, 0.3, 0.4}) dist.add(tokchron::slo_metric::ttft, v);
  const auto verdicts =
      dist.evaluate(tokchron::sla::parse("max(ttft) < 500ms; p99(ttft) < 10s; max(ttft) < 200ms"));
  const auto s = tokchron::sla_json(verdicts);
  CHECK(keys(s) == std::vector<std::string>{"status", "verdicts"});
  CHECK(s["status"] == "fail");
  REQUIRE(s["verdicts"].size() == 3);
  const auto& first = s["verdicts"][0];
  CHECK(keys(first).size() >= 8);
  CHECK(keys(first)[0] == "objective");
  CHECK(first["status"] == "pass");
  CHECK(first["samples"] == 4);
  // p99 of 4 samples has no upper bound at 95 % (0.99^4 > 0.05): undecided, upper null.
  CHECK(s["verdicts"][1]["upper"].is_null());
  CHECK(s["verdicts"][1].contains("more_samples_needed"));

  tokchron::claims c;
  c.name = "closed loop";
  // As a claims file spells them.
  for (const auto& [key, value] : std::initializer_list<std::pair<const char*, double>>{
           {"concurrency", 2.706}, {"users", 4}, {"rps", 10}, {"mean_e2e_s", 0.25}})
    REQUIRE(c.set(key, value));
  const auto a = tokchron::audit_json(tokchron::audit(c));
  CHECK(keys(a) == std::vector<std::string>{"name", "consistent", "findings"});
  CHECK(a["name"] == "closed loop");
  REQUIRE(!a["findings"].empty());
  CHECK(keys(a["findings"][0]) == words("check consistent claimed implied factor allowed message"));
  tokchron_test::check_golden("verdicts_audit.json", s.dump(2) + "\n" + a.dump(2) + "\n");
}
