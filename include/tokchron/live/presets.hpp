// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_LIVE_PRESETS_HPP
#define TOKCHRON_LIVE_PRESETS_HPP

/// \file
/// The servers' presets, each plain data (`live_options`: `live_rules` and `live_family`s, see
/// live/options.hpp): tokchron's names and canonical definitions, or the names, labels,
/// buckets and rules of vLLM, SGLang, Text Generation Inference, the llama.cpp server or
/// trtllm-serve (looked up in each server's source; docs/library/live-metrics.md lists each
/// point with its source line, and shows how to write a preset of one's own). Include this
/// where the server builds its metrics object, not in its hot files (it pulls in the bucket
/// helpers).
///
/// \code
///   tokchron::live_metrics m(tokchron::vllm_live_options("llama-3-8b", 8192));
///   tokchron::live_metrics t(tokchron::tokchron_live_options({"model", "adapter"},
///                                                            {"llama-3-8b", ""}));
///   tokchron::live_metrics s(tokchron::sglang_live_options("llama-3-8b"));
///   tokchron::live_metrics g(tokchron::tgi_live_options(4095, 4096));
/// \endcode

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/exposition/buckets.hpp"
#include "tokchron/live/options.hpp"
#include "tokchron/metrics/metric_table.hpp"
#include "tokchron/timeline/event.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// A histogram family: `name` fed by histogram `h`, edges `buckets`, unit "seconds" for a time
/// histogram whose name ends in `_seconds` (the unit only where the name carries it).
[[nodiscard]] inline live_family live_histogram_family(std::string name, live_histogram h,
                                                       std::vector<double> buckets,
                                                       std::string help = {}) {
  live_family f;
  const bool seconds = detail::live_is_time(h) && name.size() > 8 &&
                       name.compare(name.size() - 8, 8, "_seconds") == 0;
  f.name = std::move(name);
  f.source = live_source::histogram;
  f.kind = metric_kind::histogram;
  f.help = std::move(help);
  f.unit = seconds ? "seconds" : "";
  f.histogram = h;
  f.buckets = std::move(buckets);
  return f;
}

/// A family of a source other than `histogram`, of its kind (`live_kind_of`).
[[nodiscard]] inline live_family live_source_family(std::string name, live_source source,
                                                    std::string help = {}) {
  live_family f;
  f.name = std::move(name);
  f.source = source;
  f.kind = live_kind_of(source);
  f.help = std::move(help);
  return f;
}

/// Gives every family of histogram `h` in `families` the upper bounds `edges` (a server's own
/// buckets: families of one histogram carry the same edges, as an alias does); returns how many
/// families changed. The constructor checks the edges.
inline std::size_t live_set_buckets(std::vector<live_family>& families, live_histogram h,
                                    const std::vector<double>& edges) {
  std::size_t n = 0;
  for (live_family& f : families)
    if (f.source == live_source::histogram && f.histogram == h) {
      f.buckets = edges;
      ++n;
    }
  return n;
}

/// A family's base names in tokchron's scheme and in vLLM's (empty: that scheme has none), in
/// the order the tokchron and vLLM presets export them. Histograms of `metric_table` metrics
/// are not listed (they take the table's `prometheus_name` and `vllm_name`); the others are.
struct live_family_name {
  live_source source;
  live_histogram histogram;   ///< for `live_source::histogram`
  std::string_view tokchron;  ///< `tokchron_live_options`
  std::string_view vllm;      ///< `vllm_live_options` (vllm/v1/metrics/loggers.py)
};

/// See `live_family_name`. The one list of these spellings: `serving_metric_names` reads its
/// counter names from here too.
inline constexpr live_family_name live_family_names[] = {
    {live_source::histogram, live_histogram::inference_time, "tokchron_inference_seconds",
     "vllm:request_inference_time_seconds"},
    {live_source::histogram, live_histogram::prompt_tokens, "tokchron_request_prompt_tokens",
     "vllm:request_prompt_tokens"},
    {live_source::histogram, live_histogram::generation_tokens, "tokchron_request_output_tokens",
     "vllm:request_generation_tokens"},
    {live_source::histogram, live_histogram::max_tokens, "tokchron_request_max_tokens",
     "vllm:request_max_num_generation_tokens"},
    // vllm/v1/metrics/loggers.py (PR 30189): prompt - cached per finished request.
    {live_source::histogram, live_histogram::prefill_computed_tokens, "",
     "vllm:request_prefill_kv_computed_tokens"},
    // Disaggregated serving: each KV-cache transfer's time (`kv_transfer`).
    {live_source::histogram, live_histogram::kv_transfer_time, "tokchron_kv_transfer_seconds", ""},
    // The aliases vLLM's earlier example Grafana dashboard queries.
    {live_source::histogram, live_histogram::itl, "", "vllm:time_per_output_token_seconds"},
    {live_source::histogram, live_histogram::max_tokens, "", "vllm:request_params_max_tokens"},
    {live_source::requests, live_histogram::ttft, "tokchron_requests", "vllm:request_success"},
    {live_source::prompt_tokens, live_histogram::ttft, "tokchron_prompt_tokens",
     "vllm:prompt_tokens"},
    {live_source::generation_tokens, live_histogram::ttft, "tokchron_output_tokens",
     "vllm:generation_tokens"},
    {live_source::preemptions, live_histogram::ttft, "tokchron_preemptions",
     "vllm:num_preemptions"},
    {live_source::running, live_histogram::ttft, "tokchron_requests_running",
     "vllm:num_requests_running"},
    {live_source::waiting, live_histogram::ttft, "tokchron_requests_waiting",
     "vllm:num_requests_waiting"},
    {live_source::kv_cache_usage, live_histogram::ttft, "tokchron_kv_cache_usage_ratio",
     "vllm:kv_cache_usage_perc"},
    {live_source::kv_cache_usage, live_histogram::ttft, "", "vllm:gpu_cache_usage_perc"},
    {live_source::prefix_cache_queries, live_histogram::ttft, "tokchron_prefix_cache_queries",
     "vllm:prefix_cache_queries"},
    {live_source::prefix_cache_hits, live_histogram::ttft, "tokchron_prefix_cache_hits",
     "vllm:prefix_cache_hits"},
    {live_source::prompt_tokens_cached, live_histogram::ttft, "tokchron_cached_prompt_tokens",
     "vllm:prompt_tokens_cached"},
    {live_source::prompt_tokens_by_source, live_histogram::ttft, "",
     "vllm:prompt_tokens_by_source"},
    {live_source::prompt_tokens_recomputed, live_histogram::ttft, "",
     "vllm:prompt_tokens_recomputed"},
    {live_source::reasoning_tokens, live_histogram::ttft, "tokchron_reasoning_tokens",
     "tokchron_reasoning_tokens"},
    {live_source::spec_drafts, live_histogram::ttft, "tokchron_spec_decode_drafts",
     "vllm:spec_decode_num_drafts"},
    {live_source::spec_draft_tokens, live_histogram::ttft, "tokchron_spec_decode_draft_tokens",
     "vllm:spec_decode_num_draft_tokens"},
    {live_source::spec_accepted_tokens, live_histogram::ttft,
     "tokchron_spec_decode_accepted_tokens", "vllm:spec_decode_num_accepted_tokens"},
    {live_source::spec_accepted_per_position, live_histogram::ttft,
     "tokchron_spec_decode_accepted_tokens_per_pos",
     "vllm:spec_decode_num_accepted_tokens_per_pos"},
    {live_source::kv_transfers, live_histogram::ttft, "tokchron_kv_transfers", ""},
    {live_source::kv_transfer_bytes, live_histogram::ttft, "tokchron_kv_transfer_bytes", ""},
    {live_source::kv_transfer_tokens, live_histogram::ttft, "tokchron_kv_transfer_tokens", ""},
    {live_source::rejected, live_histogram::ttft, "", "tokchron_rejected_requests"},
    {live_source::misuse, live_histogram::ttft, "tokchron_misuse", "tokchron_misuse"},
    {live_source::label_overflow, live_histogram::ttft, "tokchron_label_overflow",
     "tokchron_label_overflow"},
    {live_source::long_label_values, live_histogram::ttft, "tokchron_long_label_values",
     "tokchron_long_label_values"},
    {live_source::dropped, live_histogram::ttft, "tokchron_dropped_samples",
     "tokchron_dropped_samples"},
};

/// The finish-reason label of the requests counter in tokchron's scheme and in vLLM's.
inline constexpr std::string_view live_reason_label_tokchron = "outcome";
inline constexpr std::string_view live_reason_label_vllm = "finished_reason";

/// The first row of `live_family_names` for `source` (not `histogram`).
[[nodiscard]] constexpr const live_family_name& live_family_name_of(live_source source) noexcept {
  for (const auto& f : live_family_names)
    if (f.source == source) return f;
  return live_family_names[0];  // unreachable for the sources listed above
}

/// tokchron's requests counter by outcome, `tokchron_requests_total{outcome="stop|length|
/// aborted|error|timed_out|rejected"}` (`to_string(finish_reason)`), counted as each request
/// finishes: the outcome counters a preset whose server has none can carry beside its own
/// families (`live_with_outcomes`), as the llama.cpp preset does.
[[nodiscard]] inline live_family live_outcome_family() {
  const live_family_name& row = live_family_name_of(live_source::requests);
  live_family f;
  f.name = std::string(row.tokchron);
  f.source = live_source::requests;
  f.kind = live_kind_of(live_source::requests);
  f.label = std::string(live_reason_label_tokchron);
  for (std::size_t k = 0; k < finish_reason_count; ++k)
    f.label_values.emplace_back(to_string(static_cast<finish_reason>(k)));
  return f;
}

/// vLLM's `build_1_2_5_buckets(max_value)` (vllm/v1/metrics/loggers.py): 1, 2, 5, 10, 20,
/// 50, ... while <= `max_value` (empty for 0). Used for its prompt- and generation-length
/// histograms with `max_model_len`.
[[nodiscard]] inline std::vector<double> one_two_five_buckets(std::uint64_t max_value) {
  std::vector<double> b;
  for (std::uint64_t scale = 1;; scale *= 10) {
    for (const std::uint64_t m : {1u, 2u, 5u}) {
      if (m * scale > max_value) return b;
      b.push_back(static_cast<double>(m * scale));
    }
    if (scale > max_value / 10) return b;
  }
}

/// The metric of `metric_table` that live histogram `h` records, if it is one.
[[nodiscard]] constexpr std::optional<metric_id> live_metric(live_histogram h) noexcept {
  switch (h) {
    case live_histogram::ttft: return metric_id::ttft;
    case live_histogram::itl: return metric_id::itl;
    case live_histogram::tpot: return metric_id::tpot;
    case live_histogram::e2e: return metric_id::e2e;
    case live_histogram::queue_time: return metric_id::queue_time;
    case live_histogram::prefill_time: return metric_id::prefill_time;
    case live_histogram::decode_time: return metric_id::decode_time;
    default: return std::nullopt;
  }
}

namespace detail {
/// True for a row of `live_family_names` that is a histogram's first family in its scheme (a
/// histogram that is not a `metric_table` metric); the other histogram rows are aliases.
[[nodiscard]] inline bool live_primary_row(const live_family_name& row) noexcept {
  if (row.source != live_source::histogram || live_metric(row.histogram)) return false;
  for (const auto& r : live_family_names) {
    if (&r == &row) return true;
    if (r.source == live_source::histogram && r.histogram == row.histogram) return false;
  }
  return false;
}
}  // namespace detail

/// The families of scheme `vllm` (else tokchron's), in their export order: the histograms in
/// `live_histogram` order (names of `metric_table` metrics from the table,
/// `prometheus_name(m, "tokchron_")` or `vllm_name`; the others from `live_family_names`), each
/// on `edges(h)`, then every other family of `live_family_names` the scheme names, in the
/// table's order: the finish-reason label `outcome` (tokchron: `to_string(finish_reason)`) or
/// `finished_reason` (vLLM's strings), the source label `source`, the position label
/// `position`. `EdgesOf` is callable as `std::vector<double>(live_histogram)`.
template <class EdgesOf>
[[nodiscard]] std::vector<live_family> live_scheme_families(bool vllm, EdgesOf&& edges) {
  std::vector<live_family> fs;
  for (std::size_t x = 0; x < live_histogram_count; ++x) {
    const auto h = static_cast<live_histogram>(x);
    std::string name;
    if (const auto m = live_metric(h)) {
      name = vllm ? std::string(info(*m).vllm_name) : prometheus_name(*m, "tokchron_");
    } else {
      for (const auto& r : live_family_names)
        if (detail::live_primary_row(r) && r.histogram == h)
          name = std::string(vllm ? r.vllm : r.tokchron);
    }
    if (!name.empty()) fs.push_back(live_histogram_family(std::move(name), h, edges(h)));
  }
  for (const auto& r : live_family_names) {
    const std::string_view name = vllm ? r.vllm : r.tokchron;
    if (name.empty() || detail::live_primary_row(r)) continue;
    if (r.source == live_source::histogram) {
      fs.push_back(live_histogram_family(std::string(name), r.histogram, edges(r.histogram)));
      continue;
    }
    live_family f = live_source_family(std::string(name), r.source);
    if (r.source == live_source::requests) {
      f = live_outcome_family();
      f.name = std::string(name);
      if (vllm) {  // vllm/v1/engine/__init__.py FINISH_REASON_STRINGS
        f.label = std::string(live_reason_label_vllm);
        f.label_values = {"stop",      "length", "abort", "error",
                          "abort",  // a server's timeout aborts the request
                          "",       // vLLM never counts a request it refused
                          "repetition"};
      }
    } else if (r.source == live_source::prompt_tokens_by_source) {
      // vllm/v1/metrics/stats.py PromptTokenStats.ALL_SOURCES
      f.label = "source";
      f.label_values = {"local_compute", "local_cache_hit", "external_kv_transfer"};
    } else if (r.source == live_source::spec_accepted_per_position) {
      f.label = "position";
    }
    fs.push_back(std::move(f));
  }
  return fs;
}

/// tokchron's names (`live_scheme_families(false, ...)`) and canonical definitions (the
/// default `live_rules`); every latency histogram on `exponential_buckets(4, 1 ms, 1000 s)`, so
/// PromQL quantiles over any sum of replicas err by at most 4.43 % inside that range; lengths
/// on 1-2-5 buckets up to `max_tokens_bound`. Labels: `label_names`, default series
/// `default_label_values` (one per name). Throws std::invalid_argument when they differ in
/// size.
[[nodiscard]] inline live_options tokchron_live_options(
    std::vector<std::string> label_names = {}, std::vector<std::string> default_label_values = {},
    std::uint64_t max_tokens_bound = 1000000) {
  if (label_names.size() != default_label_values.size())
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: tokchron_live_options needs one default value per label name");
  live_options o;
  o.label_names = std::move(label_names);
  o.default_label_values = std::move(default_label_values);
  const std::vector<double> lat = bucket_layout::exponential().request;
  const std::vector<double> len = one_two_five_buckets(max_tokens_bound);
  o.families = live_scheme_families(
      false, [&](live_histogram h) { return detail::live_is_time(h) ? lat : len; });
  return o;
}

/// vLLM's rules (vllm/v1/metrics/stats.py, loggers.py): ITL one sample per engine step
/// (streamed chunk) that carried tokens after the first, per-request TPOT decode_time / (N - 1)
/// and 0 for N <= 1.
[[nodiscard]] inline live_rules vllm_live_rules() noexcept {
  live_rules r;
  r.itl = itl_grain::per_chunk;
  r.tpot_small_n = small_n_rule::zero;
  return r;
}

/// Which of vLLM's histogram bucket lists a vLLM preset follows. vLLM's time histograms share
/// three lists (TTFT; ITL and per-request TPOT; the request-latency list of E2E, queue,
/// prefill, decode and inference time). vLLM PR 15202 (merged after 2025-04-03) extended all
/// three, and no merged change since has altered them: PR 48866 (merged 2026-07-16) moved them
/// unchanged into vllm/v1/metrics/buckets.py, as on vLLM main at
/// 139b1c3f17720f4bb6865309f365e6b1f1607a45. The phase-latency list starting at 0.1 s, 0.2 s
/// in another stored copy of buckets.py (3168f587f0555dda23ee852316697cc12f314eab) is the
/// branch of PR 35952, never merged.
enum class vllm_buckets : std::uint8_t {
  /// Every vLLM release since PR 15202, through main at 139b1c3 (buckets.py):
  /// `vllm_ttft_buckets`, `vllm_itl_buckets`, `vllm_request_latency_buckets`.
  current,
  /// vLLM 0.8.2 (released before PR 15202 merged; releases before it are not checked): TTFT
  /// up to 10 s, ITL/TPOT up to 2.5 s, request latency up to 60 s.
  v0_8_2,
};

/// vLLM's three time-histogram bucket lists of release line `v` (see `vllm_buckets`).
struct vllm_bucket_lists {
  std::vector<double> ttft;             ///< vllm:time_to_first_token_seconds
  std::vector<double> itl;              ///< inter-token latency and per-request TPOT
  std::vector<double> request_latency;  ///< E2E, queue, prefill, decode, inference time
};

/// See `vllm_bucket_lists`. The `v0_8_2` lists are the `current` ones before the edges PR
/// 15202 appended (TTFT 20 .. 2560, ITL 5 .. 80, request latency 120 .. 7680).
[[nodiscard]] inline vllm_bucket_lists vllm_bucket_lists_of(vllm_buckets v) {
  vllm_bucket_lists l{vllm_ttft_buckets(), vllm_itl_buckets(), vllm_request_latency_buckets()};
  if (v == vllm_buckets::v0_8_2) {
    const auto cut = [](std::vector<double>& b, double top) {
      while (!b.empty() && b.back() > top) b.pop_back();
    };
    cut(l.ttft, 10.0);
    cut(l.itl, 2.5);
    cut(l.request_latency, 60.0);
  }
  return l;
}

/// vLLM's `/metrics` (vllm/v1/metrics/loggers.py, PrometheusStatLogger): labels `model_name`
/// and `engine` (default series: `model_name`, `engine`), vLLM's names
/// (`live_scheme_families(true, ...)`), bucket lists (lengths on
/// `one_two_five_buckets(max_model_len)`), `vllm_live_rules()`, finished_reason values, and the
/// deprecated `vllm:time_per_output_token_seconds` / `vllm:gpu_cache_usage_perc` that vLLM's
/// earlier example Grafana dashboard queries. Time buckets: `buckets` (default: the lists of
/// every vLLM release since PR 15202, `vllm_buckets::current`); a server's own list with
/// `live_set_buckets`. See docs/library/live-metrics.md for what tokchron cannot know.
[[nodiscard]] inline live_options vllm_live_options(std::string model_name,
                                                    std::uint64_t max_model_len,
                                                    std::string engine = "0",
                                                    vllm_buckets buckets = vllm_buckets::current) {
  live_options o;
  o.rules = vllm_live_rules();
  o.label_names = {"model_name", "engine"};
  o.default_label_values = {std::move(model_name), std::move(engine)};
  const vllm_bucket_lists lists = vllm_bucket_lists_of(buckets);
  o.families = live_scheme_families(true, [&](live_histogram h) {
    switch (h) {
      case live_histogram::ttft: return lists.ttft;
      case live_histogram::itl:
      case live_histogram::tpot: return lists.itl;
      default:
        return detail::live_is_time(h) ? lists.request_latency
                                       : one_two_five_buckets(max_model_len);
    }
  });
  return o;
}

/// tokchron's own counters, for a preset of a server that has none of them: misuse, label
/// overflow, long label values, dropped samples (`tokchron_misuse`, ...).
[[nodiscard]] inline std::vector<live_family> live_own_families() {
  return {live_source_family("tokchron_misuse", live_source::misuse),
          live_source_family("tokchron_label_overflow", live_source::label_overflow),
          live_source_family("tokchron_long_label_values", live_source::long_label_values),
          live_source_family("tokchron_dropped_samples", live_source::dropped)};
}

/// Appends `tail` to `fs`.
inline void live_append(std::vector<live_family>& fs, std::vector<live_family> tail) {
  for (auto& f : tail) fs.push_back(std::move(f));
}

/// `o` with tokchron's outcome counter (`live_outcome_family`) before tokchron's own counters,
/// unless `o` already has a family of that name (tokchron's and llama.cpp's presets): finished
/// requests by outcome beside any preset, in one spelling whatever the server's own
/// (`live_with_outcomes(tgi_live_options(4095, 4096))`).
[[nodiscard]] inline live_options live_with_outcomes(live_options o) {
  live_family f = live_outcome_family();
  for (const live_family& g : o.families)
    if (g.name == f.name) return o;
  auto at = o.families.begin();
  while (at != o.families.end() && !live_is_own(at->source)) ++at;
  o.families.insert(at, std::move(f));
  return o;
}

/// `o` for a server in `role` of disaggregated serving (`live_options::role`: how a KV-cache
/// transfer counts), and with `label_name` (unless empty) = "prefill", "decode" or "both" on
/// every point of every family, so that the nodes of one deployment, scraped into one
/// Prometheus, are told apart and summed by role. Throws std::invalid_argument (at the
/// metrics' construction) when `label_name` is a series label or one a family already adds.
[[nodiscard]] inline live_options live_with_role(live_options o, live_role role,
                                                 const std::string& label_name = "role") {
  o.role = role;
  if (!label_name.empty())
    for (live_family& f : o.families) f.const_labels.push_back(label{label_name, to_string(role)});
  return o;
}

/// A `finished` family: requests finished for one of `reasons`, with its help.
[[nodiscard]] inline live_family live_finished_family(std::string name, std::uint8_t reasons,
                                                      std::string help) {
  live_family f = live_source_family(std::move(name), live_source::finished, std::move(help));
  f.reasons = reasons;
  return f;
}

/// A `requests` family: finished requests by finish reason under label `label`, `values` the
/// label value of each `finish_reason` (empty: not counted) and then any never recorded.
[[nodiscard]] inline live_family live_requests_family(std::string name, std::string label,
                                                      std::vector<std::string> values) {
  live_family f = live_source_family(std::move(name), live_source::requests);
  f.label = std::move(label);
  f.label_values = std::move(values);
  return f;
}

/// SGLang's `exponential_buckets(start, width, length)`
/// (python/sglang/srt/observability/utils.py at 515b8b311b9e64a4d5994fb35d32e2131b115cf5):
/// `start * width ** i` for i = 0 .. length - 1.
[[nodiscard]] inline std::vector<double> sglang_exponential_buckets(double start, double width,
                                                                    std::size_t length) {
  std::vector<double> b;
  b.reserve(length);
  for (std::size_t i = 0; i < length; ++i)
    b.push_back(start * std::pow(width, static_cast<double>(i)));
  return b;
}

/// SGLang's `sglang:per_stage_req_latency_seconds{stage}` (metrics_collector.py at
/// 44cedc2b9c7dd31d9acae4498ea4fa0d3665feed, `SchedulerMetricsCollector`: buckets
/// `exponential_buckets(start=0.001, width=1.62, length=30)`; the stages in
/// python/sglang/srt/observability/req_time_stats.py at
/// 00ce49e05c17e08f643afab34f3cdcef14935ac0, `RequestStage` with `metrics_is_observed`): the
/// stages tokchron's events give, by role. `prefill_forward` (forward entry to the prefill's
/// end: first scheduled to first token) on a unified (`both`) or `prefill` node;
/// `prefill_transfer_kv_cache` (transfer-queue entry to the transfer's end) on a `prefill`
/// node and `decode_transferred` (decode transfer-queue entry to the wait queue) on a `decode`
/// node, both the time `kv_transfer` gives. The other stages (`request_process`,
/// `chunked_prefill`, bootstrap and preallocation, `decode_waiting`, `fake_output`,
/// `quick_finish`) time scheduler queues tokchron's events do not mark.
[[nodiscard]] inline live_family sglang_stage_family(live_role role) {
  live_family f;
  f.name = "sglang:per_stage_req_latency_seconds";
  f.source = live_source::stage_histograms;
  f.kind = metric_kind::histogram;
  f.help = "The latency of each stage of requests.";
  f.unit = "seconds";
  f.label = "stage";
  f.buckets = sglang_exponential_buckets(0.001, 1.62, 30);
  if (role != live_role::decode) {
    f.stages.push_back(live_histogram::prefill_time);
    f.label_values.emplace_back("prefill_forward");
  }
  if (role != live_role::both) {
    f.stages.push_back(live_histogram::kv_transfer_time);
    f.label_values.emplace_back(role == live_role::prefill ? "prefill_transfer_kv_cache"
                                                           : "decode_transferred");
  }
  return f;
}

/// SGLang's `/metrics` (sgl-project/sglang python/sglang/srt/metrics/collector.py at
/// 00ae9c1590d2d0bb6c0bfff39e312c34ae3dd538, TokenizerMetricsCollector and
/// SchedulerMetricsCollector, the same at its new path
/// python/sglang/srt/observability/metrics_collector.py at
/// 44cedc2b9c7dd31d9acae4498ea4fa0d3665feed but for `cache_source`; called from
/// python/sglang/srt/managers/tokenizer_manager.py
/// `collect_metrics` once per output batch): label `model_name`; `sglang:time_to_first_token_
/// seconds` as the first batch arrives, `sglang:inter_token_latency_seconds` with k samples of
/// g / k for each later batch of k tokens (`observe_inter_token_latency`: the bucket of
/// interval / num_new_tokens gets num_new_tokens, the sum the interval), and when the request
/// finishes `sglang:e2e_request_latency_seconds`, `sglang:prompt_tokens_total`,
/// `sglang:generation_tokens_total`, `sglang:cached_tokens_total{cache_source="total"}` (SGLang's
/// source for a cached count without a device/host/storage breakdown, which is all the server
/// gives tokchron), `sglang:num_requests_total`
/// (`observe_one_finished_request`); `sglang:num_aborted_requests_total`;
/// `sglang:queue_time_seconds` when the scheduler first runs the request; the running and queue
/// gauges; `sglang:num_retracted_requests_total` from preemptions; `sglang:token_usage` is the
/// server-fed KV-cache gauge. Bucket lists are SGLang's defaults.
[[nodiscard]] inline live_options sglang_live_options(std::string model_name,
                                                      live_role role = live_role::both) {
  live_options o;
  o.role = role;
  o.rules.itl = itl_grain::per_token_split;
  o.rules.tokens_at_finish = true;
  o.rules.queue_at_schedule = true;
  o.label_names = {"model_name"};
  o.default_label_values = {std::move(model_name)};
  using h = live_histogram;
  using src = live_source;
  live_family cached = live_source_family("sglang:cached_tokens", src::prompt_tokens_cached);
  cached.const_labels = {label{"cache_source", "total"}};
  o.families = {
      live_histogram_family(
          "sglang:time_to_first_token_seconds", h::ttft,
          {0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400}),
      live_histogram_family(
          "sglang:inter_token_latency_seconds", h::itl,
          {0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060,
           0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000}),
      live_histogram_family("sglang:e2e_request_latency_seconds", h::e2e,
                            {0.1, 0.2, 0.4, 0.6, 0.8, 1,   2,   4,   6,    8,    10,
                             20,  40,  60,  80,  100, 200, 400, 600, 1200, 1800, 2400}),
      live_histogram_family("sglang:queue_time_seconds", h::queue_time,
                            {0.0, 0.1, 0.2, 0.5, 1,    2,    3,    4,    5,    10,   15,   20,
                             30,  40,  50,  60,  70,   80,   90,   100,  200,  300,  400,  500,
                             600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000}),
      live_source_family("sglang:prompt_tokens", src::prompt_tokens),
      live_source_family("sglang:generation_tokens", src::generation_tokens),
      live_source_family("sglang:num_retracted_requests", src::preemptions),
      live_source_family("sglang:num_running_reqs", src::running),
      live_source_family("sglang:num_queue_reqs", src::waiting),
      live_source_family("sglang:token_usage", src::kv_cache_usage),
      // The KV-transfer gauges a prefill node sets from its most recent transfer
      // (metrics_collector.py at 44cedc2 `SchedulerMetricsCollector.log_stats`, fed by the
      // prefill scheduler's last `compute_and_observe_kv_transfer_metrics`).
      live_source_family("sglang:kv_transfer_speed_gb_s", src::kv_transfer_last_gb_s,
                         "The transfer speed of the KV cache in GB/s."),
      live_source_family("sglang:kv_transfer_latency_ms", src::kv_transfer_last_ms,
                         "The transfer latency of the KV cache in ms."),
      live_source_family("sglang:kv_transfer_total_mb", src::kv_transfer_last_mb,
                         "The total number of tokens transferred in the KV cache."),
      sglang_stage_family(role),
      cached,
      live_finished_family("sglang:num_requests",
                           static_cast<std::uint8_t>(live_reason_bit(finish_reason::stop) |
                                                     live_reason_bit(finish_reason::length) |
                                                     live_reason_bit(finish_reason::aborted) |
                                                     live_reason_bit(finish_reason::error) |
                                                     live_reason_bit(finish_reason::timed_out)),
                           "Number of requests processed."),
      live_finished_family("sglang:num_aborted_requests",
                           static_cast<std::uint8_t>(live_reason_bit(finish_reason::aborted) |
                                                     live_reason_bit(finish_reason::timed_out)),
                           "Number of requests aborted."),
      live_source_family("tokchron_rejected_requests", src::rejected),
  };
  live_append(o.families, live_own_families());
  return o;
}

/// Text Generation Inference's duration buckets (router/src/server.rs at
/// 003eaec0fbe00aacf03547b317163363cef56ab9, `start`): 35 edges, 0.0001 multiplied by 1.5 once
/// per edge, as TGI computes them; every family whose name ends in "duration".
[[nodiscard]] inline std::vector<double> tgi_duration_buckets() {
  std::vector<double> b;
  b.reserve(35);
  double value = 0.0001;
  for (int i = 0; i < 35; ++i) {
    value *= 1.5;
    b.push_back(value);
  }
  return b;
}

/// TGI's linear buckets: `max / 100 * (x + 1)` for x = 0..99 (router/src/server.rs). Throws
/// std::invalid_argument for a maximum of 0 (TGI's edges would all be 0).
[[nodiscard]] inline std::vector<double> tgi_linear_buckets(std::uint64_t max) {
  if (max == 0)
    TOKCHRON_THROW(std::invalid_argument, "tokchron: TGI's length buckets need max > 0");
  std::vector<double> b;
  b.reserve(100);
  for (int x = 0; x < 100; ++x) b.push_back(static_cast<double>(max) / 100.0 * (x + 1));
  return b;
}

/// Text Generation Inference's router `/metrics` (huggingface/text-generation-inference
/// router/src/server.rs at 003eaec0fbe00aacf03547b317163363cef56ab9, `generate_internal` and
/// `generate_stream_internal`; router/src/validation.rs; backends/v3/src/queue.rs and
/// backend.rs at db931fcf42da018a3657580c64bf2720f167f9ab): no labels; at the end of a
/// successful request `tgi_request_success`, `tgi_request_duration` (arrival to end),
/// `tgi_request_validation_duration` (arrival to queued), `tgi_request_queue_duration`
/// (queued to batch start), `tgi_request_inference_duration` (batch start to the last token),
/// `tgi_request_mean_time_per_token_duration` (that over the generated tokens),
/// `tgi_request_generated_tokens`; at validation (tokchron: `arrive`) `tgi_request_input_length`
/// and `tgi_request_max_new_tokens`; `tgi_request_count` at arrival; `tgi_request_failure{err}`;
/// the `tgi_queue_size` and `tgi_batch_current_size` gauges. Counters are written without
/// `_total`, as TGI's exporter writes them. Buckets: `tgi_duration_buckets()`, lengths on
/// `tgi_linear_buckets(max_input_tokens)` and `tgi_linear_buckets(max_total_tokens)`.
[[nodiscard]] inline live_options tgi_live_options(std::uint64_t max_input_tokens,
                                                   std::uint64_t max_total_tokens) {
  live_options o;
  o.rules.itl = itl_grain::per_chunk;
  o.rules.tpot = tpot_span::origin_to_last_over_n;
  o.rules.lengths_at_arrival = true;
  o.rules.reasons = static_cast<std::uint8_t>(live_reason_bit(finish_reason::stop) |
                                              live_reason_bit(finish_reason::length));
  using h = live_histogram;
  using src = live_source;
  const std::vector<double> duration = tgi_duration_buckets();
  const std::vector<double> total = tgi_linear_buckets(max_total_tokens);
  o.families = {
      live_histogram_family("tgi_request_mean_time_per_token_duration", h::tpot, duration),
      live_histogram_family("tgi_request_duration", h::e2e, duration),
      live_histogram_family("tgi_request_queue_duration", h::queue_time, duration),
      live_histogram_family("tgi_request_inference_duration", h::inference_time, duration),
      live_histogram_family("tgi_request_input_length", h::prompt_tokens,
                            tgi_linear_buckets(max_input_tokens)),
      live_histogram_family("tgi_request_generated_tokens", h::generation_tokens, total),
      live_histogram_family("tgi_request_max_new_tokens", h::max_tokens, total),
      live_histogram_family("tgi_request_validation_duration", h::validation_time, duration),
      // The err values TGI gives: "dropped" when the client's channel closed
      // (backends/v3/src/backend.rs), "generation" for a failed generation (ibid.), "overloaded"
      // when the concurrency limit refuses a request (router/src/infer/mod.rs). TGI has no
      // request timeout: a request timed out is dropped. Stop and length are successes.
      live_requests_family("tgi_request_failure", "err",
                           {"", "", "dropped", "generation", "dropped", "overloaded"}),
      live_source_family("tgi_batch_current_size", src::running),
      live_source_family("tgi_queue_size", src::waiting),
      live_source_family("tgi_request_count", src::arrived),
      live_finished_family("tgi_request_success",
                           static_cast<std::uint8_t>(live_reason_bit(finish_reason::stop) |
                                                     live_reason_bit(finish_reason::length)),
                           "Number of successful requests"),
  };
  for (auto& f : o.families)  // TGI's exporter writes counters without _total
    if (f.kind == metric_kind::counter) f.total_suffix = false;
  live_append(o.families, live_own_families());
  return o;
}

/// The llama.cpp server's `/metrics` with `--metrics`, as the release in npm
/// `node-llama-cpp@3.21.1` has it (llama.cpp tag v0.4.0 in its `llama/llama.cpp.info.json`;
/// tools/server/server-task.cpp `server_task_result_metrics::to_metrics`, server-common.h
/// `server_metrics` and `server_slot_stats`, server-context.cpp `metrics_on_prediction`): no
/// labels, no histograms, llama.cpp's names, help texts and order;
/// `llamacpp:prompt_tokens_total` (prompt tokens computed, the cached ones not) and
/// `llamacpp:prompt_tokens_cached_total` at a request's first token (llama.cpp counts them as
/// its batches run); `llamacpp:tokens_predicted_total` and
/// `llamacpp:tokens_predicted_seconds_total` when a request that produced a token finishes,
/// whatever the reason (llama.cpp: as its slot is released, aborted ones included), the
/// decode time max(1 us, last token - first token) in whole microseconds; the gauge
/// `llamacpp:predicted_tokens_seconds`, decode steps (N - 1 per request) over decode time for
/// the requests finished since the previous scrape (each `/metrics` call restarts llama.cpp's
/// window); `llamacpp:requests_processing` (running), `llamacpp:requests_deferred` (waiting).
/// Left out, as no request event gives them: the prompt time and rate (timed per decode batch,
/// once whatever the slots in it) and the engine's own counts (`n_decode_total`,
/// `n_tokens_max`, `n_busy_slots_per_decode`, speculative decoding's). llama.cpp counts no
/// requests: tokchron's `tokchron_requests_total{outcome}` (`live_outcome_family`) is added,
/// with tokchron's own counters. An `n > 1` answer that copies its parent's prompt calls
/// `set_shared_prompt`, so that the prompt counts once, as llama.cpp counts it.
[[nodiscard]] inline live_options llamacpp_live_options() {
  live_options o;
  o.rules.itl = itl_grain::per_chunk;
  using src = live_source;
  o.families = {
      live_source_family("llamacpp:prompt_tokens", src::prompt_tokens_computed,
                         "Number of prompt tokens processed, excluding cached tokens"),
      live_source_family("llamacpp:prompt_tokens_cached", src::prompt_tokens_cached,
                         "Number of prompt tokens reused from the cache"),
      live_source_family("llamacpp:tokens_predicted", src::finished_output_tokens,
                         "Number of generation tokens processed"),
      live_source_family("llamacpp:tokens_predicted_seconds", src::decode_seconds,
                         "Total time spent generating tokens"),
      live_source_family("llamacpp:predicted_tokens_seconds", src::decode_throughput,
                         "Average generation throughput in tokens/s"),
      live_source_family("llamacpp:requests_processing", src::running,
                         "Number of requests processing"),
      live_source_family("llamacpp:requests_deferred", src::waiting, "Number of requests deferred"),
      live_outcome_family(),
      live_source_family("tokchron_rejected_requests", src::rejected),
  };
  live_append(o.families, live_own_families());
  return o;
}

/// trtllm-serve's `/prometheus/metrics` (NVIDIA/TensorRT-LLM tensorrt_llm/metrics/collector.py
/// at 050f80def8df236e326949c8bd9dee10fd896a83, `MetricsCollector`; the per-request values of
/// tensorrt_llm/metrics/perf_utils.py at 11ef94feee457e1b2f6f5ecc9172475d918aec20,
/// `process_req_perf_metrics`): labels `model_name` and `engine_type` ("trtllm"); when a
/// request finishes with a finish reason (stop, length, timeout) `trtllm_request_success_total
/// {finished_reason}`, TTFT and E2E from the executor's arrival to the first and the last
/// token, TPOT decode / (N - 1) for N > 1, queue, prefill, decode and inference times, the
/// prompt and generation token counters; values of 0 are not observed (queue time excepted);
/// the running and waiting gauges (iteration stats); `trtllm_kv_cache_utilization` is the
/// server-fed KV-cache gauge. Bucket lists are the collector's defaults.
[[nodiscard]] inline live_options trtllm_live_options(std::string model_name,
                                                      std::string engine_type = "trtllm") {
  live_options o;
  o.rules.itl = itl_grain::per_chunk;
  o.rules.ttft_at_finish = true;
  o.rules.tokens_at_finish = true;
  o.rules.from_queued = true;
  o.rules.e2e_to_last_token = true;
  o.rules.positive_only = true;
  o.rules.reasons = static_cast<std::uint8_t>(live_reason_bit(finish_reason::stop) |
                                              live_reason_bit(finish_reason::length) |
                                              live_reason_bit(finish_reason::timed_out));
  o.label_names = {"model_name", "engine_type"};
  o.default_label_values = {std::move(model_name), std::move(engine_type)};
  using h = live_histogram;
  using src = live_source;
  const std::vector<double> long_latency = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                            5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                            60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
  o.families = {
      live_histogram_family(
          "trtllm_time_to_first_token_seconds", h::ttft,
          {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
           1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}),
      live_histogram_family("trtllm_time_per_output_token_seconds", h::tpot,
                            {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
                             2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}),
      live_histogram_family("trtllm_e2e_request_latency_seconds", h::e2e, long_latency),
      live_histogram_family("trtllm_request_queue_time_seconds", h::queue_time, long_latency),
      live_histogram_family("trtllm_request_prefill_time_seconds", h::prefill_time,
                            {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                             20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}),
      live_histogram_family("trtllm_request_decode_time_seconds", h::decode_time, long_latency),
      live_histogram_family("trtllm_request_inference_time_seconds", h::inference_time,
                            long_latency),
      // tensorrt_llm/executor/result.py: END_ID and STOP_WORDS -> "stop", LENGTH -> "length",
      // TIMED_OUT -> "timeout"; a cancelled or failed request has no finish reason and is not
      // counted (tensorrt_llm/metrics/collector.py logs only requests with one).
      live_requests_family("trtllm_request_success", "finished_reason",
                           {"stop", "length", "", "", "timeout", ""}),
      live_source_family("trtllm_prompt_tokens", src::prompt_tokens),
      live_source_family("trtllm_generation_tokens", src::generation_tokens),
      live_source_family("trtllm_num_requests_running", src::running),
      live_source_family("trtllm_num_requests_waiting", src::waiting),
      live_source_family("trtllm_kv_cache_utilization", src::kv_cache_usage),
      live_source_family("trtllm_prompt_cached_tokens", src::prompt_tokens_cached),
      live_source_family("trtllm_spec_decode_num_draft_tokens", src::spec_draft_tokens),
      live_source_family("trtllm_spec_decode_num_accepted_tokens", src::spec_accepted_tokens),
      live_source_family("tokchron_rejected_requests", src::rejected),
  };
  live_append(o.families, live_own_families());
  return o;
}

/// NVIDIA Dynamo's `generate_log_buckets(min, max, count)` (lib/llm/src/http/service/metrics.rs):
/// 0, then `count - 1` log-spaced values from `min` to `max`, each rounded to two significant
/// figures (`round_to_sig_figs`: x * 10^(1 - floor(log10 x)), rounded half away from zero, and
/// divided back), duplicates removed. Empty for `count` 0, {0} for 1. Throws
/// std::invalid_argument unless 0 < min < max are finite and count <= 512 (Dynamo then falls
/// back to its defaults).
[[nodiscard]] inline std::vector<double> dynamo_log_buckets(double min, double max,
                                                            std::size_t count) {
  if (!(min > 0 && min < max && max - max == 0) || count > 512)
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: dynamo_log_buckets needs 0 < min < max, finite, and count <= 512");
  std::vector<double> b;
  if (count == 0) return b;
  b.push_back(0.0);
  for (std::size_t i = 1; i < count; ++i) {
    const double lo = std::log(min), hi = std::log(max);
    const double v =
        std::exp(lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(count - 1));
    const double scale = std::pow(10.0, 2.0 - 1.0 - std::floor(std::log10(std::fabs(v))));
    const double r = std::round(v * scale) / scale;
    if (r != b.back()) b.push_back(r);
  }
  return b;
}

/// The `status` and `error_type` values of `dynamo_frontend_requests_total` for a request that
/// finished for each `finish_reason` (indexed by it): Dynamo's `Status` and `ErrorType::as_str`
/// (lib/llm/src/http/service/metrics.rs at 0014908a25aecc8e9ce7455bbbaddf9f1521a1b4; the
/// strings of `frontend_service::status` and `frontend_service::error_type` in
/// lib/runtime/src/metrics/prometheus_names.rs). Success carries the error type "" (`NONE`);
/// a client that went away `cancelled` (`monitor_for_disconnects` marks the guard so); a
/// failed generation `internal` (the guard's default); a timeout the server imposed
/// `response_timeout`; a request refused for lack of room `overload` (`request_was_rejected`:
/// ResourceExhausted or WorkerOverloaded, HTTP 529).
inline constexpr std::string_view dynamo_request_status[finish_reason_count] = {
    "success", "success", "error", "error", "error", "error"};
/// See `dynamo_request_status`.
inline constexpr std::string_view dynamo_error_types[finish_reason_count] = {
    "", "", "cancelled", "internal", "response_timeout", "overload"};

/// NVIDIA Dynamo's frontend `/metrics` (ai-dynamo/dynamo lib/llm/src/http/service/metrics.rs at
/// 0014908a25aecc8e9ce7455bbbaddf9f1521a1b4, `Metrics::build`, `Metrics::register`,
/// `InflightGuard`, `HttpQueueGuard`, `ResponseMetricCollector`; the names of
/// lib/runtime/src/metrics/prometheus_names.rs `name_prefix::FRONTEND` and `frontend_service`),
/// in Dynamo's registration order: label `model` (the name as the server gives it; Dynamo keeps
/// its case); `dynamo_frontend_requests_started_total{model, endpoint, request_type}` as each
/// request arrives; `dynamo_frontend_requests_total{model, endpoint, request_type, status,
/// error_type}` as it ends (`dynamo_request_status`, `dynamo_error_types`; `endpoint` and
/// `request_type` are constants of the preset, as tokchron records no endpoint per request);
/// `_inflight_requests` and `_active_requests` (arrived, not finished), `_disconnected_clients`
/// (no labels: aborted requests, a gauge that only rises), `_queued_requests` (arrived, no token
/// yet, not finished); `_request_duration_seconds` for every request as it ends;
/// `_input_sequence_tokens` at the first token; `_output_sequence_tokens` at the end of a
/// request that produced a token; `_cached_tokens` per request that reported them;
/// `_output_tokens_total` as tokens stream; `_time_to_first_token_seconds` from arrival;
/// `_inter_token_latency_seconds` k samples of g / k per later response of k tokens (none for
/// the first response's extra tokens); `_model_cancellation_total{model, endpoint,
/// request_type}` (aborted: counted with each disconnect) and `_model_rejection_total{model,
/// endpoint}` (rejected). Buckets: `dynamo_log_buckets` with Dynamo's defaults. Inclusion
/// `all`: Dynamo observes every request. docs/library/live-metrics.md lists what is left out.
[[nodiscard]] inline live_options dynamo_live_options(std::string model,
                                                      std::string endpoint = "chat_completions",
                                                      std::string request_type = "stream") {
  live_options o;
  o.rules.itl = itl_grain::per_token_split;
  o.rules.lengths_at_first_token = true;
  o.rules.output_length_if_any = true;
  o.inclusion = live_inclusion::all;
  o.label_names = {"model"};
  o.default_label_values = {std::move(model)};
  using h = live_histogram;
  using src = live_source;
  const label_set per_request = {label{"endpoint", endpoint},
                                 label{"request_type", std::move(request_type)}};
  const std::vector<double> isl = dynamo_log_buckets(50.0, 128000.0, 12);
  live_family started =
      live_source_family("dynamo_frontend_requests_started", src::arrived,
                         "Total number of LLM requests accepted by the frontend handler");
  started.const_labels = per_request;
  live_family requests =
      live_requests_family("dynamo_frontend_requests", "status",
                           {std::begin(dynamo_request_status), std::end(dynamo_request_status)});
  requests.second_label = "error_type";
  requests.second_label_values.assign(std::begin(dynamo_error_types), std::end(dynamo_error_types));
  requests.const_labels = per_request;
  requests.help = "Total number of LLM requests processed";
  live_family disconnected =
      live_finished_family("dynamo_frontend_disconnected_clients",
                           static_cast<std::uint8_t>(live_reason_bit(finish_reason::aborted)),
                           "Number of disconnected clients");
  disconnected.kind = metric_kind::gauge;
  disconnected.sum_series = true;
  live_family cancelled =
      live_finished_family("dynamo_frontend_model_cancellation",
                           static_cast<std::uint8_t>(live_reason_bit(finish_reason::aborted)),
                           "Total number of request cancellations");
  cancelled.const_labels = per_request;
  live_family rejected =
      live_finished_family("dynamo_frontend_model_rejection",
                           static_cast<std::uint8_t>(live_reason_bit(finish_reason::rejected)),
                           "Total number of requests rejected due to resource exhaustion");
  rejected.const_labels = {label{"endpoint", std::move(endpoint)}};
  o.families = {
      started,
      requests,
      live_source_family("dynamo_frontend_inflight_requests", src::in_flight,
                         "Number of inflight requests"),
      live_source_family("dynamo_frontend_active_requests", src::in_flight,
                         "Number of requests currently being handled by the frontend, from HTTP "
                         "handler entry to response completion"),
      disconnected,
      live_source_family("dynamo_frontend_queued_requests", src::before_first_token,
                         "Number of requests in HTTP processing queue"),
      live_histogram_family("dynamo_frontend_request_duration_seconds", h::e2e,
                            dynamo_log_buckets(1.0, 512.0, 10), "Duration of LLM requests"),
      live_histogram_family("dynamo_frontend_input_sequence_tokens", h::prompt_tokens, isl,
                            "Input sequence length in tokens"),
      live_histogram_family("dynamo_frontend_output_sequence_tokens", h::generation_tokens,
                            dynamo_log_buckets(50.0, 32000.0, 10),
                            "Output sequence length in tokens"),
      live_histogram_family("dynamo_frontend_cached_tokens", h::cached_prompt_tokens, isl,
                            "Number of cached tokens (prefix cache hits) per request"),
      live_source_family("dynamo_frontend_output_tokens", src::generation_tokens,
                         "Total number of output tokens generated (updates in real-time)"),
      live_histogram_family("dynamo_frontend_time_to_first_token_seconds", h::ttft,
                            dynamo_log_buckets(0.001, 480.0, 18), "Time to first token in seconds"),
      live_histogram_family("dynamo_frontend_inter_token_latency_seconds", h::itl,
                            dynamo_log_buckets(0.001, 2.0, 13), "Inter-token latency in seconds"),
      cancelled,
      rejected,
      live_source_family("tokchron_rejected_requests", src::rejected),
  };
  live_append(o.families, live_own_families());
  return o;
}

/// LMDeploy's `/metrics` with `--enable-metrics` (InternLM/lmdeploy lmdeploy/metrics/loggers.py
/// and stats.py at 0168eedaef9497414956cb20c2ad0f443de6c248, `PrometheusStatLogger`,
/// `IterationStats`; adapted from vLLM's V1 logger): labels `model_name` and `engine` (the data
/// parallel rank); the running and waiting gauges, `lmdeploy:gpu_cache_usage_perc` (server-fed),
/// `lmdeploy:prompt_tokens_total` at the first token, `lmdeploy:generation_tokens_total` as
/// tokens stream, `lmdeploy:time_to_first_token_seconds` from arrival,
/// `lmdeploy:time_per_output_token_seconds` one sample per engine step after the first (the
/// gap, as vLLM's ITL), and for every finished request E2E, queue, prefill, inference and
/// decode times and the prompt and generation lengths (on `build_1_2_5_buckets(4096)`: LMDeploy
/// fixes max_model_len at 4096). No request counter (LMDeploy's is commented out).
[[nodiscard]] inline live_options lmdeploy_live_options(std::string model_name,
                                                        std::string engine = "0") {
  live_options o;
  o.rules.itl = itl_grain::per_chunk;
  o.label_names = {"model_name", "engine"};
  o.default_label_values = {std::move(model_name), std::move(engine)};
  using h = live_histogram;
  using src = live_source;
  const std::vector<double> len = one_two_five_buckets(4096);
  const std::vector<double> latency = vllm_request_latency_buckets();
  o.families = {
      live_source_family("lmdeploy:num_requests_running", src::running,
                         "Number of requests in model execution batches."),
      live_source_family("lmdeploy:num_requests_waiting", src::waiting,
                         "Number of requests waiting to be processed."),
      live_source_family("lmdeploy:gpu_cache_usage_perc", src::kv_cache_usage,
                         "GPU KV-cache usage. 1 means 100 percent usage."),
      live_source_family("lmdeploy:prompt_tokens", src::prompt_tokens,
                         "Number of prefill tokens processed."),
      live_source_family("lmdeploy:generation_tokens", src::generation_tokens,
                         "Number of generation tokens processed."),
      live_histogram_family("lmdeploy:request_prompt_tokens", h::prompt_tokens, len,
                            "Number of prefill tokens processed."),
      live_histogram_family("lmdeploy:request_generation_tokens", h::generation_tokens, len,
                            "Number of generation tokens processed."),
      live_histogram_family("lmdeploy:time_to_first_token_seconds", h::ttft, vllm_ttft_buckets(),
                            "Histogram of time to first token in seconds."),
      live_histogram_family("lmdeploy:time_per_output_token_seconds", h::itl, vllm_itl_buckets(),
                            "Histogram of time per output token in seconds."),
      live_histogram_family("lmdeploy:e2e_request_latency_seconds", h::e2e, latency,
                            "Histogram of e2e request latency in seconds."),
      live_histogram_family("lmdeploy:request_queue_time_seconds", h::queue_time, latency,
                            "Histogram of time spent in WAITING phase for request."),
      live_histogram_family("lmdeploy:request_inference_time_seconds", h::inference_time, latency,
                            "Histogram of time spent in RUNNING phase for request."),
      live_histogram_family("lmdeploy:request_prefill_time_seconds", h::prefill_time, latency,
                            "Histogram of time spent in PREFILL phase for request."),
      live_histogram_family("lmdeploy:request_decode_time_seconds", h::decode_time, latency,
                            "Histogram of time spent in DECODE phase for request."),
      live_source_family("tokchron_rejected_requests", src::rejected),
  };
  live_append(o.families, live_own_families());
  return o;
}

/// Which version of OpenTelemetry's GenAI conventions a preset emits: the stability transition
/// of `open-telemetry/semantic-conventions/docs/gen-ai/README.md` (v1.37.0 and later). An
/// instrumentation that emitted v1.36.0 or earlier keeps doing so by default and emits the
/// latest experimental version only when `OTEL_SEMCONV_STABILITY_OPT_IN` lists
/// `gen_ai_latest_experimental`.
enum class otel_genai_semconv : std::uint8_t {
  v1_36,   ///< the provider in `gen_ai.system` (v1.36.0)
  latest,  ///< the provider in `gen_ai.provider.name` (semantic-conventions-genai, below)
};

/// `otel_genai_semconv::latest` when `opt_in` (the value of `OTEL_SEMCONV_STABILITY_OPT_IN`, a
/// comma-separated list) names `gen_ai_latest_experimental`, else `v1_36`.
[[nodiscard]] inline otel_genai_semconv otel_genai_semconv_from(std::string_view opt_in) noexcept {
  while (!opt_in.empty()) {
    const std::size_t comma = opt_in.find(',');
    std::string_view item = opt_in.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == "gen_ai_latest_experimental") return otel_genai_semconv::latest;
    if (comma == std::string_view::npos) break;
    opt_in.remove_prefix(comma + 1);
  }
  return otel_genai_semconv::v1_36;
}

/// One of OpenTelemetry's GenAI model-server metrics
/// (`open-telemetry/semantic-conventions-genai/docs/gen-ai/gen-ai-metrics.md` at
/// 004902b8cb70aa5ae6ca4ae07132b7daabcd3e10): its name, the name OpenTelemetry's Prometheus
/// exporters give it (dots to underscores, the unit `s` as `_seconds`), its UCUM unit, the
/// conventions' description, the histogram that records it and its recommended explicit
/// bucket boundaries.
struct otel_genai_metric {
  std::string_view otel;
  std::string_view prometheus;
  std::string_view unit;
  std::string_view description;
  live_histogram histogram;
  const double* bounds;
  std::size_t bound_count;
  /// True: successful responses only (finish reasons stop and length); false: every request,
  /// a failed one's point carrying `error.type` (`otel_genai_error_types`).
  bool successful_only;
};

namespace detail {
inline constexpr double otel_duration_bounds[] = {0.01, 0.02, 0.04, 0.08,  0.16,  0.32,  0.64,
                                                  1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};
inline constexpr double otel_tpot_bounds[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                              0.3,  0.4,   0.5,  0.75,  1.0, 2.5};
inline constexpr double otel_ttft_bounds[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                              0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0};
}  // namespace detail

/// The three model-server metrics, the one table of their names, units, descriptions and
/// buckets (`otel_live_options` and export/otlp.hpp's `otlp_genai_histograms` read it).
inline constexpr otel_genai_metric otel_genai_server_metrics[] = {
    {"gen_ai.server.request.duration", "gen_ai_server_request_duration_seconds", "s",
     "Generative AI server request duration such as time-to-last byte or last output token.",
     live_histogram::e2e, detail::otel_duration_bounds, std::size(detail::otel_duration_bounds),
     false},
    {"gen_ai.server.time_per_output_token", "gen_ai_server_time_per_output_token_seconds", "s",
     "Time per output token generated after the first token for successful responses.",
     live_histogram::tpot, detail::otel_tpot_bounds, std::size(detail::otel_tpot_bounds), true},
    {"gen_ai.server.time_to_first_token", "gen_ai_server_time_to_first_token_seconds", "s",
     "Time to generate first token for successful responses.", live_histogram::ttft,
     detail::otel_ttft_bounds, std::size(detail::otel_ttft_bounds), true},
};

/// The `error.type` of a request that finished for each `finish_reason` (indexed by it; empty:
/// a successful response, no `error.type`). The conventions ask for the provider's error code,
/// an exception's canonical name "or another low-cardinality error identifier", and that an
/// instrumentation document the list it reports: this is the list. `timeout` is the
/// conventions' own example value; `_OTHER` their fallback for an error the instrumentation
/// names no further (tokchron's `error`: the server failed the request).
inline constexpr std::string_view otel_genai_error_types[finish_reason_count] = {
    "",           // stop
    "",           // length
    "cancelled",  // aborted: the client went away or cancelled
    "_OTHER",     // error: the server failed the request
    "timeout",    // timed_out: an allotted time ran out
    "rejected",   // rejected: refused before being scheduled (queue full, queue timeout)
};

/// The attributes `otel_live_options` writes, by their OpenTelemetry name and their Prometheus
/// label name.
struct otel_genai_attribute {
  std::string_view otel;
  std::string_view prometheus;
};
/// See `otel_genai_attribute`.
inline constexpr otel_genai_attribute otel_genai_attributes[] = {
    {"gen_ai.operation.name", "gen_ai_operation_name"},
    {"gen_ai.provider.name", "gen_ai_provider_name"},
    {"gen_ai.system", "gen_ai_system"},
    {"gen_ai.request.model", "gen_ai_request_model"},
    {"error.type", "error_type"},
};

/// OpenTelemetry's GenAI model-server metrics
/// (`open-telemetry/semantic-conventions-genai/docs/gen-ai/gen-ai-metrics.md` at
/// 004902b8cb70aa5ae6ca4ae07132b7daabcd3e10, status Development; attributes of
/// semantic-conventions v1.42.0) in the Prometheus exposition, named as OpenTelemetry's
/// Prometheus exporters translate them (dots to underscores, the unit `s` as the suffix
/// `_seconds`): `gen_ai_server_time_to_first_token_seconds` and
/// `gen_ai_server_time_per_output_token_seconds` for successful responses (stop, length: the
/// conventions' "for successful responses"), `gen_ai_server_request_duration_seconds` for every
/// finished request (inclusion `all`), a failed one's in a point labelled `error_type`
/// (`otel_genai_error_types`), each on the conventions' recommended explicit buckets. TTFT from
/// arrival (queue and prefill), observed at the finish; TPOT (last token - first token) / (tokens
/// after the first); the duration from arrival to the finish (the response's last byte).
/// Labels: `gen_ai_operation_name` (`operation`, e.g. `chat`, `text_completion`), the provider
/// (`gen_ai_provider_name`, or `gen_ai_system` under `otel_genai_semconv::v1_36`),
/// `gen_ai_request_model`.
[[nodiscard]] inline live_options otel_live_options(
    std::string model, std::string provider, std::string operation = "chat",
    otel_genai_semconv version = otel_genai_semconv::latest) {
  live_options o;
  o.rules.itl = itl_grain::per_token_with_first;
  o.rules.ttft_at_finish = true;  // successful responses only: known at the finish
  o.inclusion = live_inclusion::all;
  o.label_names = {"gen_ai_operation_name",
                   version == otel_genai_semconv::latest ? "gen_ai_provider_name" : "gen_ai_system",
                   "gen_ai_request_model"};
  o.default_label_values = {std::move(operation), std::move(provider), std::move(model)};
  for (const auto& m : otel_genai_server_metrics) {
    live_family f = live_histogram_family(std::string(m.prometheus), m.histogram,
                                          std::vector<double>(m.bounds, m.bounds + m.bound_count),
                                          std::string(m.description));
    if (m.successful_only) {
      f.reasons = static_cast<std::uint8_t>(live_reason_bit(finish_reason::stop) |
                                            live_reason_bit(finish_reason::length));
    } else {
      f.label = "error_type";
      f.label_values.assign(std::begin(otel_genai_error_types), std::end(otel_genai_error_types));
    }
    o.families.push_back(std::move(f));
  }
  live_append(o.families, live_own_families());
  return o;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_LIVE_PRESETS_HPP
