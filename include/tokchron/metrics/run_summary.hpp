// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_METRICS_RUN_SUMMARY_HPP
#define TOKCHRON_METRICS_RUN_SUMMARY_HPP

/// \file
/// Run summaries: what a benchmark tool prints at the end of a run, computed from a set of
/// finished timelines under a `profile` (metrics/builtin_profiles.hpp): duration, completed and
/// failed counts, request / output / total token throughput (also per GPU), mean concurrency (sum
/// E2E / duration and the time-weighted in-flight average), peak concurrency, and for each metric
/// (ttft, tpot, itl, e2e, queue_time, prefill_time, decode_time, output_rate) count, mean, median,
/// std, min, max and percentiles, plus the prompt and output length distributions.
///
/// Statistics are exact: every sample is kept, and percentiles are read by the profile's
/// `quantile_method` (the formulas of `exact_quantiles`), so a tool's numbers are reproduced to
/// rounding (relative difference below 1e-12 in the tests). Memory: 8 bytes per sample;
/// building the summary does not sort: the order statistics it reads (percentiles, median, min,
/// max) are found by a radix selection (`detail::select_ranks`, O(n)), and means are summed in
/// the order the samples were added. Only completed requests (by the
/// profile's rule) enter the latency statistics and token totals, unless
/// `summary_options::inclusion` names another population (metrics/inclusion.hpp: the one a
/// server's live metrics count); every request counts for the duration and the in-flight
/// concurrency, and in `requests_by_reason`. Thread safety: a summarizer has one writer.
///
/// Goodput and SLA fields are added by `sla/` (into `run_summary::extra`), from the per-request
/// values kept when `summary_options::keep_requests` is set.

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/detail/decimal.hpp"
#include "tokchron/metrics/builtin_profiles.hpp"
#include "tokchron/metrics/distribution.hpp"
#include "tokchron/metrics/inclusion.hpp"
#include "tokchron/quantile/exact.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// What to summarise and how.
struct summary_options {
  /// Percentiles in percent (each in [0, 100]); empty: the profile's defaults.
  std::vector<double> percentiles;
  /// GPUs serving the run, for the per-GPU throughputs (empty: not reported).
  std::optional<unsigned> gpus;
  /// The run's duration in seconds when known from outside (e.g. a vLLM result file's
  /// `duration`); otherwise measured by the profile's duration rule.
  std::optional<double> duration;
  /// Keep every request's `request_metrics` in `run_summary::requests` (for goodput and SLAs).
  bool keep_requests = false;
  /// Which requests enter the statistics and token totals, family by family, as a server's
  /// live metrics under the same `live_options::inclusion` count them (metrics/inclusion.hpp):
  /// `completed` (stop, length), `scheduled`, `all`. Empty: the profile's own rule (the
  /// requests its tool counts as completed), which is how a tool's numbers are reproduced.
  /// With a policy, the latency statistics, lengths and output tokens count the requests of
  /// `inclusion_family::per_request`, the input tokens those of `prompt_tokens`, and the pooled
  /// ITL samples every request's (`itl`), each value still by the profile's definitions.
  std::optional<inclusion_policy> inclusion;
  /// Runs the distributions' computations (one task per distinct sample set) when the summary is
  /// built: a pool the caller owns, to spread them over its threads. Empty: one after another on
  /// the calling thread. tokchron starts no thread; the summary does not depend on it.
  task_executor executor;
};

/// One warning of a run summary: a quirk of the profile's tool, or a decision where the tool would
/// crash or abort, that affected the numbers (docs/library/definitions.md, "Profiles").
struct profile_warning {
  std::string quirk;    ///< a stable key, e.g. "negative_tpot"
  std::uint64_t count;  ///< how many requests (or samples, or metrics) it affected
  std::string message;  ///< "mlperf: 3 requests with fewer than 2 tokens: ..."
};

/// A run as one profile reports it. Throughputs are per second of `duration`; every value that
/// needs a positive duration is empty without one.
struct run_summary {
  std::string profile;          ///< the profile's name
  std::uint64_t requests = 0;   ///< every request summarised
  std::uint64_t completed = 0;  ///< completed by the profile's rule
  std::uint64_t failed = 0;     ///< requests - completed
  /// Requests by finish reason (indexed by `finish_reason`: stop, length, aborted, error,
  /// timed_out, rejected); requests - their sum never finished.
  std::array<std::uint64_t, finish_reason_count> requests_by_reason{};
  /// The population of the statistics: `summary_options::inclusion` (empty: the profile's
  /// completed requests).
  std::optional<inclusion_policy> inclusion;
  std::uint64_t input_tokens = 0;   ///< sum of prompt tokens over completed (included) requests
  std::uint64_t output_tokens = 0;  ///< sum of N over completed (included) requests
  std::optional<double> duration;   ///< seconds
  std::optional<double> request_throughput;      ///< requests/s by the profile's rps rule
  std::optional<double> output_throughput;       ///< output tokens/s
  std::optional<double> total_token_throughput;  ///< (input + output) tokens/s
  std::optional<unsigned> gpus;
  std::optional<double> request_throughput_per_gpu, output_throughput_per_gpu,
      total_token_throughput_per_gpu;
  std::optional<double> mean_concurrency;  ///< sum E2E (completed) / duration
  /// In-flight requests averaged over time: every request from its origin to its finish
  /// (GuideLLM: to its request_end, the [DONE] line, which makes it its printed Concurrency mean).
  std::optional<double> time_weighted_concurrency;
  std::uint64_t peak_concurrency = 0;  ///< most requests in flight at once
  /// Per-metric statistics, named as in metrics/metric_table.hpp. `itl` pools the profile's ITL
  /// samples (per chunk or per token) or holds one value per request (per-request grains);
  /// `output_rate` is the per-user tokens/s of the profile's rule.
  distribution ttft, tpot, itl, e2e, queue_time, prefill_time, decode_time, output_rate;
  /// The metrics of the profile's `extra_metrics` (empty for the others): time to first answer
  /// token, reasoning time, TTST, pooled inter-chunk latencies, prefill throughputs, speculative
  /// acceptance.
  distribution ttfa, reasoning_time, ttst, icl, prefill_tps, uncached_prefill_tps, spec_acceptance;
  distribution prompt_lengths, output_lengths;  ///< tokens, completed requests
  /// Reasoning tokens of the completed requests that had any (AIPerf's reasoning_token_count).
  distribution reasoning_lengths;
  std::uint64_t reasoning_tokens = 0;  ///< sum of reasoning tokens over completed requests
  std::vector<request_metrics> requests_detail;  ///< when `keep_requests`
  /// Further named values added by later stages (goodput, SLA attainment), in output order.
  std::vector<std::pair<std::string, std::optional<double>>> extra;
  /// What the profile's quirks did to this run (`profile_warnings` words them).
  struct quirk_counts {
    std::uint64_t usage_chunks_ignored = 0;  ///< requests with usage-only chunks taken as absent
    std::uint64_t usage_not_read = 0;   ///< requests whose unread usage differs from the stream
    std::uint64_t ttft_defaulted = 0;   ///< completed requests without a response: TTFT 0 kept
    std::uint64_t gaps_split = 0;       ///< ITL samples restarted at an uncounted chunk
    std::uint64_t one_response = 0;     ///< N > 1 in one response: no TPOT / ITL
    std::uint64_t negative_tpot = 0;    ///< N < 2: negative TPOT kept (MLPerf)
    std::uint64_t no_first_token = 0;   ///< engine-side, completed with no token: no TTFT
    std::uint64_t failed_left_out = 0;  ///< failed requests left out of the duration
    std::uint64_t ended_after_last_issued = 0;  ///< requests ending after the last issued one
    std::uint64_t not_streamable = 0;  ///< completed, under 2 tokens: no TTFT (inference-perf)
    std::uint64_t usage_unseen = 0;    ///< completed, usage count from where the tool never reads
    std::uint64_t failed_after_done = 0;  ///< failed after [DONE]: completed for the tool
    /// No benchmark start was known: the duration starts at the earliest intended arrival.
    bool start_is_earliest_arrival = false;
  } quirks;

  /// The distribution kept of metric `m` (metrics/metric_table.hpp), or nullptr for a metric a run
  /// summary does not keep (ttft_from_send, ttft_from_scheduled, normalized_latency, fluidity).
  [[nodiscard]] const distribution* of(metric_id m) const noexcept {
    return const_cast<run_summary&>(*this).of(m);
  }
  [[nodiscard]] distribution* of(metric_id m) noexcept {
    switch (m) {
      case metric_id::ttft: return &ttft;
      case metric_id::tpot: return &tpot;
      case metric_id::itl: return &itl;
      case metric_id::e2e: return &e2e;
      case metric_id::queue_time: return &queue_time;
      case metric_id::prefill_time: return &prefill_time;
      case metric_id::decode_time: return &decode_time;
      case metric_id::output_rate: return &output_rate;
      case metric_id::ttfa: return &ttfa;
      case metric_id::reasoning_time: return &reasoning_time;
      case metric_id::ttst: return &ttst;
      case metric_id::icl: return &icl;
      case metric_id::prefill_tps: return &prefill_tps;
      case metric_id::uncached_prefill_tps: return &uncached_prefill_tps;
      case metric_id::spec_acceptance: return &spec_acceptance;
      default: return nullptr;
    }
  }
  /// True for the metrics that need server-side events (queued, scheduled) in the trace: reports
  /// show them only when some request recorded them.
  [[nodiscard]] static constexpr bool needs_server_events(metric_id m) noexcept {
    return m == metric_id::queue_time || m == metric_id::prefill_time ||
           m == metric_id::decode_time;
  }
  /// The metrics a run summary keeps, in output order.
  static constexpr metric_id kept[] = {metric_id::ttft,        metric_id::tpot,
                                       metric_id::itl,         metric_id::e2e,
                                       metric_id::queue_time,  metric_id::prefill_time,
                                       metric_id::decode_time, metric_id::output_rate};
  /// The metrics a run summary also keeps, which reports show only when some request measured
  /// them (reasoning, prompt caching, speculative decoding, and what only some tools report).
  static constexpr metric_id kept_when_measured[] = {
      metric_id::ttfa,           metric_id::reasoning_time,
      metric_id::ttst,           metric_id::icl,
      metric_id::prefill_tps,    metric_id::uncached_prefill_tps,
      metric_id::spec_acceptance};
};

/// The warnings of `s`: each quirk of the profile's tool, or decision where the tool would crash
/// or abort, that affected its numbers, with a count; none when no quirk applied.
[[nodiscard]] inline std::vector<profile_warning> profile_warnings(const run_summary& s) {
  std::vector<profile_warning> out;
  const run_summary::quirk_counts& q = s.quirks;
  auto add = [&](const char* key, std::uint64_t n, const char* one, const char* many,
                 const std::string& what) {
    if (n == 0) return;
    out.push_back(profile_warning{
        key, n, s.profile + ": " + std::to_string(n) + " " + (n == 1 ? one : many) + what});
  };
  add("usage_chunks_ignored", q.usage_chunks_ignored, "request has", "requests have",
      " usage-only chunks, which the tool never asks for (no stream_options.include_usage) and "
      "would fail on: treated as absent");
  add("usage_not_read", q.usage_not_read, "request reports", "requests report",
      " a usage count other than its streamed tokens: the tool never reads usage (N = the "
      "streamed tokens, standing in for its re-encode of the text)");
  add("ttft_defaulted", q.ttft_defaulted, "completed request has", "completed requests have",
      " no counted response: the tool's default TTFT of 0 enters the TTFT statistics");
  add("gaps_split", q.gaps_split, "ITL sample starts", "ITL samples start",
      " at an uncounted chunk in mid-stream: the tool restarts the gap at every chunk");
  add("one_response", q.one_response, "request has", "requests have",
      " all of its tokens in one response: no TPOT or ITL (the tool needs num_responses > 1)");
  add("negative_tpot", q.negative_tpot, "request has", "requests have",
      " fewer than 2 tokens: loadgen sets n_tokens to 0 and stores TPOT = (latency - TTFT) / -1, "
      "0 here (the completion is the answer's one token chunk; a later completion would make it "
      "negative), kept in the TPOT count, minimum, percentiles and mean, and counts its tokens "
      "as 0");
  add("no_first_token", q.no_first_token, "completed request has", "completed requests have",
      " no token: the tool would read an unset first-token time (gptManagerBenchmark's "
      "firstTokenTs, loadgen's invalid latency); its intent: no TTFT or TPOT");
  add("failed_left_out", q.failed_left_out, "failed request is", "failed requests are",
      " left out of the duration: the tool aborts the run on a failed request (its intent: "
      "completed requests only)");
  add("not_streamable", q.not_streamable, "completed request has", "completed requests have",
      " fewer than 2 output time stamps (tokens; without a tokenizer, content chunks): the tool "
      "calls it not streamable and gives it no TTFT, TPOT or ITL (len(output_token_times) > 1)");
  add("usage_unseen", q.usage_unseen, "completed request reports", "completed requests report",
      " a usage count the tool would not have read (its usage_source is one the tool does not "
      "read, or the trace does not say and lists no usage chunk): N is counted from the "
      "stream instead");
  add("failed_after_done", q.failed_after_done, "request fails", "requests fail",
      " after the [DONE] line, where the tool stops reading: completed for the tool");
  add("ended_after_last_issued", q.ended_after_last_issued, "request ends", "requests end",
      " after the last issued one, where the duration ends (loadgen's "
      "final_query_all_samples_done_time)");
  if (q.start_is_earliest_arrival)
    out.push_back(profile_warning{"no_benchmark_start", 1,
                                  s.profile +
                                      ": the trace records no benchmark start: the duration "
                                      "starts at the earliest intended arrival (a server "
                                      "records its own: benchmark_start on every line, e.g. "
                                      "trace_record::benchmark_start = 0 when the trace's time "
                                      "0 is its start)"});
  std::string means;
  std::uint64_t n_means = 0;
  for (const metric_id m : {metric_id::ttft, metric_id::tpot, metric_id::itl, metric_id::e2e})
    if (s.of(m)->mean_by_tool) {
      means += (n_means++ ? ", " : "") + std::string(to_string(m));
    }
  if (n_means)
    out.push_back(profile_warning{
        "mean_by_tool", n_means,
        s.profile + ": " + std::to_string(n_means) + " mean" + (n_means == 1 ? " (" : "s (") +
            means +
            ") in the tool's arithmetic, not the exact mean (int64 ns truncated, or "
            "float ms summed in order)"});
  if (s.e2e.mean_median_swapped)
    out.push_back(profile_warning{"mean_median_swapped", 1,
                                  s.profile +
                                      ": e2e mean and median swapped, as the tool prints them "
                                      "(mean_e2el_ms = np.median, median_e2el_ms = np.mean)"});
  return out;
}

/// Parses a comma-separated percentile list such as "50,90,99.9" (percent, each in [0, 100]).
/// Throws std::invalid_argument naming the bad item.
[[nodiscard]] inline std::vector<double> parse_percentiles(std::string_view s) {
  std::vector<double> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t comma = std::min(s.find(',', pos), s.size());
    std::string_view item = s.substr(pos, comma - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    double v = 0;
    const auto res = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || res.ec != std::errc() || res.ptr != item.data() + item.size() ||
        !(v >= 0.0 && v <= 100.0))
      TOKCHRON_THROW(
          std::invalid_argument,
          ("tokchron: percentile '" + std::string(item) + "' is not a number in [0, 100]").c_str());
    if (!detail::reads_back(item, v))  // 99.99999999999999999999 would be 100, the maximum
      TOKCHRON_THROW(std::invalid_argument,
                     ("tokchron: percentile '" + std::string(item) +
                      "' has more digits than a double holds: it would be read as another "
                      "number")
                         .c_str());
    out.push_back(v);
    pos = comma + 1;
  }
  return out;
}

/// The report key of a percentile: "p50", "p99.9" (the shortest fixed-point form that reads
/// back exactly).
[[nodiscard]] inline std::string percentile_key(double percent) {
  char buf[48];
  for (int decimals = 0; decimals <= 17; ++decimals) {
    std::snprintf(buf, sizeof buf, "%.*f", decimals, percent);
    if (std::strtod(buf, nullptr) == percent) break;
  }
  return std::string("p") + buf;
}

template <class Timeline>
class multi_profile_summarizer;

/// Accumulates timelines (with a full_store) and produces one profile's `run_summary`.
///
/// \code
///   tokchron::run_summarizer<tokchron::request_timeline> s(tokchron::profiles::vllm);
///   for (const auto& tl : finished) s.add(tl);
///   tokchron::run_summary r = s.summary();   // r.ttft.at(99), r.output_throughput, ...
/// \endcode
/// `add` is O(chunks) and may throw std::bad_alloc; the summarizer is unchanged if it does.
template <class Timeline>
class run_summarizer {
 public:
  using time_point = typename Timeline::time_point;

  /// Throws std::invalid_argument for a percentile outside [0, 100], zero GPUs, or a
  /// non-positive or non-finite duration.
  explicit run_summarizer(const profile& p, summary_options o = {}) : p_(&p), o_(std::move(o)) {
    if (o_.percentiles.empty()) o_.percentiles = parse_percentiles(p.default_percentiles);
    for (double pc : o_.percentiles)
      if (!(pc >= 0.0 && pc <= 100.0))
        TOKCHRON_THROW(std::invalid_argument, "tokchron: percentiles must be in [0, 100]");
    if (o_.gpus && *o_.gpus == 0)
      TOKCHRON_THROW(std::invalid_argument, "tokchron: the GPU count must be positive");
    if (o_.duration && !(std::isfinite(*o_.duration) && *o_.duration > 0))
      TOKCHRON_THROW(std::invalid_argument, "tokchron: the duration must be positive");
  }

  /// Adds one request.
  void add(const Timeline& tl) {
    std::optional<time_point> e2e_end_tp;
    const request_metrics r = add_itl(tl, e2e_end_tp);
    ++requests_;
    const auto origin = detail::origin_of(*p_, tl);
    std::optional<time_point> end = tl.finish_time();
    if (!end && tl.store().last_chunk_time()) end = tl.store().last_chunk_time();
    // In flight from the origin to the finish; for GuideLLM to its request_end (the [DONE]
    // line, else the end), over which its request_concurrency is taken.
    const std::optional<time_point> span_end =
        p_->guidellm_statistics && e2e_end_tp ? e2e_end_tp : end;
    if (origin && span_end) spans_.emplace_back(*origin, *span_end);
    count_quirks(r);
    // The run's end: an engine-side tool's request ends at its final response.
    std::optional<time_point> run_end = end;
    if (p_->end == e2e_end::last_token_chunk && e2e_end_tp) run_end = e2e_end_tp;
    if (const auto a = tl.arrival()) widen_start(*a);  // the intended arrival (else the send)
    switch (p_->duration) {
      case duration_rule::origin_to_finish:
        if (run_end) widen_end(*run_end);
        break;
      case duration_rule::completed_to_end:
        if (!r.completed) ++quirks_.failed_left_out;
        [[fallthrough]];
      case duration_rule::origin_to_e2e_end:
        if (r.completed && origin && e2e_end_tp) {
          if (!first_request_ || *origin < *first_request_) first_request_ = *origin;
          if (!last_response_ || *e2e_end_tp > *last_response_) last_response_ = *e2e_end_tp;
        }
        break;
      case duration_rule::all_origin_to_end: {
        const std::optional<time_point> e = e2e_end_tp ? e2e_end_tp : end;
        if (origin && e) {
          if (!first_request_ || *origin < *first_request_) first_request_ = *origin;
          if (!last_response_ || *e > *last_response_) last_response_ = *e;
        }
        break;
      }
      case duration_rule::last_issued_to_end: {
        const auto issued = tl.arrival();  // loadgen's issue order is its schedule
        if (issued && (!last_issued_ || *issued >= *last_issued_)) {
          last_issued_ = issued;
          last_issued_end_ = run_end;
        }
        if (run_end) ends_.push_back(*run_end);
        break;
      }
    }
    if (o_.keep_requests) requests_detail_.push_back(r);
    if (p_->guidellm_statistics) token_window(tl, r, e2e_end_tp ? e2e_end_tp : end);
    if (const auto why = tl.reason()) ++by_reason_[static_cast<std::size_t>(*why)];
    if (r.completed) ++completed_;
    if (o_.inclusion && r.prompt_tokens &&
        includes(*o_.inclusion, inclusion_family::prompt_tokens, tl))
      input_tokens_ += *r.prompt_tokens;
    if (!(o_.inclusion ? includes(*o_.inclusion, inclusion_family::per_request, tl) : r.completed))
      return;
    output_tokens_ += r.output_tokens;
    output_len_.push_back(static_cast<double>(r.output_tokens));
    if (r.prompt_tokens) {
      if (!o_.inclusion) input_tokens_ += *r.prompt_tokens;
      prompt_len_.push_back(static_cast<double>(*r.prompt_tokens));
    }
    push(ttft_, r.ttft);
    if (p_->guidellm_statistics) {  // (value, weight): TPOT weighs N, ITL N - 1, a missing one 0
      if (r.tpot && r.output_tokens > 0) tpot_runs_.emplace_back(*r.tpot, r.output_tokens);
      if (r.output_tokens > 1) itl_runs_.emplace_back(r.itl.value_or(0.0), r.output_tokens - 1);
    } else {
      push(tpot_, r.tpot);
      if (p_->itl == itl_grain::per_request_tpot ||
          p_->itl == itl_grain::per_request_including_ttft ||
          p_->itl == itl_grain::per_request_span)
        push(itl_, r.itl);
    }
    if (r.tpot_invalid) ++tpot_invalid_;
    if (r.e2e) {
      e2el_.push_back(*r.e2e);
      e2el_sum_ += *r.e2e;
    }
    push(queue_, r.queue_time);
    push(prefill_, r.prefill_time);
    push(decode_, r.decode_time);
    push(rate_, r.output_rate);
    if (!r.output_rate) ++rate_invalid_;  // no rate (zero E2E, no tokens): counted, not lost
    push(ttfa_, r.ttfa);
    // GuideLLM's `time_to_first_output_token_ms or 0.0`: an answer without content enters as 0.
    if (p_->guidellm_statistics && p_->reports(metric_id::ttfa) && !r.ttfa) ttfa_.push_back(0.0);
    push(reasoning_, r.reasoning_time);
    push(ttst_, r.ttst);
    push(prefill_tps_, r.prefill_tps);
    push(uncached_tps_, r.uncached_prefill_tps);
    push(spec_, r.spec_acceptance);
    if (r.reasoning_tokens) {
      reasoning_tokens_ += *r.reasoning_tokens;
      reasoning_len_.push_back(static_cast<double>(*r.reasoning_tokens));
    }
    for_each_icl(*p_, tl, [this](double g) { icl_.push_back(g); });
  }

  /// The summary of everything added so far (the summarizer can keep accumulating). Copies the
  /// samples; `take_summary` does not.
  [[nodiscard]] run_summary summary() const {
    run_summarizer copy(*this);
    return copy.take_summary();
  }

  /// The summary, consuming the samples (the summarizer is left empty of samples).
  [[nodiscard]] run_summary take_summary() {
    if (!candidates_.empty()) {  // sharing another summarizer's samples: take a copy
      itl_ = itl_view();
      itl_runs_ = itl_runs_view();
      candidates_.clear();
    }
    run_summary s;
    std::vector<detail::distribution_job> jobs;
    collect_summary(s, jobs);
    detail::run_distribution_jobs(jobs, o_.executor);
    return s;
  }

  /// Sets the run's duration in seconds (as `summary_options::duration`), e.g. once a result
  /// file that states it has been read. Throws std::invalid_argument unless finite and > 0.
  void set_duration(double seconds) {
    if (!(std::isfinite(seconds) && seconds > 0))
      TOKCHRON_THROW(std::invalid_argument, "tokchron: the duration must be positive");
    o_.duration = seconds;
  }

  /// Lets this summarizer store no pooled ITL samples of its own while they equal those of one
  /// of `earlier` (summarizers of other profiles that are given every timeline before this
  /// one): each request's samples are compared with theirs, and only on the first difference
  /// are they copied and kept separately. Memory for n identical streams: one. Call before the
  /// first `add`; profiles with per-request ITL grains ignore it.
  void share_itl_with(const std::vector<const run_summarizer*>& earlier) {
    if (requests_ != 0 || !pools_samples(p_->itl)) return;
    for (const run_summarizer* e : earlier)
      if (e && e != this && pools_samples(e->p_->itl)) candidates_.push_back(e);
  }

  /// Sets the time the benchmark started (before its first request was sent): the start of the
  /// duration of every profile that measures from it (`profile::uses_benchmark_start`). Without
  /// one the earliest intended arrival stands in (and `run_summary::quirks` says so). tokchron-
  /// report takes it from the trace field `benchmark_start`.
  void set_benchmark_start(time_point t) noexcept { benchmark_start_ = t; }

  [[nodiscard]] const profile& profile_used() const noexcept { return *p_; }
  [[nodiscard]] const summary_options& options() const noexcept { return o_; }

 private:
  template <class>
  friend class multi_profile_summarizer;

  /// Fills the scalar fields of `s` and appends the jobs that compute its distributions (for
  /// several profiles with shared selections: `multi_profile_summarizer`). The jobs point into
  /// `s` and this summarizer: run them before either moves.
  void collect_summary(run_summary& s, std::vector<detail::distribution_job>& jobs) {
    const profile& p = *p_;
    s.profile = std::string(p.name);
    s.requests = requests_;
    s.completed = completed_;
    s.failed = requests_ - completed_;
    s.requests_by_reason = by_reason_;
    s.inclusion = o_.inclusion;
    s.input_tokens = input_tokens_;
    s.output_tokens = output_tokens_;
    s.quirks = quirks_;
    std::optional<time_point> start = start_, end = end_;
    if (!p.uses_benchmark_start()) {  // the first completed request to the last response
      start = first_request_;
      end = last_response_;
    } else {
      // The benchmark start; without one, the earliest intended arrival. A benchmark start later
      // than an arrival (records without the field) is not used past it.
      if (benchmark_start_ && (!start || *benchmark_start_ < *start)) start = benchmark_start_;
      s.quirks.start_is_earliest_arrival = !benchmark_start_ && start && !o_.duration;
      if (p.duration == duration_rule::last_issued_to_end) {
        end = last_issued_end_;
        s.quirks.ended_after_last_issued = 0;
        if (end)
          for (const time_point& e : ends_) s.quirks.ended_after_last_issued += e > *end ? 1 : 0;
      }
    }
    if (o_.duration)
      s.duration = *o_.duration;
    else if (start && end && *end > *start)
      s.duration = detail::tool_seconds(*end - *start, p.arithmetic);
    if (s.duration) {
      const double dur = *s.duration;
      double n = static_cast<double>(completed_);
      if (p.request_rate == rps_rule::all_requests) n = static_cast<double>(requests_);
      if (p.request_rate == rps_rule::completed_minus_one)
        n = completed_ > 0 ? static_cast<double>(completed_ - 1) : 0.0;
      s.request_throughput = n / dur;
      s.output_throughput = static_cast<double>(output_tokens_) / dur;
      if (p.arithmetic == tool_arithmetic::float_ms) {  // count / (float ms / 1000) in float
        const auto per_s = [&](double count) {
          return static_cast<double>(static_cast<float>(count) /
                                     (static_cast<float>(dur * 1e3) / 1000.F));
        };
        s.request_throughput = per_s(n);
        s.output_throughput = per_s(static_cast<double>(output_tokens_));
      }
      s.total_token_throughput = static_cast<double>(input_tokens_ + output_tokens_) / dur;
      if (p.guidellm_statistics) {  // every request's tokens over the token events' span
        s.output_throughput.reset();
        s.total_token_throughput.reset();
        if (token_first_ && token_last_ && *token_last_ > *token_first_) {
          const double span = to_seconds(*token_last_ - *token_first_);
          s.output_throughput = static_cast<double>(all_output_tokens_) / span;
          s.total_token_throughput =
              static_cast<double>(all_input_tokens_ + all_output_tokens_) / span;
        }
      }
      s.mean_concurrency = e2el_sum_ / dur;
      s.time_weighted_concurrency = in_flight_integral() / dur;
      if (o_.gpus) {
        const double g = *o_.gpus;
        s.request_throughput_per_gpu = *s.request_throughput / g;
        s.output_throughput_per_gpu = *s.output_throughput / g;
        s.total_token_throughput_per_gpu = *s.total_token_throughput / g;
      }
    }
    s.gpus = o_.gpus;
    s.peak_concurrency = peak_in_flight();
    s.tpot.invalid = tpot_invalid_;
    s.output_rate.invalid = rate_invalid_;
    s.reasoning_tokens = reasoning_tokens_;
    const std::pair<std::vector<double>*, distribution*> all[] = {
        {&ttft_, &s.ttft},
        {&tpot_, &s.tpot},
        {&itl_, &s.itl},
        {&e2el_, &s.e2e},
        {&queue_, &s.queue_time},
        {&prefill_, &s.prefill_time},
        {&decode_, &s.decode_time},
        {&rate_, &s.output_rate},
        {&prompt_len_, &s.prompt_lengths},
        {&output_len_, &s.output_lengths},
        {&ttfa_, &s.ttfa},
        {&reasoning_, &s.reasoning_time},
        {&ttst_, &s.ttst},
        {&icl_, &s.icl},
        {&prefill_tps_, &s.prefill_tps},
        {&uncached_tps_, &s.uncached_prefill_tps},
        {&spec_, &s.spec_acceptance},
        {&reasoning_len_, &s.reasoning_lengths}};
    const std::size_t itl_job = jobs.size() + 2;  // the third entry of `all`
    for (const auto& [samples, out] : all) {
      jobs.push_back(detail::distribution_job{samples, p_, &o_.percentiles, out});
      jobs.back().tool_mean =
          samples == &ttft_ || samples == &tpot_ || samples == &itl_ || samples == &e2el_;
      jobs.back().swap_mean_median = samples == &e2el_ && p.swaps_mean_median_e2e;
    }
    if (!candidates_.empty())  // the pooled ITL samples are another summarizer's: share them
      jobs[itl_job].samples = const_cast<std::vector<double>*>(&itl_view());
    jobs[itl_job].runs = &itl_runs_view();
    jobs[itl_job - 1].runs = &tpot_runs_;  // GuideLLM's token-weighted TPOT (else empty)
    s.requests_detail = std::move(requests_detail_);
    requests_detail_.clear();
  }

  /// The pooled ITL samples, wherever they are stored: single samples, and runs of equal
  /// samples (a k-token chunk's per-token samples), so memory is O(chunks).
  [[nodiscard]] const std::vector<double>& itl_view() const noexcept {
    return candidates_.empty() ? itl_ : candidates_.front()->itl_view();
  }
  [[nodiscard]] const sample_runs& itl_runs_view() const noexcept {
    return candidates_.empty() ? itl_runs_ : candidates_.front()->itl_runs_view();
  }
  void count_quirks(const request_metrics& r) noexcept {
    const auto& q = r.quirks;
    quirks_.usage_chunks_ignored += q.usage_chunks_ignored > 0 ? 1 : 0;
    if (!r.completed) return;
    quirks_.usage_not_read += q.usage_not_read ? 1 : 0;
    quirks_.ttft_defaulted += q.ttft_defaulted ? 1 : 0;
    quirks_.gaps_split += q.gaps_split;
    quirks_.one_response += q.one_response ? 1 : 0;
    quirks_.negative_tpot += q.negative_tpot ? 1 : 0;
    quirks_.no_first_token += q.no_first_token ? 1 : 0;
    quirks_.not_streamable += q.not_streamable ? 1 : 0;
    quirks_.usage_unseen += q.usage_unseen ? 1 : 0;
    quirks_.failed_after_done += q.failed_after_done ? 1 : 0;
  }
  /// Evaluates `tl`, storing its pooled ITL samples (or checking that a candidate has them).
  request_metrics add_itl(const Timeline& tl, std::optional<time_point>& e2e_end_tp) {
    const auto sink = [this](double g, std::uint64_t n) noexcept { itl_push(g, n); };
    if (candidates_.empty()) {
      begin_ = itl_.size();
      runs_begin_ = itl_runs_.size();
      target_ = &itl_;
      target_runs_ = &itl_runs_;
      const request_metrics r = detail::evaluate_with_end(*p_, tl, sink, &e2e_end_tp, pool_all(tl));
      if (itl_failed_) {  // out of memory part-way: forget this request's samples
        itl_failed_ = false;
        itl_.resize(begin_);
        itl_runs_.resize(runs_begin_);
        detail::throw_bad_alloc();
      }
      return r;
    }
    scratch_.clear();
    scratch_runs_.clear();
    target_ = &scratch_;
    target_runs_ = &scratch_runs_;
    const request_metrics r = detail::evaluate_with_end(*p_, tl, sink, &e2e_end_tp, pool_all(tl));
    if (itl_failed_) {
      itl_failed_ = false;
      detail::throw_bad_alloc();
    }
    const run_summarizer* last = candidates_.front();
    auto same = [this](const run_summarizer* c) {
      const auto& v = c->itl_view();
      const auto& w = c->itl_runs_view();
      return v.size() - c->begin_ == scratch_.size() &&
             w.size() - c->runs_begin_ == scratch_runs_.size() &&
             std::equal(scratch_.begin(), scratch_.end(),
                        v.begin() + static_cast<std::ptrdiff_t>(c->begin_)) &&
             std::equal(scratch_runs_.begin(), scratch_runs_.end(),
                        w.begin() + static_cast<std::ptrdiff_t>(c->runs_begin_));
    };
    candidates_.erase(std::remove_if(candidates_.begin(), candidates_.end(),
                                     [&](const run_summarizer* c) { return !same(c); }),
                      candidates_.end());
    if (candidates_.empty()) {  // diverged: keep the common prefix and this request's samples
      const auto& v = last->itl_view();
      const auto& w = last->itl_runs_view();
      itl_.reserve(last->begin_ + scratch_.size());
      itl_.assign(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(last->begin_));
      begin_ = itl_.size();
      itl_.insert(itl_.end(), scratch_.begin(), scratch_.end());
      itl_runs_.assign(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(last->runs_begin_));
      runs_begin_ = itl_runs_.size();
      itl_runs_.insert(itl_runs_.end(), scratch_runs_.begin(), scratch_runs_.end());
    } else {
      begin_ = candidates_.front()->begin_;
      runs_begin_ = candidates_.front()->runs_begin_;
    }
    return r;
  }
  /// True when `tl`'s pooled ITL samples count whatever its outcome (an inclusion policy's
  /// `itl` family), not only because it completed.
  [[nodiscard]] bool pool_all(const Timeline& tl) const noexcept {
    return o_.inclusion && includes(*o_.inclusion, inclusion_family::itl, tl);
  }
  static void push(std::vector<double>& v, const std::optional<double>& x) {
    if (x) v.push_back(*x);
  }
  void itl_push(double g, std::uint64_t n) noexcept {
    TOKCHRON_TRY {
      if (n == 1)
        target_->push_back(g);
      else if (n > 1)
        target_runs_->emplace_back(g, n);
    }
    TOKCHRON_CATCH_ALL { itl_failed_ = true; }
  }
  /// GuideLLM's token events of one request, any status: the first at the first counted chunk
  /// (else the end), the last at the last counted chunk (else the end); its prompt and output
  /// tokens (N: usage, else the counted chunks).
  void token_window(const Timeline& tl, const request_metrics& r,
                    const std::optional<time_point>& end) noexcept {
    std::optional<time_point> first, last;
    for (const auto& c : tl.store().chunks()) {
      if (c.kind == chunk_kind::usage && !p_->requests_usage) continue;
      if (!detail::counts(p_->token_chunks, c.tokens, c.kind)) continue;
      if (!first) first = c.time;
      last = c.time;
    }
    if (!first) first = end;
    if (!last) last = end;
    if (first && (!token_first_ || *first < *token_first_)) token_first_ = first;
    if (last && (!token_last_ || *last > *token_last_)) token_last_ = last;
    all_output_tokens_ += r.output_tokens;
    all_input_tokens_ += r.prompt_tokens.value_or(0);
  }
  void widen_start(time_point t) noexcept {
    if (!start_ || t < *start_) start_ = t;
  }
  void widen_end(time_point t) noexcept {
    if (!end_ || t > *end_) end_ = t;
  }
  /// The integral of the in-flight count over time, in request-seconds: the sum of the spans.
  [[nodiscard]] double in_flight_integral() const noexcept {
    double sum = 0;
    for (const auto& [a, b] : spans_) sum += to_seconds(b - a);
    return sum;
  }
  /// The largest number of overlapping spans (a span ending when another starts does not
  /// overlap it).
  [[nodiscard]] std::uint64_t peak_in_flight() const {
    std::vector<std::pair<time_point, int>> ev;
    ev.reserve(spans_.size() * 2);
    for (const auto& [a, b] : spans_) {
      ev.emplace_back(a, 1);
      ev.emplace_back(b, -1);
    }
    std::sort(ev.begin(), ev.end());  // at equal times -1 sorts before +1
    std::int64_t cur = 0, peak = 0;
    for (const auto& e : ev) {
      cur += e.second;
      peak = std::max(peak, cur);
    }
    return static_cast<std::uint64_t>(peak);
  }

  const profile* p_;
  summary_options o_;
  std::uint64_t requests_ = 0, completed_ = 0, input_tokens_ = 0, output_tokens_ = 0,
                tpot_invalid_ = 0, rate_invalid_ = 0;
  std::array<std::uint64_t, finish_reason_count> by_reason_{};
  double e2el_sum_ = 0;
  bool itl_failed_ = false;
  std::optional<time_point> start_, end_, benchmark_start_, first_request_, last_response_,
      last_issued_, last_issued_end_;
  std::vector<time_point> ends_;  // every request's end (last_issued_to_end only)
  // GuideLLM: TPOT samples weighted by N, the token events' span and every request's tokens.
  sample_runs tpot_runs_;
  std::optional<time_point> token_first_, token_last_;
  std::uint64_t all_output_tokens_ = 0, all_input_tokens_ = 0;
  run_summary::quirk_counts quirks_;
  std::vector<std::pair<time_point, time_point>> spans_;
  std::vector<double> ttfa_, reasoning_, ttst_, icl_, prefill_tps_, uncached_tps_, spec_,
      reasoning_len_;
  std::uint64_t reasoning_tokens_ = 0;
  std::vector<double> ttft_, tpot_, itl_, e2el_, queue_, prefill_, decode_, rate_, prompt_len_,
      output_len_;
  std::vector<request_metrics> requests_detail_;
  // Pooled-ITL sharing (share_itl_with): the summarizers whose samples still equal ours, the
  // index where this request's samples start in our view, and where `evaluate` writes.
  std::vector<const run_summarizer*> candidates_;
  std::vector<double> scratch_;
  sample_runs itl_runs_, scratch_runs_;
  std::size_t begin_ = 0, runs_begin_ = 0;
  std::vector<double>* target_ = nullptr;
  sample_runs* target_runs_ = nullptr;
};

/// Summarises the timelines in [first, last) under `p`.
template <class It>
[[nodiscard]] run_summary summarize(It first, It last, const profile& p, summary_options o = {}) {
  run_summarizer<typename std::iterator_traits<It>::value_type> s(p, std::move(o));
  for (; first != last; ++first) s.add(*first);
  return s.take_summary();
}

/// Summaries of one run under several profiles, from one streaming pass over its requests: each
/// request is evaluated by every profile as it is added, then may be dropped. Profiles that pool
/// the same ITL samples store them once (`run_summarizer::share_itl_with`), and profiles that
/// agree on a metric's samples share its order statistics when the summaries are built.
///
/// \code
///   tokchron::multi_profile_summarizer<tokchron::trace_timeline> m(
///       {&tokchron::profiles::vllm, &tokchron::profiles::sglang});
///   while (read_next(tl)) m.add(tl);
///   std::vector<tokchron::run_summary> rs = m.take_summaries();  // one per profile, in order
/// \endcode
///
/// Threads: `add` has one writer. A caller may instead feed the summarizers themselves
/// (`operator[]`) from several threads, one writer each, as long as every summarizer gets every
/// request in the same order and the summarizers whose profiles pool ITL samples
/// (`pools_samples(profile.itl)`), which may read each other's samples, are fed by one thread in
/// index order. Not copyable (the summarizers point at each other); movable.
template <class Timeline>
class multi_profile_summarizer {
 public:
  using summarizer = run_summarizer<Timeline>;
  using time_point = typename Timeline::time_point;

  /// One summarizer per profile, each with `o`; `o.executor` runs the computations of every
  /// summary. Throws std::invalid_argument for a null profile, or as `run_summarizer`.
  explicit multi_profile_summarizer(const std::vector<const profile*>& profiles,
                                    const summary_options& o = {})
      : multi_profile_summarizer(profiles, std::vector<summary_options>(profiles.size(), o),
                                 o.executor) {}

  /// One summarizer per profile, `options[i]` for `profiles[i]` (e.g. a different
  /// `summary_options::inclusion` for each); `executor` runs the computations of every summary.
  /// Throws std::invalid_argument when the two lists differ in size, for a null profile, or as
  /// `run_summarizer`.
  multi_profile_summarizer(const std::vector<const profile*>& profiles,
                           std::vector<summary_options> options, task_executor executor)
      : executor_(std::move(executor)) {
    if (options.size() != profiles.size())
      TOKCHRON_THROW(std::invalid_argument, "tokchron: one summary_options per profile is needed");
    sums_.reserve(profiles.size());
    for (std::size_t i = 0; i < profiles.size(); ++i) {
      if (!profiles[i]) TOKCHRON_THROW(std::invalid_argument, "tokchron: a profile is null");
      sums_.emplace_back(*profiles[i], std::move(options[i]));
    }
    std::vector<const summarizer*> earlier;
    earlier.reserve(sums_.size());
    for (auto& s : sums_) {
      s.share_itl_with(earlier);
      earlier.push_back(&s);
    }
  }

  multi_profile_summarizer(const multi_profile_summarizer&) = delete;
  multi_profile_summarizer& operator=(const multi_profile_summarizer&) = delete;
  multi_profile_summarizer(multi_profile_summarizer&&) noexcept = default;
  multi_profile_summarizer& operator=(multi_profile_summarizer&&) noexcept = default;
  ~multi_profile_summarizer() = default;

  /// Adds one request to every profile's summary. May throw std::bad_alloc; a profile may then
  /// hold part of the request, so `take_summaries` refuses to build summaries afterwards.
  void add(const Timeline& tl) {
    const bool was_broken = broken_;
    broken_ = true;  // until every profile has the request
    for (auto& s : sums_) s.add(tl);
    broken_ = was_broken;
  }

  /// The number of profiles.
  [[nodiscard]] std::size_t size() const noexcept { return sums_.size(); }
  /// The summarizer of the i-th profile (i < size()), to feed from several threads (see the
  /// class's notes) or to read its profile and options.
  [[nodiscard]] summarizer& operator[](std::size_t i) noexcept { return sums_[i]; }
  [[nodiscard]] const summarizer& operator[](std::size_t i) const noexcept { return sums_[i]; }

  /// Sets the run's duration in seconds for every profile (`run_summarizer::set_duration`).
  void set_duration(double seconds) {
    for (auto& s : sums_) s.set_duration(seconds);
  }
  /// Sets the benchmark's start for every profile (`run_summarizer::set_benchmark_start`).
  void set_benchmark_start(time_point t) noexcept {
    for (auto& s : sums_) s.set_benchmark_start(t);
  }

  /// The summaries, one per profile in the constructor's order, consuming the samples (the
  /// summarizers are left empty of samples). Distributions with identical samples are computed
  /// once, each distinct one a task of the executor. Throws std::logic_error after an `add` that
  /// threw; std::bad_alloc.
  [[nodiscard]] std::vector<run_summary> take_summaries() {
    if (broken_)
      TOKCHRON_THROW(std::logic_error,
                     "tokchron: an add threw, so the profiles may hold different requests");
    std::vector<run_summary> out(sums_.size());
    std::vector<detail::distribution_job> jobs;
    for (std::size_t i = 0; i < sums_.size(); ++i) sums_[i].collect_summary(out[i], jobs);
    detail::run_distribution_jobs(jobs, executor_);
    return out;
  }

 private:
  std::vector<summarizer> sums_;
  task_executor executor_;
  bool broken_ = false;
};

/// Summarises a range of timelines under each of `profiles` (same options), in one pass over
/// the timelines (`multi_profile_summarizer`).
template <class Range>
[[nodiscard]] std::vector<run_summary> summarize(const Range& timelines,
                                                 const std::vector<const profile*>& profiles,
                                                 const summary_options& o = {}) {
  multi_profile_summarizer<std::decay_t<decltype(*std::begin(timelines))>> m(profiles, o);
  for (const auto& tl : timelines) m.add(tl);
  return m.take_summaries();
}

/// Summarises a range of timelines (anything with begin/end) under `p`.
template <class Range>
[[nodiscard]] run_summary summarize(const Range& timelines, const profile& p,
                                    summary_options o = {}) {
  return summarize(std::begin(timelines), std::end(timelines), p, std::move(o));
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_METRICS_RUN_SUMMARY_HPP
