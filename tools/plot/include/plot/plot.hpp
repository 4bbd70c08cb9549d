// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_PLOT_PLOT_HPP
#define TOKCHRON_TOOLS_PLOT_PLOT_HPP

/// \file
/// The pictures of a run or a sweep, shared by tokchron-report and batching-executor
/// (`--plot DIR`): plain data files (seconds, one row per point, `-` for a missing value), one
/// gnuplot script per picture (each renders an SVG and a PNG), and `index.html` (every picture
/// with a one-line caption, and the run's summary table). gnuplot runs when it is found on PATH;
/// otherwise the data and the scripts are still written and the result says so.
///
/// Pictures: the latency distribution of TTFT, TPOT, ITL and E2E (the percentile spectrum on a
/// log axis of 1/(1-p), and the CDF; one line per profile or configuration; SLO thresholds as
/// lines), the throughput/latency frontier of a sweep (output tokens/s against the SLA's TTFT and
/// TPOT percentiles, the SLA region shaded, the planner's choice marked), the token timeline of
/// a few sample requests, and the executor's batch size, queue length and KV use over time.
///
/// Nothing drawn is computed here: the distributions are `tokchron::run_summary` values made by
/// `tokchron::summarize` at `plot_percentiles(...)` (the same exact quantiles, under the same
/// profile, as the printed summary), the frontier is the planner's `capacity_plan`, the timeline
/// is trace records, and the executor series is the executor's own record of each step (binned
/// by time for drawing; the bins' integrals are the executor's totals).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tokchron/io/trace.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/sla/capacity.hpp"
#include "tokchron/sla/objective.hpp"

namespace plot {

/// The percentiles (in percent) the distribution pictures are drawn at: every whole percent from
/// 0 to 100, and 25 points a decade of 1/(1-p) from P90 to P99.99. Sorted, no duplicates.
[[nodiscard]] std::vector<double> spectrum_percentiles();

/// The percentiles to summarise a run at so that one summary serves both the printed table and
/// the pictures: `printed`, the spectrum, 95 (the frontier's default axis) and every percentile
/// objective of `sla`. Sorted, no duplicates. Throws std::invalid_argument outside [0, 100].
[[nodiscard]] std::vector<double> plot_percentiles(const std::vector<double>& printed,
                                                   const tokchron::sla& sla = {});

/// One line of the distribution pictures and one column of the summary table: a profile's or a
/// configuration's run, summarised at `plot_percentiles(...)`.
struct run_series {
  std::string label;
  tokchron::run_summary summary;
  std::string legend;  ///< the name in the pictures' keys (empty: `label`)
};

/// Summarises `timelines` under `p` at `plot_percentiles(o.percentiles, sla)` (the profile's
/// default percentiles when `o.percentiles` is empty): the summary the CLIs print, with the
/// pictures' percentiles added.
template <class Range>
[[nodiscard]] run_series summarize_series(std::string label, const Range& timelines,
                                          const tokchron::profile& p,
                                          tokchron::summary_options o = {},
                                          const tokchron::sla& sla = {}) {
  if (o.percentiles.empty()) o.percentiles = tokchron::parse_percentiles(p.default_percentiles);
  o.percentiles = plot_percentiles(o.percentiles, sla);
  return run_series{std::move(label), tokchron::summarize(timelines, p, std::move(o)), {}};
}

/// A sweep: one load point per `plot_input::runs` entry (same order; throughput in output
/// tokens/s) and the planner's answer for them.
struct sweep_result {
  std::vector<tokchron::load_point> points;
  tokchron::capacity_plan plan;
};

/// A request drawn in the token timeline, and why it was picked ("slowest", "median",
/// "preempted", or several joined by ", ").
struct sample_request {
  std::string role;
  tokchron::trace_record record;
};

/// Picks the slowest and the median request by end-to-end latency (canonical, finish - arrival,
/// among requests that produced a token) and the preempted request with the most preemptions
/// (ties: the slower). A request picked twice is drawn once with both roles. O(n log n).
[[nodiscard]] std::vector<sample_request> pick_samples(
    const std::vector<tokchron::trace_record>& records);

namespace internal {
struct pick_candidate {
  std::size_t index;
  double e2e;
  std::uint32_t preemptions;
};
/// The picks (index, role) among the candidates, as `pick_samples` describes.
[[nodiscard]] std::vector<std::pair<std::size_t, std::string>> pick(std::vector<pick_candidate> c);
}  // namespace internal

/// As above, over finished timelines that keep chunks (any clock): `id_of(i)` names the i-th;
/// the picked ones become trace records with times in seconds since `zero`.
template <class Timeline, class IdOf>
[[nodiscard]] std::vector<sample_request> pick_samples(const std::vector<Timeline>& tls,
                                                       IdOf&& id_of,
                                                       typename Timeline::time_point zero) {
  std::vector<internal::pick_candidate> c;
  for (std::size_t i = 0; i < tls.size(); ++i) {
    const auto e = tokchron::e2e(tls[i]);
    if (!e || !tls[i].first_token_time()) continue;
    c.push_back({i, tokchron::to_seconds(*e), tls[i].preemptions()});
  }
  std::vector<sample_request> out;
  for (auto& [i, role] : internal::pick(std::move(c)))
    out.push_back({std::move(role), tokchron::to_trace_record(tls[i], zero, id_of(i))});
  return out;
}

/// One executor step: [start, end) in seconds since the run's start, the sequences in the
/// batch, the requests still waiting after admission, and the KV blocks in use / in the pool.
struct executor_step {
  double start = 0, end = 0;
  std::uint32_t batch = 0, waiting = 0, kv_used = 0, kv_total = 0;
};

/// Every step of one configuration's run, in order.
struct executor_series {
  std::string label;
  std::vector<executor_step> steps;
};

/// One time bin of an executor series: time-weighted means over [start, end) (time without a
/// step counts as 0), and the largest values of the steps that overlap it.
struct executor_bin {
  double start = 0, end = 0;
  double batch = 0, waiting = 0, kv_use = 0;  ///< kv_use: share of the pool, 0..1
  std::uint32_t batch_max = 0, waiting_max = 0;
};

/// `s`'s steps in `bins` equal bins over [0, last step's end]. The integral of `batch` over the
/// bins is the sum of batch x step duration (the engine's `batch_seconds`), and likewise for KV
/// blocks. Empty without steps. Throws std::invalid_argument for bins == 0.
[[nodiscard]] std::vector<executor_bin> bin_steps(const executor_series& s, std::size_t bins);

/// A configuration's short name: its parameters with the keys' initials, "mbs=16 pp=off"
/// (`max_batch_size`, `prefill_priority`); the name when it has no parameters.
[[nodiscard]] std::string short_label(const tokchron::load_point& p);

/// Everything one `--plot DIR` draws.
struct plot_input {
  std::string title;    ///< the page's title, e.g. "tokchron-report trace.jsonl"
  std::string command;  ///< the command line of the run (shown on the page)
  /// The percentiles the summary table shows (the ones the CLI printed); empty: 50, 90, 95, 99.
  std::vector<double> printed_percentiles;
  std::vector<run_series> runs;
  /// The runs the distribution pictures draw (indices into `runs`; empty: all). Every run's
  /// values are in the data files either way.
  std::vector<std::size_t> drawn;
  std::string drawn_note;  ///< why those (caption of the distribution and executor pictures)
  tokchron::sla sla;       ///< SLO lines, the frontier's axes and shaded region
  std::optional<sweep_result> sweep;      ///< a sweep's load points and plan: the frontier picture
  std::vector<sample_request> samples;    ///< the token timeline (e.g. `pick_samples`)
  std::string samples_from;               ///< which run the samples come from (caption)
  std::vector<executor_series> executor;  ///< batch / queue / KV over time
  std::string report_text;  ///< the CLI's own text report, shown verbatim (may be empty)
};

/// How to render.
struct plot_options {
  std::string gnuplot = "gnuplot";  ///< program name (searched on PATH) or path
  bool render = true;               ///< false: write data and scripts only
  std::size_t executor_bins = 300;  ///< time bins of the executor picture
};

/// One picture: its base name (`NAME.gp`, `NAME.svg`, `NAME.png`), the data files it reads and
/// whether gnuplot rendered it.
struct picture {
  std::string name;
  std::string caption;
  std::vector<std::string> data;
  bool rendered = false;
};

/// What `write_plots` did.
struct plot_result {
  std::vector<picture> pictures;
  bool gnuplot_found = false;
  /// Empty when every picture rendered; else why not and how to render them later.
  std::string note;
  /// "wrote N pictures to DIR/index.html" or the note.
  [[nodiscard]] std::string to_string(const std::string& dir) const;
};

/// Writes the data files, scripts, pictures (when gnuplot is found) and index.html of `in` into
/// `dir` (created if missing; files of the same names are replaced). Throws
/// std::invalid_argument when `in.sweep` does not have one point per run, and
/// std::runtime_error when a file cannot be written or gnuplot fails on a script (its messages
/// are in `dir/gnuplot.log`).
plot_result write_plots(const plot_input& in, const std::string& dir, const plot_options& opt = {});
/// As above, with `extra` pictures whose data and scripts the caller wrote into `dir` (rendered
/// and listed after the others).
plot_result write_plots(const plot_input& in, const std::string& dir,
                        const std::vector<picture>& extra, const plot_options& opt = {});

/// tokchron-report's `--plot DIR`: the trace's timelines summarised under each profile (one
/// line each, printed percentiles `o.percentiles`, else the first profile's defaults; `o`'s GPU
/// count and duration as printed), the SLA's lines, and the slowest, median and most-preempted
/// request's token timeline, each named by `names[i]` (its trace id; empty: "request i+1").
/// Throws as `write_plots`, and std::invalid_argument unless `names` is empty or has one name
/// per timeline.
plot_result plot_trace(const std::vector<tokchron::trace_timeline>& tls,
                       const std::vector<std::string>& names,
                       const std::vector<const tokchron::profile*>& profiles,
                       const tokchron::summary_options& o, const tokchron::sla& sla,
                       const std::string& title, const std::string& command, const std::string& dir,
                       const plot_options& opt = {});

}  // namespace plot

#endif  // TOKCHRON_TOOLS_PLOT_PLOT_HPP
