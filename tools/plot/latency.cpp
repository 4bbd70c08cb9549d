// SPDX-License-Identifier: MIT
#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "common.hpp"

namespace plot {
namespace internal {
namespace {

/// Every percentile any run was summarised at, sorted.
std::vector<double> percent_rows(const std::vector<run_series>& runs, const metric_desc& m) {
  std::vector<double> rows;
  for (const auto& r : runs)
    for (const auto& p : m.of(r.summary).percentiles) rows.push_back(p.percent);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

/// The smallest positive value at P1 or above (for a log axis) and the largest up to P99.99.
std::pair<double, double> drawn_range(const plot_input& in, const metric_desc& m) {
  double lo = HUGE_VAL, hi = 0;
  for (std::size_t i : drawn_runs(in)) {
    const auto& d = m.of(in.runs[i].summary);
    for (const auto& p : d.percentiles) {
      if (!p.value || p.percent > 99.99) continue;  // the pictures end at P99.99
      hi = std::max(hi, *p.value);
      if (p.percent >= 1 && *p.value > 0) lo = std::min(lo, *p.value);
    }
  }
  return {lo, hi};
}

/// `drawn_range` widened to show the thresholds of `slos`.
std::pair<double, double> range_with(const plot_input& in, const metric_desc& m,
                                     const std::vector<tokchron::objective>& slos) {
  auto [low, top] = drawn_range(in, m);
  for (const auto& o : slos) {
    top = std::max(top, o.threshold);
    if (o.threshold > 0) low = std::min(low, o.threshold);
  }
  return {low, top};
}

double spectrum_x(double percent) { return 1.0 / (1.0 - percent / 100.0); }

/// The y-axis range and "plot" command of a metric's spectrum: one line per drawn run, the SLO
/// thresholds as constant lines. `low`/`top`: the smallest positive / largest value (seconds).
std::string spectrum_plot(const plot_input& in, const std::string& data, time_unit u, double low,
                          double top, const std::vector<tokchron::objective>& slos,
                          const std::string& also = {}) {
  std::ostringstream b;
  // Values spanning more than a factor 50 (queueing) get a log axis.
  if (std::isfinite(low) && top > 50 * low)
    b << "  set logscale y\n  set yrange [" << num(low * u.scale / 1.5) << ":"
      << num(top * u.scale * 1.3) << "]\n  plot ";
  else
    b << "  unset logscale y\n  set yrange [0:" << num(top * u.scale * 1.08 + 1e-12)
      << "]\n  plot ";
  std::string sep;
  std::size_t line = 0;
  for (std::size_t i : drawn_runs(in)) {
    b << sep << "'" << data << "' using 2:(column(" << i + 3 << ")*" << num(u.scale) << ")"
      << series_style(line++) << " title " << gp(legend_of(in.runs[i]));
    sep = ", \\\n       ";
  }
  // `also`: a second data file drawn dashed, one line per run in the same line types.
  line = 0;
  if (!also.empty())
    for (std::size_t i : drawn_runs(in)) {
      b << sep << "'" << also << "' using 2:(column(" << i + 3 << ")*" << num(u.scale) << ")"
        << series_style(line++) << " dt 2 title " << gp("TTFA " + legend_of(in.runs[i]));
      sep = ", \\\n       ";
    }
  for (std::size_t k = 0; k < slos.size(); ++k)
    b << sep << num(slos[k].threshold * u.scale) << " with lines dt " << k + 2 << " lw 2 lc rgb '"
      << slo_color << "' title " << gp("SLO " + slos[k].to_string());
  b << "\n";
  return b.str();
}

/// The spectrum's x axis: 1/(1-p) on a log scale, labelled as percentiles.
const char* const spectrum_axis =
    "  set logscale x\n  set xrange [1:10000]\n"
    "  set xtics ('P0' 1, 'P50' 2, 'P90' 10, 'P99' 100, 'P99.9' 1000, 'P99.99' 10000)\n";

}  // namespace

picture latency_picture(const plot_input& in, const metric_desc& m, const fs::path& dir) {
  picture pic;
  pic.name = std::string("latency_") + m.key();
  const std::string data = pic.name + ".dat";
  pic.data.push_back(data);

  // Data: one row per percentile, one value column per run (seconds, exact summary values).
  std::ostringstream d;
  d << "# " << m.title << " percentiles in seconds, from tokchron::run_summary (exact quantiles)\n"
    << "# percent  x=1/(1-p)";
  for (const auto& r : in.runs) d << "  " << quoted_field(r.label);
  d << "\n";
  for (double pc : percent_rows(in.runs, m)) {
    d << num(pc) << ' ' << (pc < 100 ? num(spectrum_x(pc)) : std::string("-"));
    for (const auto& r : in.runs) d << ' ' << num(m.of(r.summary).at(pc));
    d << '\n';
  }
  write_file(dir / data, d.str());

  const auto slos = drawable(in.sla, m.slo);
  const auto [low, top] = range_with(in, m, slos);
  const time_unit u = unit_for(top);
  const std::string sc = num(u.scale);
  // A CDF whose values span more than a factor 50 (queueing) gets a log axis.
  const bool log_cdf = std::isfinite(low) && top > 50 * low;
  const std::string ylabel = std::string(m.title) + " (" + u.name + ")";

  std::ostringstream b;
  b << "  set multiplot layout 1,2 title " << gp(in.title + ": " + m.title) << "\n"
    << "  set grid\n  set key top left box opaque\n"
    // Left: the spectrum.
    << "  set title 'percentile spectrum'\n"
    << spectrum_axis << "  set xlabel 'percentile (axis: 1/(1-p), log scale)'\n"
    << "  set ylabel " << gp(ylabel) << "\n";
  int tag = 1;
  for (const auto& o : slos) {
    if (o.statistic != tokchron::slo_statistic::percentile || o.percentile >= 100) continue;
    b << "  set arrow " << tag++ << " from " << num(spectrum_x(o.percentile)) << ", graph 0 to "
      << num(spectrum_x(o.percentile)) << ", graph 1 nohead dt 3 lc rgb '" << slo_color << "'\n";
  }
  b << spectrum_plot(in, data, u, low, top, slos);
  // Right: the CDF.
  b << "  unset arrow\n  unset logscale y\n  set xtics auto\n";
  if (log_cdf)
    b << "  set xrange [" << num(low * u.scale / 1.5) << ":" << num(top * u.scale * 1.2) << "]\n";
  else
    b << "  unset logscale x\n  set xrange [0:*]\n";
  b << "  set title 'CDF'\n  set xlabel " << gp(log_cdf ? ylabel + ", log scale" : ylabel) << "\n"
    << "  set ylabel 'fraction of samples at or below'\n  set yrange [0:1]\n"
    << "  set key bottom right box opaque\n";
  tag = 1;
  for (const auto& o : slos) {
    const double x = o.threshold * u.scale;
    b << "  set arrow " << tag++ << " from " << num(x) << ", graph 0 to " << num(x)
      << ", graph 1 nohead dt 2 lw 2 lc rgb '" << slo_color << "'\n";
    if (o.statistic == tokchron::slo_statistic::percentile)
      b << "  set arrow " << tag++ << " from graph 0, first " << num(o.quantile())
        << " to graph 1, first " << num(o.quantile()) << " nohead dt 3 lc rgb '" << slo_color
        << "'\n";
  }
  b << "  plot ";
  std::string sep;
  std::size_t line = 0;
  for (std::size_t i : drawn_runs(in)) {
    b << sep << "'" << data << "' using (column(" << i + 3 << ")*" << sc << "):($1/100)"
      << series_style(line++) << " title " << gp(legend_of(in.runs[i]));
    sep = ", \\\n       ";
  }
  for (std::size_t k = 0; k < slos.size(); ++k)
    b << sep << "NaN with lines dt " << k + 2 << " lw 2 lc rgb '" << slo_color << "' title "
      << gp("SLO " + slos[k].to_string());
  b << "\n  unset multiplot\n";
  write_file(dir / (pic.name + ".gp"), script(pic.name, 1200, 480, b.str()));

  pic.caption = std::string(m.title) +
                ": the percentile spectrum (left; P50 to P99.99 spread out on a log axis of "
                "1/(1-p)) and the CDF (right). Look for where a line bends upward (the tail "
                "starts) and whether it stays below the red SLO line at the SLO's percentile.";
  if (!in.drawn_note.empty()) pic.caption += " Shown: " + in.drawn_note + ".";
  return pic;
}

/// The overview: the four spectra side by side (docs/tools/pictures.md's picture of a trace).
picture spectrum_overview(const plot_input& in, const fs::path& dir) {
  picture pic;
  pic.name = "spectrum";
  std::ostringstream b;
  b << "  set multiplot layout 2,2 title " << gp(in.title + ": latency spectrum") << "\n"
    << "  set grid\n"
    << spectrum_axis << "  set key top left box opaque font ',9'\n";
  // With reasoning answers the TTFT panel also draws the time to first answer token, dashed.
  const bool reasoning = has_reasoning(in.runs);
  for (const auto& m : latency_metrics) {
    const std::string data = std::string("latency_") + m.key() + ".dat";
    if (!has_samples(in.runs, m)) continue;
    pic.data.push_back(data);
    const auto slos = drawable(in.sla, m.slo);
    auto [low, top] = range_with(in, m, slos);
    std::string also, title = m.title;
    if (reasoning && m.slo == tokchron::metric_id::ttft) {
      also = std::string("latency_") + answer_metric.key() + ".dat";
      pic.data.push_back(also);
      const auto [alow, atop] = drawn_range(in, answer_metric);
      low = std::min(low, alow);
      top = std::max(top, atop);
      title = "TTFT, and TTFA dashed";
    }
    const time_unit u = unit_for(top);
    b << "  set title " << gp(title) << "\n  set ylabel " << gp(std::string(u.name)) << "\n"
      << spectrum_plot(in, data, u, low, top, slos, also);
  }
  b << "  unset multiplot\n";
  write_file(dir / "spectrum.gp", script(pic.name, 1200, 800, b.str()));
  pic.caption =
      "TTFT, TPOT, ITL and E2E percentile spectra on one page, one line per " +
      std::string(in.sweep ? "configuration" : "profile") +
      ": compare where the lines separate; a gap that opens only past P99 is a tail effect.";
  if (reasoning)
    pic.caption +=
        " The TTFT panel's dashed lines are the time to first answer token: the gap to TTFT is "
        "the reasoning a user waits through.";
  if (!in.drawn_note.empty()) pic.caption += " Shown: " + in.drawn_note + ".";
  return pic;
}

}  // namespace internal

std::vector<double> spectrum_percentiles() {
  std::vector<double> p;
  for (int i = 0; i <= 100; ++i) p.push_back(i);
  // 25 points a decade of 1/(1-p) from 10 (P90) to 10^4 (P99.99): p = 100 (1 - 10^(-k/25)).
  const double decades[] = {90, 99, 99.9, 99.99};  // the k = 25, 50, 75, 100 points, exactly
  for (int k = 25; k <= 100; ++k)
    p.push_back(k % 25 == 0 ? decades[k / 25 - 1] : 100.0 * (1.0 - std::pow(10.0, -k / 25.0)));
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  return p;
}

std::vector<double> plot_percentiles(const std::vector<double>& printed, const tokchron::sla& sla) {
  std::vector<double> p = spectrum_percentiles();
  p.insert(p.end(), printed.begin(), printed.end());
  p.push_back(95);
  for (const auto& o : sla.objectives)
    if (o.statistic == tokchron::slo_statistic::percentile) p.push_back(o.percentile);
  for (double x : p)
    if (!(x >= 0 && x <= 100))
      throw std::invalid_argument("plot: percentile " + internal::num(x) + " is not in [0, 100]");
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  return p;
}

}  // namespace plot
