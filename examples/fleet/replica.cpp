// SPDX-License-Identifier: MIT
// One replica of a serving fleet: serves tokchron's metrics on http://127.0.0.1:PORT/metrics
// (through prometheus-cpp's Exposer and tokchron's Collectable, or through cpp-httplib and
// tokchron's own writers, answering what the scraper's Accept header asks for: the protobuf
// exposition with native histograms next to the classic buckets, OpenMetrics, or text), waits
// until it has been scraped a few times, then serves a burst of synthetic requests (latencies
// drawn from a seeded lognormal) and records each finished request, and writes its TTFT
// histogram (log_histogram's serialisation) to --dump so a checker can merge the fleet's true
// numbers, and with --samples every request's TTFT (raw doubles, native byte order) for the exact
// quantiles.
//
// --wait-formats F,...: the burst waits until each exposition format F (openmetrics, protobuf,
// text) has been scraped --wait-scrapes times (cpp-httplib only; the formats are what the
// scrapers ask for): every Prometheus, however late it started, holds the state before it.
//
// --cluster-s X --cluster-share F: a share F of the requests get a TTFT drawn uniformly from
// (E x 1.0005, E x 1.003), E the classic bucket edge at or above X: a narrow mode just above
// an edge, where linear interpolation across a classic bucket (4.43 % wide) misplaces the
// quantile by up to the bucket's width and a native bucket (0.54 % wide) cannot.
//
//   fleet_replica --name r1 --server prometheus-cpp|httplib --port-file F --dump F
//                 [--samples F] [--requests 4000] [--median-ms 200] [--seed 1]
//                 [--wait-scrapes 20] [--wait-formats openmetrics,protobuf,text]
//                 [--cluster-s X --cluster-share F]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <prometheus/exposer.h>

#include <tokchron/export/prometheus.hpp>
#include <tokchron/export/prometheus_cpp.hpp>
#include <tokchron/export/prometheus_protobuf.hpp>
#include <tokchron/metrics/canonical.hpp>
#include <tokchron/testing.hpp>

#include "common.hpp"

namespace {
std::atomic<bool> stop{false};
void on_signal(int) { stop = true; }
}  // namespace

int main(int argc, char** argv) {
  const std::string name = fleet::arg(argc, argv, "--name", "r1");
  const std::string server = fleet::arg(argc, argv, "--server", "prometheus-cpp");
  const std::string port_file = fleet::arg(argc, argv, "--port-file", "");
  const std::string dump = fleet::arg(argc, argv, "--dump", "");
  const int requests = std::stoi(fleet::arg(argc, argv, "--requests", "4000"));
  const double median = std::stod(fleet::arg(argc, argv, "--median-ms", "200")) * 1e-3;
  const auto seed = static_cast<std::uint64_t>(std::stoull(fleet::arg(argc, argv, "--seed", "1")));
  const int wait_scrapes = std::stoi(fleet::arg(argc, argv, "--wait-scrapes", "20"));
  const std::string samples_file = fleet::arg(argc, argv, "--samples", "");
  const double cluster_at = std::stod(fleet::arg(argc, argv, "--cluster-s", "1"));
  const double cluster_share = std::stod(fleet::arg(argc, argv, "--cluster-share", "0"));
  if (!(cluster_share >= 0 && cluster_share <= 1) || !(cluster_at > 0))
    fleet::die("--cluster-share must lie in [0, 1] and --cluster-s be > 0");
  if (port_file.empty() || dump.empty()) fleet::die("--port-file and --dump are required");
  bool wait_openmetrics = false, wait_protobuf = false, wait_text = false;
  const std::string wait_formats = fleet::arg(argc, argv, "--wait-formats", "");
  for (std::size_t pos = 0; pos < wait_formats.size();) {
    const std::size_t end = std::min(wait_formats.find(',', pos), wait_formats.size());
    const std::string f = wait_formats.substr(pos, end - pos);
    if (f == "openmetrics")
      wait_openmetrics = true;
    else if (f == "protobuf")
      wait_protobuf = true;
    else if (f == "text")
      wait_text = true;
    else
      fleet::die("--wait-formats: '" + f + "' is not openmetrics, protobuf or text");
    pos = end + 1;
  }
  if (!wait_formats.empty() && server != "httplib")
    fleet::die("--wait-formats needs --server httplib (it tells the formats apart)");
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);

  auto metrics = std::make_shared<tokchron::prometheus_serving_metrics>(fleet::options(name));
  // The replica's own log_histograms, for the protobuf exposition's native histograms and the
  // checker's merge; the burst records into them while the HTTP thread reads them.
  tokchron::serving_metrics merged(fleet::options(name));
  std::mutex merged_mutex;
  std::atomic<int> scrapes{0}, openmetrics_scrapes{0}, protobuf_scrapes{0}, text_scrapes{0};
  int port = 0;
  std::unique_ptr<prometheus::Exposer> exposer;
  std::shared_ptr<tokchron::prometheus_collectable> counted;
  httplib::Server http;
  std::thread http_thread;
  if (server == "prometheus-cpp") {
    exposer = std::make_unique<prometheus::Exposer>("127.0.0.1:0");
    // The adaptor itself is all a server needs (exposer->RegisterCollectable(metrics)); this
    // wrapper also counts scrapes so the replica knows when Prometheus has seen it.
    counted = std::make_shared<tokchron::prometheus_collectable>([&] {
      ++scrapes;
      return metrics->snapshot();
    });
    exposer->RegisterCollectable(counted);
    port = exposer->GetListeningPorts().at(0);
  } else if (server == "httplib") {
    http.Get("/metrics", [&](const httplib::Request& req, httplib::Response& res) {
      const auto format = tokchron::negotiate_exposition(req.get_header_value("Accept"));
      std::string body;
      try {
        if (format == tokchron::exposition_format::protobuf) {
          // Classic buckets and native histograms from the same log_histograms, so both halves of
          // each Histogram message count the same requests.
          const std::lock_guard<std::mutex> lock(merged_mutex);
          body = tokchron::to_prometheus_protobuf(merged.snapshot(),
                                                  tokchron::prometheus_native_histograms(merged));
          ++protobuf_scrapes;
        } else {
          tokchron::prometheus_options o;
          o.openmetrics = format == tokchron::exposition_format::openmetrics;
          body = tokchron::to_prometheus(metrics->snapshot(), o);
          ++(o.openmetrics ? openmetrics_scrapes : text_scrapes);
        }
      } catch (const std::exception& e) {  // nothing throws through the request path
        res.status = 500;
        res.set_content(std::string("fleet replica: ") + e.what() + "\n", "text/plain");
        return;
      }
      res.set_content(body, std::string(tokchron::content_type(format)));
      ++scrapes;
    });
    port = http.bind_to_any_port("127.0.0.1");
    if (port <= 0) fleet::die("cannot bind 127.0.0.1");
    http_thread = std::thread([&] { http.listen_after_bind(); });
  } else {
    fleet::die("--server must be prometheus-cpp or httplib");
  }
  const std::string port_text = std::to_string(port) + "\n";
  fleet::write_atomically(port_file, port_text.data(), port_text.size());
  std::printf("fleet replica %s serving http://127.0.0.1:%d/metrics (%s)\n", name.c_str(), port,
              server.c_str());
  std::fflush(stdout);

  const auto waiting = [&] {
    if (wait_formats.empty()) return scrapes < wait_scrapes;
    return (wait_openmetrics && openmetrics_scrapes < wait_scrapes) ||
           (wait_protobuf && protobuf_scrapes < wait_scrapes) ||
           (wait_text && text_scrapes < wait_scrapes);
  };
  while (!stop && waiting()) std::this_thread::sleep_for(std::chrono::milliseconds(5));

  // The burst: each request's timeline on a manual clock (times drawn, not waited for).
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> ttft(std::log(median), 0.6);
  std::lognormal_distribution<double> gap(std::log(0.02), 0.3);
  std::exponential_distribution<double> queue(1 / 0.01);
  std::uniform_int_distribution<std::uint32_t> tokens(1, 64);
  std::bernoulli_distribution in_cluster(cluster_share);
  const auto edges = tokchron::log_histogram::with_scale(fleet::bucket_scale);
  const double edge = edges.bucket_upper(edges.index_of(cluster_at));
  std::uniform_real_distribution<double> cluster(edge * 1.0005, edge * 1.003);
  using sec = std::chrono::duration<double>;
  auto at = [](double s) {
    return std::chrono::duration_cast<tokchron::manual_clock::duration>(sec(s));
  };
  std::vector<double> samples;
  for (int i = 0; i < requests && !stop; ++i) {
    double q = queue(rng), first = q + ttft(rng);
    if (in_cluster(rng)) {
      first = cluster(rng);
      q = std::min(q, first / 2);
    }
    auto s = tokchron::testing::script();
    s.arrive(at(0)).scheduled(at(q)).chunk(at(first), 1);
    double t = first;
    const std::uint32_t n = tokens(rng);
    for (std::uint32_t k = 1; k < n; ++k) s.chunk(at(t += gap(rng)), 1);
    s.prompt_tokens(128).finish(at(t));
    if (!metrics->record(s.timeline())) fleet::die("a request was not recorded");
    samples.push_back(*tokchron::canonical_metrics(s.timeline()).ttft);
    const std::lock_guard<std::mutex> lock(merged_mutex);
    (void)merged.record(s.timeline());
  }
  if (!samples_file.empty())
    fleet::write_atomically(samples_file, samples.data(), samples.size() * sizeof(double));
  std::vector<unsigned char> bytes;
  {
    const std::lock_guard<std::mutex> lock(merged_mutex);
    bytes = merged.histogram(tokchron::serving_metric::ttft).serialize();
  }
  fleet::write_atomically(dump, bytes.data(), bytes.size());
  std::printf(
      "fleet replica %s recorded %d requests after %d scrapes (OpenMetrics scrapes: %d, "
      "protobuf scrapes: %d)\n",
      name.c_str(), requests, scrapes.load(), openmetrics_scrapes.load(), protobuf_scrapes.load());
  std::fflush(stdout);

  while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (http_thread.joinable()) {
    http.stop();
    http_thread.join();
  }
  return 0;
}
