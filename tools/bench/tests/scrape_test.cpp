// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
// --scrape's parser of Prometheus text and its difference of two reads (tools/bench/scrape.hpp).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

#include "scrape.hpp"

using namespace tokchron_bench;

namespace {

std::string error_of(const std::string& text) {
  try {
    (void)parse_exposition(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

const char* const before_text =
    "# HELP vllm:request_success_total Count of successfully processed requests.\n"
    "# TYPE vllm:request_success_total counter\n"
    "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"m\"} 10.0\n"
    "vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"m\"} 5.0\n"
    "# TYPE vllm:prompt_tokens_total counter\n"
    "vllm:prompt_tokens_total{model_name=\"m\"} 1000\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{model_name=\"m\"} 3\n"
    "# TYPE vllm:time_to_first_token_seconds histogram\n"
    "vllm:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"m\"} 4\n"
    "vllm:time_to_first_token_seconds_bucket{le=\"0.5\",model_name=\"m\"} 10\n"
    "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 15\n"
    "vllm:time_to_first_token_seconds_sum{model_name=\"m\"} 3.5\n"
    "vllm:time_to_first_token_seconds_count{model_name=\"m\"} 15\n";

const char* const after_text =
    "# TYPE vllm:request_success_total counter\n"
    "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"m\"} 30.0\n"
    "vllm:request_success_total{model_name=\"m\",engine=\"0\",finished_reason=\"length\"} 5.0\n"
    "vllm:request_success_total{engine=\"0\",finished_reason=\"abort\",model_name=\"m\"} 2\n"
    "# TYPE vllm:prompt_tokens_total counter\n"
    "vllm:prompt_tokens_total{model_name=\"m\"} 400 1700000000000\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{model_name=\"m\"} 0\n"
    "# TYPE vllm:time_to_first_token_seconds histogram\n"
    "vllm:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"m\"} 4\n"
    "vllm:time_to_first_token_seconds_bucket{le=\"0.5\",model_name=\"m\"} 20\n"
    "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 35\n"
    "vllm:time_to_first_token_seconds_sum{model_name=\"m\"} 13.5\n"
    "vllm:time_to_first_token_seconds_count{model_name=\"m\"} 35\n";

}  // namespace

TEST_CASE("parse_exposition reads names, sorted labels, escapes, special values") {
  const exposition e = parse_exposition(
      "# TYPE a_total counter\n"
      "a_total{z=\"1\",b=\"q\\\"x\\\\y\\nz\",} 2.5e3 123\r\n"
      "b NaN\n"
      "c{} +Inf # {trace_id=\"x\"} 1\n"
      "d -Inf\n"
      "# EOF\n"
      "this is not read\n");
  REQUIRE(e.samples.size() == 4);
  const auto& a = e.samples.begin()->second;
  CHECK(a.name == "a_total");
  REQUIRE(a.labels.size() == 2);
  CHECK(a.labels[0].first == "b");
  CHECK(a.labels[0].second == "q\"x\\y\nz");
  CHECK(a.value == 2500);
  CHECK(std::isnan(e.samples.at("b").value));
  CHECK(e.samples.at("c").value == HUGE_VAL);
  CHECK(e.samples.at("d").value == -HUGE_VAL);
  CHECK(e.types.at("a_total") == "counter");
}

TEST_CASE("malformed expositions name the line and the field") {
  CHECK(error_of("a 1\nb{x=\"1\" 2\n") == "line 2: labels of b: expected ',' or '}'");
  CHECK(error_of("a 1\n\nb{x=1} 2\n") == "line 3: label x of b: expected a quoted value");
  CHECK(error_of("b{x=\"1} 2\n") == "line 1: label x of b: unterminated value");
  CHECK(error_of("b{x=\"\\t\"} 2\n") == "line 1: label x of b: unknown escape '\\t'");
  CHECK(error_of("b{x=\"1\",x=\"2\"} 2\n") == "line 1: label x of b: given twice");
  CHECK(error_of("a 0x10\n") == "line 1: value of a: '0x10' is not a number");
  CHECK(error_of("a inf\n") == "line 1: value of a: 'inf' is not a number");
  CHECK(error_of("a\n") == "line 1: value of a: missing");
  CHECK(error_of("a 1 2 3\n") == "line 1: sample of a: unexpected '3'");
  CHECK(error_of("a 1 x\n") == "line 1: timestamp of a: 'x' is not a number");
  CHECK(error_of("9a 1\n") == "line 1: metric name: expected a name, found '9a 1'");
  CHECK(error_of("a{b=\"1\"} 1\na{b=\"1\"} 2\n") == "line 2: series a{b=\"1\"}: given twice");
  CHECK(error_of("# TYPE a countr\n") == "line 1: TYPE of a: unknown type 'countr'");
  CHECK(error_of("# TYPE a gauge\n# TYPE a gauge\n") == "line 2: TYPE of a: given twice");
  CHECK(error_of("a{b:c=\"1\"} 1\n") == "line 1: label b of a: expected '='");
}

TEST_CASE("difference: counter increases, resets, new series, gauges, interval histograms") {
  const scrape_change c = difference(parse_exposition(before_text), parse_exposition(after_text));
  REQUIRE(c.counters.size() == 4);
  double finished = 0;
  for (const auto& cc : c.counters) {
    if (cc.series.rfind("vllm:request_success_total", 0) == 0) finished += cc.increase;
    if (cc.series.find("abort") != std::string::npos) {
      CHECK(cc.before == 0);  // a series that appeared during the run counts from 0
      CHECK(cc.increase == 2);
    }
    if (cc.series.rfind("vllm:prompt_tokens_total", 0) == 0) {
      CHECK(cc.reset);  // 1000 -> 400: the server restarted; PromQL's increase takes 400
      CHECK(cc.increase == 400);
    }
  }
  CHECK(finished == 22);
  REQUIRE(c.gauges.size() == 1);
  CHECK(c.gauges[0].second.first == 3);
  CHECK(c.gauges[0].second.second == 0);
  REQUIRE(c.histograms.size() == 1);
  const histogram_change& h = c.histograms[0];
  CHECK(h.family == "vllm:time_to_first_token_seconds");
  CHECK(h.series == "vllm:time_to_first_token_seconds{model_name=\"m\"}");
  CHECK(h.count == 20);
  CHECK(h.sum == 10);
  CHECK(h.bounds == std::vector<double>{0.1, 0.5});
  CHECK(h.cumulative == std::vector<double>{0, 10});
  REQUIRE(h.quantiles.size() == 3);
  // Rank 10 of 20 falls in (0.1, 0.5], which holds 10: its top.
  CHECK(h.quantiles[0].value == doctest::Approx(0.5));
  CHECK(h.quantiles[0].lower == 0.1);
  CHECK(h.quantiles[0].upper == 0.5);
  // Rank 18 is in the +Inf bucket: PromQL answers the highest finite bound; the bucket is open.
  CHECK(*h.quantiles[1].value == 0.5);
  CHECK(h.quantiles[1].lower == 0.5);
  CHECK(std::isinf(h.quantiles[1].upper));
}

TEST_CASE("the recognised quantities sum their series; the JSON carries every series") {
  const scrape_change c = difference(parse_exposition(before_text), parse_exposition(after_text));
  const nlohmann::json j = change_json("http://x/metrics", c);
  CHECK(j["recognised"]["requests"]["increase"] == 22);
  CHECK(j["recognised"]["requests"]["family"] == "vllm:request_success");
  CHECK(j["recognised"]["prompt_tokens"]["increase"] == 400);
  CHECK(j["recognised"]["ttft"]["count"] == 20);
  CHECK(j["histograms"]["vllm:time_to_first_token_seconds{model_name=\"m\"}"]["quantiles"][1]
         ["upper"] == "+Inf");
  CHECK(j["counters"].size() == 4);
  client_counts cl;
  cl.requests = 22;
  cl.ok = 20;
  cl.ttft_s = {0.2, 0.3};
  std::ostringstream out;
  print_change(out, "http://x/metrics", c, cl);
  CHECK(out.str().find("requests finished     22 (vllm:request_success)") != std::string::npos);
  CHECK(out.str().find("22 (20 ok)") != std::string::npos);
  CHECK(out.str().find("TTFT P50              500.00 ms in (100.00 ms, 500.00 ms]") !=
        std::string::npos);
  CHECK(out.str().find("1 counters were reset") != std::string::npos);
}

TEST_CASE("tokchron's own names are recognised") {
  const scrape_change c =
      difference(parse_exposition(""), parse_exposition("# TYPE tokchron_requests counter\n"
                                                        "tokchron_requests_total 7\n"
                                                        "# TYPE tokchron_output_tokens counter\n"
                                                        "tokchron_output_tokens_total 70\n"));
  const nlohmann::json j = change_json("u", c);
  CHECK(j["recognised"]["requests"]["increase"] == 7);
  CHECK(j["recognised"]["output_tokens"]["increase"] == 70);
}

TEST_CASE("parse_scrape_url: the path defaults to /metrics") {
  const scrape_target t = parse_scrape_url("http://127.0.0.1:9000");
  CHECK(t.host == "127.0.0.1");
  CHECK(t.port == "9000");
  CHECK(t.path == "/metrics");
  CHECK(parse_scrape_url("http://h:1/prom/metrics").path == "/prom/metrics");
  CHECK_THROWS_AS((void)parse_scrape_url("https://h/metrics"), std::invalid_argument);
}
