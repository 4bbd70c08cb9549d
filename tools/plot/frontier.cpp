// SPDX-License-Identifier: MIT
#include <algorithm>
#include <cmath>
#include <sstream>

#include "common.hpp"

namespace plot {

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

namespace internal {
namespace {

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
      return m.of(in.runs[i].summary).at(axes[k].percentile).value_or(0);
    };
    std::sort(f.begin(), f.end(), [&](std::size_t a, std::size_t b) { return lat(a) < lat(b); });
    d << "\n\n# frontier on the " << m.key() << " axis\n";
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

}  // namespace internal
}  // namespace plot
