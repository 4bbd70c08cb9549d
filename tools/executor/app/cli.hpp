// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_APP_CLI_HPP
#define TOKCHRON_TOOLS_EXECUTOR_APP_CLI_HPP

/// \file
/// The command line of `batching-executor`: every run option is a named setter on a
/// `run_config`, so `--max-batch-size 16` and `--sweep max_batch_size=8,16` go through the same
/// code; a sweep is the cartesian product of its `--sweep` lists, first list outermost.

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend.hpp"
#include "cli/option_once.hpp"
#include "loadgen.hpp"
#include "loadgen/options.hpp"
#include "scheduler.hpp"
#include "sim_backend.hpp"

namespace batching {

/// Everything one run needs.
struct run_config {
  std::string backend = "sim";
  sim_config sim;
  /// `--compute KEY=VALUE` settings of the real-compute backends (cpu, cuda), in order given.
  std::vector<std::pair<std::string, std::string>> compute;
  scheduler_config sched;
  workload load;
  /// Requests that arrive before this many seconds run (they load the system) but are left out
  /// of the summary, the verdicts and the trace: the start-up transient (every closed-loop user
  /// thinking, or all arriving at once) is not the steady state the audit's laws describe.
  double warmup_s = 0;
};

/// One run option: its name (as `--name` with dashes, or in `--sweep` with underscores), the
/// value it takes, and its help line.
using option_info = tokchron_loadgen::option_info;
/// Every run option, in help order.
[[nodiscard]] const std::vector<option_info>& run_options();
/// Sets option `name` (dashes or underscores) of `c` from `value`. Throws
/// `std::invalid_argument` naming the option and the bad value.
void set_option(run_config& c, std::string_view name, std::string_view value);

/// The rule for an option given twice (cli/option_once.hpp), for every parser of the
/// executor's options (the run, serve, calibrate, published, tokchron-bench): a single-valued
/// option's second value gives the message to refuse it with; `--slo` and `--sweep` are lists;
/// `--sim KEY=V` and `--compute KEY=V` are lists that take each KEY once. `name` in either
/// spelling (dashes or underscores).
[[nodiscard]] std::optional<std::string> note_option(tokchron_cli::option_once& once,
                                                     std::string_view name, std::string_view value);

/// A bad command line (exit code 2, printed with the usage).
struct usage_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// The parsed command line.
struct command_line {
  run_config base;
  /// (option, values) per `--sweep`, in order given.
  std::vector<std::pair<std::string, std::vector<std::string>>> sweeps;
  std::vector<std::string> slos;           ///< `--slo` specs, in order
  std::string profile = "canonical";       ///< the tokchron profile the summary uses
  std::optional<std::string> percentiles;  ///< `--percentiles` (default: the profile's)
  std::string format = "table";            ///< table | json
  std::optional<std::string> trace_out, metrics_out;
  std::optional<std::string> plot;  ///< `--plot DIR`: pictures (tools/plot)
  std::string progress = "auto";    ///< auto (when stderr is a terminal) | never
  bool interleave =
      false;  ///< `--interleave on`: the configurations' steps in turns (interleave.hpp)
  /// `--memory-limit`: what the runs together may keep (workload::memory_limit), in bytes.
  std::uint64_t memory_limit = default_memory_limit;
  bool help = false;
};
/// Parses a memory size: bytes, or a number with a KiB, MiB or GiB suffix ("512MiB"), at least
/// one byte. Throws `std::invalid_argument` naming the text.
[[nodiscard]] std::uint64_t parse_memory_size(std::string_view text);
/// Parses `args` (without the program name). Throws `usage_error`.
[[nodiscard]] command_line parse_command_line(const std::vector<std::string>& args);
/// The usage text.
[[nodiscard]] std::string usage();

/// One configuration of a sweep (a single run is a sweep of one).
struct configuration {
  std::string name;  ///< "max_batch_size=16 prefill_priority=off", or "run" without sweeps
  std::vector<std::pair<std::string, std::string>> parameters;  ///< the swept values
  run_config cfg;
};
/// Applies the sweeps to the base configuration. Throws `usage_error` for a bad value.
[[nodiscard]] std::vector<configuration> expand(const command_line& cl);

/// Makes the backend a configuration names: `sim`, and `cpu` / `cuda` when they were built.
/// Throws `std::invalid_argument` for an unknown one.
[[nodiscard]] std::unique_ptr<backend> make_backend(const run_config& c);

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_APP_CLI_HPP
