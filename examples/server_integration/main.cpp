// SPDX-License-Identifier: MIT
// tokchron-requires: prometheus-cpp, nlohmann-json
// server-integration: a fake multi-threaded inference engine (engine.hpp) that records every
// request with tokchron, serves the live metrics on http://127.0.0.1:PORT/metrics through
// prometheus-cpp's Exposer, and writes its JSONL trace. .ci/stages/45-server.sh runs it with a
// real Prometheus and checks every query of vLLM's example dashboard against tokchron-report.
//
//   server-integration [--port 0] [--threads 4] [--max-batch 16] [--requests 2000]
//                      [--linger 0] [--seed 1] [--rate 800] [--step-ms 1] [--names vllm|tokchron]
//                      [--inclusion completed|scheduled|all] [--model NAME] [--trace-out FILE]
//                      [--port-file FILE]
//                      [--wait-scrapes K] [--dump-metrics FILE]
//
// --port 0 picks a free port and prints it (and writes it to --port-file). --wait-scrapes K
// waits for K scrapes of /metrics before the run starts, and for K more after it ends (so a
// scraper has seen the final values) before it prints "run done" and lingers --linger seconds.
// --step-ms is one engine step's duration with an empty batch (a full batch takes 1.25 times
// as long); --rate the mean arrival rate (Poisson arrivals). --dump-metrics FILE writes the final
// metrics in the Prometheus text format (no HTTP). --inclusion sets live_options::inclusion
// (default: the presets', scheduled); `tokchron-report --inclusion X` on the trace counts what
// /metrics counts under X. The trace records the server's start (`benchmark_start`, time 0).
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>

#include <tokchron/export/prometheus.hpp>
#include <tokchron/export/prometheus_cpp.hpp>
#include <tokchron/live/presets.hpp>
#include <tokchron/live/scrape.hpp>

#include "engine.hpp"

namespace {
namespace si = server_integration;
namespace tc = tokchron;

std::atomic<bool> stop_requested{false};
void on_signal(int) { stop_requested = true; }

[[noreturn]] void usage(const std::string& msg) {
  std::fprintf(stderr,
               "server-integration: %s\n"
               "usage: server-integration [--port P] [--threads T] [--max-batch B]\n"
               "         [--requests N] [--linger S] [--seed N] [--rate R] [--step-ms MS]\n"
               "         [--names vllm|tokchron] [--inclusion completed|scheduled|all]\n"
               "         [--model NAME] [--trace-out FILE]\n"
               "         [--port-file FILE] [--wait-scrapes K] [--dump-metrics FILE]\n",
               msg.c_str());
  std::exit(2);
}

struct options {
  int port = 0;
  unsigned threads = 4;
  unsigned max_batch = 16;
  std::uint64_t requests = 2000;
  double linger = 0;
  std::uint64_t seed = 1;
  double rate = 800;
  double step_ms = 1;
  std::string names = "vllm";
  std::optional<tc::live_inclusion> inclusion;  // empty: the presets' default
  std::string model = "tokchron-fake-model";
  std::string trace_out, port_file, dump_metrics;
  int wait_scrapes = 0;
};

// A whole-string number in [lo, hi], or a usage error naming the option.
template <class T>
T number(const std::string& opt, const std::string& text, double lo, double hi) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(v >= lo && v <= hi) ||
      (std::is_integral_v<T> && v != static_cast<double>(static_cast<long long>(v)))) {
    char range[64];
    std::snprintf(range, sizeof range, "[%.15g, %.15g]", lo, hi);
    usage(opt + ": '" + text + "' must be " + (std::is_integral_v<T> ? "an integer" : "a number") +
          " in " + range);
  }
  return static_cast<T>(v);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage(a + ": missing value (or unknown option)");
    const std::string v = argv[++i];
    if (a == "--port")
      o.port = number<int>(a, v, 0, 65535);
    else if (a == "--threads")
      o.threads = number<unsigned>(a, v, 1, 256);
    else if (a == "--max-batch")
      o.max_batch = number<unsigned>(a, v, 1, 4096);
    else if (a == "--requests")
      o.requests = number<std::uint64_t>(a, v, 0, 1e7);
    else if (a == "--linger")
      o.linger = number<double>(a, v, 0, 86400);
    else if (a == "--seed")
      o.seed = number<std::uint64_t>(a, v, 0, 9e15);
    else if (a == "--rate")
      o.rate = number<double>(a, v, 1e-3, 1e6);
    else if (a == "--step-ms")
      o.step_ms = number<double>(a, v, 0, 1000);
    else if (a == "--wait-scrapes")
      o.wait_scrapes = number<int>(a, v, 0, 1000);
    else if (a == "--names") {
      if (v != "vllm" && v != "tokchron") usage("--names: must be vllm or tokchron");
      o.names = v;
    } else if (a == "--inclusion") {
      o.inclusion = tc::parse_inclusion(v);
      if (!o.inclusion) usage("--inclusion: must be completed, scheduled or all");
    } else if (a == "--model")
      o.model = v;
    else if (a == "--trace-out")
      o.trace_out = v;
    else if (a == "--port-file")
      o.port_file = v;
    else if (a == "--dump-metrics")
      o.dump_metrics = v;
    else
      usage("unknown option " + a);
  }
  return o;
}

// Counts scrapes of the metrics it forwards, so the run can wait for a scraper.
class counting_collectable : public prometheus::Collectable {
 public:
  explicit counting_collectable(std::shared_ptr<prometheus::Collectable> inner)
      : inner_(std::move(inner)) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    auto families = inner_->Collect();
    scrapes_.fetch_add(1);
    return families;
  }
  int scrapes() const { return scrapes_.load(); }

 private:
  std::shared_ptr<prometheus::Collectable> inner_;
  mutable std::atomic<int> scrapes_{0};
};

void wait_for_scrapes(const counting_collectable& c, int n) {
  const int target = c.scrapes() + n;
  while (!stop_requested && c.scrapes() < target)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

int serve(const options& o) {
  // [doc:setup]
  // One metrics object for the server's life, which is also the Exposer's Collectable: vLLM's
  // names and semantics (labels model_name and engine), or tokchron's (label model_name).
  tc::live_options options = o.names == "vllm"
                                 ? tc::vllm_live_options(o.model, si::max_model_len)
                                 : tc::tokchron_live_options({"model_name"}, {o.model});
  // Which requests the histograms and token counters count (default: scheduled); a report of
  // the trace counts the same with `tokchron-report --inclusion <the same policy>`.
  if (o.inclusion) options.inclusion = *o.inclusion;
  auto metrics = std::make_shared<tc::prometheus_live_metrics>(std::move(options));
  const tc::live_series series{};  // the default series: the labels given in the options
  prometheus::Exposer exposer("127.0.0.1:" + std::to_string(o.port));
  // [/doc:setup]
  // A server registers `metrics` itself (exposer.RegisterCollectable(metrics)); the example
  // counts the scrapes too, so that CI knows when Prometheus has seen the final values.
  auto counted = std::make_shared<counting_collectable>(metrics);
  exposer.RegisterCollectable(counted);
  const int port = exposer.GetListeningPorts().at(0);
  std::printf(
      "server-integration serving http://127.0.0.1:%d/metrics (--names %s, model %s, "
      "inclusion %s)\n",
      port, o.names.c_str(), o.model.c_str(),
      std::string(tc::to_string(metrics->options().inclusion)).c_str());
  std::fflush(stdout);
  if (!o.port_file.empty()) {
    const std::string tmp = o.port_file + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    if (f == nullptr || std::fprintf(f, "%d\n", port) < 0 || std::fclose(f) != 0 ||
        std::rename(tmp.c_str(), o.port_file.c_str()) != 0)
      usage("--port-file: cannot write " + o.port_file);
  }
  wait_for_scrapes(*counted, o.wait_scrapes);

  const auto zero = std::chrono::steady_clock::now();  // the trace's time 0
  std::unique_ptr<si::trace_sink> trace;
  if (!o.trace_out.empty()) {
    trace = std::make_unique<si::trace_sink>(o.trace_out, zero);
    if (!*trace) usage("--trace-out: cannot write " + o.trace_out);
  }
  si::engine_options eo;
  eo.threads = o.threads;
  eo.max_batch = o.max_batch;
  eo.rate = o.rate;
  eo.step = std::chrono::microseconds(static_cast<long long>(o.step_ms * 1000));
  si::engine e(eo, *metrics, series, trace.get());
  const std::vector<si::request_plan> plans = si::make_plans(o.requests, o.seed);
  const si::run_counts counts = e.run(plans, o.seed);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - zero).count();
  if (trace && !trace->close()) {
    std::fprintf(stderr, "server-integration: writing %s failed\n", o.trace_out.c_str());
    return 1;
  }
  std::printf("served %llu requests in %.3f s with %u threads:",
              static_cast<unsigned long long>(plans.size()), took, o.threads);
  for (int f = 0; f < 7; ++f)
    std::printf(" %s %llu", si::to_string(static_cast<si::fate>(f)),
                static_cast<unsigned long long>(counts.by_fate[f]));
  std::printf(
      "; preemptions %llu; max_tokens of scheduled requests: sum %llu, count %llu; "
      "misuse %llu\n",
      static_cast<unsigned long long>(counts.preemptions),
      static_cast<unsigned long long>(counts.max_tokens_sum),
      static_cast<unsigned long long>(counts.max_tokens_count),
      static_cast<unsigned long long>(metrics->misuse()));
  std::fflush(stdout);
  if (!o.dump_metrics.empty()) {
    // [doc:text]
    std::ofstream out(o.dump_metrics);  // or the body of any HTTP server's GET /metrics
    out << tc::to_prometheus(tc::scrape(*metrics));
    // [/doc:text]
    if (!out.flush()) usage("--dump-metrics: cannot write " + o.dump_metrics);
  }
  wait_for_scrapes(*counted, o.wait_scrapes);
  std::printf("run done (%d scrapes); serving /metrics for %g s\n", counted->scrapes(), o.linger);
  std::fflush(stdout);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.linger);
  while (!stop_requested && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return metrics->misuse() == 0 ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  try {
    return serve(o);
  } catch (const std::exception& e) {  // e.g. the port is taken (prometheus-cpp throws)
    std::fprintf(stderr, "server-integration: %s\n", e.what());
    return 1;
  }
}
