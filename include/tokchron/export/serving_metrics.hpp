// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXPORT_SERVING_METRICS_HPP
#define TOKCHRON_EXPORT_SERVING_METRICS_HPP

/// \file
/// `serving_metrics`: what a server exports about the requests it finished (the canonical
/// latency distributions as mergeable `log_histogram`s, and request/token counters), and its
/// `metrics_snapshot` for the Prometheus writers.
///
/// \code
///   tokchron::serving_metrics m;                  // tokchron_* names, exponential buckets
///   m.record(timeline);                           // each finished request, noexcept
///   std::string text = tokchron::to_prometheus(m.snapshot());
/// \endcode

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/export/snapshot.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/quantile/log_histogram.hpp"
#include "tokchron/timeline/event.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// The latency distributions `serving_metrics` keeps, in snapshot order.
enum class serving_metric : std::uint8_t { ttft, tpot, itl, e2e, queue, prefill, decode };
inline constexpr std::size_t serving_metric_count = 7;

/// Classic-histogram upper bounds (seconds) per distribution.
struct bucket_layout {
  std::vector<double> ttft, tpot, itl, request;  ///< request: e2e, queue, prefill, decode

  /// The same `exponential_buckets(scale, lo, hi)` for every distribution: PromQL's
  /// `histogram_quantile` over any sum of replicas then errs by at most
  /// `exponential_buckets_error(scale)` (4.43 % at the default scale 4) inside [lo, hi].
  /// The default, 1 ms..1000 s at scale 4, is 321 bounds per histogram.
  [[nodiscard]] static bucket_layout exponential(int scale = 4, double lo = 1e-3, double hi = 1e3) {
    std::vector<double> b = exponential_buckets(scale, lo, hi);
    return bucket_layout{b, b, b, b};
  }
  /// vLLM's lists (`vllm_ttft_buckets` etc.; TPOT uses the ITL list, as vLLM does).
  [[nodiscard]] static bucket_layout vllm() {
    return bucket_layout{vllm_ttft_buckets(), vllm_itl_buckets(), vllm_itl_buckets(),
                         vllm_request_latency_buckets()};
  }
};

/// Family names; `outcome_label` names the finish reason on the requests counter.
struct serving_metric_names {
  std::string ttft = "tokchron_ttft_seconds", tpot = "tokchron_tpot_seconds",
              itl = "tokchron_itl_seconds", e2e = "tokchron_e2e_seconds",
              queue = "tokchron_queue_seconds", prefill = "tokchron_prefill_seconds",
              decode = "tokchron_decode_seconds";
  std::string requests = "tokchron_requests", output_tokens = "tokchron_output_tokens",
              prompt_tokens = "tokchron_prompt_tokens", preemptions = "tokchron_preemptions";
  std::string outcome_label = "outcome";

  /// vLLM's names (`vllm:time_to_first_token_seconds`, ..., `vllm:request_success_total`
  /// labelled `finished_reason`), for dashboards built on vLLM's /metrics.
  [[nodiscard]] static serving_metric_names vllm() {
    serving_metric_names n;
    n.ttft = "vllm:time_to_first_token_seconds";
    n.tpot = "vllm:request_time_per_output_token_seconds";
    n.itl = "vllm:inter_token_latency_seconds";
    n.e2e = "vllm:e2e_request_latency_seconds";
    n.queue = "vllm:request_queue_time_seconds";
    n.prefill = "vllm:request_prefill_time_seconds";
    n.decode = "vllm:request_decode_time_seconds";
    n.requests = "vllm:request_success";
    n.output_tokens = "vllm:generation_tokens";
    n.prompt_tokens = "vllm:prompt_tokens";
    n.preemptions = "vllm:num_preemptions";
    n.outcome_label = "finished_reason";
    return n;
  }
};

/// How `serving_metrics` records and exports.
struct serving_metrics_options {
  serving_metric_names names;
  bucket_layout buckets = bucket_layout::exponential();
  /// The histograms' scale: 6 keeps quantiles within 0.54 % (log_histogram's default, 1 %).
  int scale = 6;
  /// Labels on every exported point (e.g. {"model_name", "llama-3-8b"}).
  label_set labels;

  /// vLLM's names and bucket lists.
  [[nodiscard]] static serving_metrics_options vllm() {
    serving_metrics_options o;
    o.names = serving_metric_names::vllm();
    o.buckets = bucket_layout::vllm();
    return o;
  }
};

/// The canonical metrics of finished requests, as a server exports them: one `log_histogram`
/// per distribution (TTFT, TPOT, per-token ITL, E2E, queue, prefill, decode; seconds) and
/// counters of requests by finish reason, output and prompt tokens and preemptions.
///
/// `record` is O(chunks) and noexcept; memory grows with the range of values, not the count
/// (a few KiB per histogram). `merge` adds another replica's or thread's metrics without loss.
/// Thread safety: one writer; snapshot while nobody writes (the prometheus-cpp adaptor locks).
class serving_metrics {
 public:
  /// Throws std::invalid_argument for a bad scale or bucket list.
  explicit serving_metrics(serving_metrics_options options = {}) : options_(std::move(options)) {
    for (auto& h : hist_) h = log_histogram::with_scale(options_.scale);
    for (const auto* b : {&options_.buckets.ttft, &options_.buckets.tpot, &options_.buckets.itl,
                          &options_.buckets.request})
      detail::check_upper_bounds(*b);
  }

  /// Records a finished request: every canonical metric it defines, its per-token ITL samples
  /// (when its store keeps chunks) and its counters. A request that has not finished is not
  /// recorded: false, counted in `unfinished()`. Rejected samples (NaN, memory) are counted
  /// by the histograms (`histogram(m).rejected()`).
  template <class Timeline>
  bool record(const Timeline& tl) noexcept {
    if (!tl.finished()) {
      ++unfinished_;
      return false;
    }
    const request_metrics m = canonical_metrics(tl);
    add(serving_metric::ttft, m.ttft);
    add(serving_metric::tpot, m.tpot);
    add(serving_metric::e2e, m.e2e);
    add(serving_metric::queue, m.queue_time);
    add(serving_metric::prefill, m.prefill_time);
    add(serving_metric::decode, m.decode_time);
    if constexpr (Timeline::store_type::keeps_chunks) {
      auto& itl = hist_[static_cast<std::size_t>(serving_metric::itl)];
      for_each_itl_per_token(tl, [&itl](auto gap) noexcept {
        (void)itl.add(std::chrono::duration<double>(gap).count());
      });
    }
    const auto reason = tl.reason();
    ++requests_[static_cast<std::size_t>(reason ? *reason : finish_reason::error)];
    output_tokens_ += m.output_tokens;
    prompt_tokens_ += m.prompt_tokens ? *m.prompt_tokens : 0;
    preemptions_ += m.preemptions;
    return true;
  }

  /// Adds `other`'s samples and counters (same scale: lossless). Strong guarantee on
  /// std::bad_alloc.
  void merge(const serving_metrics& other) {
    auto merged = hist_;
    for (std::size_t i = 0; i < merged.size(); ++i) merged[i].merge(other.hist_[i]);
    hist_ = std::move(merged);
    for (std::size_t i = 0; i < requests_.size(); ++i) requests_[i] += other.requests_[i];
    output_tokens_ += other.output_tokens_;
    prompt_tokens_ += other.prompt_tokens_;
    preemptions_ += other.preemptions_;
    unfinished_ += other.unfinished_;
  }

  [[nodiscard]] const log_histogram& histogram(serving_metric m) const noexcept {
    return hist_[static_cast<std::size_t>(m)];
  }
  /// Requests recorded that finished for `r`.
  [[nodiscard]] std::uint64_t requests(finish_reason r) const noexcept {
    return requests_[static_cast<std::size_t>(r)];
  }
  [[nodiscard]] std::uint64_t output_tokens() const noexcept { return output_tokens_; }
  [[nodiscard]] std::uint64_t prompt_tokens() const noexcept { return prompt_tokens_; }
  [[nodiscard]] std::uint64_t preemptions() const noexcept { return preemptions_; }
  /// `record` calls refused because the request had not finished.
  [[nodiscard]] std::uint64_t unfinished() const noexcept { return unfinished_; }
  [[nodiscard]] const serving_metrics_options& options() const noexcept { return options_; }

  /// The families, in a fixed order: the seven histograms (classic buckets from the options),
  /// then the requests counter (one point per finish reason, zeros included, so every series
  /// exists from the first scrape), output tokens, prompt tokens, preemptions.
  [[nodiscard]] metrics_snapshot snapshot() const {
    metrics_snapshot s;
    const auto& n = options_.names;
    const auto& b = options_.buckets;
    struct row {
      const std::string* name;
      const char* help;
      const std::vector<double>* bounds;
    };
    const row rows[serving_metric_count] = {
        {&n.ttft, "Time to first token from arrival (tokchron canonical ttft).", &b.ttft},
        {&n.tpot, "Time per output token after the first, per request (canonical tpot).", &b.tpot},
        {&n.itl, "Inter-token latency, one sample per output token after the first.", &b.itl},
        {&n.e2e, "End-to-end request latency from arrival to finish.", &b.request},
        {&n.queue, "Time from arrival (or queueing) to first scheduling.", &b.request},
        {&n.prefill, "Time from first scheduling to the first token.", &b.request},
        {&n.decode, "Time from the first to the last token.", &b.request}};
    for (std::size_t i = 0; i < serving_metric_count; ++i)
      s.family(*rows[i].name, rows[i].help, metric_kind::histogram, "seconds")
          .add(classic_histogram(hist_[i], *rows[i].bounds), options_.labels);
    auto& req = s.family(n.requests, "Finished requests, by finish reason.", metric_kind::counter);
    for (std::size_t r = 0; r < requests_.size(); ++r) {
      label_set l = options_.labels;
      l.push_back(label{n.outcome_label, std::string(to_string(static_cast<finish_reason>(r)))});
      req.add(static_cast<double>(requests_[r]), std::move(l));
    }
    s.family(n.output_tokens, "Output tokens of finished requests.", metric_kind::counter)
        .add(static_cast<double>(output_tokens_), options_.labels);
    s.family(n.prompt_tokens, "Prompt tokens of finished requests.", metric_kind::counter)
        .add(static_cast<double>(prompt_tokens_), options_.labels);
    s.family(n.preemptions, "Preemptions of finished requests.", metric_kind::counter)
        .add(static_cast<double>(preemptions_), options_.labels);
    return s;
  }

 private:
  void add(serving_metric m, const std::optional<double>& v) noexcept {
    if (v) (void)hist_[static_cast<std::size_t>(m)].add(*v);
  }

  serving_metrics_options options_;
  std::array<log_histogram, serving_metric_count> hist_;
  std::array<std::uint64_t, 6> requests_{};  // by finish_reason
  std::uint64_t output_tokens_ = 0, prompt_tokens_ = 0, preemptions_ = 0, unfinished_ = 0;
};

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_EXPORT_SERVING_METRICS_HPP
