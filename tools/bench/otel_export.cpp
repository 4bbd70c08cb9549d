// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#include "otel_export.hpp"

#include <cctype>
#include <chrono>
#include <iterator>
#include <optional>
#include <string_view>
#include <utility>

#include "sse.hpp"

namespace tokchron_bench {

namespace {

// The client metrics as gen-ai-metrics.md at 004902b8cb70aa5ae6ca4ae07132b7daabcd3e10 gives them.
// The conventions recommend for the operation duration and both chunk metrics the list of
// gen_ai.server.request.duration (0.01 ... 81.92 s), which the library keeps.
struct client_metric {
  std::string_view name, unit, description, split;
};
constexpr client_metric client_metrics[] = {
    {"gen_ai.client.operation.duration", "s", "GenAI operation duration.", "error.type"},
    {"gen_ai.client.token.usage", "{token}", "Number of input and output tokens used.",
     "gen_ai.token.type"},
    {"gen_ai.client.operation.time_to_first_chunk", "s",
     "Time to receive the first chunk, measured from when the client issues the generation "
     "request to when the first chunk is received in the response stream.",
     ""},
    {"gen_ai.client.operation.time_per_output_chunk", "s",
     "Time per output chunk, recorded for each chunk received after the first one, measured as "
     "the time elapsed from the end of the previous chunk to the end of the current chunk.",
     ""},
};
constexpr double token_bounds[] = {1,     4,     16,     64,      256,     1024,     4096,
                                   16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864};

std::vector<double> bounds_of(std::size_t m) {
  if (m == 1) return {std::begin(token_bounds), std::end(token_bounds)};
  const auto& d = tokchron::otel_genai_server_metrics[0];  // gen_ai.server.request.duration
  return {d.bounds, d.bounds + d.bound_count};
}

double genai_seconds(clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

std::string genai_error_type(const request_outcome& o) {
  if (o.failure == failure_kind::none && o.error.empty()) return {};
  // "HTTP 503: ..." (client.cpp): the status the server answered, three digits.
  const std::string& e = o.error;
  if (o.failure == failure_kind::http_status && e.size() >= 8 && e.compare(0, 5, "HTTP ") == 0 &&
      std::isdigit(static_cast<unsigned char>(e[5])) &&
      std::isdigit(static_cast<unsigned char>(e[6])) &&
      std::isdigit(static_cast<unsigned char>(e[7])) &&
      (e.size() == 8 || !std::isdigit(static_cast<unsigned char>(e[8]))))
    return e.substr(5, 3);
  return o.failure == failure_kind::none ? "_OTHER" : failure_name(o.failure);
}

void genai_client_metrics::observe(metric m, const std::string& key, double v) {
  hist& h = data_[m][key];
  const std::vector<double> b = bounds_of(m);
  if (h.counts.empty()) h.counts.assign(b.size() + 1, 0);
  std::size_t i = 0;  // the first bound >= v, or the last (+Inf) bucket
  while (i < b.size() && b[i] < v) ++i;
  ++h.counts[i];
  ++h.count;
  h.sum += v;
}

void genai_client_metrics::add(const request_outcome& o) {
  const auto& tl = o.tl;
  const std::string error = genai_error_type(o);
  // The operation as the client performed it, from its send (an instrumented SDK call's
  // start): the send lag (arrival to send) is the load generator's, not the operation's.
  const auto start = tl.send_time() ? tl.send_time() : tl.arrival();
  if (!start) return;
  if (const auto end = tl.finish_time(); end && *end >= *start)
    observe(duration, error, genai_seconds(*end - *start));
  // Every chunk of the stream but [DONE]: text, reasoning, tool-call and role chunks, usage.
  std::optional<clock::time_point> previous;
  for (const auto& c : tl.store().chunks()) {
    if (c.kind == tokchron::chunk_kind::done) continue;
    if (!previous) {
      if (c.time >= *start) observe(first_chunk, "", genai_seconds(c.time - *start));
    } else if (c.time >= *previous) {
      observe(per_chunk, "", genai_seconds(c.time - *previous));
    }
    previous = c.time;
  }
  if (!error.empty()) return;  // usage only of an operation that completed
  if (const auto p = tl.prompt_tokens()) observe(tokens, "input", static_cast<double>(*p));
  observe(tokens, "output",
          static_cast<double>(tl.reported_output_tokens().value_or(tl.output_tokens())));
}

std::vector<tokchron::otlp_explicit_histogram> genai_client_metrics::histograms() const {
  std::vector<tokchron::otlp_explicit_histogram> out;
  const bool latest = target_.version == tokchron::otel_genai_semconv::latest;
  for (std::size_t m = 0; m < metric_count; ++m) {
    const client_metric& c = client_metrics[m];
    const std::vector<double> b = bounds_of(m);
    for (const auto& [key, h] : data_[m]) {
      tokchron::otlp_explicit_histogram x;
      x.name = std::string(c.name);
      x.description = std::string(c.description);
      x.unit = std::string(c.unit);
      x.bounds = b;
      x.counts = h.counts;
      x.count = h.count;
      x.sum = h.sum;
      x.attributes = {{"gen_ai.operation.name", target_.operation},
                      {latest ? "gen_ai.provider.name" : "gen_ai.system", target_.provider},
                      {"gen_ai.request.model", target_.model},
                      {"server.address", target_.address}};
      if (!key.empty()) x.attributes.push_back({std::string(c.split), key});
      x.int_attributes = {{"server.port", target_.port}};
      out.push_back(std::move(x));
    }
  }
  return out;
}

std::string genai_client_metrics::otlp_json(std::uint64_t start_ns, std::uint64_t time_ns,
                                            const std::string& run) const {
  tokchron::label_set resource = {{"service.name", "tokchron-bench"}};
  if (!run.empty()) resource.push_back({"tokchron.bench.run", run});
  return tokchron::otlp_metrics({}, histograms(), resource, start_ns, time_ns).dump() + "\n";
}

}  // namespace tokchron_bench
