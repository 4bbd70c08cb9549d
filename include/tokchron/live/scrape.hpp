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
#include "tokchron/metrics/metric.hpp"
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

/// The finished_reason label value of `r` under `sem` (empty: not counted in `requests`).
[[nodiscard]] inline std::string live_reason_value(live_semantics sem, finish_reason r) {
  if (sem == live_semantics::tokchron) return std::string(to_string(r));
  if (sem == live_semantics::tgi) {
    // tgi_request_failure{err}: stop and length are successes (tgi_request_success). The
    // values TGI gives: "dropped" when the client's channel closed (backends/v3/src/backend.rs),
    // "generation" for a failed generation (ibid.), "overloaded" when the concurrency limit
    // refuses a request (router/src/infer/mod.rs). TGI has no request timeout: a request
    // timed out is dropped.
    switch (r) {
      case finish_reason::aborted:
      case finish_reason::timed_out: return "dropped";
      case finish_reason::error: return "generation";
      case finish_reason::rejected: return "overloaded";
      default: return {};
    }
  }
  if (sem == live_semantics::trtllm) {
    // tensorrt_llm/executor/result.py: END_ID and STOP_WORDS -> "stop", LENGTH -> "length",
    // TIMED_OUT -> "timeout"; a cancelled or failed request has no finish reason and is not
    // counted (tensorrt_llm/metrics/collector.py logs only requests with one).
    switch (r) {
      case finish_reason::stop: return "stop";
      case finish_reason::length: return "length";
      case finish_reason::timed_out: return "timeout";
      default: return {};
    }
  }
  // vllm/v1/engine/__init__.py FINISH_REASON_STRINGS: stop, length, abort, error, repetition.
  switch (r) {
    case finish_reason::stop: return "stop";
    case finish_reason::length: return "length";
    case finish_reason::aborted: return "abort";
    case finish_reason::timed_out: return "abort";  // a server's timeout aborts the request
    case finish_reason::error: return "error";
    case finish_reason::rejected: return {};  // vLLM never counts a request it refused
  }
  return {};
}

[[nodiscard]] inline const char* live_help(live_histogram h, live_semantics sem) {
  const detail::live_rules rules = live_rules_of(sem);
  switch (h) {
    case live_histogram::ttft:
      return rules.from_queued ? "Time to first token from the engine's arrival, seconds."
                               : "Time to first token from arrival, seconds.";
    case live_histogram::itl:
      switch (rules.itl) {
        case detail::live_rules::itl_per_step:
          return "Inter-token latency: one sample per streamed step with tokens after the "
                 "first, seconds.";
        case detail::live_rules::itl_per_token_after_first:
          return "Inter-token latency: each later output batch of k tokens after a gap g gives "
                 "k samples of g / k, seconds.";
        default:
          return "Inter-token latency, one sample per output token after the first, seconds.";
      }
    case live_histogram::tpot:
      switch (rules.tpot) {
        case detail::live_rules::tpot_vllm:
          return "Per-request time per output token: decode time / (N - 1), 0 when N <= 1.";
        case detail::live_rules::tpot_tgi:
          return "Mean time per token per request: (last token - first scheduled) / N, seconds.";
        default: return "Per-request time per output token after the first (N >= 2), seconds.";
      }
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
  }
  return "";
}

}  // namespace detail

/// The cumulative metrics of `m` since construction, as plain snapshot data. Families, in
/// order: the histograms (`live_histogram` order, then the ITL and max_tokens aliases), the
/// requests counter (one point per series and finish-reason value, zeros included), prompt and
/// generation tokens, preemptions, the running and waiting gauges, the server-fed series once
/// fed (KV-cache usage, prefix cache), once recorded into the cached-prompt counters (cached,
/// by source, recomputed), the reasoning-token counter and the speculative-decoding counters
/// (drafts, draft tokens, accepted tokens, accepted per position), then tokchron's own counters
/// (rejected when the requests counter omits them, misuse, label overflow, long label values,
/// dropped samples).
/// Series: every interned label-value set in interning order, then the overflow series if it holds
/// anything. Cost: O(writer threads x touched series x buckets); it allocates. Throws
/// std::bad_alloc if memory runs out (nothing recorded is lost then: it comes with the next
/// scrape).
template <class Clock>
[[nodiscard]] metrics_snapshot scrape(const basic_live_metrics<Clock>& m) {
  detail::live_state& st = m.state_for_scrape();
  const live_options& o = st.options;
  const live_names& n = o.names;
  const detail::live_layout& lay = st.layout;

  // Copy the totals under the lock; build the families outside it.
  std::vector<std::vector<std::uint64_t>> counts;
  std::vector<std::vector<double>> sums;
  std::vector<bool> present;
  std::vector<std::array<std::uint64_t, 4>> window(lay.series, std::array<std::uint64_t, 4>{});
  std::uint64_t misuse = 0, dropped = 0;
  {
    detail::live_scrape_lock lock(st);
    detail::live_drain(st);
    counts.resize(lay.series);
    sums.resize(lay.series);
    present.assign(lay.series, false);
    for (std::uint32_t s = 0; s < lay.series; ++s) {
      if (const detail::live_block* b = st.total.find(s)) {
        counts[s].assign(b->n, b->n + lay.counts);
        sums[s].assign(b->sum, b->sum + live_histogram_count);
        present[s] = true;
      }
    }
    misuse = st.total.misuse;
    dropped = st.total.dropped + st.lost_shards.load(std::memory_order_relaxed);
    // The throughput gauges' window: since the previous scrape (serialised by the lock).
    if (!n.prompt_throughput.empty() || !n.generation_throughput.empty()) {
      st.window.resize(lay.series);
      for (std::uint32_t s = 0; s < lay.series; ++s) {
        if (!present[s]) continue;
        const std::array<std::uint64_t, 4> now{
            counts[s][detail::lc_prompt_tokens], counts[s][detail::lc_prefill_ms],
            counts[s][detail::lc_generation_tokens], counts[s][detail::lc_decode_ms]};
        for (std::size_t i = 0; i < 4; ++i) window[s][i] = now[i] - st.window[s][i];
        st.window[s] = now;
      }
    }
  }

  // The series to write: interned ones (zeros if never touched), then the overflow series.
  std::vector<std::pair<std::uint32_t, label_set>> series;
  const std::uint32_t interned = st.next_index.load(std::memory_order_acquire);
  for (std::uint32_t s = 0; s < interned && s < st.overflow_index(); ++s) {
    const detail::live_series_entry* e = st.by_index[s].load(std::memory_order_acquire);
    if (e == nullptr || e->index.load(std::memory_order_acquire) != s) continue;
    label_set l;
    for (std::size_t i = 0; i < o.label_names.size(); ++i)
      l.push_back(label{o.label_names[i], e->values[i]});
    series.emplace_back(s, std::move(l));
  }
  if (present[st.overflow_index()]) {
    label_set l;
    for (const auto& name : o.label_names) l.push_back(label{name, o.overflow_value});
    series.emplace_back(st.overflow_index(), std::move(l));
  }
  auto counter = [&](std::uint32_t s, std::uint32_t c) -> std::uint64_t {
    return present[s] ? counts[s][c] : 0;
  };

  metrics_snapshot out;
  auto histogram_family = [&](const std::string& name, live_histogram h) {
    if (name.empty()) return;
    const auto hi = static_cast<std::size_t>(h);
    // The unit only where the name carries it (TGI's "..._duration" families do not).
    const bool seconds = detail::live_is_time(h) && name.size() > 8 &&
                         name.compare(name.size() - 8, 8, "_seconds") == 0;
    auto& f = out.family(name, detail::live_help(h, o.semantics), metric_kind::histogram,
                         seconds ? "seconds" : "");
    for (const auto& [s, labels] : series) {
      histogram_data d;
      std::uint64_t cum = 0;
      for (std::size_t b = 0; b < lay.bounds[hi].size(); ++b) {
        cum = detail::live_sat_add(cum, counter(s, lay.offset[hi] + static_cast<std::uint32_t>(b)));
        d.buckets.push_back(histogram_bucket{lay.bounds[hi][b], cum});
      }
      d.count = detail::live_sat_add(
          cum, counter(s, lay.offset[hi] + static_cast<std::uint32_t>(lay.bounds[hi].size())));
      d.sum = present[s] ? sums[s][hi] : 0.0;
      f.add(std::move(d), labels);
    }
  };
  for (std::size_t h = 0; h < live_histogram_count; ++h)
    histogram_family(n.histograms[h], static_cast<live_histogram>(h));
  histogram_family(n.itl_alias, live_histogram::itl);
  histogram_family(n.max_tokens_alias, live_histogram::max_tokens);

  if (!n.requests.empty()) {
    auto& f = out.family(n.requests, "Finished requests, by finish reason.", metric_kind::counter);
    std::vector<std::string> values;  // label values in order, each once
    for (std::uint32_t r = 0; r < 6; ++r) {
      const std::string v = detail::live_reason_value(o.semantics, static_cast<finish_reason>(r));
      bool seen = v.empty();
      for (const auto& x : values) seen = seen || x == v;
      if (!seen) values.push_back(v);
    }
    if (o.semantics == live_semantics::vllm) values.push_back("repetition");
    for (const auto& [s, labels] : series)
      for (const auto& v : values) {
        std::uint64_t total = 0;
        for (std::uint32_t r = 0; r < 6; ++r)
          if (detail::live_reason_value(o.semantics, static_cast<finish_reason>(r)) == v)
            total = detail::live_sat_add(total, counter(s, detail::lc_requests + r));
        label_set l = labels;
        l.push_back(label{n.reason_label, v});
        f.add(static_cast<double>(total), std::move(l));
      }
  }
  auto counter_family = [&](const std::string& name, const char* help, std::uint32_t c) {
    if (name.empty()) return;
    auto& f = out.family(name, help, metric_kind::counter);
    for (const auto& [s, labels] : series) f.add(static_cast<double>(counter(s, c)), labels);
  };
  auto gauge_family = [&](const std::string& name, const char* help, std::uint32_t c) {
    if (name.empty()) return;
    auto& f = out.family(name, help, metric_kind::gauge);
    for (const auto& [s, labels] : series)
      f.add(static_cast<double>(static_cast<std::int64_t>(counter(s, c))), labels);
  };
  const detail::live_rules rules = detail::live_rules_of(o.semantics);
  counter_family(n.prompt_tokens,
                 rules.llamacpp_counters  ? "Prompt tokens evaluated (not cached), counted at the "
                                            "first token."
                 : rules.tokens_at_finish ? "Prompt tokens, counted when the request finishes."
                                          : "Prompt tokens of requests that reached their first "
                                            "token.",
                 detail::lc_prompt_tokens);
  counter_family(n.generation_tokens,
                 rules.llamacpp_counters  ? "Output tokens of completed requests."
                 : rules.tokens_at_finish ? "Output tokens, counted when the request finishes."
                                          : "Output tokens, counted as they stream.",
                 detail::lc_generation_tokens);
  counter_family(n.preemptions, "Preemptions, counted as they happen.", detail::lc_preemptions);
  gauge_family(n.running, "Requests scheduled and not finished or preempted.", detail::lc_running);
  gauge_family(n.waiting, "Requests arrived or preempted and not yet scheduled.",
               detail::lc_waiting);

  auto kv_family = [&](const std::string& name) {
    if (name.empty()) return;
    metric_family f{
        name, "KV-cache usage as the server reports it; 1 means full.", metric_kind::gauge, "", {}};
    for (const auto& [s, labels] : series) {
      const double v = st.kv_cache_usage[s].load(std::memory_order_relaxed);
      if (v != detail::live_state::not_set()) f.add(v, labels);
    }
    if (!f.points.empty()) out.families.push_back(std::move(f));
  };
  kv_family(n.kv_cache_usage);
  kv_family(n.kv_cache_usage_alias);
  if (st.prefix_cache_used.load(std::memory_order_relaxed)) {
    counter_family(n.prefix_cache_queries,
                   "Prefix-cache queries as the server reports them, tokens.",
                   detail::lc_prefix_queries);
    counter_family(n.prefix_cache_hits, "Prefix-cache hits as the server reports them, tokens.",
                   detail::lc_prefix_hits);
  }
  const std::uint32_t features = st.features.load(std::memory_order_relaxed);
  auto labelled_counter_family = [&](const std::string& name, const char* help,
                                     const std::string& label_name, std::uint32_t values,
                                     auto&& value_of, auto&& label_of) {
    if (name.empty()) return;
    auto& f = out.family(name, help, metric_kind::counter);
    for (const auto& [s, labels] : series)
      for (std::uint32_t v = 0; v < values; ++v) {
        label_set l = labels;
        l.push_back(label{label_name, label_of(v)});
        f.add(static_cast<double>(value_of(s, v)), std::move(l));
      }
  };
  if ((features & detail::lf_cached_prompt) != 0) {
    counter_family(n.prompt_tokens_cached,
                   "Prompt tokens served from a prefix cache, as the server reports them.",
                   detail::lc_prompt_cached);
    // vllm/v1/metrics/stats.py PromptTokenStats.ALL_SOURCES; tokchron knows of no external
    // KV transfer, so that source stays 0.
    static const char* const sources[] = {"local_compute", "local_cache_hit",
                                          "external_kv_transfer"};
    labelled_counter_family(
        n.prompt_tokens_by_source, "Prompt tokens by source.", "source", 3,
        [&](std::uint32_t s, std::uint32_t v) -> std::uint64_t {
          return v == 0   ? counter(s, detail::lc_prompt_computed)
                 : v == 1 ? counter(s, detail::lc_prompt_cache_hit)
                          : 0;
        },
        [&](std::uint32_t v) { return std::string(sources[v]); });
    counter_family(n.prompt_tokens_recomputed,
                   "Cached prompt tokens recomputed (the last one when all were cached).",
                   detail::lc_prompt_recomputed);
  }
  if ((features & detail::lf_reasoning) != 0)
    counter_family(n.reasoning_tokens, "Output tokens of reasoning chunks, counted as they stream.",
                   detail::lc_reasoning_tokens);
  if ((features & detail::lf_speculative) != 0) {
    counter_family(n.spec_drafts, "Speculative decoding drafts.", detail::lc_spec_drafts);
    counter_family(n.spec_draft_tokens, "Speculative draft tokens.", detail::lc_spec_draft_tokens);
    counter_family(n.spec_accepted_tokens, "Speculative draft tokens accepted.",
                   detail::lc_spec_accepted);
    if (o.speculative_positions > 0)
      labelled_counter_family(
          n.spec_accepted_per_position, "Accepted draft tokens per draft position.", "position",
          static_cast<std::uint32_t>(o.speculative_positions),
          [&](std::uint32_t s, std::uint32_t v) { return counter(s, lay.spec_offset + v); },
          [](std::uint32_t v) { return std::to_string(v); });
  }
  if (!n.arrived.empty()) {  // every request counted once it finished, or running or waiting
    auto& f = out.family(n.arrived, "Requests arrived.", metric_kind::counter);
    for (const auto& [s, labels] : series) {
      std::uint64_t total = 0;
      for (std::uint32_t r = 0; r < 6; ++r)
        total = detail::live_sat_add(total, counter(s, detail::lc_requests + r));
      total = detail::live_sat_add(total, counter(s, detail::lc_running));
      total = detail::live_sat_add(total, counter(s, detail::lc_waiting));
      f.add(static_cast<double>(total), labels);
    }
  }
  for (const auto& rc : n.reason_counters) {
    if (rc.name.empty()) continue;
    auto& f =
        out.family(rc.name, rc.help.empty() ? "Finished requests." : rc.help, metric_kind::counter);
    for (const auto& [s, labels] : series) {
      std::uint64_t total = 0;
      for (std::uint32_t r = 0; r < 6; ++r)
        if ((rc.reasons & (1u << r)) != 0)
          total = detail::live_sat_add(total, counter(s, detail::lc_requests + r));
      f.add(static_cast<double>(total), labels);
    }
  }
  auto ms_family = [&](const std::string& name, const char* help, std::uint32_t c) {
    if (name.empty()) return;
    auto& f = out.family(name, help, metric_kind::counter);
    for (const auto& [s, labels] : series) f.add(static_cast<double>(counter(s, c)) / 1e3, labels);
  };
  ms_family(n.prefill_seconds,
            "Prefill times (first scheduled to first token), each cut to whole milliseconds, "
            "seconds.",
            detail::lc_prefill_ms);
  ms_family(n.decode_seconds,
            "Decode times of completed requests, each cut to whole milliseconds, seconds.",
            detail::lc_decode_ms);
  auto throughput_family = [&](const std::string& name, const char* help, std::size_t tokens,
                               std::size_t ms) {
    if (name.empty()) return;
    auto& f = out.family(name, help, metric_kind::gauge);
    for (const auto& [s, labels] : series) {
      const auto& w = window[s];
      // tools/server: n ? 1e3 / t_ms * n : 0 (a window of tokens and 0 ms gives +Inf there).
      f.add(
          w[tokens] != 0 ? 1e3 / static_cast<double>(w[ms]) * static_cast<double>(w[tokens]) : 0.0,
          labels);
    }
  };
  throughput_family(n.prompt_throughput,
                    "Prompt tokens per second of prefill since the previous scrape.", 0, 1);
  throughput_family(n.generation_throughput,
                    "Generated tokens per second of decode since the previous scrape.", 2, 3);
  if (!n.rejected.empty()) {
    auto& f = out.family(n.rejected, "Requests rejected before scheduling.", metric_kind::counter);
    for (const auto& [s, labels] : series)
      f.add(static_cast<double>(counter(
                s, detail::lc_requests + static_cast<std::uint32_t>(finish_reason::rejected))),
            labels);
  }
  if (!n.misuse.empty())
    out.family(n.misuse, "Recording calls refused as misuse (nothing recorded).",
               metric_kind::counter)
        .add(static_cast<double>(misuse));
  if (!n.label_overflow.empty())
    out.family(n.label_overflow,
               "Requests recorded into the overflow series: more label-value sets than allowed.",
               metric_kind::counter)
        .add(static_cast<double>(counter(st.overflow_index(), detail::lc_overflow_requests)));
  if (!n.long_label_values.empty())
    out.family(n.long_label_values,
               "Series lookups with a label value longer than the bound (cut, or refused into "
               "the overflow series).",
               metric_kind::counter)
        .add(static_cast<double>(st.long_label_values.load(std::memory_order_relaxed)));
  if (!n.dropped.empty())
    out.family(n.dropped, "Recorded events lost because memory ran out.", metric_kind::counter)
        .add(static_cast<double>(dropped));
  if (!n.counter_total_suffix)  // the server's counters; tokchron's own keep the suffix
    for (auto& f : out.families)
      if (f.kind == metric_kind::counter && f.name != n.misuse && f.name != n.label_overflow &&
          f.name != n.dropped && f.name != n.rejected && f.name != n.long_label_values)
        f.total_suffix = false;
  return out;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_LIVE_SCRAPE_HPP
