// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_TOOLS_BENCH_SWEEP_HPP
#define TOKCHRON_TOOLS_BENCH_SWEEP_HPP

/// \file
/// `--rate sweep`, the steady-state window and `--repeat` (docs/tools/tokchron-bench.md, "Rate
/// sweep and steady state"): the rates GuideLLM's sweep places between its synchronous and its
/// throughput point, each run's metrics over its steady-state window, and Student's t interval
/// over repeated runs.

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokchron/io/trace.hpp"
#include "tokchron/sla/goodput.hpp"

namespace tokchron_bench {

namespace tc = tokchron;

/// The open-loop rates of a sweep of `n` points after its synchronous point (measured
/// `synchronous` requests/s) and its throughput point (`throughput` requests/s): GuideLLM's
/// `np.linspace(synchronous, throughput, n + 1)[1:]` (src/guidellm/benchmark/profiles/sweep.py,
/// `SweepProfile.next_strategy`; its `--rate` is our n + 2), so the last rate is the throughput
/// point's own. Rates that are not positive are dropped, as GuideLLM stops at one. Throws
/// std::invalid_argument when neither rate is positive or either is not finite.
[[nodiscard]] std::vector<double> sweep_rates(double synchronous, double throughput, unsigned n);

/// The steady-state window of one run, in seconds on the trace's clock, the interval
/// (start_s, end_s]: from the first end of a request (ramp-up: every request in flight from then
/// on was sent under the run's load, and the first one has been served whole) to the first end
/// at or after the last send (drain: nothing is sent after the last send, and until that end
/// as many requests are in flight as then; from it on the load only falls). Both edges are the
/// first end at or after an instant, so they sit at the same place in a burst of ends (a batch
/// that completes together) and the window holds whole batches: every rate over it counts the
/// events in (start_s, end_s] (an event at start_s is out, one at end_s in), and on ends that
/// come in equal batches the request rate is the completion rate exactly. Empty when no request
/// ended before the last send, or none at or after it.
struct steady_window {
  double start_s = 0, end_s = 0;
  [[nodiscard]] double length_s() const noexcept { return end_s - start_s; }
  [[nodiscard]] bool empty() const noexcept { return !(end_s > start_s); }
};

/// One run's figures over its steady-state window.
struct window_metrics {
  steady_window window;
  double run_start_s = 0;  ///< the earliest arrival of the run (the seconds below count from it)
  std::uint64_t requests = 0;               ///< requests of the run (the trace's lines)
  std::uint64_t ended = 0;                  ///< of which ended in (start_s, end_s]
  std::uint64_t succeeded = 0, failed = 0;  ///< of those, by outcome
  std::uint64_t output_tokens = 0;     ///< token-chunk tokens received in the window (any request)
  std::optional<double> request_rate;  ///< succeeded / window length
  std::optional<double> output_rate;   ///< output_tokens / window length
  /// Canonical TTFT, TPOT and E2E (seconds) of the requests that succeeded in the window: P50,
  /// P99 (nearest rank), empty without samples.
  std::optional<double> ttft_p50, ttft_p99, tpot_p50, tpot_p99, e2e_p50, e2e_p99;
  std::optional<tc::goodput_result> goodput;  ///< with limits: GuideLLM's inclusion rules
};

/// Measures `runs` (one run's requests, canonical definitions) over its steady-state window.
/// With `slo`, goodput over the window: every request that ended in it is judged (a failed one
/// is not good), a request a limit cannot judge is left out (`missing_metric_rule::excluded`),
/// and requests that ended after the window are not counted (GuideLLM's "incomplete").
[[nodiscard]] window_metrics measure_window(const std::vector<tc::trace_timeline>& run,
                                            const std::optional<tc::request_slo>& slo);

/// The quantile of Student's t distribution with `df` degrees of freedom at probability `p` in
/// (0, 1), by bisection on its distribution function (the regularized incomplete beta function,
/// its continued fraction), to 1e-10.
[[nodiscard]] double student_t_quantile(double p, double df);

/// A sample's mean and its two-sided t interval (AIPerf's multi-run confidence,
/// src/aiperf/orchestrator/aggregation/confidence.py: mean +- t(1 - alpha/2, n - 1) s / sqrt(n),
/// s with n - 1). With one value the interval is that value and `sd`, `t` are empty.
struct interval {
  std::size_t n = 0;
  double mean = 0, low = 0, high = 0;
  std::optional<double> sd, t;
};
/// Throws std::invalid_argument for an empty sample, a non-finite value or a confidence outside
/// (0, 1).
[[nodiscard]] interval t_interval(const std::vector<double>& xs, double confidence);

/// What a sweep point's runs measured, for the summary after the last point.
struct point_runs {
  std::string label;                 ///< "synchronous", "throughput", a rate, a --sweep value
  std::optional<double> offered;     ///< requests/s asked of an open loop
  std::vector<window_metrics> runs;  ///< one per --repeat
};

/// The sweep's summary table: each point's steady-state request and output rates, P50 TTFT and
/// TPOT, and goodput (with limits), as the mean over its runs with the t interval at
/// `confidence` when it has more than one.
void print_summary(std::ostream& out, const std::string& title,
                   const std::vector<point_runs>& points, double confidence);

/// One run's window figures as JSON (seconds, counts, rates; goodput with its counts).
[[nodiscard]] nlohmann::json window_json(const window_metrics& w);
/// The window line printed after a run's report: its bounds and its figures.
void print_window(std::ostream& out, const window_metrics& w);

}  // namespace tokchron_bench

#endif  // TOKCHRON_TOOLS_BENCH_SWEEP_HPP
