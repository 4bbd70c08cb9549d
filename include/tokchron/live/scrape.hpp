// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_LIVE_SCRAPE_HPP
#define TOKCHRON_LIVE_SCRAPE_HPP

/// \file
/// `scrape(m)`: the cumulative `metrics_snapshot` of a `basic_live_metrics` object, for
/// `to_prometheus`, the OpenMetrics writer, OTLP or the prometheus-cpp adaptor. Callable from
/// any thread at any time, concurrently with writers and with other scrapes.
///
/// \code
///   std::string text = tokchron::to_prometheus(tokchron::scrape(metrics));
/// \endcode
///
/// Guarantees: every event recorded before the scrape began is in it exactly once; an event
/// recorded concurrently is in this scrape or the next, whole (a chunk's counter, ITL sample
/// and TTFT together; a finish's counter and histograms together). Cumulative series never
/// decrease from one scrape to the next; each histogram's buckets, `_count` and `_sum` agree.
/// Gauges (running, waiting) are the sums of the events scraped, so they are exact as of the
/// scrape.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tokchron/collect/detail/asymmetric_barrier.hpp"
#include "tokchron/config.hpp"
#include "tokchron/exposition/snapshot_data.hpp"
#include "tokchron/live/detail/state.hpp"
#include "tokchron/live/options.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/live/recorder.hpp"
#include "tokchron/metrics/metric_table.hpp"
#include "tokchron/timeline/event.hpp"

TOKCHRON_BEGIN_NAMESPACE

namespace detail {

/// Moves every shard's recorded side into `st.total` (scrape lock held). A shard whose thread
/// let it go is emptied on both sides, guarded against a thread claiming it meanwhile.
///
/// Why nothing is lost or counted twice:
/// - Flip and quiescence are Dekker's pattern. A writer stores its odd `seq_` then loads
///   `epoch_`; the scrape stores `epoch_` then loads `seq_`, with a full barrier between store
///   and load on both sides (asymmetric: the writer's compiler barrier made full by the
///   scrape's `membarrier`; otherwise seq_cst on both). So either the writer sees the new epoch
///   (it records into the new side, which the scrape does not read), or the scrape sees the odd
///   `seq_` and waits until it changes (the call left; release/acquire on `seq_` then makes its
///   stores visible before the merge). A call that began after the flip reads the new epoch.
/// - A writer descheduled inside a call for a long time delays the scrape (it spins, then
///   yields) but is never skipped: the scrape cannot take a side a call may still write. Only
///   the calls that chose the old side are waited for.
/// - Two scrapes never run this at once (`live_scrape_lock`); each flips once, so a side is
///   merged by exactly one scrape, after which it is zero.
/// - A shard pushed after `head` was read began recording after this scrape began; its side
///   is merged by the next scrape. A thread that exits stores `lo_retired` (release) after its
///   last call; the CAS to `lo_draining` (acquire) lets the scrape take its other side too. A
///   thread claiming the shard meanwhile either won first (the scrape's CAS fails; the thread
///   records into the active side through the same bracket) or finds it draining and takes
///   another shard: both cases are whole.
inline void live_drain(live_state& st) noexcept {
  live_shard* const head = st.head.load(std::memory_order_acquire);
  const auto order = st.asymmetric ? std::memory_order_release : std::memory_order_seq_cst;
  for (live_shard* s = head; s != nullptr; s = s->next)
    s->core.epoch_.store(s->core.epoch_.load(std::memory_order_relaxed) + 1, order);
  if (st.asymmetric) asymmetric_barrier::heavy();
  for (live_shard* s = head; s != nullptr; s = s->next) {
    s->core.wait_quiescent([] { std::this_thread::yield(); });
    const std::size_t old_side = (s->core.epoch_.load(std::memory_order_relaxed) - 1) & 1u;
    (void)s->core.buffers_[old_side].value.merge_into(st.total);
    std::uint8_t expect = lo_retired;
    if (s->owner.compare_exchange_strong(expect, lo_draining, std::memory_order_acq_rel)) {
      (void)s->core.buffers_[old_side ^ 1u].value.merge_into(st.total);
      s->owner.store(lo_retired, std::memory_order_release);
    }
  }
}

/// The scrape lock: scrapes are rare and short, so a spin with yield.
struct live_scrape_lock {
  explicit live_scrape_lock(live_state& s) noexcept : st(s) {
    while (st.scrape_lock.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
  }
  live_scrape_lock(const live_scrape_lock&) = delete;
  live_scrape_lock& operator=(const live_scrape_lock&) = delete;
  ~live_scrape_lock() { st.scrape_lock.clear(std::memory_order_release); }
  live_state& st;
};

/// What one scrape took out of the shared state: each series' counters and histogram sums
/// (zeros for a series never touched), tokchron's own counts, the throughput window, and the
/// series to write with their labels.
struct live_scrape_data {
  std::vector<std::vector<std::uint64_t>> counts;
  std::vector<std::vector<double>> sums;
  std::vector<bool> present;
  /// By series: prompt tokens, prefill ms, generation tokens, decode ms added since the
  /// previous scrape (the throughput gauges' window).
  std::vector<std::array<std::uint64_t, 2>> window;
  /// By series: the most recent KV-cache transfer as {seconds, bytes}, read once per scrape so
  /// that every gauge of it describes the same transfer; empty when none was recorded.
  std::vector<std::optional<std::pair<double, std::uint64_t>>> last_transfer;
  std::uint64_t misuse = 0, dropped = 0, label_overflow = 0, long_label_values = 0;
  std::uint32_t features = 0;  ///< live_feature bits
  bool prefix_cache_used = false;
  /// The series to write: interned ones in interning order, then the overflow series if it
  /// holds anything.
  std::vector<std::pair<std::uint32_t, label_set>> series;

  /// Counter slot `c` of series `s` (0 for a series never touched).
  [[nodiscard]] std::uint64_t counter(std::uint32_t s, std::uint32_t c) const noexcept {
    return present[s] ? counts[s][c] : 0;
  }
  /// Finished requests of series `s` whose reason is in `reasons` (bits `live_reason_bit`).
  [[nodiscard]] std::uint64_t finished(std::uint32_t s, unsigned reasons) const noexcept {
    std::uint64_t total = 0;
    for (std::uint32_t r = 0; r < finish_reason_count; ++r)
      if ((reasons & (1u << r)) != 0) total = live_sat_add(total, counter(s, lc_requests + r));
    return total;
  }
};

/// True if some family of `o` is fed by `source`.
[[nodiscard]] inline bool live_exports(const live_options& o, live_source source) noexcept {
  for (const live_family& f : o.families)
    if (f.source == source) return true;
  return false;
}

/// Drains every shard into the state's totals and copies them out (scrape lock held for the
/// copy only), with tokchron's own counts and the throughput window.
inline void live_take(live_state& st, live_scrape_data& d) {
  const live_layout& lay = st.layout;
  live_scrape_lock lock(st);
  live_drain(st);
  d.counts.resize(lay.series);
  d.sums.resize(lay.series);
  d.present.assign(lay.series, false);
  d.window.assign(lay.series, std::array<std::uint64_t, 2>{});
  for (std::uint32_t s = 0; s < lay.series; ++s) {
    if (const live_block* b = st.total.find(s)) {
      d.counts[s].assign(b->n, b->n + lay.counts);
      d.sums[s].assign(b->sum, b->sum + lay.sums);
      d.present[s] = true;
    }
  }
  d.misuse = st.total.misuse;
  d.dropped = st.total.dropped + st.lost_shards.load(std::memory_order_relaxed);
  d.label_overflow = d.counter(st.overflow_index(), lc_overflow_requests);
  d.long_label_values = st.long_label_values.load(std::memory_order_relaxed);
  d.features = st.features.load(std::memory_order_relaxed);
  d.prefix_cache_used = st.prefix_cache_used.load(std::memory_order_relaxed);
  d.last_transfer.assign(lay.series, std::nullopt);
  for (std::uint32_t s = 0; s < lay.series && s < st.last_transfer.size(); ++s) {
    double seconds = 0;
    std::uint64_t bytes = 0;
    if (st.last_transfer[s].load(seconds, bytes)) d.last_transfer[s].emplace(seconds, bytes);
  }
  // The decode throughput gauge's window: since the previous scrape (serialised by the lock).
  if (live_exports(st.options, live_source::decode_throughput)) {
    st.window.resize(lay.series);
    for (std::uint32_t s = 0; s < lay.series; ++s) {
      if (!d.present[s]) continue;
      const std::array<std::uint64_t, 2> now{d.counts[s][lc_decode_steps],
                                             d.counts[s][lc_decode_us]};
      for (std::size_t i = 0; i < 2; ++i) d.window[s][i] = now[i] - st.window[s][i];
      st.window[s] = now;
    }
  }
}

/// The series a scrape writes (`live_scrape_data::series`): every interned label-value set in
/// interning order (zeros if never touched), then the overflow series if it holds anything.
inline void live_series_labels(const live_state& st, live_scrape_data& d) {
  const live_options& o = st.options;
  const std::uint32_t interned = st.next_index.load(std::memory_order_acquire);
  for (std::uint32_t s = 0; s < interned && s < st.overflow_index(); ++s) {
    const live_series_entry* e = st.by_index[s].load(std::memory_order_acquire);
    if (e == nullptr || e->index.load(std::memory_order_acquire) != s) continue;
    label_set l;
    for (std::size_t i = 0; i < o.label_names.size(); ++i)
      l.push_back(label{o.label_names[i], e->values[i]});
    d.series.emplace_back(s, std::move(l));
  }
  if (d.present[st.overflow_index()]) {
    label_set l;
    for (const auto& name : o.label_names) l.push_back(label{name, o.overflow_value});
    d.series.emplace_back(st.overflow_index(), std::move(l));
  }
}

/// True if family `f` is written by this scrape: the families of server-fed and optional
/// series only once something was fed or recorded into them.
[[nodiscard]] inline bool live_written(const live_family& f, const live_options& o,
                                       const live_scrape_data& d) noexcept {
  switch (f.source) {
    case live_source::prefix_cache_queries:
    case live_source::prefix_cache_hits: return d.prefix_cache_used;
    case live_source::prompt_tokens_cached:
    case live_source::prompt_tokens_by_source:
    case live_source::prompt_tokens_recomputed: return (d.features & lf_cached_prompt) != 0;
    case live_source::reasoning_tokens: return (d.features & lf_reasoning) != 0;
    case live_source::spec_drafts:
    case live_source::spec_draft_tokens:
    case live_source::spec_accepted_tokens: return (d.features & lf_speculative) != 0;
    case live_source::spec_accepted_per_position:
      return (d.features & lf_speculative) != 0 && o.speculative_positions > 0;
    case live_source::kv_transfers:
    case live_source::kv_transfer_bytes:
    case live_source::kv_transfer_tokens:
    case live_source::kv_transfer_last_ms:
    case live_source::kv_transfer_last_mb:
    case live_source::kv_transfer_last_gb_s: return (d.features & lf_kv_transfer) != 0;
    case live_source::histogram:
      return f.histogram != live_histogram::kv_transfer_time || (d.features & lf_kv_transfer) != 0;
    default: return true;
  }
}

/// The counter slot of a source counted per series in one slot, or `lc_count` for the others.
[[nodiscard]] constexpr std::uint32_t live_slot(live_source source) noexcept {
  switch (source) {
    case live_source::prompt_tokens: return lc_prompt_tokens;
    case live_source::generation_tokens: return lc_generation_tokens;
    case live_source::preemptions: return lc_preemptions;
    case live_source::running: return lc_running;
    case live_source::waiting: return lc_waiting;
    case live_source::before_first_token: return lc_before_first;
    case live_source::prefix_cache_queries: return lc_prefix_queries;
    case live_source::prefix_cache_hits: return lc_prefix_hits;
    case live_source::prompt_tokens_cached: return lc_prompt_cached;
    case live_source::prompt_tokens_recomputed: return lc_prompt_recomputed;
    case live_source::prompt_tokens_computed: return lc_prompt_computed;
    case live_source::finished_output_tokens: return lc_finished_tokens;
    case live_source::reasoning_tokens: return lc_reasoning_tokens;
    case live_source::spec_drafts: return lc_spec_drafts;
    case live_source::spec_draft_tokens: return lc_spec_draft_tokens;
    case live_source::spec_accepted_tokens: return lc_spec_accepted;
    case live_source::kv_transfers: return lc_kv_transfers;
    case live_source::kv_transfer_bytes: return lc_kv_bytes;
    case live_source::kv_transfer_tokens: return lc_kv_tokens;
    case live_source::rejected:
      return lc_requests + static_cast<std::uint32_t>(finish_reason::rejected);
    default: return lc_count;
  }
}

/// The labels of a point of family `f` in a series labelled `series`: those, then the
/// family's constant labels.
[[nodiscard]] inline label_set live_point_labels(const live_family& f, const label_set& series) {
  label_set l = series;
  l.insert(l.end(), f.const_labels.begin(), f.const_labels.end());
  return l;
}

/// One point of histogram `h` in series `s`: cumulative buckets, count and sum over the parts
/// in `parts` (bit `1 << p`; a histogram not kept by reason has part 0 only).
[[nodiscard]] inline histogram_data live_histogram_point(const live_layout& lay,
                                                         const live_scrape_data& d, std::uint32_t s,
                                                         std::size_t h, unsigned parts) {
  const auto width = static_cast<std::uint32_t>(lay.bounds[h].size()) + 1;
  auto part_count = [&](std::uint32_t b) {
    std::uint64_t n = 0;
    for (std::uint32_t p = 0; p < finish_reason_count; ++p)
      if ((parts & (1u << p)) != 0)
        n = live_sat_add(n, d.counter(s, lay.offset[h] + p * width + b));
    return n;
  };
  histogram_data x;
  x.buckets.reserve(width - 1);
  std::uint64_t cum = 0;
  for (std::uint32_t b = 0; b + 1 < width; ++b) {
    cum = live_sat_add(cum, part_count(b));
    x.buckets.push_back(histogram_bucket{lay.bounds[h][b], cum});
  }
  x.count = live_sat_add(cum, part_count(width - 1));
  x.sum = 0.0;
  if (d.present[s])
    for (std::uint32_t p = 0; p < finish_reason_count; ++p)
      if ((parts & (1u << p)) != 0) x.sum += d.sums[s][lay.sum_at[h] + p];
  return x;
}

/// The points of a `stage_histograms` family: per series, one histogram per stage under the
/// family's label (all its parts), once it observed something (a labelled Prometheus
/// histogram has a child from its first observation).
inline void live_stage_points(metric_family& out, const live_family& f, const live_state& st,
                              const live_scrape_data& d) {
  const live_layout& lay = st.layout;
  for (const auto& [s, labels] : d.series)
    for (std::size_t v = 0; v < f.stages.size(); ++v) {
      const auto h = static_cast<std::size_t>(f.stages[v]);
      const unsigned parts = lay.by_reason[h] ? (1u << finish_reason_count) - 1 : 1u;
      histogram_data x = live_histogram_point(lay, d, s, h, parts);
      if (x.count == 0) continue;
      label_set l = live_point_labels(f, labels);
      l.push_back(label{f.label, f.label_values[v]});
      out.add(std::move(x), std::move(l));
    }
}

/// The points of a histogram family, per series. A histogram not kept by reason: one point.
/// Kept by reason (live_family::reasons, label): the reasons the family selects (all when
/// none), grouped by label value: the reasons whose value is empty in one point without the
/// label (written always), each other value in a point with it, written once it holds a sample
/// (as an OpenTelemetry SDK exports an attribute set once recorded).
inline void live_histogram_points(metric_family& out, const live_family& f, const live_state& st,
                                  const live_scrape_data& d) {
  const live_layout& lay = st.layout;
  const auto h = static_cast<std::size_t>(f.histogram);
  if (!lay.by_reason[h]) {
    for (const auto& [s, labels] : d.series)
      out.add(live_histogram_point(lay, d, s, h, 1u), live_point_labels(f, labels));
    return;
  }
  const unsigned chosen = f.reasons != 0 ? f.reasons : (1u << finish_reason_count) - 1;
  // (value, reasons), the unlabelled group first
  std::vector<std::pair<std::string, unsigned>> groups{{std::string(), 0u}};
  for (std::uint32_t r = 0; r < finish_reason_count; ++r) {
    if ((chosen & (1u << r)) == 0) continue;
    const std::string v = f.label.empty() ? std::string() : f.label_values[r];
    std::size_t g = 0;
    while (g < groups.size() && groups[g].first != v) ++g;
    if (g == groups.size()) groups.emplace_back(v, 0u);
    groups[g].second |= 1u << r;
  }
  for (const auto& [s, labels] : d.series)
    for (const auto& [v, reasons] : groups) {
      if (reasons == 0) continue;
      histogram_data x = live_histogram_point(lay, d, s, h, reasons);
      if (!v.empty() && x.count == 0) continue;
      label_set l = live_point_labels(f, labels);
      if (!v.empty()) l.push_back(label{f.label, v});
      out.add(std::move(x), std::move(l));
    }
}

/// The points of the requests counter: per series, one per label value of the family (each
/// once, in order; with a `second_label`, one per distinct pair of values), the sum of the
/// reasons that carry it; values no reason carries are 0.
inline void live_requests_points(metric_family& out, const live_family& f,
                                 const live_scrape_data& d) {
  const bool second = !f.second_label.empty();
  auto second_of = [&](std::size_t k) -> const std::string& {
    return second ? f.second_label_values[k] : f.label_values[k];
  };
  std::vector<std::size_t> firsts;  // the first entry of each value (pair), in order
  for (std::size_t k = 0; k < f.label_values.size(); ++k) {
    bool seen = f.label_values[k].empty();
    for (const std::size_t j : firsts)
      seen = seen || (f.label_values[j] == f.label_values[k] && second_of(j) == second_of(k));
    if (!seen) firsts.push_back(k);
  }
  for (const auto& [s, labels] : d.series)
    for (const std::size_t k : firsts) {
      unsigned reasons = 0;
      for (std::uint32_t r = 0; r < finish_reason_count; ++r)
        if (f.label_values[r] == f.label_values[k] && second_of(r) == second_of(k))
          reasons |= 1u << r;
      label_set l = live_point_labels(f, labels);
      l.push_back(label{f.label, f.label_values[k]});
      if (second) l.push_back(label{f.second_label, f.second_label_values[k]});
      out.add(static_cast<double>(d.finished(s, reasons)), std::move(l));
    }
}

/// The points of a family with one label of its own (`label`) besides the series': `values`
/// points per series, the value and label value of point `v` given by `value_of(s, v)` and
/// `label_of(v)`.
template <class ValueOf, class LabelOf>
void live_labelled_points(metric_family& out, const live_family& f, const live_scrape_data& d,
                          std::uint32_t values, ValueOf&& value_of, LabelOf&& label_of) {
  for (const auto& [s, labels] : d.series)
    for (std::uint32_t v = 0; v < values; ++v) {
      label_set l = live_point_labels(f, labels);
      l.push_back(label{f.label, label_of(v)});
      out.add(static_cast<double>(value_of(s, v)), std::move(l));
    }
}

/// The value of a per-series source other than the histograms, the requests and the labelled
/// counters, for series `s`.
[[nodiscard]] inline double live_series_value(const live_family& f, const live_state& st,
                                              const live_scrape_data& d, std::uint32_t s) {
  switch (f.source) {
    case live_source::finished: return static_cast<double>(d.finished(s, f.reasons));
    case live_source::arrived: {  // every request counted once it finished, or running or waiting
      std::uint64_t total = d.finished(s, (1u << finish_reason_count) - 1);
      total = live_sat_add(total, d.counter(s, lc_running));
      return static_cast<double>(live_sat_add(total, d.counter(s, lc_waiting)));
    }
    case live_source::running:
    case live_source::waiting:
    case live_source::before_first_token:  // two's complement sums of +1 and -1
      return static_cast<double>(static_cast<std::int64_t>(d.counter(s, live_slot(f.source))));
    case live_source::in_flight:
      return static_cast<double>(
          static_cast<std::int64_t>(d.counter(s, lc_running) + d.counter(s, lc_waiting)));
    case live_source::kv_cache_usage: return st.kv_cache_usage[s].load(std::memory_order_relaxed);
    case live_source::kv_transfer_last_ms:
    case live_source::kv_transfer_last_mb:
    case live_source::kv_transfer_last_gb_s: {
      // sglang/srt/observability/req_time_stats.py compute_and_observe_kv_transfer_metrics:
      // latency_ms = s * 1000, total_mb = bytes / 2^20, speed = total_mb / 1024 / s (0 at 0 s).
      if (s >= d.last_transfer.size() || !d.last_transfer[s]) return live_state::not_set();
      const auto [seconds, bytes] = *d.last_transfer[s];
      const double mb = static_cast<double>(bytes) / (1024.0 * 1024.0);
      if (f.source == live_source::kv_transfer_last_ms) return seconds * 1000;
      if (f.source == live_source::kv_transfer_last_mb) return mb;
      return seconds > 0 ? mb / 1024 / seconds : 0.0;
    }
    case live_source::decode_seconds: return static_cast<double>(d.counter(s, lc_decode_us)) / 1e6;
    case live_source::decode_throughput: {
      // tools/server server_metrics::bucket::n_per_second: time > 0 ? steps / time * 1e6 : 0,
      // the same operations in the same order, so that equal counts give the same double.
      const auto& w = d.window[s];
      return w[1] > 0 ? static_cast<double>(w[0]) / static_cast<double>(w[1]) * 1e6 : 0.0;
    }
    default: return static_cast<double>(d.counter(s, live_slot(f.source)));
  }
}

/// The one point of tokchron's own counter `source` (no labels).
[[nodiscard]] inline double live_own_value(live_source source, const live_scrape_data& d) noexcept {
  switch (source) {
    case live_source::misuse: return static_cast<double>(d.misuse);
    case live_source::label_overflow: return static_cast<double>(d.label_overflow);
    case live_source::long_label_values: return static_cast<double>(d.long_label_values);
    default: return static_cast<double>(d.dropped);
  }
}

/// True for the gauges a series has a point in only once set: the KV-cache usage the server
/// sets, the last KV-cache transfer.
[[nodiscard]] constexpr bool live_server_set(live_source source) noexcept {
  return source == live_source::kv_cache_usage || source == live_source::kv_transfer_last_ms ||
         source == live_source::kv_transfer_last_mb || source == live_source::kv_transfer_last_gb_s;
}

/// The points of family `f` in this scrape.
inline void live_points(metric_family& out, const live_family& f, const live_state& st,
                        const live_scrape_data& d) {
  switch (f.source) {
    case live_source::histogram: live_histogram_points(out, f, st, d); return;
    case live_source::stage_histograms: live_stage_points(out, f, st, d); return;
    case live_source::requests: live_requests_points(out, f, d); return;
    case live_source::prompt_tokens_by_source:
      // vllm/v1/metrics/stats.py PromptTokenStats: computed, cache hit (cached + recomputed -
      // transferred), transferred (`kv_transfer` on a receiving node).
      live_labelled_points(
          out, f, d, 3,
          [&](std::uint32_t s, std::uint32_t v) -> std::uint64_t {
            return d.counter(s, v == 0   ? lc_prompt_computed
                                : v == 1 ? lc_prompt_cache_hit
                                         : lc_prompt_external);
          },
          [&](std::uint32_t v) { return f.label_values[v]; });
      return;
    case live_source::spec_accepted_per_position:
      live_labelled_points(
          out, f, d, static_cast<std::uint32_t>(st.options.speculative_positions),
          [&](std::uint32_t s, std::uint32_t v) { return d.counter(s, st.layout.spec_offset + v); },
          [](std::uint32_t v) { return std::to_string(v); });
      return;
    default: break;
  }
  if (live_is_own(f.source)) {
    out.add(live_own_value(f.source, d), f.const_labels);
    return;
  }
  if (f.sum_series) {
    double total = 0;
    for (const auto& entry : d.series) {
      const double v = live_series_value(f, st, d, entry.first);
      if (!live_server_set(f.source) || v != live_state::not_set()) total += v;
    }
    out.add(total, f.const_labels);
    return;
  }
  for (const auto& [s, labels] : d.series) {
    const double v = live_series_value(f, st, d, s);
    // A server-set gauge has a point once the server set it.
    if (live_server_set(f.source) && v == live_state::not_set()) continue;
    out.add(v, live_point_labels(f, labels));
  }
}

}  // namespace detail

/// The help text a family of `source` gets when its `help` is empty, under `rules` (what the
/// series counts and when).
[[nodiscard]] inline const char* live_default_help(const live_family& f, const live_rules& rules) {
  switch (f.source) {
    case live_source::histogram: break;
    case live_source::requests: return "Finished requests, by finish reason.";
    case live_source::finished: return "Finished requests.";
    case live_source::arrived: return "Requests arrived.";
    case live_source::prompt_tokens:
      return rules.tokens_at_finish ? "Prompt tokens, counted when the request finishes."
                                    : "Prompt tokens of requests that reached their first token.";
    case live_source::generation_tokens:
      return rules.tokens_at_finish ? "Output tokens, counted when the request finishes."
                                    : "Output tokens, counted as they stream.";
    case live_source::preemptions: return "Preemptions, counted as they happen.";
    case live_source::running: return "Requests scheduled and not finished or preempted.";
    case live_source::waiting: return "Requests arrived or preempted and not yet scheduled.";
    case live_source::in_flight: return "Requests arrived and not finished.";
    case live_source::before_first_token:
      return "Requests arrived and not finished that have no output token yet.";
    case live_source::kv_cache_usage:
      return "KV-cache usage as the server reports it; 1 means full.";
    case live_source::prefix_cache_queries:
      return "Prefix-cache queries as the server reports them, tokens.";
    case live_source::prefix_cache_hits:
      return "Prefix-cache hits as the server reports them, tokens.";
    case live_source::prompt_tokens_cached:
      return "Prompt tokens served from a prefix cache, as the server reports them.";
    case live_source::prompt_tokens_by_source: return "Prompt tokens by source.";
    case live_source::prompt_tokens_recomputed:
      return "Cached prompt tokens recomputed (the last one when all were cached).";
    case live_source::reasoning_tokens:
      return "Output tokens of reasoning chunks, counted as they stream.";
    case live_source::spec_drafts: return "Speculative decoding drafts.";
    case live_source::spec_draft_tokens: return "Speculative draft tokens.";
    case live_source::spec_accepted_tokens: return "Speculative draft tokens accepted.";
    case live_source::spec_accepted_per_position:
      return "Accepted draft tokens per draft position.";
    case live_source::prompt_tokens_computed:
      return "Prompt tokens computed (not cached), counted with the prompt tokens.";
    case live_source::finished_output_tokens:
      return "Output tokens of every request that produced one, counted at its finish.";
    case live_source::decode_seconds:
      return "Decode times (first to last token, whole microseconds, at least 1 us) of every "
             "request that produced a token, counted at its finish, seconds.";
    case live_source::decode_throughput:
      return "Decode steps (tokens after the first) per second of decode time, over the "
             "requests finished since the previous scrape.";
    case live_source::stage_histograms: return "Latency of each stage of requests, seconds.";
    case live_source::kv_transfers:
      return "Requests whose KV cache moved between prefill and decode nodes.";
    case live_source::kv_transfer_bytes: return "Bytes of KV cache moved between nodes.";
    case live_source::kv_transfer_tokens:
      return "Prompt tokens whose KV cache moved between nodes.";
    case live_source::kv_transfer_last_ms:
      return "Time of the most recent KV-cache transfer, milliseconds.";
    case live_source::kv_transfer_last_mb: return "Size of the most recent KV-cache transfer, MiB.";
    case live_source::kv_transfer_last_gb_s:
      return "Speed of the most recent KV-cache transfer, GiB/s.";
    case live_source::rejected: return "Requests rejected before scheduling.";
    case live_source::misuse: return "Recording calls refused as misuse (nothing recorded).";
    case live_source::label_overflow:
      return "Requests recorded into the overflow series: more label-value sets than allowed.";
    case live_source::long_label_values:
      return "Series lookups with a label value longer than the bound (cut, or refused into the "
             "overflow series).";
    case live_source::dropped: return "Recorded events lost because memory ran out.";
  }
  switch (f.histogram) {
    case live_histogram::ttft:
      return rules.from_queued ? "Time to first token from the engine's arrival, seconds."
                               : "Time to first token from arrival, seconds.";
    case live_histogram::itl:
      switch (rules.itl) {
        case itl_grain::per_chunk:
          return "Inter-token latency: one sample per streamed step with tokens after the "
                 "first, seconds.";
        case itl_grain::per_token_split:
          return "Inter-token latency: each later output batch of k tokens after a gap g gives "
                 "k samples of g / k, seconds.";
        default:
          return "Inter-token latency, one sample per output token after the first, seconds.";
      }
    case live_histogram::tpot:
      if (rules.tpot == tpot_span::origin_to_last_over_n)
        return "Mean time per token per request: (last token - first scheduled) / N, seconds.";
      if (rules.tpot_small_n == small_n_rule::zero)
        return "Per-request time per output token: decode time / (N - 1), 0 when N <= 1.";
      return "Per-request time per output token after the first (N >= 2), seconds.";
    case live_histogram::e2e:
      return rules.e2e_to_last_token
                 ? "End-to-end request latency from the engine's arrival to the last token, "
                   "seconds."
                 : "End-to-end request latency from arrival to finish, seconds.";
    case live_histogram::queue_time:
      return "Time from queueing (or arrival) to first scheduling, seconds.";
    case live_histogram::prefill_time:
      return "Time from first scheduling to the first token, seconds.";
    case live_histogram::decode_time: return "Time from the first to the last token, seconds.";
    case live_histogram::inference_time:
      return "Time from first scheduling to the last token, seconds.";
    case live_histogram::prompt_tokens:
      return rules.lengths_at_arrival ? "Prompt length of arrived requests, tokens."
                                      : "Prompt length of finished requests, tokens.";
    case live_histogram::generation_tokens: return "Output length of finished requests, tokens.";
    case live_histogram::max_tokens:
      return rules.lengths_at_arrival ? "The max_tokens parameter of arrived requests."
                                      : "The max_tokens parameter of finished requests.";
    case live_histogram::validation_time:
      return "Time from arrival to entering the engine's queue, seconds.";
    case live_histogram::cached_prompt_tokens:
      return "Prompt tokens served from a prefix cache, per request that reported them.";
    case live_histogram::prefill_computed_tokens:
      return "Prompt tokens computed in prefill (prompt - cached) of finished requests.";
    case live_histogram::kv_transfer_time:
      return "Time a request's KV cache took to move between nodes, seconds.";
  }
  return "";
}

/// The cumulative metrics of `m` since construction, as plain snapshot data: one family per
/// `live_options::families` entry, in that order (the families of server-fed and optional
/// series once something was fed or recorded into them: prefix cache, cached prompt tokens,
/// reasoning tokens, speculative decoding; the KV-cache gauge's points once set). Series: every
/// interned label-value set in interning order, then the overflow series if it holds anything;
/// tokchron's own counters (misuse, label overflow, long label values, dropped samples) have
/// one point without labels. Cost: O(writer threads x touched series x buckets); it allocates.
/// Throws std::bad_alloc if memory runs out (nothing recorded is lost then: it comes with the
/// next scrape).
template <class Clock>
[[nodiscard]] metrics_snapshot scrape(const basic_live_metrics<Clock>& m) {
  detail::live_state& st = detail::live_access::state(m);
  const live_options& o = st.options;
  detail::live_scrape_data d;
  detail::live_take(st, d);  // under the scrape lock; the families are built outside it
  detail::live_series_labels(st, d);
  metrics_snapshot out;
  for (const live_family& f : o.families) {
    if (!detail::live_written(f, o, d)) continue;
    metric_family x{
        f.name, f.help.empty() ? live_default_help(f, o.rules) : f.help, f.kind, f.unit, {}};
    x.total_suffix = f.total_suffix;
    detail::live_points(x, f, st, d);
    // A server-set gauge is written once it was set for some series.
    if (detail::live_server_set(f.source) && x.points.empty()) continue;
    out.families.push_back(std::move(x));
  }
  return out;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_LIVE_SCRAPE_HPP
