// SPDX-License-Identifier: MIT
// The definitions table of docs/library/definitions.md is checked against what the code computes.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "export/golden.hpp"
#include "tokchron/io/trace.hpp"
#include "tokchron/metrics/builtin_profiles.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/testing.hpp"

namespace {
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream is(s);
  while (std::getline(is, cur, sep)) out.push_back(cur);
  return out;
}
std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" `");
  const auto e = s.find_last_not_of(" `");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}
/// The cells of the rows of docs/library/definitions.md's table between `<!-- NAME:begin -->` and
/// `<!-- NAME:end -->` (rows starting with a code name).
std::vector<std::vector<std::string>> table_rows(const std::string& name) {
  std::ifstream in(std::string(TOKCHRON_SOURCE_DIR) + "/docs/library/definitions.md");
  REQUIRE(in.good());
  std::vector<std::vector<std::string>> rows;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.find(name + ":begin") != std::string::npos)
      inside = true;
    else if (line.find(name + ":end") != std::string::npos)
      inside = false;
    else if (inside && line.rfind("| `", 0) == 0)
      rows.push_back(split(line, '|'));
  }
  return rows;
}
/// The example column of table `name` (metric -> its last cell).
std::map<std::string, std::string> example_column(const std::string& name) {
  std::map<std::string, std::string> examples;
  for (const auto& cols : table_rows(name)) {
    REQUIRE(cols.size() >= 6);  // "", metric, formula, unit, edge, example
    examples[trim(cols[1])] = trim(cols[cols.size() - 1]);
  }
  return examples;
}
/// Every row of table `name` prints what the code computed, and every computed metric has a row.
void check_examples(const std::string& table,
                    const std::map<std::string, std::vector<double>>& computed) {
  std::map<std::string, std::string> examples = example_column(table);
  CHECK(examples.size() == computed.size());
  for (const auto& entry : computed) {
    const std::string& name = entry.first;
    const std::vector<double>& values = entry.second;
    CAPTURE(name);
    REQUIRE(examples.count(name) == 1);
    const auto text = split(examples[name], ',');
    REQUIRE(text.size() == values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      // The table prints at most 12 significant digits.
      CHECK(std::stod(text[i]) == doctest::Approx(values[i]).epsilon(1e-10));
    }
  }
}
}  // namespace

TEST_CASE("docs/library/definitions.md: the definitions table matches the code") {
  // The table's timeline, shared with the exporters' golden tests (its 7 prompt tokens change
  // none of the metrics below).
  const auto tl = tokchron_test::readme_timeline();
  const auto m = tokchron::canonical_metrics(tl);
  std::vector<double> per_token, per_chunk;
  tokchron::for_each_itl_per_token(tl,
                                   [&](auto g) { per_token.push_back(tokchron::to_seconds(g)); });
  tokchron::for_each_itl_per_chunk(tl,
                                   [&](auto g) { per_chunk.push_back(tokchron::to_seconds(g)); });

  const std::map<std::string, std::vector<double>> computed = {
      {"ttft", {*m.ttft}},
      {"ttft_from_send", {*m.ttft_from_send}},
      {"ttft_from_scheduled", {*m.ttft_from_scheduled}},
      {"e2e", {*m.e2e}},
      {"queue_time", {*m.queue_time}},
      {"prefill_time", {*m.prefill_time}},
      {"decode_time", {*m.decode_time}},
      {"tpot", {*m.tpot}},
      {"normalized_latency", {*m.normalized_latency}},
      {"output_rate", {*m.output_rate}},
      {"itl_per_token", per_token},
      {"itl_per_chunk", per_chunk},
  };
  check_examples("definitions-table", computed);
}

TEST_CASE("docs/library/definitions.md: the profiles table lists every built-in profile, once") {
  std::vector<std::string> rows;
  for (const auto& cols : table_rows("profiles-table")) rows.push_back(trim(cols[1]));
  std::vector<std::string> names;
  for (const tokchron::profile* p : tokchron::all_profiles()) names.emplace_back(p->name);
  CHECK(rows == names);  // the same profiles, in all_profiles() order
}

TEST_CASE("docs/library/definitions.md: the reasoning table matches the code") {
  // The table's request, as a trace record.
  using K = tokchron::chunk_kind;
  tokchron::trace_record r;
  r.send = 0;
  r.chunks = {{0.05, 0, K::empty},     {0.20, 1, K::reasoning}, {0.25, 2, K::reasoning},
              {0.30, 1, K::reasoning}, {0.50, 1, K::text},      {0.55, 3, K::text}};
  r.end = 0.58;
  r.prompt_tokens = 100;
  r.cached_prompt_tokens = 40;
  r.spec_draft_tokens = 20;
  r.spec_accepted_tokens = 15;
  const auto tl = tokchron::to_timeline(r);
  const auto m = tokchron::canonical_metrics(tl);
  std::vector<double> icl;
  tokchron::for_each_itl_per_chunk(tl, [&](auto g) { icl.push_back(tokchron::to_seconds(g)); });
  const std::map<std::string, std::vector<double>> computed = {
      {"ttfa", {*m.ttfa}},
      {"reasoning_time", {*m.reasoning_time}},
      {"ttst", {*m.ttst}},
      {"icl", icl},
      {"prefill_tps", {*m.prefill_tps}},
      {"uncached_prefill_tps", {*m.uncached_prefill_tps}},
      {"spec_acceptance", {*m.spec_acceptance}},
  };
  check_examples("reasoning-table", computed);
}
