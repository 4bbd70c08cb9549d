// SPDX-License-Identifier: MIT
// tokchron-requires: boost (Beast, Asio; header-only), nlohmann-json
#ifndef TOKCHRON_TOOLS_EXECUTOR_SERVE_SERVER_HPP
#define TOKCHRON_TOOLS_EXECUTOR_SERVE_SERVER_HPP

/// \file
/// `batching-executor serve`: the OpenAI HTTP API (Boost.Beast on Boost.Asio) in front of the
/// real-time engine (live_engine.hpp), `/metrics` from tokchron's live metrics.
/// docs/tools/serve.md.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"

namespace batching::serve {

/// `serve`'s options; the engine's (backend, scheduler) are the run options of cli.hpp.
struct serve_options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8000;  ///< 0: any free port (printed)
  std::string model = "tokchron-sim";
  std::string names = "vllm";  ///< /metrics names and semantics: one of `metric_names`
  std::optional<std::string> trace_out;
  std::uint64_t max_requests = 0;        ///< 0: serve until SIGINT/SIGTERM
  std::uint64_t max_body = 1024 * 1024;  ///< bytes of a request body
  /// A response write that makes no progress for this long drops the client (a stream's request
  /// is aborted in the engine and counted as an abort), seconds.
  std::uint64_t write_timeout_s = 30;
  /// Response bytes a connection may have queued and unwritten; past it the client, which is
  /// not reading, is dropped the same way.
  std::uint64_t max_buffered = 4 * 1024 * 1024;
  /// Connections open at once; one more is answered 503 with Retry-After and closed.
  std::uint64_t max_connections = 1024;
  /// The time limits of reading a request, seconds (past one: 408 and the connection closed;
  /// an idle keep-alive connection is closed without an answer): the first byte of a request
  /// within `idle_timeout_s` of the connection's start or of the previous response; its header
  /// whole within `header_timeout_s` of its first byte; its body whole within `body_timeout_s`
  /// of the header's end; header and body within `request_timeout_s` of the first byte.
  std::uint64_t idle_timeout_s = 60;
  std::uint64_t header_timeout_s = 10;
  std::uint64_t body_timeout_s = 30;
  std::uint64_t request_timeout_s = 30;
  /// After the first SIGINT/SIGTERM, how long the connections may take their last bytes before
  /// serve stops, milliseconds; a second signal in that time stops it at once.
  std::uint64_t shutdown_grace_ms = 200;
  /// The largest request header (request line and fields), bytes; larger: 431.
  std::uint64_t max_header = 8192;
  unsigned threads = 2;                ///< HTTP threads
  std::uint32_t max_model_len = 4096;  ///< prompt + output tokens (capped by the KV pool)
  std::uint32_t eos_range = 256;       ///< natural answer lengths 1..eos_range
  /// `usage.prompt_tokens_details.cached_tokens` on answers with a prefix-cache hit (vLLM's
  /// --enable-prompt-tokens-details).
  bool prompt_tokens_details = false;
  run_config engine;  ///< backend and scheduler
  bool help = false;
};

/// Parses `serve`'s arguments (after the word `serve`). Throws `usage_error`.
[[nodiscard]] serve_options parse_serve_options(const std::vector<std::string>& args);
/// `serve --help`.
[[nodiscard]] std::string serve_usage();

/// A running server: listening once constructed, serving while `run` runs.
class server {
 public:
  /// Binds and listens; throws `std::runtime_error` when it cannot, `std::invalid_argument`
  /// for a bad engine configuration.
  explicit server(const serve_options& o);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// The bound port (the chosen one for port 0).
  [[nodiscard]] std::uint16_t port() const noexcept;
  /// The engine's KV pool: its blocks, and whether its prefix cache is on.
  [[nodiscard]] std::uint32_t kv_blocks() const noexcept;
  [[nodiscard]] bool prefix_caching() const noexcept;
  /// Serves on `threads` threads until `shutdown`, SIGINT or SIGTERM (when `signals`), or
  /// `max_requests` answered; then aborts what is in flight and writes `--trace-out`.
  /// Returns the number of requests the engine finished.
  std::uint64_t run(bool signals = true);
  /// Asks `run` to return (thread-safe).
  void shutdown();

  struct impl;  ///< the listener, engine and metrics (server.cpp); its sessions reach it

 private:
  std::unique_ptr<impl> p_;
};

/// `batching-executor serve ARGS`: exit code.
int serve_main(const std::vector<std::string>& args);

}  // namespace batching::serve

#endif  // TOKCHRON_TOOLS_EXECUTOR_SERVE_SERVER_HPP
