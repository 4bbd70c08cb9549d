// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_TOOLS_REPORT_SUMMARIES_HPP
#define TOKCHRON_TOOLS_REPORT_SUMMARIES_HPP

/// \file
/// tokchron-report's summaries: one `tokchron::run_summary` per selected profile, from files
/// read in one streaming pass (on two threads when there are two) or from requests in memory.

#include <string>
#include <vector>

#include "report/inputs.hpp"
#include "report/options.hpp"
#include "tokchron/metrics/run_summary.hpp"

namespace tokchron_report {

/// One summary per selected profile of the requests in `files`, read in one streaming pass
/// (each request is evaluated by every profile while its chunks are in cache, then dropped).
/// `stats` receives what was read. Throws as `read_inputs`.
[[nodiscard]] std::vector<tc::run_summary> summarize_files(const std::vector<std::string>& files,
                                                           const std::string& kind,
                                                           const report_settings& s,
                                                           input_stats& stats);

/// One summary per selected profile of requests already in memory.
[[nodiscard]] std::vector<tc::run_summary> summarize_all(const loaded_inputs& in,
                                                         const report_settings& s);

}  // namespace tokchron_report

#endif  // TOKCHRON_TOOLS_REPORT_SUMMARIES_HPP
