// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
// A fake multi-threaded inference engine, shaped like a real one: an HTTP front end accepts
// requests and puts them on the scheduler's waiting queue; worker threads each run a batch in
// steps (prefill, then decode; a decode step can yield several tokens, as speculative decoding
// does) and stream every step's detokenized delta; requests get preempted and resumed, aborted
// by their client, failed by a worker, or rejected at admission. What happens to each request is
// drawn from the seed (plan.hpp); the times are real.
//
// The recording calls sit where a real engine puts them, between the `[doc:NAME]` and
// `[/doc:NAME]` markers; docs/library/server-integration.md quotes those regions verbatim (a check
// keeps them equal).
#ifndef TOKCHRON_EXAMPLES_SERVER_INTEGRATION_ENGINE_HPP
#define TOKCHRON_EXAMPLES_SERVER_INTEGRATION_ENGINE_HPP

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

// [doc:includes]
#include <tokchron/io/clock_anchor.hpp>        // the trace's clock anchor (join)
#include <tokchron/io/trace_json_writer.hpp>   // the trace (needs nlohmann-json)
#include <tokchron/live/request_recorder.hpp>  // one recorder per request: live metrics + trace
// [/doc:includes]

#include "plan.hpp"

namespace server_integration {

namespace tc = tokchron;

// [doc:request]
// One request as the engine holds it. Exactly one thread owns it at a time (the front end,
// the queue, one worker), handed over under the queue's lock.
struct request {
  request_plan plan;
  tc::request_recorder rec;  // feeds the live metrics and, with a sink, the trace
  std::uint32_t tokens = 0;  // output tokens so far
  bool preempted_once = false;
  bool needs_prefill = true;  // true after scheduling and after a preemption (recompute)
  std::mt19937_64 steps;      // chunk sizes
  std::string error;
  request(const request_plan& p, tc::live_metrics& metrics, tc::trace_sink* trace)
      : plan(p),
        rec(trace ? tc::request_recorder(metrics, trace) : tc::request_recorder(metrics)),
        steps(p.step_seed) {}
};
// [/doc:request]

// Writes one JSON line per finished request (tokchron's trace format), from any thread: the
// recorders hand it each finished timeline.
class trace_sink : public tc::trace_sink {
 public:
  // zero: the trace's time 0, taken before the first request arrives; the clock anchor pairs
  // it with the wall clock, read once here.
  trace_sink(const std::string& path, tc::request_timeline::time_point zero)
      : zero_(zero), anchor_(tc::read_clock_anchor(zero)), out_(path) {}
  explicit operator bool() const { return static_cast<bool>(out_); }
  // [doc:trace]
  void write(const tc::request_timeline& tl, std::string_view id, std::string_view error) override {
    tc::trace_record rec =
        tc::to_trace_record(tl, zero_, "req-" + std::string(id), std::string(error));
    rec.benchmark_start = 0.0;  // the server's start, the trace's time 0: the report's duration
    tc::set_clock_anchor(rec, anchor_);  // puts the trace on the client's timeline (join)
    const std::string line = tc::to_json_line(rec);  // formatted outside the lock
    std::lock_guard<std::mutex> lock(mutex_);
    out_ << line << '\n';
  }
  // [/doc:trace]
  bool close() {
    std::lock_guard<std::mutex> lock(mutex_);
    out_.close();
    return !out_.fail();
  }

 private:
  tc::request_timeline::time_point zero_;
  tc::clock_anchor anchor_;
  std::mutex mutex_;
  std::ofstream out_;
};

struct engine_options {
  unsigned threads = 4;                  // worker threads
  unsigned max_batch = 16;               // running requests per worker
  double rate = 800;                     // arrivals per second
  std::chrono::microseconds step{1000};  // one engine step's base duration
};

// What a run did, counted by the engine itself (the checker compares these with the metrics).
struct run_counts {
  std::uint64_t by_fate[7] = {};
  std::uint64_t preemptions = 0;
  // max_tokens of the requests that reached the scheduler: what vLLM's
  // request_max_num_generation_tokens histogram sums (the trace does not hold it).
  std::uint64_t max_tokens_sum = 0, max_tokens_count = 0;
};

// The KV cache all workers share, in blocks of 16 tokens: what a real engine's block manager
// knows, and tokchron cannot (the engine sets the gauge).
inline constexpr std::uint32_t kv_block_tokens = 16;

class engine {
 public:
  engine(engine_options o, tc::live_metrics& metrics, tc::live_series series, trace_sink* trace)
      : o_(o),
        metrics_(metrics),
        series_(series),
        trace_(trace),
        kv_capacity_(o.threads * o.max_batch * (max_model_len / kv_block_tokens)) {}

  // Serves every plan: the calling thread is the HTTP front end; `threads` workers run steps.
  run_counts run(const std::vector<request_plan>& plans, std::uint64_t seed) {
    std::vector<std::thread> workers;
    for (unsigned w = 0; w < o_.threads; ++w) workers.emplace_back([this] { work(); });
    std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
    std::exponential_distribution<double> gap(o_.rate);
    auto next = std::chrono::steady_clock::now();
    for (const request_plan& p : plans) {
      next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(gap(rng)));
      std::this_thread::sleep_until(next);
      accept(std::make_unique<request>(p, metrics_, trace_));
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      accepting_ = false;
    }
    ready_.notify_all();
    for (auto& t : workers) t.join();
    return counts_;
  }

 private:
  // [doc:reason]
  using reason = tc::finish_reason;  // stop, length, aborted, error, timed_out, rejected
  // [/doc:reason]

  // The HTTP handler: a request arrived and was tokenized.
  void accept(std::unique_ptr<request> r) {
    // [doc:accept]
    const auto t = std::chrono::steady_clock::now();  // the HTTP request was received
    r->rec.arrive(t, {series_, r->plan.prompt_tokens, r->plan.max_tokens}, r->plan.id);
    // [/doc:accept]
    if (r->plan.prompt_tokens > max_model_len) {  // refused before scheduling
      r->error = "prompt longer than the context";
      // [doc:reject]
      const auto now = std::chrono::steady_clock::now();
      r->rec.finish(now, reason::rejected, r->error);  // or r->rec.reject(now, r->error)
      // [/doc:reject]
      finished(std::move(r), fate::rejected);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // [doc:enqueue]
      const auto now = std::chrono::steady_clock::now();
      r->rec.queued(now);
      waiting_.push_back(std::move(r));
      // [/doc:enqueue]
    }
    ready_.notify_one();
  }

  // One worker thread: admit from the waiting queue, run a step, stream, finish.
  void work() {
    std::vector<std::unique_ptr<request>> running;
    std::vector<std::unique_ptr<request>> cancelled;
    std::uint64_t held = 0;  // KV-cache blocks this worker's batch holds
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return !running.empty() || !waiting_.empty() || !accepting_; });
        while (running.size() < o_.max_batch && !waiting_.empty()) {
          std::unique_ptr<request> r = std::move(waiting_.front());
          waiting_.pop_front();
          if (r->plan.end == fate::aborted_waiting) {  // its client left while it waited
            cancelled.push_back(std::move(r));
            continue;
          }
          if (!r->preempted_once) {
            counts_.max_tokens_sum += r->plan.max_tokens;
            ++counts_.max_tokens_count;
          }
          // [doc:schedule]
          const auto now = std::chrono::steady_clock::now();  // first time, or resumed
          r->rec.scheduled(now);
          // [/doc:schedule]
          running.push_back(std::move(r));
        }
        if (running.empty() && cancelled.empty() && waiting_.empty() && !accepting_) return;
      }
      for (auto& r : cancelled) {
        // [doc:abort_waiting]
        const auto now = std::chrono::steady_clock::now();
        r->rec.finish(now, reason::aborted);
        // [/doc:abort_waiting]
        finished(std::move(r), fate::aborted_waiting);
      }
      cancelled.clear();
      if (running.empty()) continue;
      const std::uint64_t blocks = step(running);
      // [doc:kv_cache]
      std::lock_guard<std::mutex> lock(mutex_);
      kv_used_ = kv_used_ + blocks - held;  // the block manager's count, all workers
      metrics_.set_kv_cache_usage(
          series_, static_cast<double>(kv_used_) / static_cast<double>(kv_capacity_));
      // [/doc:kv_cache]
      held = blocks;
    }
  }

  // One engine step over the running batch: every request that produced output gets one
  // delta, stamped with the step's time (as an engine stamps its iteration). Returns the
  // KV-cache blocks the batch holds after the step.
  std::uint64_t step(std::vector<std::unique_ptr<request>>& running) {
    std::this_thread::sleep_for(o_.step + o_.step * running.size() / (4 * o_.max_batch));
    const auto now = std::chrono::steady_clock::now();
    std::vector<std::unique_ptr<request>> still;
    still.reserve(running.size());
    for (auto& r : running) {
      const request_plan& p = r->plan;
      if (p.end == fate::failed && r->tokens >= p.event_at) {  // the worker fails it
        r->error = "worker fault";
        // [doc:fail]
        r->rec.finish(now, reason::error, r->error);
        // [/doc:fail]
        finished(std::move(r), fate::failed);
        continue;
      }
      // Prefill yields the first token; a decode step 1 token, or 2-4 (speculative decoding).
      std::uint32_t n = 1;
      if (!r->needs_prefill && std::uniform_int_distribution<int>(0, 99)(r->steps) < 15)
        n = std::uniform_int_distribution<std::uint32_t>(2, 4)(r->steps);
      r->needs_prefill = false;
      const std::uint32_t limit = p.end == fate::aborted  ? p.event_at
                                  : p.end == fate::failed ? p.event_at
                                                          : p.target;
      n = std::min(n, limit - r->tokens);
      if (p.end == fate::preempted && !r->preempted_once) n = std::min(n, p.event_at - r->tokens);
      r->tokens += n;
      // [doc:delta]
      r->rec.chunk(now, n);  // one detokenized delta of n tokens
      // [/doc:delta]
      if (p.end == fate::aborted && r->tokens >= p.event_at) {  // the client disconnected
        // [doc:abort]
        r->rec.finish(now, reason::aborted);
        // [/doc:abort]
        finished(std::move(r), fate::aborted);
      } else if (p.end != fate::aborted && p.end != fate::failed && r->tokens >= p.target) {
        const reason why = r->tokens >= p.max_tokens ? reason::length : reason::stop;
        // [doc:finish]
        r->rec.finish(now, why);
        // [/doc:finish]
        finished(std::move(r), p.end);
      } else if (p.end == fate::preempted && !r->preempted_once && r->tokens >= p.event_at) {
        // Out of KV-cache blocks: the request is preempted and goes back to the queue's front.
        // [doc:preempt]
        r->rec.preempted(now);
        // [/doc:preempt]
        r->preempted_once = true;
        r->needs_prefill = true;
        std::lock_guard<std::mutex> lock(mutex_);
        ++counts_.preemptions;
        waiting_.push_front(std::move(r));
      } else {
        still.push_back(std::move(r));
      }
    }
    running = std::move(still);
    ready_.notify_all();
    std::uint64_t blocks = 0;
    for (const auto& r : running)
      blocks += (r->plan.prompt_tokens + r->tokens + kv_block_tokens - 1) / kv_block_tokens;
    return blocks;
  }

  // The recorder already wrote the trace line at the finish; the request is dropped here.
  void finished(std::unique_ptr<request> /*done*/, fate f) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counts_.by_fate[static_cast<int>(f)];
  }

  engine_options o_;
  tc::live_metrics& metrics_;
  tc::live_series series_;
  trace_sink* trace_;
  const std::uint64_t kv_capacity_;  // blocks
  std::uint64_t kv_used_ = 0;        // blocks held by running requests (under mutex_)
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::unique_ptr<request>> waiting_;
  bool accepting_ = true;
  run_counts counts_;
};

}  // namespace server_integration

#endif  // TOKCHRON_EXAMPLES_SERVER_INTEGRATION_ENGINE_HPP
