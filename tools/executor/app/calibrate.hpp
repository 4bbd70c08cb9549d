// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_APP_CALIBRATE_HPP
#define TOKCHRON_TOOLS_EXECUTOR_APP_CALIBRATE_HPP

/// \file
/// `batching-executor calibrate`: fits the sim backend's constants to measured traces
/// (docs/tools/capacity-planning.md). Each trace (a tokchron JSONL trace, or a vLLM
/// `--save-detailed` result, read by tokchron-report's reader) is replayed through the scheduler
/// on the sim backend with the run's known configuration (hardware, model, max batch, token
/// budget): the same arrivals (recorded times, or a fixed concurrency), the same prompt and
/// output lengths. A Nelder-Mead search (nelder_mead.hpp) moves the free constants to minimise
/// the mean squared log ratio of simulated to measured TTFT, TPOT, ITL and E2E quantiles and
/// output throughput, over every trace together. Then each constant's sensitivity is measured:
/// one that moves the error by less than `identifiable_rms` when changed by 25 % either way is
/// reported as not identifiable from the traces and kept at its starting value.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "engine.hpp"
#include "nelder_mead.hpp"
#include "sim_backend.hpp"
#include "tokchron/io/trace.hpp"
#include "tokchron/metrics/run_summary.hpp"

namespace batching {

/// The constants a fit moves by default: eta_bw, eta_compute, t_fixed, t_seq, t_request.
/// `--fit` may name t_seq2, t_front and t_client too (a server's batch-size term, its latency
/// outside the engine loop, its closed-loop client's round trip).
[[nodiscard]] std::vector<std::string> default_fit_keys();
/// A comma-separated list of those keys. Throws `std::invalid_argument` for another name or an
/// empty list.
[[nodiscard]] std::vector<std::string> parse_fit_keys(const std::string& list);

/// A change of the RMS log error below this, for a 25 % change of a constant either way, makes
/// the constant not identifiable (0.005: half a percent of typical error).
inline constexpr double identifiable_rms = 0.005;

/// How much the error depends on one constant at the fit.
struct constant_sensitivity {
  std::string key;
  double value = 0;
  /// RMS log error with the constant x1.25 and x0.8 (a time: raised by at least a quarter of
  /// its scale, a tenth of t_fixed for t_seq and t_fixed for t_request, so a time fitted to 0
  /// is tested where it would matter)
  double rms_up = 0, rms_down = 0;
  bool identifiable = true;
};

/// The outcome of `fit_constants`.
struct fit_result {
  std::vector<std::pair<std::string, double>> constants;  ///< every key, fitted or kept
  double rms_start = 0, rms = 0;  ///< RMS log error at the start and at the fit
  std::size_t evals = 0;
  std::vector<constant_sensitivity> sensitivity;  ///< one per key
};

/// The error of a set of constants (`--sim` KEY=VALUE pairs): a mean squared log ratio.
using fit_objective = std::function<double(const std::vector<std::pair<std::string, double>>&)>;

/// Fits `keys` from their values in `start` (a zero time starts at a small positive value):
/// efficiencies on a logit scale, times on a log scale; then the sensitivity of each, and a
/// refit with the unidentifiable ones held at their starting values.
[[nodiscard]] fit_result fit_constants(const std::vector<std::string>& keys,
                                       const sim_config& start, const fit_objective& objective,
                                       const nelder_mead_options& opt = {});

/// One measured request, as the replay needs it.
struct replay_request {
  double arrival_s = 0;  ///< since the trace's first arrival
  std::uint32_t prompt = 0, output = 0;
  /// Prompt tokens the server had cached (the trace's `cached_prompt_tokens`): replayed as
  /// warm tokens, not computed again.
  std::uint32_t cached = 0;
};

/// One measured load point: the requests, the run's configuration, how arrivals are replayed,
/// and the measured summary.
struct calib_trace {
  std::string file, label;
  run_config cfg;                            ///< backend sim; the trace's known configuration
  std::optional<std::uint32_t> concurrency;  ///< replay at most this many in flight (else times)
  /// With `concurrency`: keep that many in flight until the last traced request finished
  /// (batching-executor's closed loop; its trace leaves the later requests out).
  bool background = false;
  /// With `concurrency`: a closed loop; after the first N, each request leaves when one
  /// finishes (plus the sim's t_client), whatever its recorded send time (without it, not
  /// before its recorded time either: an open loop capped at N in flight).
  bool closed = false;
  std::vector<replay_request> requests;  ///< the successful ones, in arrival order
  /// Where each of its files (rounds of one load, `a.jsonl+b.jsonl`) starts in `requests`:
  /// each is replayed on its own, and the summaries pool every request over the summed
  /// durations of the rounds. {0} for one file.
  std::vector<std::size_t> segment_starts{0};
  std::size_t failed = 0;  ///< requests that did not succeed (not replayed)
  std::vector<tokchron::trace_timeline> timelines;  ///< the successful ones
  tokchron::run_summary measured;
};

/// What calibrate compares: TTFT, TPOT, ITL and E2E at `percentiles`, and output throughput.
struct calib_settings {
  std::vector<double> percentiles{50, 90, 95, 99};
  double throughput_weight = 4;  ///< weight of the throughput term (one quantile term: 1)
};

/// Loads a trace (`kind`: auto, trace or vllm; `file` may join the rounds of one load with `+`,
/// see `calib_trace::segment_starts`) and checks it against `cfg`: throws
/// `std::invalid_argument` for an empty trace, one without a successful request, a request
/// without a prompt length, or a request the configuration cannot hold (its KV cache, or the
/// token budget without chunked prefill), naming the file and the request.
[[nodiscard]] calib_trace load_calib_trace(const std::string& file, const std::string& kind,
                                           const run_config& cfg,
                                           std::optional<std::uint32_t> concurrency,
                                           const calib_settings& s);

/// The replay of `t` on the sim backend with `sim`: one run per round (`segment_starts`).
[[nodiscard]] std::vector<run_result> simulate_run(const calib_trace& t, const sim_config& sim);
/// The simulated summary of `t` under `sim` (the trace's configuration with these constants).
[[nodiscard]] tokchron::run_summary simulate_trace(const calib_trace& t, const sim_config& sim,
                                                   const calib_settings& s);

/// One compared figure: a metric's quantile (or "out tok/s"), measured and simulated.
struct calib_residual {
  std::string metric;     ///< ttft, tpot, itl, e2e, throughput
  double percentile = 0;  ///< 0 for throughput
  double measured = 0, simulated = 0;
  [[nodiscard]] double ratio() const noexcept { return simulated / measured; }
};
/// The figures of one trace that the objective compares (those the measured run has).
[[nodiscard]] std::vector<calib_residual> residuals(const tokchron::run_summary& measured,
                                                    const tokchron::run_summary& simulated,
                                                    const calib_settings& s);
/// The weighted mean squared log ratio of `r` (the objective of one or more traces).
[[nodiscard]] double mean_squared_log(const std::vector<calib_residual>& r,
                                      const calib_settings& s);

/// `batching-executor calibrate ...` (arguments after the word); returns the exit code.
int calibrate_main(const std::vector<std::string>& args);

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_APP_CALIBRATE_HPP
