// SPDX-License-Identifier: MIT
// The fleet check: merges the replicas' tokchron TTFT histograms (their --dump files) and asks
// real Prometheus servers over their HTTP API.
//
// Classic buckets (--prometheus, a Prometheus that scrapes the text formats):
//   histogram_quantile(Q, sum by (le) (rate(tokchron_ttft_seconds_bucket[1m])))
// checked two ways:
//  1. reproduction: the answer equals PromQL's algorithm applied to the replicas' own classic
//     buckets, each weighted by the extrapolation factor rate() applied to that replica
//     (rate(_count[1m]) * 60 / count; replicas are scraped at different instants);
//  2. accuracy: the answer is within one bucket (base - 1 = 4.43 % at scale 4) of tokchron's
//     merged quantile, the rank widened by the replicas' weight spread d to
//     [1 - (1-Q)(1+d), 1 - (1-Q)/(1+d)] and the value by log_histogram's own error.
//
// Native histograms (--native-prometheus, a Prometheus started with
// --enable-feature=native-histograms, which scrapes the protobuf exposition):
//   histogram_quantile(Q, sum(rate(tokchron_ttft_seconds[1m])))
//  1. reproduction: equal to PromQL's native algorithm on the replicas' own native buckets,
//     each weighted by rate()'s factor (histogram_count(rate(...[1m])) * 60 / count);
//  2. accuracy: within the native bucket bound base - 1 (0.54 % at schema 7) of the EXACT
//     quantile of every replica's requests (their --samples files), ranks widened by d as above.
// With both and --separate, the classic answer's error against the exact quantile must also
// exceed the native bound (the data is chosen so that it does). Prints the errors and bounds.
// Exit status 0 when everything holds, 1 when not, 2 on a usage or setup error.
//
//   fleet_check [--prometheus 127.0.0.1:9090] [--native-prometheus 127.0.0.1:9091]
//               --replicas r1=dump1,r2=dump2,r3=dump3 [--samples r1=f1,r2=f2,r3=f3]
//               [--q 0.95] [--timeout 90] [--separate]

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <tokchron/export/conversions.hpp>
#include <tokchron/export/prometheus_protobuf.hpp>
#include <tokchron/export/promql.hpp>
#include <tokchron/exposition/buckets.hpp>
#include <tokchron/quantile/exact.hpp>
#include <tokchron/quantile/log_histogram.hpp>

#include "common.hpp"

namespace {
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
// "NAME=FILE,..." as a map.
std::map<std::string, std::string> name_files(const std::string& spec) {
  std::map<std::string, std::string> out;
  for (std::size_t pos = 0; pos < spec.size();) {
    std::size_t end = spec.find(',', pos);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(pos, end - pos);
    const auto eq = item.find('=');
    if (eq == std::string::npos) fleet::die("--replicas and --samples want NAME=FILE,...");
    out[item.substr(0, eq)] = item.substr(eq + 1);
    pos = end + 1;
  }
  return out;
}

using clock_type = std::chrono::steady_clock;

void wait_until(clock_type::time_point deadline, const char* what) {
  if (clock_type::now() > deadline) fleet::die(std::string("timed out: ") + what);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
}

// Fixes p's evaluation instant T at a moment as of which Prometheus has stored every scrape and
// holds every replica's whole burst, waiting for one. Both queries a check makes are evaluated
// at T, so a scrape still in flight cannot land between them and change rate()'s extrapolation
// for one and not the other. T is the oldest of the targets' last stored scrapes
// (min(timestamp(up))): a target's scrapes are stored in order, so none stamped before T is
// still in flight. At T `count_query` must say `total` and every target be up (its last scrape
// parsed: OpenMetrics and protobuf included). Then prints the scrapes' measured spread beside
// the scrape timeout they must stay within.
void settle(prom& p, const std::string& count_query, double total, std::size_t targets,
            clock_type::time_point deadline) {
  for (;;) {
    p.time = 0;
    const auto last = p.query("min(timestamp(up))");
    if (!last.empty()) {
      p.time = last[0].second;
      const auto count = p.query(count_query);
      const auto up = p.query("up");
      if (!count.empty() && count[0].second == total && up.size() == targets &&
          std::all_of(up.begin(), up.end(), [](const auto& u) { return u.second == 1; }))
        break;
    }
    wait_until(deadline, "Prometheus to store every replica's burst");
  }
  const auto all = p.query("sum(count_over_time(up[1h]))");
  const auto good = p.query("sum(sum_over_time(up[1h]))");
  const auto longest = p.query("max(max_over_time(scrape_duration_seconds[1h]))");
  std::string timeout = "unknown";
  if (auto res = p.client.Get("/api/v1/status/config"); res && res->status == 200) {
    const auto j = nlohmann::json::parse(res->body, nullptr, false);
    const std::string yaml = j.is_object() && j.contains("data") && j["data"].is_object()
                                 ? j["data"].value("yaml", "")
                                 : "";
    const auto at = yaml.find("scrape_timeout: ");
    if (at != std::string::npos) timeout = yaml.substr(at + 16, yaml.find('\n', at) - at - 16);
  }
  if (!all.empty() && !good.empty() && !longest.empty())
    std::printf(
        "fleet: %.0f of %.0f scrapes failed (up == 0); the longest took %.1f ms (scrape "
        "timeout %s)\n",
        all[0].second - good[0].second, all[0].second, longest[0].second * 1000, timeout.c_str());
}

// `promql` and `weights_query` at p's instant, asked until `promql` answers the same before and
// after `weights_query` (a guard: at a settled instant nothing changes between them).
std::pair<std::vector<std::pair<nlohmann::json, double>>,
          std::vector<std::pair<nlohmann::json, double>>>
answer_and_weights(prom& p, const std::string& promql, const std::string& weights_query,
                   clock_type::time_point deadline) {
  for (;;) {
    auto answer = p.query(promql);
    auto rates = p.query(weights_query);
    if (p.query(promql) == answer) return {std::move(answer), std::move(rates)};
    wait_until(deadline, "the answer to stay the same across the weights query");
  }
}

// Each replica's rate() extrapolation factor: rate * 60 / its count, by replica label.
std::map<std::string, double> weights(const std::vector<std::pair<nlohmann::json, double>>& rates,
                                      const std::map<std::string, tokchron::log_histogram>& hist) {
  std::map<std::string, double> w;
  for (const auto& [labels, rate] : rates) {
    const std::string name = labels.value("replica", "");
    const auto it = hist.find(name);
    if (it == hist.end()) fleet::die("a series without a known replica label: " + name);
    w[name] = rate * 60 / static_cast<double>(it->second.count());
  }
  if (w.size() != hist.size()) fleet::die("not one rate per replica");
  return w;
}

double spread(const std::map<std::string, double>& w) {
  double lo = 1e300, hi = 0;
  for (const auto& [name, x] : w) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  return hi / lo - 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string address = fleet::arg(argc, argv, "--prometheus", "");
  const std::string native_address = fleet::arg(argc, argv, "--native-prometheus", "");
  const std::string spec = fleet::arg(argc, argv, "--replicas", "");
  const std::string samples_spec = fleet::arg(argc, argv, "--samples", "");
  const double q = std::stod(fleet::arg(argc, argv, "--q", "0.95"));
  const int timeout = std::stoi(fleet::arg(argc, argv, "--timeout", "90"));
  bool separate = false;
  for (int i = 1; i < argc; ++i) separate = separate || std::strcmp(argv[i], "--separate") == 0;
  if ((address.empty() && native_address.empty()) || spec.empty())
    fleet::die("--replicas and --prometheus or --native-prometheus are required");
  if (!native_address.empty() && samples_spec.empty())
    fleet::die("--native-prometheus needs --samples");
  if (separate && (address.empty() || native_address.empty()))
    fleet::die("--separate needs both --prometheus and --native-prometheus");
  const auto dumps = name_files(spec);
  const auto deadline = clock_type::now() + std::chrono::seconds(timeout);

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
      wait_until(deadline, "replica dumps");
    }
  }
  auto merged = hist.begin()->second;
  for (auto it = std::next(hist.begin()); it != hist.end(); ++it) merged.merge(it->second);
  const double total = static_cast<double>(merged.count());
  const auto nr = tokchron::quantile_method::nearest_rank;
  char qtext[32];
  std::snprintf(qtext, sizeof qtext, "%g", q);
  std::printf("fleet: %zu replicas, %.0f requests\n", hist.size(), total);

  // Every request's exact TTFT (written with the dumps), when the native check runs.
  tokchron::exact_quantiles<double> exact;
  if (!samples_spec.empty()) {
    const auto files = name_files(samples_spec);
    if (files.size() != hist.size()) fleet::die("--samples must name every replica");
    for (const auto& [name, file] : files) {
      const std::string bytes = fleet::read_all(file);
      const auto n = hist.count(name) ? hist.at(name).count() : 0;
      if (bytes.size() != n * sizeof(double))
        fleet::die("samples of " + name + " do not match its dump (" + file + ")");
      for (std::size_t i = 0; i < n; ++i) {
        double x;
        std::memcpy(&x, bytes.data() + i * sizeof(double), sizeof x);
        if (!exact.add(x)) fleet::die("a sample that is not a number in " + file);
      }
    }
  }

  bool ok = true;
  double classic_error = 0;
  if (!address.empty()) {
    prom p(address);
    settle(p, "sum(tokchron_ttft_seconds_count)", total, hist.size(), deadline);
    const std::string promql = std::string("histogram_quantile(") + qtext +
                               ", sum by (le) (rate(tokchron_ttft_seconds_bucket[1m])))";
    const auto [answer, rates] =
        answer_and_weights(p, promql, "rate(tokchron_ttft_seconds_count[1m])", deadline);
    const auto w = weights(rates, hist);
    if (answer.size() != 1) fleet::die("unexpected query results");
    const double got = answer[0].second;

    // 1. Reproduce PromQL's answer from the replicas' classic buckets and rate()'s weights.
    const auto bounds =
        tokchron::exponential_buckets(fleet::bucket_scale, fleet::bucket_lo, fleet::bucket_hi);
    std::vector<double> cumulative(bounds.size(), 0.0);
    double weighted_total = 0;
    for (const auto& [name, h] : hist) {
      const auto c = tokchron::classic_histogram(h, bounds);
      for (std::size_t i = 0; i < bounds.size(); ++i)
        cumulative[i] += static_cast<double>(c.buckets[i].cumulative_count) * w.at(name) / 60;
      weighted_total += static_cast<double>(h.count()) * w.at(name) / 60;
    }
    const double expected =
        *tokchron::promql_histogram_quantile(q, bounds, cumulative, weighted_total);
    const bool reproduced = std::fabs(got - expected) <= 1e-9 * expected;

    // 2. Accuracy against tokchron's merged histogram.
    const double d = spread(w);
    const double base = std::exp2(std::ldexp(1.0, -fleet::bucket_scale));
    const double alpha = merged.relative_error();
    const double q_lo = 1 - (1 - q) * (1 + d), q_hi = 1 - (1 - q) / (1 + d);
    const double lo = *merged.quantile(q_lo, nr) * (1 - alpha) / base;
    const double hi = *merged.quantile(q_hi, nr) * (1 + alpha) * base;
    const double truth = *merged.quantile(q);
    const bool within = got >= lo && got <= hi;
    ok = ok && reproduced && within;
    if (exact.count() > 0) classic_error = got / *exact.quantile(q) - 1;

    std::printf("fleet (classic buckets): %s\n", promql.c_str());
    std::printf("fleet: PromQL %.6f s; reproduced from the replicas' buckets %.6f s (%s)\n", got,
                expected, reproduced ? "equal" : "DIFFERENT");
    std::printf("fleet: tokchron merged P%g %.6f s; PromQL error %+.2f %% (bucket bound %.2f %%)\n",
                q * 100, truth, (got / truth - 1) * 100, (base - 1) * 100);
    std::printf("fleet: rate() weight spread d = %.4f; allowed [%.6f, %.6f] s: %s\n", d, lo, hi,
                within ? "within" : "OUTSIDE");
  }

  if (!native_address.empty()) {
    prom p(native_address);
    settle(p, "histogram_count(sum(tokchron_ttft_seconds))", total, hist.size(), deadline);
    const std::string promql =
        std::string("histogram_quantile(") + qtext + ", sum(rate(tokchron_ttft_seconds[1m])))";
    const auto [answer, rates] =
        answer_and_weights(p, promql, "histogram_count(rate(tokchron_ttft_seconds[1m]))", deadline);
    const auto w = weights(rates, hist);
    if (answer.size() != 1) fleet::die("unexpected native query results");
    const double got = answer[0].second;

    // 1. Reproduce PromQL's answer from the replicas' native buckets and rate()'s weights.
    const auto first = tokchron::prometheus_native_data(hist.begin()->second);
    const int schema = first.scale;
    std::int32_t lo_index = 0, hi_index = 0;
    bool any = false;
    for (const auto& [name, h] : hist) {
      const auto e = tokchron::prometheus_native_data(h);
      if (e.scale != schema || !e.negative_counts.empty() || e.zero_count != 0)
        fleet::die("the replicas' native histograms differ in schema or hold non-positive TTFTs");
      if (e.positive_counts.empty()) continue;
      const auto last = e.positive_offset + static_cast<std::int32_t>(e.positive_counts.size());
      lo_index = any ? std::min(lo_index, e.positive_offset) : e.positive_offset;
      hi_index = any ? std::max(hi_index, last) : last;
      any = true;
    }
    std::vector<double> weighted(static_cast<std::size_t>(hi_index - lo_index), 0.0);
    for (const auto& [name, h] : hist) {
      const auto e = tokchron::prometheus_native_data(h);
      for (std::size_t k = 0; k < e.positive_counts.size(); ++k)
        weighted[static_cast<std::size_t>(e.positive_offset - lo_index) + k] +=
            static_cast<double>(e.positive_counts[k]) * w.at(name) / 60;
    }
    const double expected = *tokchron::promql_native_histogram_quantile(
        q, schema, first.zero_threshold, 0, lo_index, weighted, 0, {});
    const bool reproduced = std::fabs(got - expected) <= 1e-9 * expected;

    // 2. Accuracy against the exact quantile of every request.
    const double d = spread(w);
    const double bound = tokchron::prometheus_native_quantile_error(schema);
    const double q_lo = 1 - (1 - q) * (1 + d), q_hi = 1 - (1 - q) / (1 + d);
    const double lo = *exact.quantile(q_lo, nr) / (1 + bound);
    const double hi = *exact.quantile(q_hi, nr) * (1 + bound);
    const double truth = *exact.quantile(q);
    const bool within = got >= lo && got <= hi;
    const double native_error = got / truth - 1;
    ok = ok && reproduced && within;

    std::printf("fleet (native histograms, schema %d): %s\n", schema, promql.c_str());
    std::printf("fleet: PromQL %.6f s; reproduced from the replicas' native buckets %.6f s (%s)\n",
                got, expected, reproduced ? "equal" : "DIFFERENT");
    std::printf("fleet: rate() weight spread d = %.4f; allowed [%.6f, %.6f] s: %s\n", d, lo, hi,
                within ? "within" : "OUTSIDE");
    std::printf("fleet: exact P%g over all %zu requests %.6f s\n", q * 100,
                static_cast<std::size_t>(exact.count()), truth);
    std::printf("fleet: native error %+.3f %%, bound %.3f %% (base - 1 at schema %d)\n",
                native_error * 100, bound * 100, schema);
    if (!address.empty()) {
      const bool separated = std::fabs(classic_error) > bound;
      std::printf(
          "fleet: classic error %+.3f %%, %s the native bound %.3f %% (its own bound %.2f %%)\n",
          classic_error * 100, separated ? "outside" : "NOT outside", bound * 100,
          (std::exp2(std::ldexp(1.0, -fleet::bucket_scale)) - 1) * 100);
      if (separate) ok = ok && separated;
    }
  }
  return ok ? 0 : 1;
}
