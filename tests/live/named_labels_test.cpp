// SPDX-License-Identifier: MIT
// series() by label name: any order, checked against the options' label names; the positional
// form alongside it.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tokchron/clock.hpp"
#include "tokchron/live/options.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/live/recorder.hpp"

namespace {
using metrics = tokchron::basic_live_metrics<tokchron::manual_clock>;

// The message std::invalid_argument carries for `f`, or "" when it does not throw.
template <class F>
std::string refusal(F&& f) {
  try {
    (void)f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("live: series by label name, in any order, is the positional series") {
  metrics m(tokchron::vllm_live_options("m", 100));  // labels model_name, engine
  const std::string engine = "1";
  const tokchron::live_series by_pos = m.series({"llama-3-8b", engine});
  const tokchron::live_series by_name =
      m.series({{"model_name", "llama-3-8b"}, {"engine", engine}});
  const tokchron::live_series swapped = m.series({{"engine", "1"}, {"model_name", "llama-3-8b"}});
  CHECK(by_name.index == by_pos.index);
  CHECK(swapped.index == by_pos.index);
  CHECK(m.label_values(by_name) == std::vector<std::string>{"llama-3-8b", "1"});
  CHECK(m.series({{"model_name", "other"}, {"engine", "0"}}).index != by_pos.index);
  CHECK(m.misuse() == 0);
}

TEST_CASE("bad input L2: live: series by name refuses a label set that is not the options'") {
  metrics m(tokchron::vllm_live_options("m", 100));
  const std::string unknown = refusal([&] { return m.series({{"model", "x"}, {"engine", "0"}}); });
  CHECK(unknown.find("unknown label 'model'") != std::string::npos);
  CHECK(unknown.find("model_name, engine") != std::string::npos);  // says what to use
  const std::string missing = refusal([&] { return m.series({{"model_name", "x"}}); });
  CHECK(missing.find("no value for label 'engine'") != std::string::npos);
  const std::string twice = refusal([&] { return m.series({{"engine", "0"}, {"engine", "1"}}); });
  CHECK(twice.find("label 'engine' given twice") != std::string::npos);
  CHECK(refusal([&] { return m.series({{"model_name", "x"}, {"engine", "0"}}); }).empty());
  CHECK(m.misuse() == 0);  // a setup-path refusal, not hot-path misuse
  // Nothing was interned by the refused calls: the next set gets the next index.
  CHECK(m.series({"y", "0"}).index == m.series({{"engine", "0"}, {"model_name", "y"}}).index);
}

TEST_CASE("live: the positional form beyond sixteen labels") {
  std::vector<std::string> names, values;
  for (int i = 0; i < 17; ++i) {
    names.push_back("l" + std::to_string(i));
    values.push_back(std::to_string(i));
  }
  metrics m(tokchron::tokchron_live_options(names, values));
  const auto s = m.series(
      {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "x"});
  CHECK(m.label_values(s).back() == "x");
  CHECK(m.misuse() == 0);
}
