// SPDX-License-Identifier: MIT
// The fleet check: merges the replicas' tokchron TTFT histograms (their --dump files), asks a
// real Prometheus server for
//   histogram_quantile(Q, sum by (le) (rate(tokchron_ttft_seconds_bucket[1m])))
// over its HTTP API, and checks it two ways:
//  1. reproduction: the answer equals PromQL's algorithm applied to the replicas' own classic
//     buckets, each weighted by the extrapolation factor rate() applied to that replica
//     (rate(_count[1m]) * 60 / count; replicas are scraped at different instants);
//  2. accuracy: the answer is within one bucket (base - 1 = 4.43 % at scale 4) of tokchron's
//     merged quantile, the rank widened by the replicas' weight spread d to
//     [1 - (1-Q)(1+d), 1 - (1-Q)/(1+d)] and the value by log_histogram's own error.
// Exit status 0 when both hold, 1 when not, 2 on a usage or setup error.
//
//   fleet_check --prometheus 127.0.0.1:9090 --replicas r1=dump1,r2=dump2,r3=dump3
//               [--q 0.95] [--timeout 90]
//   fleet_check --free-port      (prints a free TCP port on 127.0.0.1)
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <tokchron/export/snapshot.hpp>
#include <tokchron/quantile/log_histogram.hpp>

#include "common.hpp"

namespace {
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    fleet::die("cannot find a free port");
  const int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

struct prom {
  httplib::Client client;
  double time = 0;  // evaluation time (Unix seconds); 0: now
  explicit prom(const std::string& hostport) : client("http://" + hostport) {
    client.set_connection_timeout(2);
    client.set_read_timeout(10);
  }
  // The instant vector of `query`: (labels, value) per series; empty on any failure.
  std::vector<std::pair<nlohmann::json, double>> query(const std::string& q) {
    httplib::Params p{{"query", q}};
    if (time > 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3f", time);
      p.emplace("time", buf);
    }
    std::vector<std::pair<nlohmann::json, double>> out;
    auto res = client.Post("/api/v1/query", p);
    if (!res || res->status != 200) return out;
    const auto j = nlohmann::json::parse(res->body, nullptr, false);
    if (j.is_discarded() || j.value("status", "") != "success") return out;
    for (const auto& r : j["data"]["result"])
      out.emplace_back(r["metric"], std::stod(r["value"][1].get<std::string>()));
    return out;
  }
};
}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--free-port") {
    std::printf("%d\n", free_port());
    return 0;
  }
  const std::string address = fleet::arg(argc, argv, "--prometheus", "");
  const std::string spec = fleet::arg(argc, argv, "--replicas", "");
  const double q = std::stod(fleet::arg(argc, argv, "--q", "0.95"));
  const int timeout = std::stoi(fleet::arg(argc, argv, "--timeout", "90"));
  if (address.empty() || spec.empty()) fleet::die("--prometheus and --replicas are required");
  std::map<std::string, std::string> dumps;  // replica -> dump file
  for (std::size_t pos = 0; pos < spec.size();) {
    std::size_t end = spec.find(',', pos);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(pos, end - pos);
    const auto eq = item.find('=');
    if (eq == std::string::npos) fleet::die("--replicas wants NAME=FILE,...");
    dumps[item.substr(0, eq)] = item.substr(eq + 1);
    pos = end + 1;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
  auto wait = [&](const char* what) {
    if (std::chrono::steady_clock::now() > deadline) fleet::die(std::string("timed out: ") + what);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  };

  // The replicas' own histograms (written once their burst is recorded), and their merge.
  std::map<std::string, tokchron::log_histogram> hist;
  for (const auto& [name, file] : dumps) {
    for (;;) {
      const std::string bytes = fleet::read_all(file);
      if (!bytes.empty()) {
        auto d = tokchron::log_histogram::deserialize(bytes.data(), bytes.size());
        if (!d) fleet::die("bad dump " + file + ": " + d.message());
        hist.emplace(name, std::move(*d.histogram));
        break;
      }
      wait("replica dumps");
    }
  }
  auto merged = hist.begin()->second;
  for (auto it = std::next(hist.begin()); it != hist.end(); ++it) merged.merge(it->second);
  const double total = static_cast<double>(merged.count());

  // Wait until Prometheus has scraped every replica after its burst.
  prom p(address);
  for (;;) {
    const auto r = p.query("sum(tokchron_ttft_seconds_count)");
    if (!r.empty() && r[0].second == total) break;
    wait("Prometheus to scrape every replica's burst");
  }
  for (;;) {  // every target up: its last scrape parsed (OpenMetrics included)
    const auto up = p.query("up");
    if (up.size() == hist.size() &&
        std::all_of(up.begin(), up.end(), [](const auto& u) { return u.second == 1; }))
      break;
    wait("every replica up");
  }
  // Both queries below are evaluated at one instant that every scrape up to it has already been
  // written for: a scrape stamped just before "now" may still be in flight, and landing between
  // the two queries it would change rate()'s extrapolation for one and not the other. 2 s is
  // eight scrape intervals (each bounded by its 250 ms timeout), and the instant still follows
  // the query that saw every burst.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  p.time =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() -
      2.0;

  char qtext[32];
  std::snprintf(qtext, sizeof qtext, "%g", q);
  const std::string promql = std::string("histogram_quantile(") + qtext +
                             ", sum by (le) (rate(tokchron_ttft_seconds_bucket[1m])))";
  const auto answer = p.query(promql);
  const auto rates = p.query("rate(tokchron_ttft_seconds_count[1m])");
  if (answer.size() != 1 || rates.size() != hist.size()) fleet::die("unexpected query results");
  const double got = answer[0].second;

  // 1. Reproduce PromQL's answer from the replicas' classic buckets and rate()'s weights.
  const auto bounds =
      tokchron::exponential_buckets(fleet::bucket_scale, fleet::bucket_lo, fleet::bucket_hi);
  std::vector<double> cumulative(bounds.size(), 0.0);
  double weighted_total = 0, wmin = 1e300, wmax = 0;
  for (const auto& [labels, rate] : rates) {
    const std::string name = labels.value("replica", "");
    const auto it = hist.find(name);
    if (it == hist.end()) fleet::die("a series without a known replica label: " + name);
    const double n = static_cast<double>(it->second.count());
    const double w = rate * 60 / n;  // rate()'s extrapolation factor for this replica
    wmin = std::min(wmin, w);
    wmax = std::max(wmax, w);
    const auto h = tokchron::classic_histogram(it->second, bounds);
    for (std::size_t i = 0; i < bounds.size(); ++i)
      cumulative[i] += static_cast<double>(h.buckets[i].cumulative_count) * w / 60;
    weighted_total += n * w / 60;
  }
  const double expected =
      *tokchron::promql_histogram_quantile(q, bounds, cumulative, weighted_total);
  const bool reproduced = std::fabs(got - expected) <= 1e-9 * expected;

  // 2. Accuracy against tokchron's merged histogram.
  const double d = wmax / wmin - 1;
  const double base = std::exp2(std::ldexp(1.0, -fleet::bucket_scale));
  const double alpha = merged.relative_error();
  const double q_lo = 1 - (1 - q) * (1 + d), q_hi = 1 - (1 - q) / (1 + d);
  const auto nr = tokchron::quantile_method::nearest_rank;
  const double lo = *merged.quantile(q_lo, nr) * (1 - alpha) / base;
  const double hi = *merged.quantile(q_hi, nr) * (1 + alpha) * base;
  const double truth = *merged.quantile(q);
  const bool within = got >= lo && got <= hi;

  std::printf("fleet: %zu replicas, %.0f requests; %s\n", hist.size(), total, promql.c_str());
  std::printf("fleet: PromQL %.6f s; reproduced from the replicas' buckets %.6f s (%s)\n", got,
              expected, reproduced ? "equal" : "DIFFERENT");
  std::printf("fleet: tokchron merged P%g %.6f s; PromQL error %+.2f %% (bucket bound %.2f %%)\n",
              q * 100, truth, (got / truth - 1) * 100, (base - 1) * 100);
  std::printf("fleet: rate() weight spread d = %.4f; allowed [%.6f, %.6f] s: %s\n", d, lo, hi,
              within ? "within" : "OUTSIDE");
  return reproduced && within ? 0 : 1;
}
