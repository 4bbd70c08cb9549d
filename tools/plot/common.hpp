// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_PLOT_COMMON_HPP
#define TOKCHRON_TOOLS_PLOT_COMMON_HPP

/// \file
/// What the picture writers of the plotting library share (internal to tools/plot): number
/// and text formats for data files, gnuplot scripts and HTML; the four latency metrics; the
/// script wrapper; and one function per picture (latency.cpp, frontier.cpp, timeline.cpp,
/// executor_series.cpp) and for the page (page.cpp). `write_plots` (plot.cpp) calls them.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plot/plot.hpp"

namespace plot {
namespace internal {

namespace fs = std::filesystem;

/// Shortest text that reads back as `v` (data files must carry the summary's exact values);
/// "-" for an undefined or non-finite value.
[[nodiscard]] std::string num(double v);
[[nodiscard]] std::string num(const std::optional<double>& v);
/// `v` with `digits` significant digits, for people (labels, the summary table).
[[nodiscard]] std::string human(double v, int digits = 4);
/// `s` escaped for HTML text and attributes.
[[nodiscard]] std::string html(std::string_view s);
/// A gnuplot single-quoted string: literal except that ' is written ''.
[[nodiscard]] std::string gp(std::string_view s);
/// A double-quoted field of a gnuplot data file (gnuplot has no escapes there: " becomes ').
[[nodiscard]] std::string quoted_field(std::string_view s);
/// Writes `text` to `p`. Throws std::runtime_error when it cannot.
void write_file(const fs::path& p, const std::string& text);

/// A metric a picture draws: its id in the metric table and the axis label.
struct metric_desc {
  tokchron::metric_id slo;  ///< the metric (its SLOs are drawn with it)
  const char* title;        ///< axis label
  /// File name part and summary key: the metric table's name.
  [[nodiscard]] std::string key() const { return std::string(tokchron::to_string(slo)); }
  /// The run summary's distribution of this metric.
  [[nodiscard]] const tokchron::distribution& of(const tokchron::run_summary& s) const {
    return *s.of(slo);
  }
};
/// The four latency metrics the distribution pictures draw.
inline constexpr metric_desc latency_metrics[] = {{tokchron::metric_id::ttft, "TTFT"},
                                                  {tokchron::metric_id::tpot, "TPOT"},
                                                  {tokchron::metric_id::itl, "ITL"},
                                                  {tokchron::metric_id::e2e, "E2E latency"}};

/// Time to first answer token: drawn (its own distribution picture, and dashed beside TTFT in
/// the spectrum) when some run has reasoning answers.
inline constexpr metric_desc answer_metric = {tokchron::metric_id::ttfa,
                                              "time to first answer token (TTFA)"};
/// True when some run's requests had reasoning before their answer (a reasoning time measured).
[[nodiscard]] bool has_reasoning(const std::vector<run_series>& runs);

/// Seconds are drawn in ms when every value is below 1 s.
struct time_unit {
  double scale;
  const char* name;
};
[[nodiscard]] time_unit unit_for(double largest);

/// The colour of SLO lines and misses.
inline constexpr const char* slo_color = "#c0392b";
/// Reasoning tokens in the token timeline (answer tokens are dark ticks, decode blue).
inline constexpr const char* reasoning_color = "#8e44ad";

/// Series `i`'s line: wider for earlier series, so identical lines stay visible.
[[nodiscard]] std::string series_style(std::size_t i);
/// The SVG + PNG wrapper of a picture's drawing commands.
[[nodiscard]] std::string script(const std::string& name, int w, int h, const std::string& body);
/// Whether any run has samples of `m`.
[[nodiscard]] bool has_samples(const std::vector<run_series>& runs, const metric_desc& m);
/// The SLA's objectives on `metric` that can be drawn as a threshold line.
[[nodiscard]] std::vector<tokchron::objective> drawable(const tokchron::sla& sla,
                                                        tokchron::slo_metric metric);
/// The runs the distribution pictures draw.
[[nodiscard]] std::vector<std::size_t> drawn_runs(const plot_input& in);
/// A run's name in the pictures' keys.
[[nodiscard]] std::string legend_of(const run_series& r);

// The pictures: each writes its data file(s) and script into `dir` and says what it drew.
[[nodiscard]] picture latency_picture(const plot_input& in, const metric_desc& m,
                                      const fs::path& dir);
[[nodiscard]] picture spectrum_overview(const plot_input& in, const fs::path& dir);
[[nodiscard]] picture frontier_picture(const plot_input& in, const fs::path& dir);
[[nodiscard]] picture timeline_picture(const plot_input& in, const fs::path& dir);
[[nodiscard]] picture executor_picture(const plot_input& in, const plot_options& opt,
                                       const fs::path& dir);

/// index.html: the summary table (the `printed` percentiles), the SLA, the CLI's report and
/// every picture with its caption, data and script.
[[nodiscard]] std::string index_html(const plot_input& in, const plot_result& res,
                                     const std::vector<double>& printed);

}  // namespace internal
}  // namespace plot

#endif  // TOKCHRON_TOOLS_PLOT_COMMON_HPP
