// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_LOADGEN_OPTIONS_HPP
#define TOKCHRON_TOOLS_LOADGEN_OPTIONS_HPP

/// \file
/// The workload's command-line options (`--users`, `--rate`, `--prompt-len`, ...), one setter
/// each, so batching-executor, its `--sweep` and tokchron-bench read them alike; and the rules
/// for an option's value (a number, a count, a time) that the executor's other options follow
/// too. An option is named with dashes on the command line and with underscores in a sweep;
/// both spellings are taken. A bad value is refused with "--NAME 'VALUE': why".

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/arrivals.hpp"

namespace tokchron_loadgen {

/// One option: its name (underscores), the value it takes, and its help line.
struct option_info {
  std::string name, value_name, help;
};

/// The workload's options, in help order: seed, users, think_time, rate, burstiness,
/// prompt_len, output_len, duration, ramp_up, warmup, priority_levels, predict_noise,
/// max_requests, shared_prefix, reasoning_fraction.
[[nodiscard]] const std::vector<option_info>& workload_options();
/// Whether `name` (either spelling) is one of them.
[[nodiscard]] bool is_workload_option(std::string_view name);
/// Sets option `name` of `w` from `value` (`warmup` sets `warmup_s`: the requests arriving
/// before it load the system but are not measured). Throws `std::invalid_argument` naming the
/// option and the bad value, or an unknown option.
void set_workload_option(workload& w, double& warmup_s, std::string_view name,
                         std::string_view value);

/// `name` with underscores for dashes (the spelling of a sweep and of the option tables).
[[nodiscard]] std::string option_name(std::string_view name);
/// `name` with dashes for underscores (the spelling of the command line, the help and errors).
[[nodiscard]] std::string option_dashes(std::string_view name);
/// Refuses `value` of option `opt`: throws `std::invalid_argument("--opt 'value': why")`.
[[noreturn]] void bad_option_value(std::string_view opt, std::string_view value,
                                   const std::string& why);
/// A decimal number (`parse_decimal`).
[[nodiscard]] double option_number(std::string_view opt, std::string_view value);
/// An integer in [lo, hi].
[[nodiscard]] std::uint64_t option_count(std::string_view opt, std::string_view value,
                                         std::uint64_t lo, std::uint64_t hi);
/// An integer in [lo, 2^32 - 1].
[[nodiscard]] std::uint32_t option_u32(std::string_view opt, std::string_view value,
                                       std::uint32_t lo = 0);
/// A time in seconds (`parse_seconds`: "2", "1.5s", "500ms"), 0 or in [1e-9, 1e7]: a positive
/// time under the clock's 1 ns would read as 0, which means "none" to several options.
[[nodiscard]] double option_seconds(std::string_view opt, std::string_view value);

}  // namespace tokchron_loadgen

#endif  // TOKCHRON_TOOLS_LOADGEN_OPTIONS_HPP
