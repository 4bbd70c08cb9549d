// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_LIVE_RECORDER_HPP
#define TOKCHRON_LIVE_RECORDER_HPP

/// \file
/// `basic_live_metrics`: a server's live metrics. Any number of threads record request events
/// (arrival, scheduling, each streamed chunk, preemption, finish) without a lock; a scrape
/// (live/scrape.hpp) may run at any time and sees every event recorded before it exactly once.
/// This is the recording header for a server's hot files: standard library only, no `<thread>`,
/// `<mutex>`, `<sstream>`, `<map>` or `<functional>`.
///
/// \code
///   // once, where the server sets up its metrics (that file includes live/presets.hpp):
///   tokchron::live_metrics metrics(tokchron::vllm_live_options("llama-3-8b", 8192));
///   // per request, on whatever threads handle it:
///   tokchron::live_request r;
///   metrics.arrive(r, {tokchron::live_series{}, prompt_tokens});
///   metrics.scheduled(r);
///   metrics.chunk(r, 1);            // each streamed chunk, with its token count
///   metrics.finish(r, tokchron::finish_reason::stop);
///   // on the /metrics thread (live/scrape.hpp):
///   std::string text = tokchron::to_prometheus(tokchron::scrape(metrics));
/// \endcode
///
/// Design: each writer thread records into its own shard (a thread-local pointer per metrics
/// object, claimed lock-free the first time the thread records). A shard has two sides, as the
/// collector's (collect/collector.hpp): the writer records into the active side with plain
/// stores, bracketed by a sequence number; a scrape flips every shard's active side, waits for
/// recording calls in progress to leave the old side, adds the old sides into a running total
/// and clears them. Everything one recording call adds lands in one side, so a scrape sees a
/// request's chunk, or its finish, entirely or not at all: bucket counts, `_count` and `_sum`
/// always agree.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokchron/clock.hpp"
#include "tokchron/config.hpp"
#include "tokchron/live/detail/core.hpp"
#include "tokchron/live/options_fwd.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/timeline/event.hpp"
#include "tokchron/timeline/request_timeline.hpp"
#include "tokchron/timeline/store.hpp"
#ifndef TOKCHRON_SEPARATE_INSTANTIATION
// The options' and the shared state's definitions. With separate instantiation a hot file
// records through the declarations of live/detail/core.hpp and live/options_fwd.hpp; the file
// that constructs the metrics includes live/options.hpp (or live/presets.hpp), and
// record_instantiate.hpp (and the scrape) the state.
#include "tokchron/live/detail/state.hpp"
#include "tokchron/live/options.hpp"
#endif

TOKCHRON_BEGIN_NAMESPACE

template <class Clock>
class basic_live_metrics;

namespace detail {
/// The library's own way into a `basic_live_metrics`' shared state: the scrape
/// (live/scrape.hpp) and the exporters built on it. Not part of the API.
struct live_access {
  template <class Clock>
  static live_state& state(const basic_live_metrics<Clock>& m) noexcept {
    return *m.state_;
  }
};
}  // namespace detail

/// A label-value set of a `basic_live_metrics` object, interned by `series(...)`. The default
/// value is the default series (the options' `default_label_values`). Cheap to copy; keep it
/// (per model, adapter, engine...) rather than looking it up per request.
struct live_series {
  std::uint32_t index = 0;  ///< position in the object's series table
};

/// What a server knows about a request when it arrives.
struct live_request_info {
  live_series series;                          ///< its labels
  std::optional<std::uint64_t> prompt_tokens;  ///< its prompt length, when known
  std::uint64_t max_tokens = 0;                ///< its max_tokens parameter, 0 if none
  /// Its prompt tokens served from a prefix cache, when the server knows them at arrival
  /// (`set_cached_prompt_tokens` sets them later).
  std::optional<std::uint64_t> cached_prompt_tokens{};
};

/// A request's KV cache moved between nodes of a disaggregated deployment (prefill on one
/// node, decode on another): what the server's KV connector reports for it.
struct live_kv_transfer {
  std::uint64_t bytes = 0;   ///< the KV cache's size, bytes
  double seconds = 0;        ///< the transfer's time, s (finite, >= 0)
  std::uint64_t tokens = 0;  ///< the prompt tokens whose KV cache moved
};

/// One request's state as a `basic_live_metrics` object tracks it: its timeline (O(1) memory,
/// a streaming store), its series and its phase. The server keeps one per request (e.g. in its
/// request object) and passes it to every recording call. Not thread-safe by itself: the
/// server hands a request from thread to thread as it already does (a queue gives the
/// happens-before). Reusable: `arrive` starts it afresh once it has finished.
template <class Clock = std::chrono::steady_clock>
class basic_live_request {
 public:
  using clock_type = Clock;
  using timeline_type = basic_request_timeline<Clock, streaming_store<>>;

  basic_live_request() = default;

  /// The request's timeline so far (canonical metrics of it: metrics/canonical.hpp).
  [[nodiscard]] const timeline_type& timeline() const noexcept { return tl_; }
  /// Its series.
  [[nodiscard]] live_series series() const noexcept { return live_series{series_}; }
  /// True between `arrive` and the finish.
  [[nodiscard]] bool active() const noexcept { return phase_ == waiting || phase_ == running; }

 private:
  friend class basic_live_metrics<Clock>;
  enum phase_t : std::uint8_t { idle, waiting, running, done };

  timeline_type tl_;
  std::uint64_t owner_ = 0;  // id of the metrics object that started it
  std::uint64_t max_tokens_ = 0;
  std::uint32_t series_ = 0;
  phase_t phase_ = idle;
  bool counted_prompt_ = false;
  bool shared_prompt_ = false;
  bool kv_transferred_ = false;  // `kv_transfer` recorded
  std::uint64_t kv_tokens_ = 0;  // of the cached prompt tokens, those transferred
};

/// Live server metrics: lock-free recording from any number of threads, labelled series with
/// a bounded number of label-value sets, an inclusion policy, and a preset's rules and families
/// (live/options.hpp: tokchron's canonical definitions, vLLM's, or any server's, as data).
/// Scrape with `scrape(m)` (live/scrape.hpp), or the prometheus-cpp adaptor
/// (export/prometheus_cpp.hpp).
///
/// Recording calls are noexcept, never block and never allocate after a thread's first call
/// into a series (which allocates that series' block in the thread's shard). Misuse (an event
/// for a request this object did not start or that has finished, time going backwards, finish
/// twice, ...) is refused: the call returns the reason, changes nothing else and is counted in
/// `misuse()` (and the exported misuse counter).
///
/// Thread safety: every member function may be called from any thread at any time; one
/// `basic_live_request` is used by one thread at a time. Not copyable or movable (hold it in
/// the server, or a `std::shared_ptr`).
template <class Clock = std::chrono::steady_clock>
class basic_live_metrics {
 public:
  using clock_type = Clock;
  using time_point = typename Clock::time_point;
  using duration = typename Clock::duration;
  using request_type = basic_live_request<Clock>;
  /// `live_options`, named through the clock only so that a hot file under
  /// `TOKCHRON_SEPARATE_INSTANTIATION` can record without its definition (live/options_fwd.hpp).
  using options_type = typename detail::dependent_type<live_options, Clock>::type;

  /// Metrics configured by `options` (presets: live/presets.hpp), reading `clock` for the
  /// recording calls without a time. Throws std::invalid_argument for bad options (bucket
  /// bounds not finite and increasing, default label values not one per label name, a label
  /// name not [a-zA-Z_][a-zA-Z0-9_]*, max_series 0), std::bad_alloc if memory runs out.
  explicit basic_live_metrics(options_type options, Clock clock = Clock())
      : clock_(std::move(clock)),
        state_(detail::live_core<>::create(std::move(options))),
        hot_(detail::live_core<>::hot(*state_)) {}
  basic_live_metrics(const basic_live_metrics&) = delete;
  basic_live_metrics& operator=(const basic_live_metrics&) = delete;
  ~basic_live_metrics() { detail::live_core<>::release(state_); }

  // --- labels ------------------------------------------------------------------------------

  /// The series of a label-value set (one value per label name, in order), interning it on
  /// first use; lock-free. Beyond `max_series` distinct sets, the overflow series. A set the
  /// exposition cannot carry as its own series is misuse (counted) and also gives the overflow
  /// series: the wrong number of values, a value that is not valid UTF-8, or every value equal
  /// to `overflow_value` (that is the overflow series' own label set). Any other value is
  /// fine, empty ones and those with quotes, backslashes or newlines included (the writers
  /// escape them). Thread-safe, noexcept.
  [[nodiscard]] live_series series(std::initializer_list<live_label_value> values) noexcept {
    constexpr std::size_t small = 16;
    std::string_view local[small];
    if (values.size() <= small) {
      std::size_t i = 0;
      for (const auto& v : values) local[i++] = v.value;
      return series(local, values.size());
    }
    try {
      std::vector<std::string_view> many;
      many.reserve(values.size());
      for (const auto& v : values) many.push_back(v.value);
      return series(many.data(), many.size());
    } catch (...) {  // out of memory: the overflow series, counted as misuse
      return series(nullptr, 0 - std::size_t{1});
    }
  }
  /// The series of a label set by name, in any order:
  /// `series({{"model_name", "llama-3-8b"}, {"engine", "0"}})`. Every label name of the
  /// options exactly once, else std::invalid_argument naming the label (unknown, missing or
  /// given twice); the values then as the positional form takes them. Setup path (it
  /// allocates): look a series up once and keep it.
  [[nodiscard]] live_series series(std::initializer_list<live_label> labels) {
    return live_series{detail::live_core<>::named_series(*state_, labels.begin(), labels.size())};
  }
  /// `series` for `n` values at `values`.
  [[nodiscard]] live_series series(const std::string_view* values, std::size_t n) noexcept {
    return live_series{detail::live_core<>::series(*state_, values, n)};
  }
  /// The label values of series `s` (the overflow series: every value `overflow_value`).
  [[nodiscard]] std::vector<std::string> label_values(live_series s) const {
    return detail::live_core<>::label_values(*state_, s.index);
  }

  // --- request events ----------------------------------------------------------------------

  /// The request arrived (entered the server's queue): starts `r` afresh (it must not be
  /// active), counts it as waiting. `info` gives its series, prompt length and max_tokens.
  record_status arrive(request_type& r, const live_request_info& info = {}) noexcept {
    return arrive(r, clock_.now(), info);
  }
  /// `arrive` at time `t`.
  record_status arrive(request_type& r, time_point t, const live_request_info& info = {}) noexcept;
  /// Sets or corrects the prompt length before the first token (e.g. after tokenization).
  record_status set_prompt_tokens(request_type& r, std::uint64_t n) noexcept;
  /// Sets the prompt tokens served from a prefix cache before the first token (when the
  /// scheduler knows them; OpenAI `usage.prompt_tokens_details.cached_tokens`). Counted with
  /// the prompt tokens, in the cached-prompt counter and vLLM's prompt tokens by source. More
  /// than the prompt length is refused (`invalid_count`).
  record_status set_cached_prompt_tokens(request_type& r, std::uint64_t n) noexcept;
  /// The request's prompt was computed by another request whose KV cache it copies (an engine
  /// that computes a prompt once for the `n > 1` answers of one request: llama.cpp's child
  /// tasks). Its prompt tokens are then all cached (the timeline says so, as
  /// `set_cached_prompt_tokens(prompt)` would), and it counts in none of the prompt-token
  /// counters (prompt, computed, cached, by source) nor in the cached-prompt histogram: the
  /// prompt is counted once, by the request that computed it. Its prompt length is still
  /// observed, and its TTFT and prefill run from its own `scheduled` (give it the time the
  /// shared prompt started). Before the first token, once the prompt length is known (else
  /// `invalid_count`).
  record_status set_shared_prompt(request_type& r) noexcept;
  /// The request's KV cache moved between nodes (disaggregated prefill and decode), once per
  /// request, before it finishes. On a `decode` or `both` node (`live_options::role`) the KV
  /// cache arrived from elsewhere: `x.tokens` prompt tokens were not computed here. They count
  /// as cached prompt tokens (vLLM's `num_cached_tokens` holds local hits and transferred
  /// tokens alike) and, of those, as the `external_kv_transfer` source
  /// (vllm/v1/metrics/stats.py `PromptTokenStats.update_from_output`); call it before the
  /// first token. On a `prefill` node the KV cache was sent: the prompt accounting is
  /// unchanged. Either way the transfer counters, the transfer-time histogram and the series'
  /// last-transfer gauges move now. Refused: a second transfer of one request
  /// (`already_started`), a time that is not a finite number >= 0 or tokens beyond the prompt
  /// with the cached ones (`invalid_count`), on a receiving node after the first token
  /// (`out_of_order`).
  record_status kv_transfer(request_type& r, const live_kv_transfer& x) noexcept;
  /// One speculative draft of the request in one engine step: `drafted` tokens proposed,
  /// `accepted` of them accepted (vllm/v1/spec_decode/metrics.py `observe_draft`). The counters
  /// move now; the request's timeline keeps the totals (`set_speculative`). Refused
  /// (`invalid_count`): accepted > drafted, or accepted > `speculative_positions` when that is
  /// set.
  record_status speculative(request_type& r, std::uint32_t drafted,
                            std::uint32_t accepted) noexcept;
  /// The request entered the engine's waiting queue, if that differs from its arrival (vLLM's
  /// QUEUED event: queue time is measured from here). No gauge moves.
  record_status queued(request_type& r) noexcept { return queued(r, clock_.now()); }
  /// `queued` at time `t`.
  record_status queued(request_type& r, time_point t) noexcept;
  /// The engine scheduled the request (first time, or again after a preemption): waiting ->
  /// running.
  record_status scheduled(request_type& r) noexcept { return scheduled(r, clock_.now()); }
  /// `scheduled` at time `t`.
  record_status scheduled(request_type& r, time_point t) noexcept;
  /// The engine preempted the request: running -> waiting, and the preemptions counter moves
  /// now (vLLM counts preemptions as they happen).
  record_status preempted(request_type& r) noexcept { return preempted(r, clock_.now()); }
  /// `preempted` at time `t`.
  record_status preempted(request_type& r, time_point t) noexcept;
  /// A streamed chunk carrying `tokens` output tokens arrived (a request still waiting, e.g.
  /// one whose scheduling the server does not report, moves to running). Generation tokens
  /// count now;
  /// the first chunk with tokens also counts the prompt tokens and records TTFT; every later
  /// chunk with tokens records ITL (per chunk or per token, see `live_rules::itl`). Under
  /// `live_inclusion::completed` counters and TTFT wait for the finish.
  record_status chunk(request_type& r, std::uint32_t tokens,
                      chunk_kind kind = chunk_kind::text) noexcept {
    return chunk(r, clock_.now(), tokens, kind);
  }
  /// `chunk` at time `t`.
  record_status chunk(request_type& r, time_point t, std::uint32_t tokens,
                      chunk_kind kind = chunk_kind::text) noexcept;
  /// The request finished for `reason`: leaves the running or waiting gauge, counts in the
  /// requests counter, and enters the per-request histograms as the inclusion policy says.
  record_status finish(request_type& r, finish_reason reason = finish_reason::stop) noexcept {
    return finish(r, clock_.now(), reason);
  }
  /// `finish` at time `t`.
  record_status finish(request_type& r, time_point t,
                       finish_reason reason = finish_reason::stop) noexcept;
  /// `finish(r, t, finish_reason::rejected)`: refused before scheduling (queue full, ...).
  record_status reject(request_type& r) noexcept { return reject(r, clock_.now()); }
  /// `reject` at time `t`.
  record_status reject(request_type& r, time_point t) noexcept {
    return finish(r, t, finish_reason::rejected);
  }
  /// `finish(r, t, finish_reason::aborted)`: the client went away or cancelled.
  record_status abort(request_type& r) noexcept { return abort(r, clock_.now()); }
  /// `abort` at time `t`.
  record_status abort(request_type& r, time_point t) noexcept {
    return finish(r, t, finish_reason::aborted);
  }
  /// `finish(r, t, finish_reason::error)`: the server failed the request.
  record_status fail(request_type& r) noexcept { return fail(r, clock_.now()); }
  /// `fail` at time `t`.
  record_status fail(request_type& r, time_point t) noexcept {
    return finish(r, t, finish_reason::error);
  }

  /// Records a finished request in one call, for servers that report only at finish: the
  /// same series as the event calls would give, except the gauges (it never was waiting or
  /// running here). ITL needs a timeline that keeps chunks (`full_store`); from a streaming
  /// timeline no ITL is recorded. Unfinished timelines are refused (misuse, `not_started`).
  template <class C, class Store>
  record_status record(const basic_request_timeline<C, Store>& tl, live_series series = {},
                       std::uint64_t max_tokens = 0) noexcept {
    if (!tl.finished()) return misuse(record_status::not_started);
    const std::uint32_t s = resolve(series);
    const bool streaming = hot_.inclusion != live_inclusion::completed;
    bool counted_prompt = false;
    in_shard([&](detail::live_writer<>& d) noexcept {
      if (s == hot_.overflow_index) d.count(s, detail::lc_overflow_requests, 1);
      d.count(s, detail::lc_preemptions, tl.preemptions());
      if (tl.first_token_time()) {
        if constexpr (Store::template bind<C>::keeps_chunks) {
          if (hot_.rules.itl == itl_grain::per_token_with_first) {
            (void)for_each_itl_per_token(tl, [&](auto gap, std::uint64_t k) noexcept {
              d.observe(s, live_histogram::itl, seconds(gap), k);
            });
          } else {  // per step, or per token without the first chunk's zeros
            bool have_prev = false;
            typename basic_request_timeline<C, Store>::time_point prev{};
            for (const auto& c : tl.store().chunks()) {
              if (c.tokens == 0) continue;
              if (have_prev) observe_itl(d, s, seconds(c.time - prev), c.tokens);
              prev = c.time;
              have_prev = true;
            }
          }
        }
        if (streaming) {
          first_token_series(d, s, tl, false, 0);
          if (!hot_.rules.tokens_at_finish)
            count_generation(d, s, tl.output_tokens(), tl.reasoning_tokens());
          counted_prompt = true;
        }
      }
      // What the event calls observe at arrival (TGI) or at the first scheduling (SGLang).
      if (hot_.rules.lengths_at_arrival) {
        if (const auto p = tl.prompt_tokens())
          d.observe(s, live_histogram::prompt_tokens, static_cast<double>(*p));
        if (max_tokens > 0)
          d.observe(s, live_histogram::max_tokens, static_cast<double>(max_tokens));
      }
      if (hot_.rules.queue_at_schedule)
        if (const auto v = queue_time(tl)) d.observe(s, live_histogram::queue_time, seconds(*v));
      if (const auto drafted = tl.speculative_drafted_tokens()) {
        // A timeline keeps totals only: the drafts and the positions are not known here.
        d.use(detail::lf_speculative);
        d.count(s, detail::lc_spec_draft_tokens, *drafted);
        d.count(s, detail::lc_spec_accepted, tl.speculative_accepted_tokens().value_or(0));
      }
      finished(d, s, tl, max_tokens, counted_prompt, false, 0);
    });
    return record_status::ok;
  }

  // --- what the server knows that tokchron cannot -------------------------------------------

  /// Sets the KV-cache usage gauge of series `s` (a fraction, 1 = full; vLLM's
  /// `vllm:kv_cache_usage_perc`). Not exported until first set. A value that is not a finite
  /// number >= 0 (NaN, infinities, negatives) is refused as misuse: the gauge keeps its value.
  /// Lock-free, noexcept.
  void set_kv_cache_usage(live_series s, double fraction) noexcept {
    detail::live_core<>::set_kv_cache_usage(*state_, s.index, fraction);
  }
  /// Adds prefix-cache lookups of series `s`, in tokens: `queries` looked up, `hits` found
  /// (vLLM's `vllm:prefix_cache_queries` / `_hits`). Not exported until first fed.
  void add_prefix_cache(live_series s, std::uint64_t queries, std::uint64_t hits) noexcept {
    detail::live_core<>::add_prefix_cache(*state_, s.index, queries, hits);
  }

  // --- queries -----------------------------------------------------------------------------

  /// The options this object was built with.
  [[nodiscard]] const options_type& options() const noexcept {
    return detail::live_core<>::options(*state_);
  }
  /// The clock the recording calls without a time read.
  [[nodiscard]] const Clock& clock() const noexcept { return clock_; }
  /// Refused recording calls seen by the scrapes so far plus those not yet scraped is what the
  /// exported misuse counter shows; this is the count since construction, exact at any time.
  [[nodiscard]] std::uint64_t misuse() const noexcept {
    return detail::live_core<>::misuse(*state_);
  }
  /// `series(...)` lookups that found no room and returned the overflow series.
  [[nodiscard]] std::uint64_t overflowed_lookups() const noexcept {
    return detail::live_core<>::overflowed_lookups(*state_);
  }
  /// `series(...)` lookups that carried a label value longer than
  /// `live_options::max_label_value_bytes` (cut or refused into the overflow series).
  [[nodiscard]] std::uint64_t long_label_values() const noexcept {
    return detail::live_core<>::long_label_values(*state_);
  }

 private:
  friend struct detail::live_access;

  template <class D>
  static double seconds(D d) noexcept {
    return std::chrono::duration<double>(d).count();
  }

  std::uint32_t resolve(live_series s) const noexcept {
    return detail::live_resolve(hot_, s.index);
  }

  bool mine(const request_type& r) const noexcept { return r.owner_ == hot_.id && r.active(); }
  record_status not_mine(const request_type& r) noexcept {
    return misuse(r.owner_ == hot_.id && r.phase_ == request_type::done
                      ? record_status::after_finish
                      : record_status::not_started);
  }
  record_status checked(record_status s) noexcept { return s == record_status::ok ? s : misuse(s); }
  record_status misuse(record_status s) noexcept {
    count_misuse();
    return s;
  }
  void count_misuse() noexcept { detail::live_core<>::count_misuse(*state_); }

  /// Runs `f(writer)` on the calling thread's active side, inside the shard's hand-over bracket.
  template <class F>
  void in_shard(F&& f) noexcept {
    detail::live_writer<> w(*state_);
    if (TOKCHRON_LIKELY(static_cast<bool>(w))) f(w);
  }

  /// The prompt counters of a timeline's request: prompt tokens, and with cached ones vLLM's
  /// split by source (vllm/v1/metrics/stats.py `PromptTokenStats.update_from_output`: computed
  /// = prompt - cached; external_kv_transfer = the transferred tokens `kv`, part of the
  /// cached; local_cache_hit = cached + recomputed - transferred, where one token is
  /// recomputed when all but one were cached). None for a prompt another request computed
  /// (`shared`).
  template <class Timeline>
  void count_prompt(detail::live_writer<>& d, std::uint32_t s, const Timeline& tl, bool shared,
                    std::uint64_t kv) const noexcept {
    if (shared) return;
    const std::optional<std::uint64_t> p = tl.prompt_tokens();
    const std::optional<std::uint64_t> c = tl.cached_prompt_tokens();
    if (p) d.count(s, detail::lc_prompt_tokens, *p);
    if (c) {
      d.use(detail::lf_cached_prompt);
      d.count(s, detail::lc_prompt_cached, *c);
      d.observe(s, live_histogram::cached_prompt_tokens, static_cast<double>(*c));
    }
    if (!p || (c && *c > *p)) return;  // no split without the prompt length
    const std::uint64_t cached = c.value_or(0);
    const std::uint64_t external = kv < cached ? kv : cached;
    const std::uint64_t recomputed = c && cached + 1 == *p ? 1 : 0;
    d.count(s, detail::lc_prompt_computed, *p - cached);
    d.count(s, detail::lc_prompt_cache_hit, cached - external + recomputed);
    d.count(s, detail::lc_prompt_external, external);
    d.count(s, detail::lc_prompt_recomputed, recomputed);
  }
  /// `n` generation tokens, `reasoning` of them in reasoning chunks.
  static void count_generation(detail::live_writer<>& d, std::uint32_t s, std::uint64_t n,
                               std::uint64_t reasoning) noexcept {
    d.count(s, detail::lc_generation_tokens, n);
    if (reasoning > 0) {
      d.use(detail::lf_reasoning);
      d.count(s, detail::lc_reasoning_tokens, reasoning);
    }
  }

  void observe_itl(detail::live_writer<>& d, std::uint32_t s, double gap,
                   std::uint32_t tokens) const noexcept {
    if (hot_.rules.itl == itl_grain::per_chunk)
      d.observe(s, live_histogram::itl, gap);  // one sample per step
    else
      d.observe(s, live_histogram::itl, gap / tokens, tokens);  // k samples of g/k
  }

  /// Observes latency `v` of histogram `h` unless the rules drop it (trtllm: 0 is not
  /// observed; tensorrt_llm/metrics/perf_utils.py keeps values > 0 only).
  void observe_latency(detail::live_writer<>& d, std::uint32_t s, live_histogram h, double v,
                       std::uint32_t reason = 0) const noexcept {
    if (hot_.rules.positive_only && !(v > 0)) return;
    d.observe(s, h, v, 1, reason);
  }

  /// The instant TTFT and E2E start from: the arrival, or under `from_queued` the time the
  /// request entered the engine's queue when known (trtllm's executor arrival time).
  template <class Timeline>
  std::optional<typename Timeline::time_point> start_of(const Timeline& tl) const noexcept {
    if (hot_.rules.from_queued)
      if (const auto q = tl.queued_time()) return q;
    return tl.arrival();
  }

  /// The series a request's first token moves when they stream: TTFT (unless observed at the
  /// finish) and the prompt counters (unless counted at the finish).
  template <class Timeline>
  void first_token_series(detail::live_writer<>& d, std::uint32_t s, const Timeline& tl,
                          bool shared, std::uint64_t kv) const noexcept {
    const auto first = tl.first_token_time();
    if (!hot_.rules.ttft_at_finish)
      if (const auto a = start_of(tl); a && first && *first >= *a)
        observe_latency(d, s, live_histogram::ttft, seconds(*first - *a));
    if (!hot_.rules.tokens_at_finish) count_prompt(d, s, tl, shared, kv);
    if (hot_.rules.lengths_at_first_token)
      if (const auto p = tl.prompt_tokens())
        d.observe(s, live_histogram::prompt_tokens, static_cast<double>(*p));
  }

  /// The finish-time series of a finished timeline, as the inclusion policy and the
  /// preset's rules say.
  template <class Timeline>
  void finished(detail::live_writer<>& d, std::uint32_t s, const Timeline& tl,
                std::uint64_t max_tokens, bool counted_prompt, bool shared,
                std::uint64_t kv) const noexcept {
    const finish_reason reason = *tl.reason();
    const live_rules& rules = hot_.rules;
    d.count(s, detail::lc_requests + static_cast<std::uint32_t>(reason), 1);
    const std::uint64_t n = tl.output_tokens();
    // Every request that produced a token, whatever its reason (llama.cpp counts a slot's
    // tokens, decode steps and decode time as it is released, tools/server/server-context.cpp
    // `metrics_on_prediction`; the decode time max(1 us, last - first token),
    // server-common.h `server_slot_stats::t_gen_us`).
    if (const auto f = tl.first_token_time(), l = tl.last_token_time(); f && l && n > 0) {
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(*l - *f).count();
      d.count(s, detail::lc_finished_tokens, n);
      d.count(s, detail::lc_decode_steps, n - 1);
      d.count(s, detail::lc_decode_us, us > 1 ? static_cast<std::uint64_t>(us) : 1);
    }
    const live_inclusion inc = hot_.inclusion;
    // The rule of metrics/inclusion.hpp, which run summaries (tokchron-report) apply too, then
    // the server's own choice of finish reasons. The chunk path streams what it counts before
    // the finish (ITL always; TTFT, tokens unless `completed`): under `scheduled` a request with
    // a token is a member, so the end is the same.
    const bool included = includes(inc, inclusion_family::per_request, tl) &&
                          (rules.reasons == 0 || (rules.reasons & live_reason_bit(reason)) != 0);
    if (!included) return;
    const auto why = static_cast<std::uint32_t>(reason);  // the part of a histogram by reason
    const auto first = tl.first_token_time();
    const auto last = tl.last_token_time();
    const auto start = start_of(tl);
    if (inc == live_inclusion::completed || rules.ttft_at_finish)
      if (start && first && *first >= *start)
        observe_latency(d, s, live_histogram::ttft, seconds(*first - *start), why);
    if (rules.tokens_at_finish) {
      count_prompt(d, s, tl, shared, kv);
      count_generation(d, s, n, tl.reasoning_tokens());
    } else {
      if (inc == live_inclusion::completed) count_generation(d, s, n, tl.reasoning_tokens());
      if (!counted_prompt && includes(inc, inclusion_family::prompt_tokens, tl))
        count_prompt(d, s, tl, shared, kv);
    }
    if (rules.e2e_to_last_token) {
      if (start && last && *last >= *start)
        observe_latency(d, s, live_histogram::e2e, seconds(*last - *start), why);
    } else if (const auto v = e2e(tl)) {
      observe_latency(d, s, live_histogram::e2e, seconds(*v), why);
    }
    if (!rules.queue_at_schedule)
      if (const auto v = queue_time(tl))
        d.observe(s, live_histogram::queue_time, seconds(*v), 1, why);
    if (const auto a = tl.arrival()) {  // arrival to queued (0 when never queued)
      const auto q = tl.queued_time().value_or(*a);
      if (q >= *a) d.observe(s, live_histogram::validation_time, seconds(q - *a), 1, why);
    }
    if (const auto v = prefill_time(tl))
      observe_latency(d, s, live_histogram::prefill_time, seconds(*v), why);
    const auto dec = decode_time(tl);
    if (dec) observe_latency(d, s, live_histogram::decode_time, seconds(*dec), why);
    if (tl.first_scheduled() && last)
      observe_latency(d, s, live_histogram::inference_time, seconds(*last - *tl.first_scheduled()),
                      why);
    if (rules.tpot == tpot_span::origin_to_last_over_n) {
      // TGI (router/src/server.rs): time_per_token = inference_time / generated_tokens, where
      // inference_time runs from the batch start to the last token.
      if (n > 0 && tl.first_scheduled() && last && *last >= *tl.first_scheduled())
        d.observe(s, live_histogram::tpot,
                  seconds(*last - *tl.first_scheduled()) / static_cast<double>(n), 1, why);
    } else if (rules.tpot_small_n == small_n_rule::zero) {
      // vLLM (stats.py): decode_time / (N - 1) when N - 1 > 0, else 0 (also for N = 0 and 1).
      d.observe(s, live_histogram::tpot,
                n > 1 && dec ? seconds(*dec) / static_cast<double>(n - 1) : 0.0, 1, why);
    } else if (const auto v = tpot(tl)) {
      observe_latency(d, s, live_histogram::tpot, seconds(*v), why);
    }
    if (!rules.lengths_at_arrival) {
      // At the first token instead: observed there as the tokens streamed (first_token_series).
      const bool at_first = rules.lengths_at_first_token;
      if (!at_first || (inc == live_inclusion::completed && first))
        if (const auto p = tl.prompt_tokens())
          d.observe(s, live_histogram::prompt_tokens, static_cast<double>(*p), 1, why);
      if (max_tokens > 0)
        d.observe(s, live_histogram::max_tokens, static_cast<double>(max_tokens), 1, why);
    }
    if (n > 0 || !rules.output_length_if_any)
      d.observe(s, live_histogram::generation_tokens, static_cast<double>(n), 1, why);
    // vLLM's request_prefill_kv_computed_tokens (vllm/v1/metrics/stats.py, PR 30189):
    // num_prompt_tokens - max(num_cached_tokens, 0) for every finished request.
    if (const auto p = tl.prompt_tokens()) {
      const std::uint64_t c = tl.cached_prompt_tokens().value_or(0);
      d.observe(s, live_histogram::prefill_computed_tokens,
                static_cast<double>(c < *p ? *p - c : 0), 1, why);
    }
  }

  Clock clock_;
  detail::live_state* state_ = nullptr;
  detail::live_hot_options hot_;
};

// The recording calls taking a time are defined out of the class, so that they are not
// inline: a translation unit that sees `extern template class basic_live_metrics<...>`
// (tokchron/record.hpp with TOKCHRON_SEPARATE_INSTANTIATION) calls the one instantiation of
// tokchron/record_instantiate.hpp instead of compiling its own.
template <class Clock>
record_status basic_live_metrics<Clock>::arrive(request_type& r, time_point t,
                                                const live_request_info& info) noexcept {
  if (r.active()) return misuse(record_status::already_started);
  typename request_type::timeline_type tl(clock_);  // shares the clock: no allocation
  const record_status s = tl.arrive(t);
  if (s != record_status::ok) return misuse(s);
  if (info.prompt_tokens) tl.set_prompt_tokens(*info.prompt_tokens);
  if (info.cached_prompt_tokens) {
    if (info.prompt_tokens && *info.cached_prompt_tokens > *info.prompt_tokens)
      return misuse(record_status::invalid_count);
    tl.set_cached_prompt_tokens(*info.cached_prompt_tokens);
  }
  r.tl_ = std::move(tl);
  r.owner_ = hot_.id;
  r.series_ = resolve(info.series);
  r.max_tokens_ = info.max_tokens;
  r.counted_prompt_ = false;
  r.shared_prompt_ = false;
  r.kv_transferred_ = false;
  r.kv_tokens_ = 0;
  r.phase_ = request_type::waiting;
  in_shard([&](detail::live_writer<>& d) noexcept {
    d.count(r.series_, detail::lc_waiting, 1);
    d.count(r.series_, detail::lc_before_first, 1);
    if (r.series_ == hot_.overflow_index) d.count(r.series_, detail::lc_overflow_requests, 1);
    if (hot_.rules.lengths_at_arrival) {  // TGI: observed as the request is validated
      if (info.prompt_tokens)
        d.observe(r.series_, live_histogram::prompt_tokens,
                  static_cast<double>(*info.prompt_tokens));
      if (info.max_tokens > 0)
        d.observe(r.series_, live_histogram::max_tokens, static_cast<double>(info.max_tokens));
    }
  });
  return record_status::ok;
}

template <class Clock>
record_status basic_live_metrics<Clock>::set_prompt_tokens(request_type& r,
                                                           std::uint64_t n) noexcept {
  if (!mine(r))
    return misuse(r.phase_ == request_type::done ? record_status::after_finish
                                                 : record_status::not_started);
  if (r.counted_prompt_) return misuse(record_status::out_of_order);
  if (const auto c = r.tl_.cached_prompt_tokens(); c && *c > n)
    return misuse(record_status::invalid_count);
  r.tl_.set_prompt_tokens(n);
  return record_status::ok;
}

template <class Clock>
record_status basic_live_metrics<Clock>::set_cached_prompt_tokens(request_type& r,
                                                                  std::uint64_t n) noexcept {
  if (!mine(r)) return not_mine(r);
  if (r.counted_prompt_) return misuse(record_status::out_of_order);
  // The transferred tokens (`kv_transfer`) are cached too: n is the local hits.
  const std::uint64_t kv = r.kv_tokens_;
  if (n > ~std::uint64_t{0} - kv) return misuse(record_status::invalid_count);
  if (const auto p = r.tl_.prompt_tokens(); p && n + kv > *p)
    return misuse(record_status::invalid_count);
  r.tl_.set_cached_prompt_tokens(n + kv);
  return record_status::ok;
}

template <class Clock>
record_status basic_live_metrics<Clock>::kv_transfer(request_type& r,
                                                     const live_kv_transfer& x) noexcept {
  if (!mine(r)) return not_mine(r);
  if (r.kv_transferred_) return misuse(record_status::already_started);
  if (!(x.seconds >= 0 && x.seconds <= std::numeric_limits<double>::max()))
    return misuse(record_status::invalid_count);
  if (hot_.role != live_role::prefill) {
    if (r.counted_prompt_ || r.tl_.first_token_time()) return misuse(record_status::out_of_order);
    const std::uint64_t local = r.tl_.cached_prompt_tokens().value_or(0);
    if (x.tokens > ~std::uint64_t{0} - local) return misuse(record_status::invalid_count);
    if (const auto p = r.tl_.prompt_tokens(); p && local + x.tokens > *p)
      return misuse(record_status::invalid_count);
    if (x.tokens > 0) r.tl_.set_cached_prompt_tokens(local + x.tokens);
    r.kv_tokens_ = x.tokens;
  }
  r.kv_transferred_ = true;
  in_shard([&](detail::live_writer<>& d) noexcept {
    const std::uint32_t s = r.series_;
    d.use(detail::lf_kv_transfer);
    d.count(s, detail::lc_kv_transfers, 1);
    d.count(s, detail::lc_kv_bytes, x.bytes);
    d.count(s, detail::lc_kv_tokens, x.tokens);
    d.observe(s, live_histogram::kv_transfer_time, x.seconds);
  });
  detail::live_core<>::note_kv_transfer(*state_, r.series_, x.seconds, x.bytes);
  return record_status::ok;
}

template <class Clock>
record_status basic_live_metrics<Clock>::set_shared_prompt(request_type& r) noexcept {
  if (!mine(r)) return not_mine(r);
  if (r.counted_prompt_) return misuse(record_status::out_of_order);
  const auto p = r.tl_.prompt_tokens();
  if (!p) return misuse(record_status::invalid_count);
  r.tl_.set_cached_prompt_tokens(*p);
  r.shared_prompt_ = true;
  return record_status::ok;
}

template <class Clock>
record_status basic_live_metrics<Clock>::speculative(request_type& r, std::uint32_t drafted,
                                                     std::uint32_t accepted) noexcept {
  if (!mine(r)) return not_mine(r);
  if (accepted > drafted || (hot_.spec_positions > 0 && accepted > hot_.spec_positions))
    return misuse(record_status::invalid_count);
  const std::uint64_t total_drafted = r.tl_.speculative_drafted_tokens().value_or(0) + drafted;
  const std::uint64_t total_accepted = r.tl_.speculative_accepted_tokens().value_or(0) + accepted;
  if (total_drafted < drafted) return misuse(record_status::count_overflow);
  (void)r.tl_.set_speculative(total_drafted, total_accepted);
  in_shard([&](detail::live_writer<>& d) noexcept {
    const std::uint32_t s = r.series_;
    d.use(detail::lf_speculative);
    d.count(s, detail::lc_spec_drafts, 1);
    d.count(s, detail::lc_spec_draft_tokens, drafted);
    d.count(s, detail::lc_spec_accepted, accepted);
    for (std::uint32_t i = 0; i < accepted && i < hot_.spec_positions; ++i)
      d.count(s, hot_.spec_offset + i, 1);
  });
  return record_status::ok;
}

template <class Clock>
record_status basic_live_metrics<Clock>::queued(request_type& r, time_point t) noexcept {
  if (!mine(r)) return not_mine(r);
  return checked(r.tl_.queued(t));
}

template <class Clock>
record_status basic_live_metrics<Clock>::scheduled(request_type& r, time_point t) noexcept {
  if (!mine(r)) return not_mine(r);
  const bool first = !r.tl_.first_scheduled().has_value();
  if (record_status s = r.tl_.scheduled(t); s != record_status::ok) return misuse(s);
  // SGLang observes the queue time as the scheduler first puts the request in a batch.
  const bool queue = first && hot_.rules.queue_at_schedule;
  if (r.phase_ == request_type::waiting || queue) {
    const bool was_waiting = r.phase_ == request_type::waiting;
    r.phase_ = request_type::running;
    in_shard([&](detail::live_writer<>& d) noexcept {
      if (was_waiting) {
        d.count(r.series_, detail::lc_waiting, ~std::uint64_t{0});
        d.count(r.series_, detail::lc_running, 1);
      }
      if (queue)
        if (const auto v = queue_time(r.tl_))
          d.observe(r.series_, live_histogram::queue_time, seconds(*v));
    });
  }
  return record_status::ok;
}

template <class Clock>
record_status basic_live_metrics<Clock>::preempted(request_type& r, time_point t) noexcept {
  if (!mine(r)) return not_mine(r);
  if (record_status s = r.tl_.preempted(t); s != record_status::ok) return misuse(s);
  const bool was_running = r.phase_ == request_type::running;
  r.phase_ = request_type::waiting;
  in_shard([&](detail::live_writer<>& d) noexcept {
    d.count(r.series_, detail::lc_preemptions, 1);
    if (was_running) {
      d.count(r.series_, detail::lc_running, ~std::uint64_t{0});
      d.count(r.series_, detail::lc_waiting, 1);
    }
  });
  return record_status::ok;
}

template <class Clock>
record_status basic_live_metrics<Clock>::chunk(request_type& r, time_point t, std::uint32_t tokens,
                                               chunk_kind kind) noexcept {
  if (!mine(r)) return not_mine(r);
  const std::optional<time_point> prev = r.tl_.last_token_time();
  if (record_status s = r.tl_.chunk(t, tokens, kind); s != record_status::ok) return misuse(s);
  if (tokens == 0) return record_status::ok;
  const bool streaming = hot_.inclusion != live_inclusion::completed;
  // Tokens mean the engine runs it, whether or not the server reported the scheduling.
  const bool implicit_schedule = r.phase_ == request_type::waiting;
  r.phase_ = request_type::running;
  in_shard([&](detail::live_writer<>& d) noexcept {
    const std::uint32_t s = r.series_;
    if (implicit_schedule) {
      d.count(s, detail::lc_waiting, ~std::uint64_t{0});
      d.count(s, detail::lc_running, 1);
    }
    if (prev) {
      observe_itl(d, s, seconds(t - *prev), tokens);
    } else {
      d.count(s, detail::lc_before_first, ~std::uint64_t{0});
      if (hot_.rules.itl == itl_grain::per_token_with_first && tokens > 1)
        d.observe(s, live_histogram::itl, 0.0, tokens - 1u);
      if (streaming) {
        first_token_series(d, s, r.tl_, r.shared_prompt_, r.kv_tokens_);
        r.counted_prompt_ = true;
      }
    }
    if (streaming && !hot_.rules.tokens_at_finish)
      count_generation(d, s, tokens, kind == chunk_kind::reasoning ? tokens : 0);
  });
  return record_status::ok;
}

template <class Clock>
record_status basic_live_metrics<Clock>::finish(request_type& r, time_point t,
                                                finish_reason reason) noexcept {
  if (!mine(r)) return not_mine(r);
  if (record_status s = r.tl_.finish(t, reason); s != record_status::ok) return misuse(s);
  const auto was = r.phase_;
  r.phase_ = request_type::done;
  in_shard([&](detail::live_writer<>& d) noexcept {
    const std::uint32_t s = r.series_;
    d.count(s, was == request_type::running ? detail::lc_running : detail::lc_waiting,
            ~std::uint64_t{0});
    if (!r.tl_.first_token_time()) d.count(s, detail::lc_before_first, ~std::uint64_t{0});
    finished(d, s, r.tl_, r.max_tokens_, r.counted_prompt_, r.shared_prompt_, r.kv_tokens_);
  });
  return record_status::ok;
}

/// Live metrics on the steady clock.
using live_metrics = basic_live_metrics<>;
/// A request tracked by a `live_metrics`.
using live_request = basic_live_request<>;

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_LIVE_RECORDER_HPP
