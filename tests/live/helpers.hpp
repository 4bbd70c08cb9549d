// SPDX-License-Identifier: MIT
// Helpers for the live-metrics tests: read a point of a scraped metrics_snapshot by family name
// and label values, and build a manual-clock time point from milliseconds.
#ifndef TOKCHRON_TESTS_LIVE_HELPERS_HPP
#define TOKCHRON_TESTS_LIVE_HELPERS_HPP

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokchron/clock.hpp"
#include "tokchron/exposition/snapshot_data.hpp"

namespace live_test {

using clock = tokchron::manual_clock;
using time_point = clock::time_point;

// The manual-clock time `ms` milliseconds after its epoch.
inline time_point ms(double ms) {
  return time_point(
      std::chrono::duration_cast<clock::duration>(std::chrono::duration<double, std::milli>(ms)));
}

inline const tokchron::metric_family* family(const tokchron::metrics_snapshot& s,
                                             std::string_view name) {
  for (const auto& f : s.families)
    if (f.name == name) return &f;
  return nullptr;
}

// The point of family `name` whose labels include every (name, value) of `want`; fails the
// test when there is none.
inline const tokchron::metric_point& point(
    const tokchron::metrics_snapshot& s, std::string_view name,
    const std::vector<std::pair<std::string, std::string>>& want = {}) {
  static const tokchron::metric_point none{};
  const tokchron::metric_family* f = family(s, name);
  REQUIRE_MESSAGE(f != nullptr, "no family " << std::string(name));
  for (const auto& p : f->points) {
    bool all = true;
    for (const auto& [k, v] : want) {
      bool found = false;
      for (const auto& l : p.labels) found = found || (l.name == k && l.value == v);
      all = all && found;
    }
    if (all) return p;
  }
  FAIL("no point of " << std::string(name) << " with the wanted labels");
  return none;
}

inline double value(const tokchron::metrics_snapshot& s, std::string_view name,
                    const std::vector<std::pair<std::string, std::string>>& want = {}) {
  return point(s, name, want).value;
}
inline const tokchron::histogram_data& hist(
    const tokchron::metrics_snapshot& s, std::string_view name,
    const std::vector<std::pair<std::string, std::string>>& want = {}) {
  return point(s, name, want).histogram;
}

// Compares `text` with tests/live/golden/<name> byte for byte (TOKCHRON_UPDATE_GOLDEN=1
// rewrites the file instead; review the diff).
inline void check_golden(const std::string& name, const std::string& text) {
  const std::string path = std::string(TOKCHRON_SOURCE_DIR) + "/tests/live/golden/" + name;
  const char* update = std::getenv("TOKCHRON_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << text;
    MESSAGE("rewrote " << path);
    return;
  }
  std::ifstream in(path, std::ios::binary);
  const std::string expected((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  REQUIRE_MESSAGE(!expected.empty(), "missing golden file " << path);
  CHECK_MESSAGE(text == expected, "output differs from " << path << ":\n" << text);
}

}  // namespace live_test

#endif  // TOKCHRON_TESTS_LIVE_HELPERS_HPP
