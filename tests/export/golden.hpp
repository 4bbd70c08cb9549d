// SPDX-License-Identifier: MIT
// Golden-file comparison for the exporter tests: the file under tests/data/golden/export/ must
// equal the produced text byte for byte. TOKCHRON_UPDATE_GOLDEN=1 rewrites the files instead
// (review the diff before committing it).
#ifndef TOKCHRON_TESTS_EXPORT_GOLDEN_HPP
#define TOKCHRON_TESTS_EXPORT_GOLDEN_HPP

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace tokchron_test {
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
