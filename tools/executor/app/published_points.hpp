// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_APP_PUBLISHED_POINTS_HPP
#define TOKCHRON_TOOLS_EXECUTOR_APP_PUBLISHED_POINTS_HPP

/// \file
/// Published measurements the sim backend is held to (tests/data/published_points.txt): each a
/// metric, its published value, its source and the `batching-executor` options that simulate it.
/// `batching-executor published FILE [--fit] [--sim K=V]...` prints sim / published for every
/// point and the RMS of the log ratios, and with `--fit` fits the model's free constants to them
/// (docs/tools/executor.md, "Fitting the defaults").

#include <istream>
#include <string>
#include <utility>
#include <vector>

namespace batching {

/// One published point.
struct published_point {
  std::string id, metric, source;
  double value = 0;
  std::vector<std::string> args;  ///< batching-executor run options
};

/// Reads the points (one a line, "id | metric | value | source | options"; '#' comments).
/// Throws `std::invalid_argument` naming the line and field of a malformed one.
[[nodiscard]] std::vector<published_point> read_published_points(std::istream& in,
                                                                 const std::string& name);

/// Simulates `p` with the constants `sim` (`--sim` KEY=VALUE pairs) applied after the point's own
/// options, and returns the metric (seconds, or output tokens/s). Throws on a bad point.
[[nodiscard]] double simulate_point(const published_point& p,
                                    const std::vector<std::pair<std::string, double>>& sim);

/// `batching-executor published ...` (arguments after the word); returns the exit code.
int published_main(const std::vector<std::string>& args);

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_APP_PUBLISHED_POINTS_HPP
