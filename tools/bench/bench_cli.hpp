// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
#ifndef TOKCHRON_TOOLS_BENCH_BENCH_CLI_HPP
#define TOKCHRON_TOOLS_BENCH_BENCH_CLI_HPP

/// \file
/// tokchron-bench's command line (docs/tools/tokchron-bench.md lists the options). `main.cpp` only
/// calls `run_cli`.

#include <iosfwd>
#include <string>
#include <vector>

namespace tokchron_bench {

/// The exit code of a run whose report was written but some of whose requests failed (each
/// counted by kind on standard error, its reason in the trace).
inline constexpr int exit_failed_requests = 5;
/// The exit code of a run that stopped sending before its end (`load_result::gave_up`: no stream
/// received a byte for `--give-up` seconds while requests failed), its report written.
inline constexpr int exit_gave_up = 6;

/// Runs tokchron-bench on `argv[1..]`: parses the options, runs the load (each point of
/// `--sweep` in turn), writes the traces and prints tokchron-report's report of each. Returns
/// the exit code: tokchron-report's (0, 1, 3, 4), `exit_failed_requests` (5) where the report
/// would be 0 but requests failed, `exit_gave_up` (6) where the run stopped early, the worst of
/// a sweep's points (3, 4, 1, 6, 5 in that order),
/// 2 for a bad command line, 1 when the target cannot be reached at all. Never throws.
int run_cli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err,
            bool terminal = false);

}  // namespace tokchron_bench

#endif  // TOKCHRON_TOOLS_BENCH_BENCH_CLI_HPP
