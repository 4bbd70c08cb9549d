// SPDX-License-Identifier: MIT
#include "common.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace plot {
namespace internal {

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
std::string human(double v, int digits) {
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

bool has_reasoning(const std::vector<run_series>& runs) {
  for (const auto& r : runs)
    if (r.summary.reasoning_time.count > 0) return true;
  return false;
}

bool has_samples(const std::vector<run_series>& runs, const metric_desc& m) {
  for (const auto& r : runs)
    if (m.of(r.summary).count > 0) return true;
  return false;
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

}  // namespace internal
}  // namespace plot
