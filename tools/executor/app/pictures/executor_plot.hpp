// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_APP_PICTURES_EXECUTOR_PLOT_HPP
#define TOKCHRON_TOOLS_EXECUTOR_APP_PICTURES_EXECUTOR_PLOT_HPP

/// \file
/// batching-executor's `--plot DIR`: the pictures of a run or a sweep from the executor's own
/// outcomes (app/run_reports.hpp). Each configuration is summarised exactly as
/// `batching::evaluate` summarises it (the same profile, options and measured requests), with
/// the pictures' percentiles added; the frontier is the planner's answer for
/// `batching::load_points`; the token timeline shows the planner's choice (else the first
/// configuration); the over-time picture is the steps `record_steps` recorded.

#include <sstream>
#include <string>
#include <vector>

#include "executor_steps.hpp"
#include "plot/plot.hpp"
#include "run_reports.hpp"

namespace plot {

/// The summary `batching::evaluate` makes of `o` under `s`, at `plot_percentiles(...)`.
[[nodiscard]] inline run_series executor_series_summary(const batching::outcome& o,
                                                        const batching::report_settings& s) {
  tokchron::summary_options opt = s.summary;
  if (opt.percentiles.empty())
    opt.percentiles = tokchron::parse_percentiles(s.profile->default_percentiles);
  opt.percentiles = plot_percentiles(opt.percentiles, s.objectives);
  tokchron::run_summarizer<batching::timeline> sum(*s.profile, opt);
  sum.set_benchmark_start(batching::benchmark_start(o.conf.cfg));
  for (const batching::request& q : o.run.requests)
    if (batching::measured(o.conf.cfg, q)) sum.add(q.tl);
  return run_series{o.conf.name, sum.summary(), {}};
}

/// Writes the pictures of `all` (one outcome per configuration, `steps[i]` recorded during
/// configuration i's run; may be empty) into `dir`. `command` is shown on the page.
inline plot_result plot_executor(const std::vector<batching::outcome>& all,
                                 const std::vector<executor_series>& steps,
                                 const batching::report_settings& s, const std::string& command,
                                 const std::string& dir, const plot_options& opt = {}) {
  plot_input in;
  in.title = all.size() > 1 ? "batching-executor sweep" : "batching-executor run";
  in.command = command;
  in.sla = s.objectives;
  in.printed_percentiles = s.summary.percentiles;
  if (in.printed_percentiles.empty())
    in.printed_percentiles = tokchron::parse_percentiles(s.profile->default_percentiles);
  for (const auto& o : all) in.runs.push_back(executor_series_summary(o, s));
  std::size_t pick = 0;
  if (all.size() > 1) {
    sweep_result sw;
    sw.points = batching::load_points(all);
    sw.plan = tokchron::plan_capacity(sw.points);
    if (sw.plan.best) pick = *sw.plan.best;
    in.sweep = std::move(sw);
    std::ostringstream table;
    batching::write_sweep_table(table, all);
    in.report_text = table.str();
  }
  if (!all.empty()) {
    const auto& o = all[pick];
    std::vector<const batching::request*> reqs;
    std::vector<batching::timeline> tls;
    for (const batching::request& q : o.run.requests)
      if (batching::measured(o.conf.cfg, q)) {
        reqs.push_back(&q);
        tls.push_back(q.tl);
      }
    in.samples = pick_samples(
        tls, [&](std::size_t i) { return "request " + std::to_string(reqs[i]->id); },
        batching::time_point{});
    in.samples_from =
        o.conf.name + (in.sweep && in.sweep->plan.best ? " (the planner's choice)" : std::string());
  }
  // Drawn (distributions and over time): every configuration when there are at most four;
  // otherwise the planner's choice (else the first), the most throughput, and the least and most
  // P95 TTFT. The data files keep every configuration.
  std::vector<std::pair<std::size_t, std::string>> shown;
  auto show = [&](std::size_t i, const std::string& why) {
    for (auto& s2 : shown)
      if (s2.first == i) return void(s2.second += ", " + why);
    shown.emplace_back(i, why);
  };
  const std::size_t n = all.size();
  if (n <= 4) {
    for (std::size_t i = 0; i < n; ++i) show(i, "");
  } else {
    show(pick, in.sweep && in.sweep->plan.best ? "the choice" : "the first");
    auto best_by = [&](auto&& better) {
      std::size_t b = 0;
      for (std::size_t i = 1; i < n; ++i)
        if (better(in.runs[i].summary, in.runs[b].summary)) b = i;
      return b;
    };
    const auto p95 = [](const tokchron::run_summary& x) { return x.ttft.at(95).value_or(0); };
    show(best_by([](const auto& x, const auto& y) {
           return x.output_throughput.value_or(0) > y.output_throughput.value_or(0);
         }),
         "most throughput");
    show(best_by([&](const auto& x, const auto& y) { return p95(x) < p95(y); }), "least P95 TTFT");
    show(best_by([&](const auto& x, const auto& y) { return p95(x) > p95(y); }), "most P95 TTFT");
    std::string list;
    for (const auto& [i, why] : shown)
      list += (list.empty() ? "" : "; ") + all[i].conf.name + " (" + why + ")";
    in.drawn_note = std::to_string(shown.size()) + " of " + std::to_string(n) +
                    " configurations (all are in the data files): " + list;
  }
  for (const auto& [i, why] : shown) {
    in.drawn.push_back(i);
    std::string legend = in.sweep ? short_label(in.sweep->points[i]) : all[i].conf.name;
    if (!why.empty()) legend += " (" + why + ")";
    in.runs[i].legend = legend;
    if (i < steps.size()) {
      executor_series e = steps[i];
      e.label = legend;
      in.executor.push_back(std::move(e));
    }
  }
  return write_plots(in, dir, opt);
}

}  // namespace plot

#endif  // TOKCHRON_TOOLS_EXECUTOR_APP_PICTURES_EXECUTOR_PLOT_HPP
