// SPDX-License-Identifier: MIT
// tokchron inside llama.cpp's llama-server: one recorder per completion task, carried by the
// task through the queues into its slot. The calls below are the whole interface the patched
// llama.cpp sources use (examples/llama_cpp/README.md walks through where each one goes).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include <tokchron/live/request_recorder.hpp>

struct server_task;

namespace server_tokchron {

// One request as tokchron records it: its recorder (live metrics and, with TOKCHRON_TRACE, the
// trace) and the tokens sampled in the current step but not yet recorded (speculative decoding
// samples several per step; they are one chunk).
struct request {
  tokchron::request_recorder rec;
  std::int64_t pending_us = 0;  // llama.cpp's stamp of the pending tokens
  std::uint32_t pending = 0;

  request(tokchron::live_metrics& metrics, tokchron::trace_sink* sink);
};
// What a server_task carries: null for tasks that are not completions. Destroying it unfinished
// (a task dropped by a path that sent no response) finishes the request as aborted.
using request_ptr = std::unique_ptr<request>;

// Process set-up, before the HTTP server accepts requests: the trace's time 0, the trace file
// (TOKCHRON_TRACE=path), tokchron's own /metrics (TOKCHRON_METRICS_PORT=port on 127.0.0.1).
void init();
// After the main loop has stopped: drains the trace file, stops tokchron's /metrics.
void shutdown();

// The request's id: the client's X-Request-Id header (any case) when it sent one, else
// `fallback` (llama.cpp's completion id).
std::string request_id(const std::map<std::string, std::string>& headers,
                       const std::string& fallback);

// HTTP thread, per task, once tokenized and just before it is posted to the task queue:
// arrival at `received` (the HTTP request read), queued now. `id` names it in the trace.
request_ptr on_arrival(std::chrono::steady_clock::time_point received, std::string_view id,
                       std::int64_t prompt_tokens, std::int32_t n_predict);

// Main loop, with llama.cpp's own microsecond stamps (ggml_time_us(), CLOCK_MONOTONIC):
void on_prompt_start(const server_task& task, std::int64_t t_start_us);  // a slot starts its prompt
void on_prompt_cached(const server_task& task,
                      std::uint64_t n_cached);  // tokens reused from the KV cache
void on_shared_prompt(const server_task& child,
                      std::int64_t t_start_us);  // an n > 1 child gets its parent's prompt
void on_token(const server_task& task, std::int64_t t_us);  // one sampled token (pending)
void on_step_end(const server_task& task);                  // the pending tokens as one chunk
void on_final(const server_task& task, bool length);        // final response: stop or length
void on_error(const server_task& task, int error_type, std::string_view message);
void on_abort(const server_task& task);  // released or dropped without a response (client gone)

}  // namespace server_tokchron
