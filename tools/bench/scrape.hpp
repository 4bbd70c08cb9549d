// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
#ifndef TOKCHRON_TOOLS_BENCH_SCRAPE_HPP
#define TOKCHRON_TOOLS_BENCH_SCRAPE_HPP

/// \file
/// `tokchron-bench --scrape URL`: the server's Prometheus `/metrics` (text format 0.0.4 or
/// OpenMetrics text) read before and after a run, and what changed between the two reads:
/// each counter's increase, each classic histogram's interval counts and quantiles
/// (docs/tools/tokchron-bench.md, "The server's own metrics").

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tokchron_bench {

/// One sample line: the metric name, its labels (sorted by name) and its value.
struct metric_sample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
};

/// A parsed exposition: each family's `# TYPE`, and the samples keyed by `series_key`.
struct exposition {
  std::map<std::string, std::string> types;
  std::map<std::string, metric_sample> samples;
};

/// `name{a="x",b="y"}` with the labels sorted (the key of a series in `exposition`).
[[nodiscard]] std::string series_key(
    const std::string& name, const std::vector<std::pair<std::string, std::string>>& labels);

/// Parses Prometheus text (0.0.4, or OpenMetrics 1.0 text up to `# EOF`; exemplars and
/// timestamps are read and dropped). Throws std::invalid_argument naming the line (from 1) and
/// the field (name, label, value, timestamp, TYPE) that is malformed, or a series given twice.
[[nodiscard]] exposition parse_exposition(std::string_view text);

/// Where to scrape: `http://HOST[:PORT][/PATH]` (PATH defaults to /metrics). Throws
/// std::invalid_argument naming the bad part.
struct scrape_target {
  std::string host, port, path;
};
[[nodiscard]] scrape_target parse_scrape_url(const std::string& url);

/// GETs the target's exposition (a body of at most 64 MiB) within `timeout`. Throws
/// std::runtime_error saying what failed (connection, HTTP status, size).
[[nodiscard]] std::string fetch_exposition(const scrape_target& t,
                                           std::chrono::milliseconds timeout);

/// A counter series' increase between two reads. A value below the earlier one is a reset
/// (the server restarted): the increase is then the later value, as PromQL's `increase` takes it.
struct counter_change {
  std::string series;
  double before = 0, after = 0, increase = 0;
  bool reset = false;
};

/// One quantile of an interval histogram: PromQL's `histogram_quantile` over the interval's
/// bucket counts (linear inside the bucket), and the bucket that holds the rank: the true
/// quantile of the observations lies in (lower, upper].
struct interval_quantile {
  double q = 0;
  std::optional<double> value;
  double lower = 0, upper = 0;
};

/// A classic histogram series' observations between two reads.
struct histogram_change {
  std::string family;  ///< the name without _bucket/_sum/_count
  std::string series;  ///< family{labels without le}
  double count = 0, sum = 0;
  std::vector<double> bounds;      ///< finite upper bounds, increasing
  std::vector<double> cumulative;  ///< interval counts at each bound
  std::vector<interval_quantile> quantiles;
};

/// What changed: counters (TYPE counter, the _sum and _count of a summary, or untyped names
/// ending in _total), histograms, and gauges (read at both ends, no difference taken).
struct scrape_change {
  std::vector<counter_change> counters;
  std::vector<histogram_change> histograms;
  std::vector<std::pair<std::string, std::pair<double, double>>> gauges;  ///< before, after
};

/// The changes from `before` to `after`; a series only in `after` counts from 0; quantiles at
/// each of `qs` (in [0, 1]).
[[nodiscard]] scrape_change difference(const exposition& before, const exposition& after,
                                       const std::vector<double>& qs = {0.5, 0.9, 0.99});

/// What the client counted over the same run, printed beside the server's numbers.
struct client_counts {
  std::uint64_t requests = 0, ok = 0, prompt_tokens = 0, output_tokens = 0;
  std::vector<double> ttft_s, e2e_s;  ///< of the requests that succeeded
};

struct request_outcome;
/// Adds one request that ended to the client's counts (call it for every request sent, warm-up
/// ones too: the server counts them); its latencies when it succeeded. `zero`: the run's.
void add_client(client_counts& c, const request_outcome& o,
                std::chrono::steady_clock::time_point zero);

/// The server's quantities tokchron knows by name (vLLM's, tokchron's, SGLang's, TGI's, the
/// llama.cpp server's, trtllm-serve's, from tokchron's live presets), summed over their
/// series, beside the client's; then the count of other series that changed.
void print_change(std::ostream& out, const std::string& url, const scrape_change& c,
                  const client_counts& client);

/// The change as JSON: {"url", "counters": {series: {before, after, increase, reset}},
/// "histograms": {series: {count, sum, buckets: [[le, n]...], quantiles: [{q, value, lower,
/// upper}]}}, "gauges": {series: {before, after}}, "recognised": {quantity: value}}.
[[nodiscard]] nlohmann::json change_json(const std::string& url, const scrape_change& c);

}  // namespace tokchron_bench

#endif  // TOKCHRON_TOOLS_BENCH_SCRAPE_HPP
