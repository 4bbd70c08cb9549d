// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_PLOT_JOIN_PLOT_HPP
#define TOKCHRON_TOOLS_PLOT_JOIN_PLOT_HPP

/// \file
/// The pictures of `tokchron-report join` (both views of one request): every split request as
/// one stacked bar, sorted by the client's latency, its segments the time before the server saw
/// it, the server's part and the way back; one picture for TTFT and one for E2E. Nothing is
/// computed here: the parts are the join's (report/join.hpp).

#include <optional>
#include <string>
#include <vector>

#include "plot/plot.hpp"

namespace plot {

/// One joined request's parts in seconds (empty: not defined for it).
struct split_request {
  std::string id;
  std::optional<double> to_server, server_ttft, ttft_return, server_e2e, e2e_return;
};

/// Writes `split_ttft` and `split_e2e` (data, scripts, pictures when gnuplot is found) and
/// index.html, with `report_text` (the printed join table) on the page; `runs` (e.g. the client's
/// and the server's run, summarised at `printed` percentiles and the pictures') are drawn and
/// tabled as `write_plots` draws runs. Throws as `write_plots`.
plot_result plot_split(const std::vector<split_request>& rows, std::vector<run_series> runs,
                       const std::vector<double>& printed, const std::string& title,
                       const std::string& command, const std::string& report_text,
                       const std::string& dir, const plot_options& opt = {});

}  // namespace plot

#endif  // TOKCHRON_TOOLS_PLOT_JOIN_PLOT_HPP
