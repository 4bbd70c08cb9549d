// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_APP_RUN_REPORTS_HPP
#define TOKCHRON_TOOLS_EXECUTOR_APP_RUN_REPORTS_HPP

/// \file
/// Everything the executor reports goes through tokchron: the run summary
/// (metrics/run_summary.hpp under a profile), SLA verdicts (sla/evaluator.hpp), the capacity
/// planner (sla/capacity.hpp), the claim audit of its own figures (sla/consistency.hpp), the
/// JSONL trace (io/trace_json_writer.hpp) and the Prometheus text (export/prometheus.hpp). This
/// file only gathers their inputs and lays out their outputs.

#include <iosfwd>
#include <string>
#include <vector>

#include "cli.hpp"
#include "engine.hpp"
#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/sla/capacity.hpp"
#include "tokchron/sla/consistency.hpp"
#include "tokchron/sla/objective.hpp"
#include "tokchron/sla/verdict.hpp"

namespace batching {

/// How runs are judged and summarised.
struct report_settings {
  const tokchron::profile* profile = &tokchron::profiles::canonical;
  tokchron::summary_options summary;
  tokchron::sla objectives;
};
/// Builds the settings from the command line. Throws `usage_error` (unknown profile, bad
/// percentile list, bad SLO).
[[nodiscard]] report_settings settings_from(const command_line& cl);
/// When slo_aware prefill priority has no explicit TTFT target, takes it from the first
/// `ttft <` / `ttft <=` objective.
void apply_slo_defaults(run_config& c, const tokchron::sla& s);

/// One configuration's run, and what tokchron makes of it.
struct outcome {
  configuration conf;
  run_result run;
  tokchron::run_summary summary;
  tokchron::sla_verdict verdicts;
  tokchron::claims claimed;      ///< the figures this run reports, for the audit
  tokchron::audit_report audit;  ///< the claim audit of those figures
};

/// Summarises, judges and audits one finished run.
[[nodiscard]] outcome evaluate(configuration conf, run_result run, const report_settings& s);

/// The figures a run reports (summary, configuration, sim hardware), as audit claims.
[[nodiscard]] tokchron::claims claims_of(const outcome& o);

/// Load points for the capacity planner: throughput = output tokens/s.
[[nodiscard]] std::vector<tokchron::load_point> load_points(const std::vector<outcome>& all);

/// The sweep table: one row per configuration, then the planner's choice and its reasons.
void write_sweep_table(std::ostream& out, const std::vector<outcome>& all);
/// One run: its summary, the engine's counters, the verdicts and the audit.
void write_run_table(std::ostream& out, const outcome& o);
/// `--format json`: per configuration the tokchron-report JSON of its summary plus the
/// configuration, engine counters, verdicts and audit; for a sweep, the planner's choice.
void write_json(std::ostream& out, const std::vector<outcome>& all);

/// Whether `q` counts in the reports: it arrived after the warm-up and before the end of the
/// run (later ones are background load, aborted when the last run request finished).
[[nodiscard]] bool measured(const run_config& c, const request& q) noexcept;
/// The start of the measured window (the warm-up's end): the run's benchmark start, which
/// starts the duration of the summary and is the `benchmark_start` of `write_trace`.
[[nodiscard]] time_point benchmark_start(const run_config& c) noexcept;
/// Writes every measured request of `o` as one tokchron JSONL trace line (times in seconds since
/// the start of the run; `benchmark_start` is the start of the measured window, the warm-up's
/// end).
void write_trace(std::ostream& out, const outcome& o);
/// `--metrics-out`: the Prometheus text of the runs (metrics_report.cpp): request counters by
/// finish reason, latency histograms on vLLM's bucket boundaries, the run summary's and the SLA
/// verdicts' gauges (`tokchron_run_*`, `tokchron_slo_*`), busy / KV gauges; a `config` label
/// per run.
[[nodiscard]] std::string prometheus_text(const std::vector<outcome>& all);

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_APP_RUN_REPORTS_HPP
