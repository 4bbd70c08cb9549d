// SPDX-License-Identifier: MIT
#include <algorithm>
#include <sstream>

#include "common.hpp"

namespace plot {
namespace internal {
namespace {

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
  const metric_desc metrics[] = {
      {tokchron::metric_id::ttft, "TTFT"},         {tokchron::metric_id::tpot, "TPOT"},
      {tokchron::metric_id::itl, "ITL"},           {tokchron::metric_id::e2e, "E2E"},
      {tokchron::metric_id::queue_time, "queue"},  {tokchron::metric_id::prefill_time, "prefill"},
      {tokchron::metric_id::decode_time, "decode"}};
  t << "<table class=\"latency\">\n<tr><th>ms</th><th>run</th><th>count</th><th>mean</th>";
  for (double pc : printed) {
    std::string key = tokchron::percentile_key(pc);
    key[0] = 'P';
    t << "<th>" << key << "</th>";
  }
  t << "<th>max</th></tr>\n";
  for (const auto& m : metrics) {
    bool any = false;
    for (const auto& r : in.runs) any = any || m.of(r.summary).count > 0;
    if (!any) continue;
    for (std::size_t i = 0; i < in.runs.size(); ++i) {
      const auto& d = m.of(S(i));
      t << "<tr><th>" << (i == 0 ? m.title : "") << "</th><td>" << html(in.runs[i].label)
        << "</td><td>" << d.count << "</td><td>" << ms(d.mean) << "</td>";
      for (double pc : printed) t << "<td>" << ms(d.at(pc)) << "</td>";
      t << "<td>" << ms(d.max) << "</td></tr>\n";
    }
  }
  t << "</table>\n";
  return t.str();
}

}  // namespace

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

}  // namespace internal
}  // namespace plot
