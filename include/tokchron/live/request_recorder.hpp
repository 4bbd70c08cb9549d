// SPDX-License-Identifier: MIT
// One recorder per request: one call per event feeds the live metrics and, when asked, the
// request's full timeline; one terminal call takes the finish reason and hands the finished
// timeline to a trace sink.
#ifndef TOKCHRON_LIVE_REQUEST_RECORDER_HPP
#define TOKCHRON_LIVE_REQUEST_RECORDER_HPP

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "tokchron/config.hpp"
#include "tokchron/live/recorder.hpp"
#include "tokchron/timeline/event.hpp"
#include "tokchron/timeline/request_timeline.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// Where a `basic_request_recorder` hands each finished request's full timeline (e.g. a trace
/// file: io/trace_json_writer.hpp). `write` is called once per finished request, on the thread
/// that finished it, after the live metrics counted it; keep it short (format, then append
/// under a lock, or push to a queue: live/async_trace_sink.hpp never blocks). An exception it
/// throws is caught and counted (`basic_request_recorder::sink_failures`), never passed to the
/// request's thread.
template <class Clock = std::chrono::steady_clock>
class basic_trace_sink {
 public:
  using timeline_type = basic_request_timeline<Clock>;
  virtual ~basic_trace_sink() = default;
  /// The finished request `tl`, with the id and error text given to the recorder (both need
  /// only live until `write` returns). The id is the string given to `arrive` (an HTTP
  /// `X-Request-Id`, say), or the decimal digits of a numeric id.
  virtual void write(const timeline_type& tl, std::string_view id, std::string_view error) = 0;
};

/// One request's recorder: each event is one call, which feeds the live metrics (through the
/// recorder's `basic_live_request`) and, when the recorder keeps one, the request's full
/// timeline (every chunk, `full_store`) with the same time stamp. The recorder keeps the two in
/// step: an event the live metrics refuse (misuse: time going backwards, out of order, after the
/// finish) is not recorded on the timeline either, and is counted in `misuse()` as well as in
/// the metrics' misuse counter. `finish(t, reason)` is the one terminal call (`reject`, `abort`
/// and `fail` are its shortcuts); it hands the finished timeline to the trace sink, if any.
///
/// Every recording call is noexcept and never blocks (the sink's own cost aside); the timeline
/// allocates only as its chunk store grows (on allocation failure the chunk is refused,
/// `out_of_memory`, and counted). Not thread-safe by itself: one thread owns the request at a
/// time, as it owns the server's request object that holds it. Reusable: `arrive` starts it
/// afresh after a finish.
///
/// A recorder destroyed between `arrive` and its finish (the server dropped its request object
/// on a path that forgot to finish it: a task discarded from a queue, an exception, a shutdown)
/// finishes the request itself, as `aborted` at the metrics clock's `now()`, with the error
/// text `unfinished_error`: the running and waiting gauges come back down, the requests counter
/// counts it as aborted and the sink writes it. Move-only: a moved-from recorder is idle, and a
/// recorder assigned over an active one finishes that one first.
///
/// \code
///   tokchron::request_recorder rec(metrics, &sink);  // sink: a tokchron::trace_sink subclass
///   rec.arrive(t0, {series, prompt_tokens, max_tokens});
///   rec.queued(t1);
///   rec.scheduled(t2);
///   rec.chunk(t3, 1);
///   rec.finish(t4, tokchron::finish_reason::stop);   // counted, and written to the sink
/// \endcode
///
/// Users who want the two records apart (a timeline of their own, a different store) still call
/// `basic_live_metrics` and `basic_request_timeline` directly.
template <class Clock = std::chrono::steady_clock>
class basic_request_recorder {
 public:
  using clock_type = Clock;
  using time_point = typename Clock::time_point;
  using metrics_type = basic_live_metrics<Clock>;
  using live_request_type = basic_live_request<Clock>;
  using timeline_type = basic_request_timeline<Clock>;
  using sink_type = basic_trace_sink<Clock>;

  /// The error text of a request whose recorder was destroyed before its finish.
  static constexpr std::string_view unfinished_error =
      "unfinished: the request's recorder was destroyed before its finish";

  /// A recorder feeding `metrics` only (no full timeline kept).
  explicit basic_request_recorder(metrics_type& metrics) noexcept
      : m_(&metrics), tl_(metrics.clock()) {}
  /// A recorder feeding `metrics` and keeping the full timeline, handed to `sink` at the finish
  /// (`sink` may be null: the timeline is kept for the caller, `timeline()`).
  basic_request_recorder(metrics_type& metrics, sink_type* sink) noexcept
      : m_(&metrics), sink_(sink), tl_(metrics.clock()), keep_(true) {}

  basic_request_recorder(const basic_request_recorder&) = delete;
  basic_request_recorder& operator=(const basic_request_recorder&) = delete;
  /// Takes over `o`'s request (active or not); `o` is left idle.
  basic_request_recorder(basic_request_recorder&& o) noexcept
      : m_(o.m_),
        sink_(o.sink_),
        live_(std::exchange(o.live_, live_request_type{})),
        tl_(std::move(o.tl_)),
        id_(std::move(o.id_)),
        misuse_(o.misuse_),
        diverged_(o.diverged_),
        sink_failures_(o.sink_failures_),
        last_misuse_(o.last_misuse_),
        keep_(o.keep_) {
    o.id_.clear();
  }
  /// Finishes this recorder's active request (as the destructor does), then takes over `o`'s.
  basic_request_recorder& operator=(basic_request_recorder&& o) noexcept {
    if (this == &o) return *this;
    finish_unfinished();
    m_ = o.m_;
    sink_ = o.sink_;
    live_ = std::exchange(o.live_, live_request_type{});
    tl_ = std::move(o.tl_);
    id_.swap(o.id_);
    o.id_.clear();
    misuse_ = o.misuse_;
    diverged_ = o.diverged_;
    sink_failures_ = o.sink_failures_;
    last_misuse_ = o.last_misuse_;
    keep_ = o.keep_;
    return *this;
  }
  /// Finishes an active request as `aborted` (`unfinished_error`).
  ~basic_request_recorder() { finish_unfinished(); }

  // --- events: each returns the live metrics' status (ok, or the misuse refused) -------------

  /// The request arrived: starts the recorder afresh. `id` is passed to the sink: any string
  /// (an HTTP request id); copied here, so it need only live until this call returns. If the
  /// copy cannot be allocated the request is still recorded, with an empty id, and counted in
  /// `diverged()` (status `out_of_memory` in `last_misuse()`).
  record_status arrive(time_point t, const live_request_info& info = {},
                       std::string_view id = {}) noexcept {
    const record_status s = m_->arrive(live_, t, info);
    if (s != record_status::ok) return refused(s);
    try {
      id_.assign(id.data(), id.size());
    } catch (...) {
      id_.clear();
      step(record_status::out_of_memory);
    }
    if (keep_) {
      tl_ = timeline_type(m_->clock());
      step(tl_.arrive(t));
      if (info.prompt_tokens) tl_.set_prompt_tokens(*info.prompt_tokens);
      if (info.cached_prompt_tokens) tl_.set_cached_prompt_tokens(*info.cached_prompt_tokens);
    }
    return s;
  }
  record_status arrive(const live_request_info& info = {}, std::string_view id = {}) noexcept {
    return arrive(m_->clock().now(), info, id);
  }
  /// `arrive` with a numeric id, given to the sink as its decimal digits.
  record_status arrive(time_point t, const live_request_info& info, std::uint64_t id) noexcept {
    char digits[20];
    std::size_t n = 0;
    do {
      digits[sizeof digits - ++n] = static_cast<char>('0' + id % 10);
      id /= 10;
    } while (id != 0);
    return arrive(t, info, std::string_view(digits + sizeof digits - n, n));
  }
  record_status arrive(const live_request_info& info, std::uint64_t id) noexcept {
    return arrive(m_->clock().now(), info, id);
  }

  /// Sets or corrects the prompt length before the first token.
  record_status set_prompt_tokens(std::uint64_t n) noexcept {
    const record_status s = m_->set_prompt_tokens(live_, n);
    if (s != record_status::ok) return refused(s);
    if (keep_) tl_.set_prompt_tokens(n);
    return s;
  }
  /// Sets the prompt tokens served from a prefix cache, before the first token.
  record_status set_cached_prompt_tokens(std::uint64_t n) noexcept {
    const record_status s = m_->set_cached_prompt_tokens(live_, n);
    if (s != record_status::ok) return refused(s);
    if (keep_) tl_.set_cached_prompt_tokens(live_.timeline().cached_prompt_tokens().value_or(n));
    return s;
  }
  /// The request's KV cache moved between nodes (`basic_live_metrics::kv_transfer`); on a
  /// receiving node its tokens are cached prompt tokens in the timeline too.
  record_status kv_transfer(const live_kv_transfer& x) noexcept {
    const record_status s = m_->kv_transfer(live_, x);
    if (s != record_status::ok) return refused(s);
    if (const auto c = live_.timeline().cached_prompt_tokens(); keep_ && c)
      tl_.set_cached_prompt_tokens(*c);
    return s;
  }
  /// The prompt was computed by another request whose KV cache this one copies
  /// (`basic_live_metrics::set_shared_prompt`): every prompt token cached, none counted.
  record_status set_shared_prompt() noexcept {
    const record_status s = m_->set_shared_prompt(live_);
    if (s != record_status::ok) return refused(s);
    if (keep_) tl_.set_cached_prompt_tokens(live_.timeline().prompt_tokens().value_or(0));
    return s;
  }
  /// The request entered the engine's waiting queue.
  record_status queued(time_point t) noexcept {
    return both(m_->queued(live_, t), [&] { return tl_.queued(t); });
  }
  record_status queued() noexcept { return queued(m_->clock().now()); }
  /// The engine scheduled the request (first time, or again after a preemption).
  record_status scheduled(time_point t) noexcept {
    return both(m_->scheduled(live_, t), [&] { return tl_.scheduled(t); });
  }
  record_status scheduled() noexcept { return scheduled(m_->clock().now()); }
  /// The engine preempted the request.
  record_status preempted(time_point t) noexcept {
    return both(m_->preempted(live_, t), [&] { return tl_.preempted(t); });
  }
  record_status preempted() noexcept { return preempted(m_->clock().now()); }
  /// A streamed chunk of `tokens` output tokens.
  record_status chunk(time_point t, std::uint32_t tokens,
                      chunk_kind kind = chunk_kind::text) noexcept {
    return both(m_->chunk(live_, t, tokens, kind), [&] { return tl_.chunk(t, tokens, kind); });
  }
  record_status chunk(std::uint32_t tokens, chunk_kind kind = chunk_kind::text) noexcept {
    return chunk(m_->clock().now(), tokens, kind);
  }

  /// The one terminal call: the request finished for `reason` (`error` is passed to the sink;
  /// it need only live until this call returns). Counts it in the live metrics, finishes the
  /// timeline and hands it to the sink.
  record_status finish(time_point t, finish_reason reason = finish_reason::stop,
                       std::string_view error = {}) noexcept {
    const record_status s =
        both(m_->finish(live_, t, reason), [&] { return tl_.finish(t, reason); });
    if (s != record_status::ok || !keep_ || sink_ == nullptr) return s;
    try {
      sink_->write(tl_, id_, error);
    } catch (...) {
      ++sink_failures_;
    }
    return s;
  }
  record_status finish(finish_reason reason = finish_reason::stop,
                       std::string_view error = {}) noexcept {
    return finish(m_->clock().now(), reason, error);
  }
  /// `finish(t, finish_reason::rejected, error)`.
  record_status reject(time_point t, std::string_view error = {}) noexcept {
    return finish(t, finish_reason::rejected, error);
  }
  /// `finish(t, finish_reason::aborted)`.
  record_status abort(time_point t) noexcept { return finish(t, finish_reason::aborted); }
  /// `finish(t, finish_reason::error, error)`.
  record_status fail(time_point t, std::string_view error = {}) noexcept {
    return finish(t, finish_reason::error, error);
  }

  // --- queries -----------------------------------------------------------------------------

  /// True between `arrive` and the finish.
  [[nodiscard]] bool active() const noexcept { return live_.active(); }
  /// The full timeline (empty unless the recorder keeps one).
  [[nodiscard]] const timeline_type& timeline() const noexcept { return tl_; }
  /// Whether the recorder keeps the full timeline.
  [[nodiscard]] bool keeps_timeline() const noexcept { return keep_; }
  /// What the live metrics track of the request (its O(1) streaming timeline, its series).
  [[nodiscard]] const live_request_type& live() const noexcept { return live_; }
  /// The id given at `arrive` (a numeric id as its decimal digits).
  [[nodiscard]] std::string_view id() const noexcept { return id_; }
  /// Calls this recorder refused, since construction (each also counted by the metrics, except
  /// a timeline-only refusal, which would mean the two records disagree on the event order).
  [[nodiscard]] std::uint64_t misuse() const noexcept { return misuse_; }
  /// Calls the timeline refused after the live metrics accepted them (0 unless the two
  /// disagree).
  [[nodiscard]] std::uint64_t diverged() const noexcept { return diverged_; }
  /// Exceptions the sink threw, caught here.
  [[nodiscard]] std::uint64_t sink_failures() const noexcept { return sink_failures_; }
  /// The last refusal (`ok` if none).
  [[nodiscard]] record_status last_misuse() const noexcept { return last_misuse_; }

 private:
  void finish_unfinished() noexcept {
    if (live_.active()) finish(m_->clock().now(), finish_reason::aborted, unfinished_error);
  }
  record_status refused(record_status s) noexcept {
    ++misuse_;
    last_misuse_ = s;
    return s;
  }
  void step(record_status s) noexcept {
    if (s != record_status::ok) {
      ++diverged_;
      last_misuse_ = s;
    }
  }
  template <class F>
  record_status both(record_status live, F&& timeline) noexcept {
    if (live != record_status::ok) return refused(live);
    if (keep_) step(timeline());
    return live;
  }

  metrics_type* m_;
  sink_type* sink_ = nullptr;
  live_request_type live_;
  timeline_type tl_;
  std::string id_;
  std::uint64_t misuse_ = 0;
  std::uint64_t diverged_ = 0;
  std::uint64_t sink_failures_ = 0;
  record_status last_misuse_ = record_status::ok;
  bool keep_ = false;
};

using request_recorder = basic_request_recorder<>;
using trace_sink = basic_trace_sink<>;

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_LIVE_REQUEST_RECORDER_HPP
