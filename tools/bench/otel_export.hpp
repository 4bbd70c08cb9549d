// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_TOOLS_BENCH_OTEL_EXPORT_HPP
#define TOKCHRON_TOOLS_BENCH_OTEL_EXPORT_HPP

/// \file
/// tokchron-bench's own OpenTelemetry export (`--otlp FILE`): OpenTelemetry's GenAI client
/// metrics of a run (`open-telemetry/semantic-conventions-genai/docs/gen-ai/gen-ai-metrics.md` at
/// 004902b8cb70aa5ae6ca4ae07132b7daabcd3e10) as explicit-bucket histograms on the conventions'
/// recommended boundaries, written as an OTLP/JSON ExportMetricsServiceRequest by the library's
/// exporter (export/otlp.hpp). docs/tools/tokchron-bench.md says what each metric holds.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "client.hpp"
#include "tokchron/export/otlp.hpp"
#include "tokchron/live/presets.hpp"

namespace tokchron_bench {

/// The `error.type` of a failed request: the HTTP status (`"503"`) for a refused answer, else
/// the failure's kind as the report names it (`timeout`, `connect`, `server_error`, ...:
/// `failure_name`); empty for a request that did not fail.
[[nodiscard]] std::string genai_error_type(const request_outcome& o);

/// Where the requests went and what they asked: the attributes of every point.
struct genai_client_target {
  std::string operation;  ///< gen_ai.operation.name: `chat` or `text_completion`
  std::string provider;   ///< gen_ai.provider.name (gen_ai.system under v1_36)
  std::string model;      ///< gen_ai.request.model
  std::string address;    ///< server.address
  std::int64_t port = 0;  ///< server.port
  tokchron::otel_genai_semconv version = tokchron::otel_genai_semconv::latest;
};

/// The four client metrics of one run, accumulated request by request (memory: one set of
/// buckets per metric and attribute set; the error types are a bounded set).
class genai_client_metrics {
 public:
  explicit genai_client_metrics(genai_client_target t) : target_(std::move(t)) {}

  /// Adds a measured request: its duration (send to end; arrival to end without a send) under
  /// its `error.type` when it failed; its time from the send to the first chunk and the gaps
  /// between its chunks (every chunk of the stream but
  /// `[DONE]`); its input and output tokens (the server's usage counts, else the chunks'
  /// tokens) when it succeeded.
  void add(const request_outcome& o);

  /// The histograms, one per metric and attribute set, a metric's sets together.
  [[nodiscard]] std::vector<tokchron::otlp_explicit_histogram> histograms() const;

  /// The OTLP/JSON request (resource `service.name` = `tokchron-bench`, and `tokchron.bench.run`
  /// = `run` when not empty: which point and repetition of a sweep or `--repeat` it is, so that
  /// the runs' series stay apart in one collector), the interval from `start_ns` to `time_ns`
  /// (Unix epoch nanoseconds).
  [[nodiscard]] std::string otlp_json(std::uint64_t start_ns, std::uint64_t time_ns,
                                      const std::string& run = {}) const;

 private:
  struct hist {
    std::vector<std::uint64_t> counts;
    std::uint64_t count = 0;
    double sum = 0;
  };
  enum metric : std::size_t { duration, tokens, first_chunk, per_chunk, metric_count };
  void observe(metric m, const std::string& key, double v);

  genai_client_target target_;
  /// Per metric, by the attribute that splits it (error.type, gen_ai.token.type; "" none).
  std::array<std::map<std::string, hist>, metric_count> data_;
};

}  // namespace tokchron_bench

#endif  // TOKCHRON_TOOLS_BENCH_OTEL_EXPORT_HPP
