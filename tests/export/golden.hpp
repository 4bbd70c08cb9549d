// SPDX-License-Identifier: MIT
// Helpers for the exporter tests. Golden-file comparison: the file under tests/data/golden/export/
// must equal the produced text byte for byte. TOKCHRON_UPDATE_GOLDEN=1 rewrites the files instead
// (review the diff before committing it).
#ifndef TOKCHRON_TESTS_EXPORT_GOLDEN_HPP
#define TOKCHRON_TESTS_EXPORT_GOLDEN_HPP

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "tokchron/testing.hpp"

namespace tokchron_test {
// The example timeline of docs/library/definitions.md's table (tests/definitions_doc_test.cpp):
// ttft 0.120, e2e 0.180, N = 5, per-token ITL 0.010 x3 + 0.020; plus 7 prompt tokens.
inline tokchron::testing::scripted_timeline readme_timeline() {
  using namespace std::chrono_literals;
  return tokchron::testing::script()
      .arrive(0ms)
      .send(2ms)
      .queued(5ms)
      .scheduled(40ms)
      .chunk(100ms, 0, tokchron::chunk_kind::empty)
      .chunk(120ms, 1)
      .chunk(150ms, 3)
      .chunk(170ms, 1)
      .chunk(180ms, 0, tokchron::chunk_kind::usage)
      .prompt_tokens(7)
      .finish(180ms)
      .timeline();
}

inline std::string golden_path(const std::string& name) {
  return std::string(TOKCHRON_SOURCE_DIR) + "/tests/data/golden/export/" + name;
}
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
inline void check_golden(const std::string& name, const std::string& produced) {
  const std::string path = golden_path(name);
  const char* update = std::getenv("TOKCHRON_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << produced;
    MESSAGE("rewrote " << path);
    return;
  }
  const std::string expected = read_file(path);
  REQUIRE_MESSAGE(!expected.empty(), "missing golden file " << path);
  CHECK_MESSAGE(produced == expected, "output differs from " << path << ":\n" << produced);
}
}  // namespace tokchron_test

#endif  // TOKCHRON_TESTS_EXPORT_GOLDEN_HPP
