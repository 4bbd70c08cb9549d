// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_REPORT_OPTIONS_HPP
#define TOKCHRON_TOOLS_REPORT_OPTIONS_HPP

/// \file
/// tokchron-report's command line: the exit codes, the errors, the option table and the parsed
/// arguments. Every option names the commands it applies to; an option given to a command it
/// does not apply to, a second value of an option that takes one, and an option that needs
/// another one missing are refused (usage_error, exit 2), never dropped.

#include <cstddef>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tokchron/metrics/builtin_profiles.hpp"
#include "tokchron/metrics/inclusion.hpp"
#include "tokchron/metrics/run_summary.hpp"

namespace tokchron_report {

namespace tc = tokchron;

/// The tool's exit codes (`--help` prints this table). When several apply, the first of 3, 4,
/// 1 wins (an objective that failed is reported over skipped lines).
enum exit_code : int {
  exit_ok = 0,                ///< every input line was read and the report was written
  exit_skipped_lines = 1,     ///< the report was written, but malformed lines were skipped
  exit_unreadable_files = 1,  ///< the report was written, but some input files could not be read
  exit_input = 1,          ///< an input could not be read or held no valid request (no report), or
                           ///< the --plot pictures could not be written (after the report)
  exit_usage = 2,          ///< bad command line (unknown option, bad value, no input)
  exit_slo_fail = 3,       ///< an objective (--slo) failed, or an audit found inconsistencies
  exit_slo_undecided = 4,  ///< no objective failed, but one could not be decided
};

/// The exit-code table as `--help` prints it.
[[nodiscard]] std::string exit_code_table();

/// An error in the command line: printed with the usage and exit code 2.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// An input that cannot be used at all: exit code 1.
struct input_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A long option: `--name VALUE` (or `--name=VALUE`) when `takes_value`, else a flag.
struct option_spec {
  std::string name;
  bool takes_value;
  std::string value_name;
  std::string help;
  std::vector<std::string> commands;  ///< the commands it applies to
  bool repeatable = false;            ///< may be given more than once (each value counts)
};

/// Every option, in `--help` order.
[[nodiscard]] const std::vector<option_spec>& options();

/// A parsed command line: the command, option values by name, and the files.
struct arguments {
  std::string command = "summary";
  std::map<std::string, std::vector<std::string>> values;
  std::vector<std::string> files;

  [[nodiscard]] bool has(const std::string& name) const { return values.count(name) > 0; }
  /// The value given for `name` (an option that is not repeatable has at most one), or empty.
  [[nodiscard]] std::optional<std::string> get(const std::string& name) const {
    const auto it = values.find(name);
    if (it == values.end() || it->second.empty()) return std::nullopt;
    return it->second.back();
  }
};

/// Parses `argv[1..argc)`: the first argument selects a command when it names one (else
/// `summary`). Throws usage_error for an unknown option, a missing value, a value given to a
/// flag, an option the command does not take, and a second value of an option that is not
/// repeatable.
[[nodiscard]] arguments parse_arguments(const std::vector<std::string>& argv);

/// The usage text: commands, options (with the commands each applies to), profiles and the
/// exit codes.
[[nodiscard]] std::string usage();

/// The profiles named by a --profile value: a name, a comma-separated list, or `all`.
/// Throws usage_error naming an unknown profile, or one named twice.
[[nodiscard]] std::vector<const tc::profile*> select_profiles(const std::string& spec);

/// The percentiles of a --percentiles value. Each must be in [0, 100], and each gets its own
/// report key (`p50`, `p99.9`): `-0` is read as 0, a percentile named twice is refused, and so
/// is one that needs more than 17 decimals to be named exactly (`1e-300` would print as `p0`).
/// Throws usage_error naming the item.
[[nodiscard]] std::vector<double> parse_report_percentiles(const std::string& spec);

/// The default longest line accepted in a trace (16 MiB; --max-line-bytes).
inline constexpr std::size_t default_max_line_bytes = std::size_t{16} << 20;

/// What the summary command computes, from the parsed options.
struct report_settings {
  std::vector<const tc::profile*> profiles{&tc::profiles::canonical};
  std::vector<double> percentiles{50, 90, 95, 99};
  /// --inclusion: the population of every profile's statistics; empty: `inclusion_for`'s
  /// default.
  std::optional<tc::inclusion_policy> inclusion;
  std::optional<unsigned> gpus;
  std::optional<double> duration;
  std::string format = "table";
  bool keep_requests = false;  ///< keep each request's values (goodput needs them)
  /// Threads: one reads while another evaluates, and the distributions are shared out (1: one).
  unsigned threads = default_threads();
  std::size_t max_line_bytes = default_max_line_bytes;  ///< longer trace lines stop the read
  std::string input = "auto";                           ///< auto, trace or vllm

  [[nodiscard]] static unsigned default_threads();

  /// The population of profile `p`'s statistics: --inclusion when given; else `scheduled` for
  /// the canonical profile (what a server's live metrics count by default,
  /// `live_options::inclusion`), and for a tool's profile empty: the requests its tool counts
  /// as completed, so that its numbers stay the tool's.
  [[nodiscard]] std::optional<tc::inclusion_policy> inclusion_for(const tc::profile& p) const {
    if (inclusion) return inclusion;
    if (&p == &tc::profiles::canonical) return tc::inclusion_policy::scheduled;
    return std::nullopt;
  }
};

/// Reads the summary options out of `args`. Throws usage_error.
[[nodiscard]] report_settings settings_from(const arguments& args);

/// `text` as a decimal integer in [lo, hi], or empty.
[[nodiscard]] std::optional<long long> integer_in(const std::string& text, long long lo,
                                                  long long hi);

}  // namespace tokchron_report

#endif  // TOKCHRON_TOOLS_REPORT_OPTIONS_HPP
