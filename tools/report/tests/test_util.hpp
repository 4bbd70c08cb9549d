// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_REPORT_TESTS_TEST_UTIL_HPP
#define TOKCHRON_TOOLS_REPORT_TESTS_TEST_UTIL_HPP

/// \file
/// What the tests of tools/report/tests share: a fresh directory under the build tree, files of
/// lines, and the tool run in-process with its output captured.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "report/report.hpp"

namespace trace_report_test {

/// An empty directory `name` under the test binary's build directory.
inline std::string tmp_dir(const std::string& name) {
  const auto d = std::filesystem::path(TOKCHRON_BINARY_DIR) / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

/// Writes `lines` to `path`, one a line.
inline void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream f(path);
  for (const auto& l : lines) f << l << '\n';
}

/// What one run of the tool gave.
struct ran {
  int rc;
  std::string out, err;
};
/// Runs tokchron-report on `args` in this process.
inline ran report(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int rc = tokchron_report::run(args, out, err);
  return {rc, out.str(), err.str()};
}

}  // namespace trace_report_test

#endif  // TOKCHRON_TOOLS_REPORT_TESTS_TEST_UTIL_HPP
