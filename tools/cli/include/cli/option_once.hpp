// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_CLI_OPTION_ONCE_HPP
#define TOKCHRON_TOOLS_CLI_OPTION_ONCE_HPP

/// \file
/// The one rule of every tool's command line (tokchron-report, batching-executor and its serve,
/// calibrate and published commands, tokchron-bench) for an option given twice: a single-valued
/// option given a second time is refused, naming it and both values (a later value never
/// silently replaces the first); a list-valued option (`--slo`, `--sim KEY=V`, `--compute
/// KEY=V`, `--sweep NAME=...`) adds to its list, and a keyed one (`--sim`, `--compute`,
/// `--sweep`) refuses the same key twice. Each parser calls `note` once per option it reads.

#include <map>
#include <optional>
#include <string>

namespace tokchron_cli {

class option_once {
 public:
  /// Records `--name value` (`name` as the user should read it, e.g. "format" or "sweep rate").
  /// Empty the first time; the second time, the message to refuse it with.
  [[nodiscard]] std::optional<std::string> note(const std::string& name, const std::string& value) {
    const auto [it, first] = seen_.emplace(name, value);
    if (first) return std::nullopt;
    return "--" + name + " is given twice ('" + it->second + "', then '" + value + "'); give it " +
           "once";
  }

  /// Whether `name` was noted.
  [[nodiscard]] bool seen(const std::string& name) const { return seen_.count(name) != 0; }

 private:
  std::map<std::string, std::string> seen_;
};

}  // namespace tokchron_cli

#endif  // TOKCHRON_TOOLS_CLI_OPTION_ONCE_HPP
