// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_LIVE_ASYNC_TRACE_SINK_HPP
#define TOKCHRON_LIVE_ASYNC_TRACE_SINK_HPP

/// \file
/// A trace sink that never blocks the thread that finishes a request (an adaptor: needs
/// nlohmann-json, Debian nlohmann-json3-dev, and threads). `write` turns the finished timeline
/// into a `trace_record` and offers it to a bounded lock-free queue; a writer thread of its own
/// formats each record as a JSON line and appends it to the file. When the queue is full the
/// record is dropped and counted (`dropped()`), never waited for; `add_families` exports the
/// counts beside the live metrics. Every line carries `benchmark_start` 0 (the sink's time 0,
/// `zero`) and the host's clock anchor read at construction, so `tokchron-report` measures the
/// run from the server's start and `tokchron-report join` puts the trace on a client's timeline
/// without a manual offset.
///
/// \code
///   const auto zero = std::chrono::steady_clock::now();   // before the first request
///   tokchron::async_trace_sink sink("trace.jsonl", zero);  // starts its writer thread
///   tokchron::request_recorder rec(metrics, &sink);        // per request, as usual
///   ...
///   tokchron::metrics_snapshot s = tokchron::scrape(metrics);
///   sink.add_families(s);                                   //
///   tokchron_trace_{written,dropped}_total sink.close(); // drains the queue, flushes
/// \endcode

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/exposition/snapshot_data.hpp"
#include "tokchron/io/clock_anchor.hpp"
#include "tokchron/io/trace.hpp"
#include "tokchron/io/trace_json_writer.hpp"
#include "tokchron/live/request_recorder.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// A `basic_trace_sink` whose `write` never blocks: a bounded queue (`capacity` records) and a
/// writer thread. Thread safety: `write` from any number of threads at once; the queries from
/// any thread; `close` once, from one thread (the destructor calls it).
template <class Clock = std::chrono::steady_clock>
class basic_async_trace_sink final : public basic_trace_sink<Clock> {
 public:
  using timeline_type = typename basic_trace_sink<Clock>::timeline_type;
  using time_point = typename Clock::time_point;

  /// Opens `path` (truncating it) and starts the writer thread. `zero` is the trace's time 0,
  /// taken before the first request arrives; `capacity` (at least 1, rounded up to a power of
  /// two) bounds the records waiting to be written, and so the memory the sink holds.
  /// Throws `std::system_error` when the thread cannot start; a file that cannot be opened is
  /// reported by `ok()` (every record then counts as failed).
  basic_async_trace_sink(const std::string& path, time_point zero, std::size_t capacity = 4096)
      : zero_(zero),
        anchor_(read_clock_anchor<Clock>(zero)),
        cells_(round_up(capacity)),
        mask_(cells_.size() - 1),
        out_(path, std::ios::out | std::ios::trunc) {
    for (std::size_t i = 0; i < cells_.size(); ++i) cells_[i].seq.store(i);
    writer_ = std::thread([this] { run(); });
  }
  basic_async_trace_sink(const basic_async_trace_sink&) = delete;
  basic_async_trace_sink& operator=(const basic_async_trace_sink&) = delete;
  ~basic_async_trace_sink() override { close(); }

  /// Offers the finished request to the writer; drops it (counted) when the queue is full, the
  /// record cannot be built or the sink is closed. Never waits.
  void write(const timeline_type& tl, std::string_view id, std::string_view error) override {
    // In flight from before the stop check to after the push, so that close() waits for it
    // (seq_cst on both sides: either this call sees the stop, or close sees it in flight).
    inflight_.fetch_add(1, std::memory_order_seq_cst);
    if (!offer(tl, id, error)) dropped_.fetch_add(1, std::memory_order_relaxed);
    inflight_.fetch_sub(1, std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_acquire)) wake_.notify_one();
  }

  /// Waits until every queued record is written, stops the writer and closes the file. Returns
  /// true when every record offered so far was written (none dropped or failed). Idempotent.
  bool close() {
    if (writer_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(wake_mutex_);
        stop_.store(true, std::memory_order_seq_cst);
      }
      wake_.notify_one();
      writer_.join();
      if (out_.is_open()) out_.close();
    }
    return ok() && dropped() == 0 && failed() == 0;
  }

  /// Records written to the file.
  [[nodiscard]] std::uint64_t written() const noexcept { return written_.load(); }
  /// Records dropped because the queue was full (or a record could not be allocated).
  [[nodiscard]] std::uint64_t dropped() const noexcept { return dropped_.load(); }
  /// Records the file refused (a write error).
  [[nodiscard]] std::uint64_t failed() const noexcept { return failed_.load(); }
  /// False when the file could not be opened or a write failed.
  [[nodiscard]] bool ok() const noexcept { return !broken_.load(); }
  /// The queue's capacity in records.
  [[nodiscard]] std::size_t capacity() const noexcept { return cells_.size(); }
  /// The clock anchor every line carries.
  [[nodiscard]] const clock_anchor& anchor() const noexcept { return anchor_; }

  /// Appends `tokchron_trace_records_total{outcome="written|dropped|failed"}` to a scrape, so
  /// that a dropped record shows on the dashboard beside the metrics it left out of the trace.
  void add_families(metrics_snapshot& s, std::string name = "tokchron_trace_records") const {
    auto& f = s.family(std::move(name),
                       "Finished requests offered to the trace file: written, dropped because "
                       "the writer's queue was full, or refused by the file.",
                       metric_kind::counter);
    f.add(static_cast<double>(written()), {{"outcome", "written"}});
    f.add(static_cast<double>(dropped()), {{"outcome", "dropped"}});
    f.add(static_cast<double>(failed()), {{"outcome", "failed"}});
  }

 private:
  bool offer(const timeline_type& tl, std::string_view id, std::string_view error) noexcept {
    if (stop_.load(std::memory_order_seq_cst)) return false;
    std::unique_ptr<trace_record> r;
    try {
      r = std::make_unique<trace_record>(
          to_trace_record(tl, zero_, std::string(id), std::string(error)));
    } catch (...) {
      return false;
    }
    r->benchmark_start = 0.0;
    set_clock_anchor(*r, anchor_);
    return push(r);
  }

  // One slot of the bounded multi-producer queue (Vyukov's): `seq` says whose turn it is.
  struct cell {
    std::atomic<std::size_t> seq{0};
    std::unique_ptr<trace_record> record;
  };

  static std::size_t round_up(std::size_t n) {
    std::size_t c = 1;
    while (c < n) c <<= 1;
    return c;
  }

  bool push(std::unique_ptr<trace_record>& r) noexcept {
    std::size_t pos = tail_.load(std::memory_order_relaxed);
    for (;;) {
      cell& c = cells_[pos & mask_];
      const std::size_t seq = c.seq.load(std::memory_order_acquire);
      const auto diff = static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(pos);
      if (diff == 0) {
        if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          c.record = std::move(r);
          c.seq.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;  // full
      } else {
        pos = tail_.load(std::memory_order_relaxed);
      }
    }
  }

  // Only the writer thread pops.
  std::unique_ptr<trace_record> pop() noexcept {
    cell& c = cells_[head_ & mask_];
    if (c.seq.load(std::memory_order_acquire) != head_ + 1) return nullptr;
    std::unique_ptr<trace_record> r = std::move(c.record);
    c.seq.store(head_ + cells_.size(), std::memory_order_release);
    ++head_;
    return r;
  }

  void run() {
    if (!out_) broken_.store(true);
    for (;;) {
      bool wrote = false;
      while (std::unique_ptr<trace_record> r = pop()) {
        wrote = true;
        write_line(*r);
      }
      if (wrote && out_) out_.flush();
      if (stop_.load(std::memory_order_seq_cst)) {
        // Calls that passed the stop check before it was set finish their push; then the
        // queue holds everything that will ever be offered.
        while (inflight_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
        while (std::unique_ptr<trace_record> r = pop()) write_line(*r);
        if (out_) out_.flush();
        if (!out_) broken_.store(true);
        return;
      }
      std::unique_lock<std::mutex> lock(wake_mutex_);
      sleeping_.store(true, std::memory_order_seq_cst);
      // A push that saw sleeping_ false before this store is caught by the timeout.
      wake_.wait_for(lock, std::chrono::milliseconds(20),
                     [&] { return stop_.load(std::memory_order_acquire) || ready(); });
      sleeping_.store(false, std::memory_order_relaxed);
    }
  }

  bool ready() const noexcept {
    return cells_[head_ & mask_].seq.load(std::memory_order_acquire) == head_ + 1;
  }

  void write_line(const trace_record& r) {
    if (broken_.load(std::memory_order_relaxed)) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    try {
      out_ << to_json_line(r) << '\n';
    } catch (...) {
      out_.setstate(std::ios::badbit);
    }
    if (!out_) {
      broken_.store(true);
      failed_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    written_.fetch_add(1, std::memory_order_relaxed);
  }

  time_point zero_;
  clock_anchor anchor_;
  std::vector<cell> cells_;
  std::size_t mask_;
  alignas(64) std::atomic<std::size_t> tail_{0};
  alignas(64) std::size_t head_ = 0;  // the writer's
  std::atomic<std::uint64_t> written_{0}, dropped_{0}, failed_{0};
  std::atomic<std::uint32_t> inflight_{0};
  std::atomic<bool> stop_{false}, sleeping_{false}, broken_{false};
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  std::ofstream out_;
  std::thread writer_;
};

using async_trace_sink = basic_async_trace_sink<>;

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_LIVE_ASYNC_TRACE_SINK_HPP
