// SPDX-License-Identifier: MIT
#include "plot.hpp"

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "tokchron/metrics/canonical.hpp"

namespace plot {
namespace {

namespace fs = std::filesystem;

/// Shortest text that reads back as `v` (data files must carry the summary's exact values).
std::string num(double v) {
  if (!std::isfinite(v)) return "-";
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}
std::string num(const std::optional<double>& v) { return v ? num(*v) : std::string("-"); }

/// `v` with `digits` significant digits, for people (labels, the summary table).
std::string human(double v, int digits = 4) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string html(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

/// A gnuplot single-quoted string: literal except that ' is written ''.
std::string gp(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += '\'';
    if (c == '\n' || c == '\r') c = ' ';
    out += c;
  }
  return out + "'";
}

/// A double-quoted field of a gnuplot data file (gnuplot has no escapes there: " becomes ').
std::string quoted_field(std::string_view s) {
  std::string out = "\"";
  for (char c : s) out += (c == '"' || c == '\n' || c == '\r') ? '\'' : c;
  return out + "\"";
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) throw std::runtime_error("plot: cannot write " + p.string());
}

/// The four latency metrics the distribution pictures draw.
struct metric_desc {
  const char* key;    ///< file name part and run_summary key
  const char* title;  ///< axis label
  tokchron::slo_metric slo;
  tokchron::distribution tokchron::run_summary::*member;
};
constexpr metric_desc latency_metrics[] = {
    {"ttft", "TTFT", tokchron::slo_metric::ttft, &tokchron::run_summary::ttft},
    {"tpot", "TPOT", tokchron::slo_metric::tpot, &tokchron::run_summary::tpot},
    {"itl", "ITL", tokchron::slo_metric::itl, &tokchron::run_summary::itl},
    {"e2el", "E2E latency", tokchron::slo_metric::e2e, &tokchron::run_summary::e2el},
};

/// Seconds are drawn in ms when every value is below 1 s.
struct time_unit {
  double scale;
  const char* name;
};
time_unit unit_for(double largest) {
  return largest < 1.0 ? time_unit{1e3, "ms"} : time_unit{1.0, "s"};
}

/// Series `i`'s line: wider for earlier series, so identical lines stay visible.
std::string series_style(std::size_t i) {
  const double w = std::max(1.2, 3.5 - 1.0 * static_cast<double>(i));
  return " with lines lw " + num(w) + " lt " + std::to_string(i + 1);
}

/// The SVG + PNG wrapper of a picture's drawing commands.
std::string script(const std::string& name, int w, int h, const std::string& body) {
  std::ostringstream os;
  os << "# " << name << ".gp: renders " << name << ".svg and " << name
     << ".png from the data files beside it.\n"
     << "# Run from this directory: gnuplot " << name << ".gp\n"
     << "do for [fmt in 'svg png'] {\n"
     << "  if (fmt eq 'svg') {\n"
     << "    set terminal svg size " << w << "," << h
     << " fixed noenhanced font 'DejaVu Sans,12' background rgb 'white'\n"
     << "  } else {\n"
     << "    set terminal pngcairo size " << w << "," << h
     << " noenhanced font 'DejaVu Sans,10' background rgb 'white'\n"
     << "  }\n"
     << "  set output '" << name << ".'.fmt\n"
     << "  reset\n"
     << "  set datafile missing '-'\n"
     << body << "  set output\n"
     << "}\n";
  return os.str();
}

bool has_samples(const std::vector<run_series>& runs, const metric_desc& m) {
  for (const auto& r : runs)
    if ((r.summary.*m.member).count > 0) return true;
  return false;
}

/// Every percentile any run was summarised at, sorted.
std::vector<double> percent_rows(const std::vector<run_series>& runs, const metric_desc& m) {
  std::vector<double> rows;
  for (const auto& r : runs)
    for (const auto& p : (r.summary.*m.member).percentiles) rows.push_back(p.percent);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

/// The SLA's objectives on `metric` that can be drawn as a threshold line.
std::vector<tokchron::objective> drawable(const tokchron::sla& sla, tokchron::slo_metric metric) {
  std::vector<tokchron::objective> out;
  for (const auto& o : sla.objectives)
    if (o.metric == metric && (o.statistic == tokchron::slo_statistic::percentile ||
                               o.statistic == tokchron::slo_statistic::max))
      out.push_back(o);
  return out;
}

/// The runs the distribution pictures draw.
std::vector<std::size_t> drawn_runs(const plot_input& in) {
  if (!in.drawn.empty()) return in.drawn;
  std::vector<std::size_t> all(in.runs.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  return all;
}

std::string legend_of(const run_series& r) { return r.legend.empty() ? r.label : r.legend; }

/// The smallest positive value at P1 or above (for a log axis) and the largest up to P99.99.
std::pair<double, double> drawn_range(const plot_input& in, const metric_desc& m) {
  double lo = HUGE_VAL, hi = 0;
  for (std::size_t i : drawn_runs(in)) {
    const auto& d = in.runs[i].summary.*m.member;
    for (const auto& p : d.percentiles) {
      if (!p.value || p.percent > 99.99) continue;  // the pictures end at P99.99
      hi = std::max(hi, *p.value);
      if (p.percent >= 1 && *p.value > 0) lo = std::min(lo, *p.value);
    }
  }
  return {lo, hi};
}

double spectrum_x(double percent) { return 1.0 / (1.0 - percent / 100.0); }

const char* const slo_color = "#c0392b";

/// The y-axis range and "plot" command of a metric's spectrum: one line per drawn run, the SLO
/// thresholds as constant lines. `low`/`top`: the smallest positive / largest value (seconds).
std::string spectrum_plot(const plot_input& in, const std::string& data, time_unit u, double low,
                          double top, const std::vector<tokchron::objective>& slos) {
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

picture latency_picture(const plot_input& in, const metric_desc& m, const fs::path& dir) {
  picture pic;
  pic.name = std::string("latency_") + m.key;
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
    for (const auto& r : in.runs) d << ' ' << num((r.summary.*m.member).at(pc));
    d << '\n';
  }
  write_file(dir / data, d.str());

  const auto slos = drawable(in.sla, m.slo);
  auto [low, top] = drawn_range(in, m);
  for (const auto& o : slos) {
    top = std::max(top, o.threshold);
    if (o.threshold > 0) low = std::min(low, o.threshold);
  }
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

/// The overview: the four spectra side by side (the README's picture of a trace).
picture spectrum_overview(const plot_input& in, const fs::path& dir) {
  picture pic;
  pic.name = "spectrum";
  std::ostringstream b;
  b << "  set multiplot layout 2,2 title " << gp(in.title + ": latency spectrum") << "\n"
    << "  set grid\n"
    << spectrum_axis << "  set key top left box opaque font ',9'\n";
  for (const auto& m : latency_metrics) {
    const std::string data = std::string("latency_") + m.key + ".dat";
    if (!has_samples(in.runs, m)) continue;
    pic.data.push_back(data);
    const auto slos = drawable(in.sla, m.slo);
    auto [low, top] = drawn_range(in, m);
    for (const auto& o : slos) {
      top = std::max(top, o.threshold);
      if (o.threshold > 0) low = std::min(low, o.threshold);
    }
    const time_unit u = unit_for(top);
    b << "  set title " << gp(m.title) << "\n  set ylabel " << gp(std::string(u.name)) << "\n"
      << spectrum_plot(in, data, u, low, top, slos);
  }
  b << "  unset multiplot\n";
  write_file(dir / "spectrum.gp", script(pic.name, 1200, 800, b.str()));
  pic.caption =
      "TTFT, TPOT, ITL and E2E percentile spectra on one page, one line per " +
      std::string(in.sweep ? "configuration" : "profile") +
      ": compare where the lines separate; a gap that opens only past P99 is a tail effect.";
  if (!in.drawn_note.empty()) pic.caption += " Shown: " + in.drawn_note + ".";
  return pic;
}

/// One frontier panel's axis: the SLA's percentile objective on the metric (else P95).
struct frontier_axis {
  const metric_desc* metric = nullptr;
  double percentile = 95;
  std::optional<tokchron::objective> objective;  ///< the shaded SLA bound, when there is one
  std::optional<std::size_t> verdict_index;      ///< the objective's index in the verdicts
};

frontier_axis axis_for(const plot_input& in, const metric_desc& m) {
  frontier_axis a;
  a.metric = &m;
  for (const auto& o : in.sla.objectives) {
    if (o.metric != m.slo || o.statistic != tokchron::slo_statistic::percentile) continue;
    a.percentile = o.percentile;
    if (o.upper_bound()) a.objective = o;
    break;
  }
  if (a.objective && !in.sweep->points.empty()) {
    const auto& vs = in.sweep->points.front().verdicts.verdicts;
    for (std::size_t k = 0; k < vs.size(); ++k)
      if (vs[k].target == *a.objective) a.verdict_index = k;
  }
  return a;
}

}  // namespace

std::string short_label(const tokchron::load_point& p) {
  if (p.parameters.empty()) return p.name;
  std::string out;
  for (const auto& [k, v] : p.parameters) {
    if (!out.empty()) out += ' ';
    bool start = true;
    for (char c : k) {
      if (c == '_' || c == '-' || c == '.') {
        start = true;
      } else if (start) {
        out += c;
        start = false;
      }
    }
    out += '=' + v;
  }
  return out;
}

namespace {

picture frontier_picture(const plot_input& in, const fs::path& dir) {
  const sweep_result& sw = *in.sweep;
  picture pic;
  pic.name = "frontier";
  pic.data.push_back("frontier.dat");
  const frontier_axis axes[2] = {axis_for(in, latency_metrics[0]),
                                 axis_for(in, latency_metrics[1])};
  // Each panel's frontier is the planner's, with that panel's objective as the latency axis.
  std::vector<char> on_frontier[2];
  for (int k = 0; k < 2; ++k) {
    on_frontier[k].assign(sw.points.size(), 0);
    if (!axes[k].verdict_index) continue;
    tokchron::capacity_options o;
    o.frontier_objective = *axes[k].verdict_index;
    for (std::size_t i : tokchron::plan_capacity(sw.points, o).frontier) on_frontier[k][i] = 1;
  }
  double xmax[2] = {0, 0};
  double xmin[2] = {HUGE_VAL, HUGE_VAL};  // smallest positive, for a log axis
  std::ostringstream d;
  d << "# one row per configuration: output tokens/s, latencies in seconds (run_summary)\n"
    << "# index output_tps p" << num(axes[0].percentile) << "_ttft p" << num(axes[1].percentile)
    << "_tpot meets chosen ttft_frontier tpot_frontier label\n";
  for (std::size_t i = 0; i < sw.points.size(); ++i) {
    const auto& s = in.runs[i].summary;
    const auto x0 = s.ttft.at(axes[0].percentile), x1 = s.tpot.at(axes[1].percentile);
    for (int k = 0; k < 2; ++k) {
      const auto& x = k == 0 ? x0 : x1;
      if (!x) continue;
      xmax[k] = std::max(xmax[k], *x);
      if (*x > 0) xmin[k] = std::min(xmin[k], *x);
    }
    const bool meets = i < sw.plan.points.size() && sw.plan.points[i].meets;
    const bool chosen = sw.plan.best && *sw.plan.best == i;
    d << i << ' ' << num(sw.points[i].throughput) << ' ' << num(x0) << ' ' << num(x1) << ' '
      << meets << ' ' << chosen << ' ' << int(on_frontier[0][i]) << ' ' << int(on_frontier[1][i])
      << ' ' << quoted_field(short_label(sw.points[i])) << '\n';
  }
  // Blocks 1 and 2: each panel's frontier points in order of latency, for its line.
  for (int k = 0; k < 2; ++k) {
    std::vector<std::size_t> f;
    for (std::size_t i = 0; i < sw.points.size(); ++i)
      if (on_frontier[k][i]) f.push_back(i);
    const auto& m = *axes[k].metric;
    auto lat = [&](std::size_t i) {
      return (in.runs[i].summary.*m.member).at(axes[k].percentile).value_or(0);
    };
    std::sort(f.begin(), f.end(), [&](std::size_t a, std::size_t b) { return lat(a) < lat(b); });
    d << "\n\n# frontier on the " << m.key << " axis\n";
    for (std::size_t i : f) d << num(lat(i)) << ' ' << num(sw.points[i].throughput) << '\n';
    if (f.empty()) d << "- -\n";
  }
  write_file(dir / "frontier.dat", d.str());

  // The points are numbered; the list of configurations is drawn at the right.
  const std::size_t n = sw.points.size();
  const double step = std::min(0.045, 0.8 / static_cast<double>(std::max<std::size_t>(n, 1)));
  std::ostringstream b;
  b << "  set multiplot layout 1,2 margins 0.06,0.74,0.12,0.88 spacing 0.07 title "
    << gp(in.title + ": throughput vs latency") << "\n"
    << "  set grid\n  set key bottom right box opaque font ',9'\n"
    << "  set ylabel 'output tokens/s'\n  set yrange [0:*]\n"
    << "  set label 1 'configurations' at screen 0.765, screen 0.88 left font ',10'\n";
  for (std::size_t i = 0; i < n; ++i) {
    const bool chosen = sw.plan.best && *sw.plan.best == i;
    b << "  set label " << i + 2 << ' '
      << gp(std::to_string(i + 1) + "  " + short_label(sw.points[i]) + (chosen ? "  (choice)" : ""))
      << " at screen 0.765, screen " << num(0.88 - step * static_cast<double>(i + 1))
      << " left font ',9'" << (chosen ? " textcolor rgb 'black'" : "") << "\n";
  }
  for (int k = 0; k < 2; ++k) {
    const auto& a = axes[k];
    double top = xmax[k], low = xmin[k];
    if (a.objective) {
      top = std::max(top, a.objective->threshold);
      if (a.objective->threshold > 0) low = std::min(low, a.objective->threshold);
    }
    const time_unit u = unit_for(top);
    const std::string sc = num(u.scale), col = k == 0 ? "3" : "4";
    const std::string pname = tokchron::percentile_key(a.percentile);
    std::string upper = pname;
    upper[0] = 'P';
    // Latencies spanning more than a factor 20 (queueing) get a log axis.
    const bool logx = std::isfinite(low) && top > 20 * low;
    b << "  unset object\n  unset arrow\n"
      << (logx ? "  set logscale x\n" : "  unset logscale x\n") << "  set title "
      << gp("output tokens/s vs " + upper + " " + a.metric->title) << "\n"
      << "  set xlabel "
      << gp(upper + " " + a.metric->title + " (" + u.name + (logx ? ", log scale)" : ")")) << "\n";
    if (logx)
      b << "  set xrange [" << num(low * u.scale / 1.5) << ":" << num(top * u.scale * 1.5) << "]\n";
    else
      b << "  set xrange [0:" << num(top * u.scale * 1.15 + 1e-12) << "]\n";
    if (a.objective) {
      const std::string thr = num(a.objective->threshold * u.scale);
      b << "  set object 1 rect from graph 0, graph 0 to first " << thr
        << ", graph 1 behind fc rgb '#dff2df' fs solid 1.0 noborder\n"
        << "  set arrow 1 from " << thr << ", graph 0 to " << thr
        << ", graph 1 nohead dt 2 lw 2 lc rgb '" << slo_color << "'\n";
    }
    b << "  plot ";
    if (a.objective)
      b << "NaN with boxes fs solid 1.0 fc rgb '#dff2df' title "
        << gp("SLA region: " + a.objective->to_string()) << ", \\\n       ";
    b << "'frontier.dat' index " << k + 1 << " using ($1*" << sc
      << "):2 with lines lw 1.5 dt 4 lc rgb '#555555' title 'frontier', \\\n"
      << "       'frontier.dat' index 0 using ($5==1 ? column(" << col << ")*" << sc
      << " : NaN):2 with points pt 7 ps 1.6 lc rgb '#2a8f2a' title 'meets the SLA', \\\n"
      << "       'frontier.dat' index 0 using ($5==0 ? column(" << col << ")*" << sc
      << " : NaN):2 with points pt 6 ps 1.6 lw 2 lc rgb '" << slo_color
      << "' title 'misses the SLA', \\\n"
      << "       'frontier.dat' index 0 using ($6==1 ? column(" << col << ")*" << sc
      << " : NaN):2 with points pt 3 ps 3.5 lw 2 lc rgb 'black' title \"planner's choice\", \\\n"
      << "       'frontier.dat' index 0 using (column(" << col << ")*" << sc
      << "):2:(sprintf('%d', $1+1)) with labels offset char 0.9,0.7 font ',9' notitle\n";
    if (k == 0) b << "  unset label\n";
  }
  b << "  unset multiplot\n";
  write_file(dir / "frontier.gp", script(pic.name, 1400, 560, b.str()));
  pic.caption =
      "One point per configuration: output tokens/s against its P95 TTFT (left) and P95 TPOT "
      "(right). Look for the highest point inside the shaded SLA region; the star is the "
      "planner's choice, the dotted line the frontier (no point beats it on both axes).";
  if (axes[0].percentile != 95 || axes[1].percentile != 95)
    pic.caption =
        "One point per configuration: output tokens/s against the SLA's TTFT (left) "
        "and TPOT (right) percentiles. Look for the highest point inside the shaded "
        "SLA region; the star is the planner's choice, the dotted line the frontier.";
  return pic;
}

picture timeline_picture(const plot_input& in, const fs::path& dir) {
  picture pic;
  pic.name = "timeline";
  pic.data.push_back("timeline.dat");
  // Spans (block 0): row start end kind; kinds: 0 queued, 1 prefill, 2 waiting for the first
  // token (no scheduling recorded), 3 decode, 4 after the last token. Block 1: token chunks (row
  // time tokens). Block 2: preemptions (row time). Block 3: arrival and finish (row time kind).
  std::ostringstream spans, chunks, pre, marks;
  double top = 0;
  std::vector<std::string> names;
  int row = 0;
  for (const auto& s : in.samples) {
    ++row;
    const auto& r = s.record;
    const double a = r.arrival.value_or(r.send);
    auto rel = [&](double t) { return t - a; };
    std::optional<double> first, last;
    std::uint64_t tokens = 0;
    for (const auto& c : r.chunks) {
      if (c.tokens == 0) continue;
      if (!first) first = c.time;
      last = c.time;
      tokens += c.tokens;
      chunks << row << ' ' << num(rel(c.time)) << ' ' << c.tokens << '\n';
    }
    double end = r.end ? *r.end : (r.chunks.empty() ? r.send : r.chunks.back().time);
    if (!r.preempted.empty()) end = std::max(end, r.preempted.back());
    top = std::max(top, rel(end));
    if (r.scheduled) {
      spans << row << " 0 " << num(rel(*r.scheduled)) << " 0\n";
      if (first) spans << row << ' ' << num(rel(*r.scheduled)) << ' ' << num(rel(*first)) << " 1\n";
    } else if (first) {
      spans << row << " 0 " << num(rel(*first)) << " 2\n";
    }
    if (first && last && *last > *first)
      spans << row << ' ' << num(rel(*first)) << ' ' << num(rel(*last)) << " 3\n";
    const double tail_from = last ? *last : (r.scheduled ? *r.scheduled : a);
    if (end > tail_from)
      spans << row << ' ' << num(rel(tail_from)) << ' ' << num(rel(end)) << " 4\n";
    for (double t : r.preempted) pre << row << ' ' << num(rel(t)) << '\n';
    marks << row << " 0 0\n" << row << ' ' << num(rel(end)) << " 1\n";
    std::string name = s.role;
    if (!r.id.empty()) name += " (" + r.id + ")";
    name += ": " + std::to_string(tokens) + " tokens";
    if (!r.preempted.empty()) name += ", " + std::to_string(r.preempted.size()) + " preempted";
    names.push_back(name);
  }
  auto block = [](const std::ostringstream& s, const char* fallback) {
    const std::string t = s.str();
    return t.empty() ? std::string(fallback) : t;
  };
  std::ostringstream d;
  d << "# token timeline; seconds since each request's arrival\n"
    << "# spans: row start end kind (0 queued, 1 prefill, 2 waiting for first token, 3 decode, 4 "
       "after last token)\n"
    << block(spans, "- - - -\n") << "\n\n# token chunks: row time tokens\n"
    << block(chunks, "- - -\n") << "\n\n# preemptions: row time\n"
    << block(pre, "- -\n") << "\n\n# marks: row time kind (0 arrival, 1 finish)\n"
    << block(marks, "- - -\n");
  write_file(dir / "timeline.dat", d.str());

  const time_unit u = unit_for(top);
  const std::string sc = num(u.scale);
  std::ostringstream b;
  b << "  set title "
    << gp(in.title + ": token timeline" +
          (in.samples_from.empty() ? std::string() : " of " + in.samples_from))
    << "\n  set grid x\n  set key outside right top vertical box font ',9'\n"
    << "  set xlabel " << gp(std::string("time since arrival (") + u.name + ")") << "\n"
    << "  set xrange [0:" << num(top * u.scale * 1.03 + 1e-12) << "]\n"
    << "  set yrange [" << row + 0.6 << ":0.4]\n  set ytics (";
  for (std::size_t i = 0; i < names.size(); ++i)
    b << (i ? ", " : "") << gp(names[i]) << ' ' << i + 1;
  b << ")\n  set ytics nomirror font ',9'\n  set lmargin 44\n  plot ";
  struct kind_style {
    int kind;
    const char* color;
    const char* title;
  };
  const kind_style kinds[] = {{0, "#9e9e9e", "queued"},
                              {1, "#f39c12", "prefill"},
                              {2, "#c8a2c8", "waiting for first token"},
                              {3, "#5dade2", "decode"},
                              {4, "#d5dbdb", "after last token"}};
  std::string sep;
  const std::string span_text = spans.str();
  for (const auto& k : kinds) {
    if (span_text.find(" " + std::to_string(k.kind) + "\n") == std::string::npos) continue;
    b << sep << "'timeline.dat' index 0 using ($4==" << k.kind << " ? $2*" << sc
      << " : NaN):1:(($3-$2)*" << sc << "):(0) with vectors nohead lw 14 lc rgb '" << k.color
      << "' title " << gp(k.title);
    sep = ", \\\n       ";
  }
  b << sep << "'timeline.dat' index 1 using ($2*" << sc
    << "):($1-0.22):(0):(0.44) with vectors nohead lw 0.7 lc rgb '#701b2631' title 'token chunk'";
  sep = ", \\\n       ";
  if (!pre.str().empty())
    b << sep << "'timeline.dat' index 2 using ($2*" << sc
      << "):1 with points pt 2 ps 2.5 lw 3 lc rgb '" << slo_color << "' title 'preempted'";
  b << sep << "'timeline.dat' index 3 using ($3==0 ? $2*" << sc
    << " : NaN):1 with points pt 9 ps 2 lc rgb '#117a65' title 'arrival'" << sep
    << "'timeline.dat' index 3 using ($3==1 ? $2*" << sc
    << " : NaN):1 with points pt 13 ps 2 lc rgb '#1b2631' title 'finish'\n";
  const int height = 220 + 70 * std::max(row, 1);
  write_file(dir / "timeline.gp", script(pic.name, 1200, height, b.str()));
  pic.caption =
      "A few requests from arrival (0) to finish: how much of each bar is queueing (grey), "
      "prefill (orange) and decode (blue); each tick is a token chunk, a red cross a preemption "
      "(its KV cache was dropped and recomputed).";
  bool preempted = false;
  for (const auto& smp : in.samples) preempted = preempted || !smp.record.preempted.empty();
  if (!preempted) pic.caption += " No request was preempted in this run.";
  return pic;
}

picture executor_picture(const plot_input& in, const plot_options& opt, const fs::path& dir) {
  picture pic;
  pic.name = "executor";
  pic.data.push_back("executor.dat");
  std::ostringstream d;
  d << "# executor over time, one block per configuration; time-weighted means per bin\n"
    << "# t_start t_end batch waiting kv_use batch_max waiting_max\n";
  double tmax = 0;
  for (std::size_t i = 0; i < in.executor.size(); ++i) {
    d << (i ? "\n\n" : "") << "# " << in.executor[i].label << '\n';
    const auto bins = bin_steps(in.executor[i], opt.executor_bins);
    for (const auto& x : bins)
      d << num(x.start) << ' ' << num(x.end) << ' ' << num(x.batch) << ' ' << num(x.waiting) << ' '
        << num(x.kv_use) << ' ' << x.batch_max << ' ' << x.waiting_max << '\n';
    if (bins.empty()) d << "- - - - - - -\n";
    if (!bins.empty()) tmax = std::max(tmax, bins.back().end);
  }
  write_file(dir / "executor.dat", d.str());

  std::ostringstream b;
  b << "  set multiplot layout 3,1 title " << gp(in.title + ": executor over time") << "\n"
    << "  set grid\n  set key top right box opaque font ',9'\n  set xrange [0:" << num(tmax + 1e-12)
    << "]\n";
  struct panel {
    const char* title;
    const char* ylabel;
    const char* expr;
  };
  const panel panels[] = {{"batch size (sequences per step, time-weighted mean)", "sequences", "3"},
                          {"queue length (requests waiting after admission)", "requests", "4"},
                          {"KV-cache use", "% of the pool", "($5*100)"}};
  for (int k = 0; k < 3; ++k) {
    b << "  set title " << gp(panels[k].title) << "\n  set ylabel " << gp(panels[k].ylabel)
      << "\n  set yrange [0:" << (k == 2 ? "105" : "*") << "]\n";
    if (k == 2) b << "  set xlabel 'time since the run started (s)'\n";
    b << "  plot ";
    for (std::size_t i = 0; i < in.executor.size(); ++i)
      b << (i ? ", \\\n       " : "") << "'executor.dat' index " << i
        << " using (($1+$2)/2):" << panels[k].expr << " with lines lw 1.5 lt " << i + 1 << " title "
        << gp(in.executor[i].label);
    b << "\n";
  }
  b << "  unset multiplot\n";
  write_file(dir / "executor.gp", script(pic.name, 1200, 900, b.str()));
  pic.caption =
      "Batch size, queue length and KV-cache use over the run, one line per configuration: "
      "look for a queue that keeps growing (overload) and KV use pinned near 100% "
      "(preemptions).";
  if (!in.drawn_note.empty()) pic.caption += " Shown: " + in.drawn_note + ".";
  return pic;
}

/// The absolute path of `prog` (searched on PATH unless it contains a '/'), if executable.
std::optional<std::string> find_program(const std::string& prog) {
  if (prog.empty()) return std::nullopt;
  if (prog.find('/') != std::string::npos)
    return ::access(prog.c_str(), X_OK) == 0 ? std::optional<std::string>(prog) : std::nullopt;
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "/usr/bin:/bin";
  while (true) {
    const std::size_t colon = std::min(rest.find(':'), rest.size());
    std::string cand(rest.substr(0, colon));
    if (cand.empty()) cand = ".";
    cand += "/" + prog;
    if (::access(cand.c_str(), X_OK) == 0) return cand;
    if (colon == rest.size()) break;
    rest.remove_prefix(colon + 1);
  }
  return std::nullopt;
}

/// Runs `gnuplot NAME.gp` in `dir`, appending its output to dir/gnuplot.log. True on exit 0.
bool run_gnuplot(const std::string& exe, const fs::path& dir, const std::string& name) {
  const std::string log = (dir / "gnuplot.log").string();
  const std::string dir_s = dir.string(), file = name + ".gp";
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("plot: fork: ") + std::strerror(errno));
  if (pid == 0) {
    if (::chdir(dir_s.c_str()) != 0) ::_exit(126);
    std::FILE* f = std::fopen(log.c_str(), "a");
    if (f) {
      ::dup2(::fileno(f), 1);
      ::dup2(::fileno(f), 2);
    }
    ::execl(exe.c_str(), exe.c_str(), file.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      throw std::runtime_error(std::string("plot: waitpid: ") + std::strerror(errno));
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string ms(const std::optional<double>& v) { return v ? human(*v * 1e3, 5) : "-"; }
std::string plain(const std::optional<double>& v) { return v ? human(*v, 6) : "-"; }

/// The summary table: one column per run, the values the CLI printed.
std::string summary_table(const plot_input& in, const std::vector<double>& printed) {
  std::ostringstream t;
  t << "<table>\n<tr><th></th>";
  for (const auto& r : in.runs) t << "<th>" << html(r.label) << "</th>";
  t << "</tr>\n";
  auto row = [&](const std::string& name, auto&& cell) {
    t << "<tr><th>" << html(name) << "</th>";
    for (std::size_t i = 0; i < in.runs.size(); ++i) t << "<td>" << html(cell(i)) << "</td>";
    t << "</tr>\n";
  };
  auto S = [&](std::size_t i) -> const tokchron::run_summary& { return in.runs[i].summary; };
  row("profile", [&](std::size_t i) { return S(i).profile; });
  row("requests", [&](std::size_t i) { return std::to_string(S(i).requests); });
  row("completed", [&](std::size_t i) { return std::to_string(S(i).completed); });
  row("failed", [&](std::size_t i) { return std::to_string(S(i).failed); });
  row("duration (s)", [&](std::size_t i) { return plain(S(i).duration); });
  row("requests/s", [&](std::size_t i) { return plain(S(i).request_throughput); });
  row("output tokens/s", [&](std::size_t i) { return plain(S(i).output_throughput); });
  row("total tokens/s", [&](std::size_t i) { return plain(S(i).total_token_throughput); });
  row("mean concurrency", [&](std::size_t i) { return plain(S(i).mean_concurrency); });
  row("peak concurrency", [&](std::size_t i) { return std::to_string(S(i).peak_concurrency); });
  std::vector<std::string> extra;
  for (const auto& r : in.runs)
    for (const auto& [k, v] : r.summary.extra)
      if (std::find(extra.begin(), extra.end(), k) == extra.end()) extra.push_back(k);
  for (const auto& k : extra)
    row(k, [&](std::size_t i) {
      for (const auto& [name, v] : S(i).extra)
        if (name == k) return plain(v);
      return std::string("-");
    });
  if (in.sweep) {
    const auto& plan = in.sweep->plan;
    row("SLA", [&](std::size_t i) -> std::string {
      if (i >= plan.points.size()) return "-";
      std::string s = plan.points[i].meets ? "meets" : "misses";
      if (plan.best && *plan.best == i) s += " (planner's choice)";
      return s;
    });
    row("misses", [&](std::size_t i) -> std::string {
      if (i >= plan.points.size()) return "-";
      std::string s;
      for (const auto& m : plan.points[i].misses) s += (s.empty() ? "" : "; ") + m.to_string();
      return s.empty() ? "-" : s;
    });
  }
  t << "</table>\n";
  // Latencies: one row per metric and run, the printed statistics as columns (ms).
  struct m_row {
    const char* name;
    tokchron::distribution tokchron::run_summary::*member;
  };
  const m_row metrics[] = {
      {"TTFT", &tokchron::run_summary::ttft},    {"TPOT", &tokchron::run_summary::tpot},
      {"ITL", &tokchron::run_summary::itl},      {"E2E", &tokchron::run_summary::e2el},
      {"queue", &tokchron::run_summary::queue},  {"prefill", &tokchron::run_summary::prefill},
      {"decode", &tokchron::run_summary::decode}};
  t << "<table class=\"latency\">\n<tr><th>ms</th><th>run</th><th>count</th><th>mean</th>";
  for (double pc : printed) {
    std::string key = tokchron::percentile_key(pc);
    key[0] = 'P';
    t << "<th>" << key << "</th>";
  }
  t << "<th>max</th></tr>\n";
  for (const auto& m : metrics) {
    bool any = false;
    for (const auto& r : in.runs) any = any || (r.summary.*m.member).count > 0;
    if (!any) continue;
    for (std::size_t i = 0; i < in.runs.size(); ++i) {
      const auto& d = S(i).*m.member;
      t << "<tr><th>" << (i == 0 ? m.name : "") << "</th><td>" << html(in.runs[i].label)
        << "</td><td>" << d.count << "</td><td>" << ms(d.mean) << "</td>";
      for (double pc : printed) t << "<td>" << ms(d.at(pc)) << "</td>";
      t << "<td>" << ms(d.max) << "</td></tr>\n";
    }
  }
  t << "</table>\n";
  return t.str();
}

std::string index_html(const plot_input& in, const plot_result& res,
                       const std::vector<double>& printed) {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
    << html(in.title) << "</title>\n<style>\n"
    << "body{font-family:'DejaVu Sans',sans-serif;margin:24px;max-width:1260px;color:#1b2631}\n"
    << "figure{margin:28px 0}img{max-width:100%;border:1px solid #d5dbdb}\n"
    << "figcaption{margin-top:6px}table{border-collapse:collapse;font-size:13px;margin:10px 0}\n"
    << "td,th{border:1px solid #ccd1d1;padding:3px 8px;text-align:right}\n"
    << "th{background:#f4f6f6}pre{background:#f4f6f6;padding:10px;overflow-x:auto}\n"
    << ".note{background:#fdebd0;padding:8px}\n</style>\n</head>\n<body>\n"
    << "<h1>" << html(in.title) << "</h1>\n";
  if (!in.command.empty()) h << "<p>Run: <code>" << html(in.command) << "</code></p>\n";
  if (!res.note.empty()) h << "<p class=\"note\">" << html(res.note) << "</p>\n";
  h << "<h2>Summary</h2>\n" << summary_table(in, printed);
  if (!in.sla.objectives.empty()) {
    h << "<p>SLA:";
    for (std::size_t i = 0; i < in.sla.objectives.size(); ++i)
      h << (i ? "," : "") << " <code>" << html(in.sla.objectives[i].to_string()) << "</code>";
    h << "</p>\n";
  }
  if (!in.report_text.empty()) h << "<pre>" << html(in.report_text) << "</pre>\n";
  h << "<h2>Pictures</h2>\n<p id=\"image-check\">pictures not checked (scripts off)</p>\n";
  for (const auto& p : res.pictures) {
    h << "<figure id=\"" << p.name << "\">\n";
    if (p.rendered)
      h << "<a href=\"" << p.name << ".png\"><img src=\"" << p.name << ".svg\" alt=\""
        << html(p.caption) << "\"></a>\n";
    else
      h << "<p class=\"note\">not rendered: run <code>gnuplot " << p.name
        << ".gp</code> in this directory</p>\n";
    h << "<figcaption>" << html(p.caption) << " <small>Data: ";
    for (std::size_t i = 0; i < p.data.size(); ++i)
      h << (i ? ", " : "") << "<a href=\"" << p.data[i] << "\">" << p.data[i] << "</a>";
    h << "; script: <a href=\"" << p.name << ".gp\">" << p.name << ".gp</a></small></figcaption>\n"
      << "</figure>\n";
  }
  // Says on the page whether every picture loaded (the CI's headless check reads this line).
  h << "<script>\nwindow.addEventListener('load', function () {\n"
    << "  var imgs = document.images, ok = 0, bad = [];\n"
    << "  for (var i = 0; i < imgs.length; ++i) {\n"
    << "    imgs[i].setAttribute('data-natural-width', imgs[i].naturalWidth);\n"
    << "    if (imgs[i].complete && imgs[i].naturalWidth > 0) ++ok;\n"
    << "    else bad.push(imgs[i].getAttribute('src'));\n  }\n"
    << "  document.getElementById('image-check').textContent = 'pictures loaded: ' + ok + "
       "' of ' + imgs.length + (bad.length ? ' (broken: ' + bad.join(', ') + ')' : '');\n"
    << "});\n</script>\n</body>\n</html>\n";
  return h.str();
}

}  // namespace

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
      throw std::invalid_argument("plot: percentile " + num(x) + " is not in [0, 100]");
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  return p;
}

std::vector<std::pair<std::size_t, std::string>> detail::pick(std::vector<pick_candidate> c) {
  std::vector<std::pair<std::size_t, std::string>> picks;
  if (c.empty()) return picks;
  std::stable_sort(c.begin(), c.end(),
                   [](const pick_candidate& x, const pick_candidate& y) { return x.e2e < y.e2e; });
  auto add = [&](std::size_t idx, const std::string& role) {
    for (auto& p : picks)
      if (p.first == idx) {
        p.second += ", " + role;
        return;
      }
    picks.emplace_back(idx, role);
  };
  add(c.back().index, "slowest");
  add(c[(c.size() - 1) / 2].index, "median");
  const pick_candidate* pre = nullptr;
  for (const auto& x : c)  // ascending e2e: the last of equal preemption counts is the slower
    if (x.preemptions > 0 && (!pre || x.preemptions >= pre->preemptions)) pre = &x;
  if (pre) add(pre->index, "preempted");
  return picks;
}

std::vector<sample_request> pick_samples(const std::vector<tokchron::trace_record>& records) {
  std::vector<tokchron::trace_timeline> tls;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (tokchron::validate(records[i])) continue;
    tls.push_back(tokchron::to_timeline(records[i]));
    index.push_back(i);
  }
  auto out = pick_samples(
      tls, [&](std::size_t i) { return records[index[i]].id; },
      tokchron::trace_clock::time_point{});
  return out;
}

std::vector<executor_bin> bin_steps(const executor_series& s, std::size_t bins) {
  if (bins == 0) throw std::invalid_argument("plot: the number of bins must be positive");
  std::vector<executor_bin> out;
  if (s.steps.empty()) return out;
  double end = 0;
  for (const auto& st : s.steps) end = std::max(end, st.end);
  if (!(end > 0)) return out;
  const double w = end / static_cast<double>(bins);
  out.resize(bins);
  for (std::size_t i = 0; i < bins; ++i) {
    out[i].start = w * static_cast<double>(i);
    out[i].end = i + 1 == bins ? end : w * static_cast<double>(i + 1);
  }
  for (const auto& st : s.steps) {
    if (!(st.end > st.start)) continue;
    auto first = static_cast<std::size_t>(std::max(0.0, st.start / w));
    for (std::size_t i = std::min(first, bins - 1); i < bins && out[i].start < st.end; ++i) {
      auto& b = out[i];
      const double overlap = std::min(st.end, b.end) - std::max(st.start, b.start);
      if (overlap <= 0) continue;
      b.batch += st.batch * overlap;
      b.waiting += st.waiting * overlap;
      if (st.kv_total) b.kv_use += static_cast<double>(st.kv_used) / st.kv_total * overlap;
      b.batch_max = std::max(b.batch_max, st.batch);
      b.waiting_max = std::max(b.waiting_max, st.waiting);
    }
  }
  for (auto& b : out) {
    const double len = b.end - b.start;
    if (len > 0) {
      b.batch /= len;
      b.waiting /= len;
      b.kv_use /= len;
    }
  }
  return out;
}

plot_result plot_trace(const std::vector<tokchron::trace_timeline>& tls,
                       const std::vector<const tokchron::profile*>& profiles,
                       const tokchron::summary_options& o, const tokchron::sla& sla,
                       const std::string& title, const std::string& command, const std::string& dir,
                       const plot_options& opt) {
  plot_input in;
  in.title = title;
  in.command = command;
  in.sla = sla;
  in.printed_percentiles = o.percentiles;
  if (in.printed_percentiles.empty() && !profiles.empty())
    in.printed_percentiles = tokchron::parse_percentiles(profiles.front()->default_percentiles);
  for (const tokchron::profile* p : profiles)
    in.runs.push_back(summarize_series(std::string(p->name), tls, *p, o, sla));
  in.samples = pick_samples(
      tls, [](std::size_t i) { return "request " + std::to_string(i + 1); },
      tokchron::trace_clock::time_point{});
  in.samples_from = "the trace";
  return write_plots(in, dir, opt);
}

std::string plot_result::to_string(const std::string& dir) const {
  std::size_t rendered = 0;
  for (const auto& p : pictures) rendered += p.rendered;
  std::string s = "plot: wrote " + std::to_string(pictures.size()) + " pictures' data and scripts";
  if (rendered) s += ", rendered " + std::to_string(rendered) + " (SVG and PNG)";
  s += ", to " + (fs::path(dir) / "index.html").string();
  if (!note.empty()) s += "\nplot: " + note;
  return s;
}

plot_result write_plots(const plot_input& in, const std::string& dir_name,
                        const plot_options& opt) {
  if (in.sweep && in.sweep->points.size() != in.runs.size())
    throw std::invalid_argument("plot: a sweep needs one run per load point (" +
                                std::to_string(in.sweep->points.size()) + " points, " +
                                std::to_string(in.runs.size()) + " runs)");
  for (std::size_t i : in.drawn)
    if (i >= in.runs.size())
      throw std::invalid_argument("plot: drawn run " + std::to_string(i) + " does not exist");
  const fs::path dir(dir_name);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("plot: cannot create " + dir.string() + ": " + ec.message());
  std::vector<double> printed =
      in.printed_percentiles.empty() ? std::vector<double>{50, 90, 95, 99} : in.printed_percentiles;

  plot_result res;
  bool any_latency = false;
  for (const auto& m : latency_metrics)
    if (has_samples(in.runs, m)) {
      any_latency = true;
      res.pictures.push_back(latency_picture(in, m, dir));
    }
  if (any_latency) res.pictures.push_back(spectrum_overview(in, dir));
  if (in.sweep && !in.sweep->points.empty()) res.pictures.push_back(frontier_picture(in, dir));
  if (!in.samples.empty()) res.pictures.push_back(timeline_picture(in, dir));
  if (!in.executor.empty()) res.pictures.push_back(executor_picture(in, opt, dir));

  if (opt.render) {
    const auto exe = find_program(opt.gnuplot);
    res.gnuplot_found = exe.has_value();
    if (exe) {
      fs::remove(dir / "gnuplot.log", ec);
      for (auto& p : res.pictures) {
        if (!run_gnuplot(*exe, dir, p.name))
          throw std::runtime_error("plot: gnuplot failed on " + (dir / (p.name + ".gp")).string() +
                                   " (see " + (dir / "gnuplot.log").string() + ")");
        p.rendered = fs::is_regular_file(dir / (p.name + ".svg")) &&
                     fs::is_regular_file(dir / (p.name + ".png"));
        if (!p.rendered)
          throw std::runtime_error("plot: gnuplot wrote no picture for " + p.name + ".gp");
      }
    } else {
      res.note = "gnuplot (" + opt.gnuplot +
                 ") was not found, so no picture was rendered; the data files and scripts are "
                 "written: install it (Debian: apt-get install gnuplot-nox) and run `gnuplot "
                 "NAME.gp` in this directory for each picture.";
    }
  } else {
    res.note =
        "rendering was switched off; run `gnuplot NAME.gp` in this directory for each "
        "picture.";
  }
  write_file(dir / "index.html", index_html(in, res, printed));
  return res;
}

}  // namespace plot
