// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_TOOLS_REPORT_COMMANDS_HPP
#define TOKCHRON_TOOLS_REPORT_COMMANDS_HPP

/// \file
/// tokchron-report's commands and its entry point. `main.cpp` only calls `run`.
///
/// Extending the tool: add an `option_spec` to `options()` (options.cpp) naming the commands
/// it applies to, and read it with `args.get(name)` in a command; add a subcommand by
/// appending a `command` to `commands()`. Exit codes are those of `exit_code`.

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "report/options.hpp"

namespace tokchron_report {

/// A subcommand: its name, a one-line description and what it runs.
struct command {
  std::string name;
  std::string help;
  std::function<int(const arguments&, std::ostream&, std::ostream&)> run;
};

/// The subcommands: `summary` (the default), `audit` and `join`.
[[nodiscard]] const std::vector<command>& commands();

/// The `summary` command: the run summary under each selected profile; with --slo each
/// profile's verdicts, with --goodput its goodput and attainment, with --plot DIR the pictures
/// (the objectives' thresholds and the goodput limits drawn). Every input is checked before
/// any is read: a missing file writes nothing (exit 1).
int run_summary_command(const arguments& args, std::ostream& out, std::ostream& err);

/// Runs the tool on `argv[1..]`, writing the report to `out` and diagnostics to `err`; returns
/// the exit code. Never throws.
int run(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err);

}  // namespace tokchron_report

#endif  // TOKCHRON_TOOLS_REPORT_COMMANDS_HPP
