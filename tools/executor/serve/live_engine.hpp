// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_SERVE_LIVE_ENGINE_HPP
#define TOKCHRON_TOOLS_EXECUTOR_SERVE_LIVE_ENGINE_HPP

/// \file
/// The executor's scheduler and backend run in real time for `batching-executor serve`: HTTP
/// threads `submit` requests and `cancel` them; one engine thread steps the batch (the sim
/// backend's modelled step time is slept, a real backend takes its own time) and hands each
/// step's tokens to the request's `sink`. Every event is recorded twice: in the request's
/// tokchron timeline (the trace) and in the live metrics (`/metrics`).
///
/// Times are `steady_clock` nanoseconds since its epoch (on Linux CLOCK_MONOTONIC), so a client
/// on the same machine reading `steady_clock` compares its own times with the server trace
/// directly.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backend.hpp"
#include "openai.hpp"
#include "request.hpp"
#include "scheduler.hpp"
#include "tokchron/io/trace.hpp"
#include "tokchron/live/recorder.hpp"

namespace batching::serve {

using live_metrics = tokchron::basic_live_metrics<std::chrono::steady_clock>;

/// The values of `serve --names`: whose /metrics names and semantics the server exports
/// (tokchron/live/presets.hpp; docs/library/live-metrics.md).
inline constexpr std::string_view metric_names[] = {
    "vllm", "tokchron", "sglang", "tgi", "llamacpp", "trtllm", "dynamo", "lmdeploy", "otel"};
/// "vllm|tokchron|sglang|tgi|llamacpp|trtllm|dynamo|lmdeploy|otel", for usage texts and errors.
[[nodiscard]] std::string metric_names_list();
/// Whether `names` is one of `metric_names`.
[[nodiscard]] bool known_metric_names(std::string_view names) noexcept;
/// The live options of preset `names` for a server of `model` whose requests hold at most
/// `max_model_len` tokens: vLLM's and tokchron's with label `model_name`, SGLang's
/// (`model_name`), TGI's (max input tokens `max_model_len - 1`, max total `max_model_len`,
/// TGI's defaults' relation), llama.cpp's, trtllm-serve's (`model_name`, `engine_type`),
/// Dynamo's frontend (`model`), LMDeploy's (`model_name`, `engine`), OpenTelemetry's GenAI
/// server metrics (operation `chat`, provider `tokchron`, the model; the conventions' version
/// from `OTEL_SEMCONV_STABILITY_OPT_IN`, as OpenTelemetry's transition says). Throws
/// std::invalid_argument for an unknown name.
[[nodiscard]] tokchron::live_options metric_options(std::string_view names,
                                                    const std::string& model,
                                                    std::uint32_t max_model_len);

/// What the engine tells a request after a step: output tokens [first, first + tokens) were
/// produced (tokens may be 0 for a finish without output), and whether it is finished.
struct step_event {
  std::uint32_t first = 0, tokens = 0;
  bool finished = false;
  tokchron::finish_reason reason = tokchron::finish_reason::stop;
  std::uint32_t cached_tokens = 0;  ///< prompt tokens the prefix cache served (once scheduled)
};

/// One request in flight, shared by its HTTP session and the engine.
struct call {
  explicit call(const clock_type& c) : req(c) {}
  std::uint64_t id = 0;  ///< unique in the server's life (the engine's sequence id)
  std::string name;      ///< the response's and the trace's id ("chatcmpl-...", "cmpl-...")
  generation_request gen;
  time_point received{};  ///< when its HTTP request had been read (arrival and send)
  /// Called on the engine thread after each step that concerns it; must not throw or block.
  std::function<void(const step_event&)> sink;

  // Engine thread only, after `submit`:
  request req;
  tokchron::basic_live_request<std::chrono::steady_clock> live;
  bool live_running = false;
};

/// Takes the trace records of the requests one engine step finished (finish order), on the
/// engine thread, before their sessions are told: a request whose client saw its end has been
/// handed over. Must not throw; should not block long (the engine waits for it).
using trace_sink = std::function<void(std::vector<tokchron::trace_record>&)>;

/// The real-time engine. Thread-safe: `submit`, `cancel`, `stop` from any thread.
class live_engine {
 public:
  /// `sink`: where finished requests' trace records go (for `--trace-out`); empty: nowhere.
  live_engine(const scheduler_config& cfg, std::unique_ptr<backend> be, live_metrics& metrics,
              trace_sink sink);
  ~live_engine();
  live_engine(const live_engine&) = delete;
  live_engine& operator=(const live_engine&) = delete;

  /// The server clock's now.
  [[nodiscard]] static time_point now() noexcept;
  [[nodiscard]] static std::chrono::steady_clock::time_point steady(time_point t) noexcept;

  /// Queues `c` (its arrival already recorded in the live metrics); false once stopping.
  bool submit(std::shared_ptr<call> c);
  /// The client of `c` went away: abort it, releasing its KV blocks (no-op once finished).
  void cancel(const std::shared_ptr<call>& c);
  /// Aborts every request still in flight and joins the engine thread.
  void stop();
  /// KV blocks of the pool and in use (engine counters, read after `stop` or racy).
  [[nodiscard]] std::uint32_t kv_blocks_total() const noexcept { return kv_total_; }
  [[nodiscard]] std::uint32_t kv_blocks_used() const noexcept { return kv_used_.load(); }
  /// The engine's failure, if its backend threw (then every request was aborted).
  [[nodiscard]] std::string failure() const;

 private:
  void loop();
  void step_loop();

  scheduler_config cfg_;
  std::unique_ptr<backend> be_;
  live_metrics& metrics_;
  trace_sink trace_sink_;
  clock_type clock_;
  scheduler sched_;
  std::uint32_t kv_total_ = 0;
  std::atomic<std::uint32_t> kv_used_{0};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<call>> inbox_, cancels_;
  bool stopping_ = false;
  std::string failure_;

  std::unordered_map<const request*, std::shared_ptr<call>> active_;  // engine thread
  std::thread thread_;
};

}  // namespace batching::serve

#endif  // TOKCHRON_TOOLS_EXECUTOR_SERVE_LIVE_ENGINE_HPP
