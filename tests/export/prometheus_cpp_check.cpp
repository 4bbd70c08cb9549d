// SPDX-License-Identifier: MIT
// The prometheus-cpp adaptor against Debian's prometheus-cpp-dev: the families it hands to
// prometheus-cpp serialize to the same samples as tokchron's own writer, and a real Exposer on
// 127.0.0.1 serves them to an HTTP client; prometheus_live_metrics serves writer threads' streams.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <prometheus/exposer.h>
#include <prometheus/text_serializer.h>

#include "tokchron/export/prometheus.hpp"
#include "tokchron/export/prometheus_cpp.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/testing.hpp"

using namespace std::chrono_literals;

namespace {
tokchron::testing::scripted_timeline request(int i) {
  return tokchron::testing::script()
      .arrive(0ms)
      .scheduled(std::chrono::milliseconds(1 + i % 4))
      .first_token(std::chrono::milliseconds(30 + i % 50))
      .tokens(static_cast<std::uint32_t>(2 + i % 6), std::chrono::milliseconds(5 + i % 3))
      .prompt_tokens(100)
      .finish()
      .timeline();
}

// GET http://127.0.0.1:port/path with a plain socket (HTTP/1.0: the server closes).
std::string http_get(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  REQUIRE(::send(fd, req.data(), req.size(), 0) == static_cast<ssize_t>(req.size()));
  std::string resp;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    resp.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return resp;
}

// The sample lines of an exposition, sorted (prometheus-cpp writes a histogram's _count and
// _sum before its buckets; order inside a family means nothing to Prometheus), without
// comments and without prometheus-cpp's own exposer_* metrics.
std::vector<std::string> samples_only(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    if (!line.empty() && line[0] != '#' && line.rfind("exposer_", 0) != 0) out.push_back(line);
    pos = end + 1;
  }
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

TEST_CASE("prometheus-cpp serializes tokchron's families exactly as tokchron does") {
  for (auto opts :
       {tokchron::serving_metrics_options{}, tokchron::serving_metrics_options::vllm()}) {
    opts.labels = {{"model_name", "m\"1"}};
    tokchron::serving_metrics m(opts);
    for (int i = 0; i < 300; ++i) CHECK(m.record(request(i)));
    const auto snap = m.snapshot();
    const std::string ours = tokchron::to_prometheus(snap);
    const std::string theirs =
        prometheus::TextSerializer().Serialize(tokchron::to_prometheus_cpp(snap));
    const auto a = samples_only(ours), b = samples_only(theirs);
    CHECK(a.size() > 150);
    CHECK(a == b);
  }
}

TEST_CASE("prometheus_serving_metrics behind a real Exposer on 127.0.0.1") {
  prometheus::Exposer exposer("127.0.0.1:0");
  const auto ports = exposer.GetListeningPorts();
  REQUIRE(ports.size() == 1);
  auto tc = std::make_shared<tokchron::prometheus_serving_metrics>();
  exposer.RegisterCollectable(tc);
  std::thread writer([&] {
    for (int i = 0; i < 500; ++i) CHECK(tc->record(request(i)));
  });
  writer.join();
  const std::string resp = http_get(ports[0], "/metrics");
  CHECK(resp.find("200 OK") != std::string::npos);
  CHECK(resp.find("tokchron_requests_total{outcome=\"stop\"} 500\n") != std::string::npos);
  CHECK(resp.find("tokchron_ttft_seconds_count 500\n") != std::string::npos);
  CHECK(resp.find("tokchron_itl_seconds_bucket{le=\"+Inf\"} ") != std::string::npos);
  const std::string body = resp.substr(resp.find("\r\n\r\n") + 4);
  // The body is what tokchron's own writer gives for the same metrics.
  CHECK(samples_only(body) == samples_only(tokchron::to_prometheus(tc->snapshot())));
  CHECK(tc->dropped() == 0);
}

TEST_CASE("prometheus_live_metrics: writer threads stream while a real Exposer scrapes") {
  prometheus::Exposer exposer("127.0.0.1:0");
  const auto ports = exposer.GetListeningPorts();
  REQUIRE(ports.size() == 1);
  auto m = std::make_shared<tokchron::prometheus_live_metrics>(
      tokchron::vllm_live_options("m\"1", 2048));
  exposer.RegisterCollectable(m);
  const tokchron::live_series engine1 = m->series({"m\"1", "1"});
  std::vector<std::thread> writers;
  std::atomic<int> failed{0};
  for (int w = 0; w < 4; ++w)
    writers.emplace_back([&, w] {
      tokchron::live_request r;
      const auto t0 = std::chrono::steady_clock::now();
      auto at = [&](int ms) { return t0 + std::chrono::milliseconds(ms); };
      for (int i = 0; i < 200; ++i) {
        int ok = 0;
        ok += m->arrive(r, at(0), {w % 2 ? engine1 : tokchron::live_series{}, 100, 0}) ==
              tokchron::record_status::ok;
        ok += m->scheduled(r, at(1)) == tokchron::record_status::ok;
        for (int c = 0; c < 4; ++c)
          ok += m->chunk(r, at(10 + c * 5), 2) == tokchron::record_status::ok;
        ok += m->finish(r, at(25)) == tokchron::record_status::ok;
        if (ok != 7) ++failed;
      }
    });
  // Scrape over HTTP while they write: every response parses and is served.
  for (int i = 0; i < 5; ++i)
    CHECK(http_get(ports[0], "/metrics").find("200 OK") != std::string::npos);
  for (auto& t : writers) t.join();
  CHECK(failed == 0);
  const std::string resp = http_get(ports[0], "/metrics");
  const std::string body = resp.substr(resp.find("\r\n\r\n") + 4);
  CHECK(body.find("vllm:generation_tokens_total{model_name=\"m\\\"1\",engine=\"0\"} 3200\n") !=
        std::string::npos);
  CHECK(body.find("vllm:inter_token_latency_seconds_count{model_name=\"m\\\"1\",engine=\"1\"} "
                  "1200\n") != std::string::npos);
  CHECK(samples_only(body) == samples_only(tokchron::to_prometheus(tokchron::scrape(*m))));
}
