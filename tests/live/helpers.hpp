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
#include "tokchron/live/recorder.hpp"

namespace live_test {

using clock = tokchron::manual_clock;
using time_point = clock::time_point;
// The live metrics and the per-request recorder on the manual clock, as the tests use them.
using metrics = tokchron::basic_live_metrics<clock>;
using request = tokchron::basic_live_request<clock>;

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

// The scripted run of the golden expositions (tests/live/vllm_text_test.cpp,
// presets_test.cpp), on series `s0` and `s1`:
//   a (s0): 12-token prompt, max_tokens 256, scheduled at 3 ms, steps of 1, 2, 2 tokens, stop;
//   b (s0): 100-token prompt, max_tokens 3, queued at 11, scheduled at 20, first token at 90,
//           preempted, rescheduled, 2 tokens at 430, length;
//   c (s1): a one-token answer (7-token prompt), scheduled at 6, token at 30, stop;
//   d (s1): 2000-token prompt, two 1-token steps (700, 750), the client goes away at 760;
//   e (s1): rejected at once (queue full); f (s0): arrived at 900, still waiting at the end.
template <class Metrics>
void scripted_run(Metrics& m, tokchron::live_series s0, tokchron::live_series s1) {
  using tokchron::finish_reason;
  using tokchron::record_status;
  tokchron::basic_live_request<clock> a, b, c, d, e, f;
  auto ok = [](record_status st) { REQUIRE(st == record_status::ok); };
  ok(m.arrive(a, ms(0), {s0, 12, 256}));
  ok(m.scheduled(a, ms(3)));
  ok(m.chunk(a, ms(40), 1));
  ok(m.chunk(a, ms(60), 2));
  ok(m.chunk(a, ms(85), 2));
  ok(m.finish(a, ms(85), finish_reason::stop));
  ok(m.arrive(b, ms(10), {s0, 100, 3}));
  ok(m.queued(b, ms(11)));
  ok(m.scheduled(b, ms(20)));
  ok(m.chunk(b, ms(90), 1));
  ok(m.preempted(b, ms(95)));
  ok(m.scheduled(b, ms(400)));
  ok(m.chunk(b, ms(430), 2));
  ok(m.finish(b, ms(430), finish_reason::length));
  ok(m.arrive(c, ms(5), {s1, 7, 0}));
  ok(m.scheduled(c, ms(6)));
  ok(m.chunk(c, ms(30), 1));
  ok(m.finish(c, ms(30), finish_reason::stop));
  ok(m.arrive(d, ms(5), {s1, 2000, 0}));
  ok(m.scheduled(d, ms(7)));
  ok(m.chunk(d, ms(700), 1));
  ok(m.chunk(d, ms(750), 1));
  ok(m.abort(d, ms(760)));
  ok(m.arrive(e, ms(8), {s1, 50, 0}));
  ok(m.reject(e, ms(8)));
  ok(m.arrive(f, ms(900), {s0, 5, 0}));
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
