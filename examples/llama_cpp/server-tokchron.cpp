// SPDX-License-Identifier: MIT
// tokchron inside llama.cpp's llama-server: the process-wide state (live metrics in llama.cpp's
// names, the trace file, tokchron's own /metrics) and the per-request calls the patched sources
// make. See examples/llama_cpp/README.md.
#include "server-tokchron.h"

#include "server-common.h"  // error_type
#include "server-task.h"

#include "ggml.h"  // ggml_time_us

#include <cpp-httplib/httplib.h>  // llama.cpp's vendored copy, as server-http.cpp includes it

#include <tokchron/export/prometheus.hpp>
#include <tokchron/live/async_trace_sink.hpp>
#include <tokchron/live/presets.hpp>
#include <tokchron/live/scrape.hpp>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace server_tokchron {

namespace {

using steady = std::chrono::steady_clock;

struct state {
  // llama.cpp's own /metrics families, from request events (docs/library/live-metrics.md).
  tokchron::live_metrics metrics{tokchron::llamacpp_live_options()};
  // llama.cpp stamps its events with ggml_time_us(): microseconds of CLOCK_MONOTONIC, the
  // clock steady_clock reads on Linux; init() checks it and measures the offset otherwise.
  tokchron::stamps_adaptor<> us;
  std::unique_ptr<tokchron::async_trace_sink> trace;
  std::unique_ptr<httplib::Server> http;
  std::thread http_thread;
};

state& st() {
  static state s;
  return s;
}

std::string exposition() {
  state& s = st();
  tokchron::metrics_snapshot snap = tokchron::scrape(s.metrics);
  if (s.trace) {
    s.trace->add_families(snap);
  }
  return tokchron::to_prometheus(snap);
}

// Every event on llama.cpp's clock at its resolution (whole microseconds, truncated), so that
// the times stamped here and the stamps llama.cpp took itself are in order.
steady::time_point now_us() { return st().us(ggml_time_us()); }

// The request of a task, or null (not a completion, or tokchron not in this task).
request* of(const server_task& task) { return task.tc.get(); }

void flush(request& r) {
  if (r.pending == 0) {
    return;
  }
  r.rec.chunk(st().us(r.pending_us), r.pending);
  r.pending = 0;
}

}  // namespace

request::request(tokchron::live_metrics& metrics, tokchron::trace_sink* sink)
    : rec(sink ? tokchron::request_recorder(metrics, sink) : tokchron::request_recorder(metrics)) {}

void init() {
  state& s = st();
  if (!tokchron::stamps_adaptor<>::same_epoch([] { return ggml_time_us(); })) {
    s.us = tokchron::stamps_adaptor<>::calibrate([] { return ggml_time_us(); });
    std::fprintf(stderr,
                 "tokchron: ggml_time_us() is not on steady_clock's epoch; offset %lld ns\n",
                 static_cast<long long>(s.us.offset().count()));
  }
  // The trace's time 0: now, before the HTTP server accepts its first request.
  const steady::time_point zero = steady::now();
  if (const char* path = std::getenv("TOKCHRON_TRACE"); path != nullptr && *path != '\0') {
    s.trace = std::make_unique<tokchron::async_trace_sink>(path, zero);
    if (!s.trace->ok()) {
      std::fprintf(stderr, "tokchron: cannot write the trace to %s\n", path);
    }
  }
  if (const char* port = std::getenv("TOKCHRON_METRICS_PORT"); port != nullptr && *port != '\0') {
    s.http = std::make_unique<httplib::Server>();
    s.http->Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(exposition(), std::string(tokchron::prometheus_content_type));
    });
    const int p = std::atoi(port);
    if (!s.http->bind_to_port("127.0.0.1", p)) {
      std::fprintf(stderr, "tokchron: cannot listen on 127.0.0.1:%d\n", p);
      s.http.reset();
    } else {
      s.http_thread = std::thread([&s] { s.http->listen_after_bind(); });
      std::fprintf(stderr, "tokchron: /metrics on http://127.0.0.1:%d/metrics\n", p);
    }
  }
}

void shutdown() {
  state& s = st();
  if (s.http) {
    s.http->stop();
    if (s.http_thread.joinable()) {
      s.http_thread.join();
    }
  }
  if (s.trace) {
    s.trace->close();
    std::fprintf(stderr, "tokchron: trace: %llu written, %llu dropped, %llu failed\n",
                 static_cast<unsigned long long>(s.trace->written()),
                 static_cast<unsigned long long>(s.trace->dropped()),
                 static_cast<unsigned long long>(s.trace->failed()));
  }
}

std::string request_id(const std::map<std::string, std::string>& headers,
                       const std::string& fallback) {
  for (const auto& [name, value] : headers) {
    if (name.size() == 12) {
      std::string lower = name;
      for (char& c : lower) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
      if (lower == "x-request-id" && !value.empty()) {
        return value;
      }
    }
  }
  return fallback;
}

request_ptr on_arrival(steady::time_point received, std::string_view id, std::int64_t prompt_tokens,
                       std::int32_t n_predict) {
  state& s = st();
  request_ptr r;
  try {
    r = std::make_unique<request>(s.metrics, s.trace.get());
  } catch (...) {
    return nullptr;  // no memory: the request runs unrecorded
  }
  tokchron::live_request_info info;
  if (prompt_tokens >= 0) {
    info.prompt_tokens = static_cast<std::uint64_t>(prompt_tokens);
  }
  if (n_predict > 0) {
    info.max_tokens = static_cast<std::uint64_t>(n_predict);
  }
  r->rec.arrive(s.us(s.us.stamp(received)), info, id);
  r->rec.queued(now_us());
  return r;
}

void on_prompt_start(const server_task& task, std::int64_t t_start_us) {
  if (request* r = of(task)) {
    r->rec.scheduled(st().us(t_start_us));
  }
}

void on_prompt_cached(const server_task& task, std::uint64_t n_cached) {
  if (request* r = of(task)) {
    r->rec.set_cached_prompt_tokens(n_cached);
  }
}

void on_shared_prompt(const server_task& child, std::int64_t t_start_us) {
  if (request* r = of(child)) {
    // The child never runs a prompt of its own: its KV cache is a copy of its parent's,
    // whose prompt started at t_start_us. Its prompt tokens are all reused and counted in none
    // of the prompt counters (llama.cpp counts the prompt once, as its parent's batches run).
    r->rec.scheduled(st().us(t_start_us));
    r->rec.set_shared_prompt();
  }
}

void on_token(const server_task& task, std::int64_t t_us) {
  if (request* r = of(task)) {
    r->pending_us = t_us;
    ++r->pending;
  }
}

void on_step_end(const server_task& task) {
  if (request* r = of(task)) {
    flush(*r);
  }
}

void on_final(const server_task& task, bool length) {
  if (request* r = of(task)) {
    flush(*r);
    r->rec.finish(now_us(),
                  length ? tokchron::finish_reason::length : tokchron::finish_reason::stop);
  }
}

void on_error(const server_task& task, int error_type, std::string_view message) {
  if (request* r = of(task)) {
    flush(*r);
    // Refused for what the request asked (too long for the context, invalid): rejected;
    // anything else is the server's failure.
    const bool refused =
        error_type == ERROR_TYPE_EXCEED_CONTEXT_SIZE || error_type == ERROR_TYPE_INVALID_REQUEST;
    r->rec.finish(now_us(),
                  refused ? tokchron::finish_reason::rejected : tokchron::finish_reason::error,
                  message);
  }
}

void on_abort(const server_task& task) {
  if (request* r = of(task); r != nullptr && r->rec.active()) {
    flush(*r);
    r->rec.finish(now_us(), tokchron::finish_reason::aborted);
  }
}

}  // namespace server_tokchron
