// SPDX-License-Identifier: MIT
// The compatibility profiles: hand-computed expectations on requests that separate the tools,
// each tool's published formula re-implemented independently on a random trace, and one test
// per quirk of issue 20 (each tool's numbers, its warnings, and their absence when no quirk
// applies).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tokchron/io/trace.hpp"
#include "tokchron/metrics/builtin_profiles.hpp"
#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/testing.hpp"

using namespace std::chrono_literals;
namespace tc = tokchron;

namespace {
using K = tc::chunk_kind;
constexpr std::optional<double> none = std::nullopt;

// The trace of tests/data/traces/separating.jsonl.
std::vector<tc::trace_record> separating() {
  std::vector<tc::trace_record> v(5);
  v[0].id = "one-token";  // 1 token, empty role chunk, usage chunk, [DONE]
  v[0].arrival = 0.0;
  v[0].send = 0.0;
  v[0].prompt_tokens = 10;
  v[0].chunks = {
      {0.100, 0, K::empty}, {0.150, 1, K::text}, {0.160, 0, K::usage}, {0.165, 0, K::done}};
  v[0].end = 0.165;
  v[0].usage_output_tokens = 1;
  v[1].id = "bundled";  // a 3-token chunk; issue delay; queue and schedule recorded
  v[1].arrival = 0.010;
  v[1].send = 0.012;
  v[1].queued = 0.013;
  v[1].scheduled = 0.020;
  v[1].prompt_tokens = 50;
  v[1].chunks = {{0.100, 0, K::empty}, {0.120, 1, K::text},  {0.150, 3, K::text},
                 {0.170, 1, K::text},  {0.180, 0, K::usage}, {0.182, 0, K::done}};
  v[1].end = 0.185;
  v[1].usage_output_tokens = 5;
  v[2].id = "ttft-zero";  // the first token at the send time
  v[2].arrival = 0.200;
  v[2].send = 0.200;
  v[2].prompt_tokens = 20;
  v[2].chunks = {{0.200, 1, K::text}, {0.230, 1, K::text}, {0.250, 2, K::text}};
  v[2].end = 0.250;
  v[2].usage_output_tokens = 4;
  v[2].usage_from = tc::usage_source::content_chunk;
  v[3].id = "failed";
  v[3].arrival = 0.300;
  v[3].send = 0.300;
  v[3].prompt_tokens = 30;
  v[3].chunks = {{0.400, 1, K::text}};
  v[3].end = 0.450;
  v[3].ok = false;
  v[3].error = "connection reset";
  v[4].id = "usage-zero";  // the server reported 0 completion tokens
  v[4].arrival = 0.040;
  v[4].send = 0.050;
  v[4].prompt_tokens = 40;
  v[4].chunks = {{0.100, 1, K::text}, {0.200, 1, K::text}, {0.300, 1, K::text}};
  v[4].end = 0.310;
  v[4].usage_output_tokens = 0;
  v[4].usage_from = tc::usage_source::content_chunk;
  return v;
}

struct expect {
  std::optional<double> ttft, e2el, tpot;
  std::vector<double> pooled;  // pooled ITL samples (per-chunk / per-token grains)
  std::optional<double> itl;   // per-request ITL (per-request grains)
  std::uint64_t n;
  bool tpot_invalid = false;
};

bool close(std::optional<double> a, std::optional<double> b) {
  if (!a || !b) return !a && !b;
  return std::fabs(*a - *b) <= 1e-12 * std::max(1.0, std::fabs(*b));
}
// A float-ms tool's value (gptManagerBenchmark) equals the float the tool computes from the
// exact value: both round the same real number to float milliseconds.
bool close_float_ms(std::optional<double> a, std::optional<double> b) {
  if (!a || !b) return !a && !b;
  return static_cast<float>(*a * 1e3) == static_cast<float>(*b * 1e3);
}
}  // namespace

TEST_CASE("profiles: every built-in profile is found by name and described") {
  CHECK(tc::all_profiles().size() == 15);
  for (const tc::profile* p : tc::all_profiles()) {
    REQUIRE(tc::find_profile(p->name) == p);
    CHECK(!p->description.empty());
    CHECK(!p->tool.empty());
    CHECK_NOTHROW((void)tc::parse_percentiles(p->default_percentiles));
  }
  CHECK(tc::find_profile("nope") == nullptr);
}

TEST_CASE("profiles: hand-computed values on requests that separate the tools") {
  const auto recs = separating();
  // Per profile: the 5 requests (one-token, bundled, ttft-zero, failed, usage-zero). Derivations
  // are in docs/library/definitions.md; e.g. vllm counts the empty role chunk (TTFT 0.100) and ends
  // at the last choices chunk, vllm_legacy skips it and ends at [DONE], `ttft == 0.0` tools move
  // the ttft-zero request's TTFT to its second chunk and lose that gap.
  const double third = 0.05 / 3, two_thirds = 0.02 / 3;
  const std::map<std::string, std::vector<expect>> want = {
      {"canonical",
       {{0.150, 0.165, none, {}, none, 1},
        {0.110, 0.175, 0.0125, {0.01, 0.01, 0.01, 0.02}, none, 5},
        {0.0, 0.050, third, {0.03, 0.01, 0.01}, none, 4},
        {},
        {0.060, 0.270, 0.100, {0.1, 0.1}, none, 3}}},
      {"vllm",
       {{0.100, 0.150, none, {0.050}, none, 1},
        {0.088, 0.158, 0.0175, {0.02, 0.03, 0.02}, none, 5},
        {0.0, 0.050, third, {0.03, 0.02}, none, 4},
        {},
        {0.050, 0.250, 0.100, {0.1, 0.1}, none, 3}}},
      {"vllm_legacy",  // N is the streamed tokens: usage is never read (usage-zero: N = 3)
       {{0.150, 0.165, none, {}, none, 1},
        {0.108, 0.170, 0.0155, {0.03, 0.02}, none, 5},
        {0.030, 0.050, two_thirds, {0.02}, none, 4},
        {},
        {0.050, 0.260, 0.105, {0.1, 0.1}, none, 3}}},
      {"vllm_legacy_chat",  // no empty chunk in mid-stream here: as vllm_legacy
       {{0.150, 0.165, none, {}, none, 1},
        {0.108, 0.170, 0.0155, {0.03, 0.02}, none, 5},
        {0.030, 0.050, two_thirds, {0.02}, none, 4},
        {},
        {0.050, 0.260, 0.105, {0.1, 0.1}, none, 3}}},
      {"sglang_openai",  // usage of any chunk that carried it (usage-zero's: N = 0, no TPOT)
       {{0.150, 0.165, none, {}, none, 1},
        {0.108, 0.170, 0.0155, {0.03, 0.02}, none, 5},
        {0.030, 0.050, two_thirds, {0.02}, none, 4},
        {},
        {0.050, 0.250, none, {0.1, 0.1}, none, 0}}},
      {"sglang_native",
       {{0.150, 0.165, none, {}, none, 1},
        {0.108, 0.170, 0.0155, {0.01, 0.01, 0.01, 0.02}, none, 5},
        {0.030, 0.050, two_thirds, {0.01, 0.01}, none, 4},
        {},
        {0.050, 0.250, none, {0.1, 0.1}, none, 0}}},
      {"genai_perf",
       {{0.150, 0.150, none, {}, none, 1},
        {0.108, 0.158, 0.0125, {}, 0.0125, 5},
        {0.0, 0.050, 16666667e-9, {}, 16666667e-9, 4},  // round() in integer ns
        {},
        {0.050, 0.250, 0.100, {}, 0.100, 3}}},
      {"aiperf",  // empty and usage chunks are no responses
       {{0.150, 0.150, none, {}, none, 1},
        {0.108, 0.158, 0.0125, {}, 0.0125, 5},
        {0.0, 0.050, third, {}, third, 4},
        {},
        {0.050, 0.250, 0.100, {}, 0.100, 3}}},
      {"llmperf",  // ITL = (last content chunk - start) / data chunks, usage-only ones absent
       {{0.150, 0.165, none, {}, 0.150 / 2, 1},
        {0.108, 0.173, none, {}, 0.158 / 4, 5},
        {0.030, 0.050, none, {}, 0.050 / 3, 4},
        {},
        {0.050, 0.260, none, {}, 0.250 / 3, 3}}},
      {"trtllm_bench",  // engine-side: E2E ends at the last chunk carrying tokens
       {{0.150, 0.150, 0.0, {}, none, 1},
        {0.108, 0.158, 0.0125, {}, none, 5},
        {0.0, 0.050, third, {}, none, 4},
        {},
        {0.050, 0.250, 0.100, {}, none, 3}}},
      {"gpt_manager_benchmark",  // as trtllm_bench, in float ms, no TPOT for N = 1
       {{0.150, 0.150, none, {}, none, 1},
        {0.108, 0.158, 0.0125, {}, none, 5},
        {0.0, 0.050, third, {}, none, 4},
        {},
        {0.050, 0.250, 0.100, {}, none, 3}}},
      {"mlperf",  // from the scheduled time, integer ns; N = 1: TPOT -(E2E - TTFT), N set to 0
       {{0.150, 0.150, 0.0, {}, none, 0},
        {0.110, 0.160, 0.0125, {}, none, 5},
        {0.0, 0.050, 16666666e-9, {}, none, 4},
        {},
        {0.060, 0.260, 0.100, {}, none, 3}}},
      {"guidellm",  // N = usage, else counted lines; TPOT (last - send) / N; ITL per request
       {{0.150, 0.165, 0.150, {}, none, 1},
        {0.108, 0.170, 0.158 / 5, {}, 0.0125, 5},
        {0.0, 0.050, 0.0125, {}, 0.050 / 3, 4},
        {},
        {0.050, 0.260, none, {}, none, 0}}},
      {"inference_perf",  // fewer than 2 tokens: no TTFT/TPOT; ITL per token: gap, then zeros;
                          // E2E ends at the end of the stream, past [DONE]
       {{none, 0.165, none, {}, none, 1},
        {0.108, 0.173, 0.0125, {0.030, 0.0, 0.0, 0.020}, none, 5},
        {0.0, 0.050, 0.050 / 3, {0.030, 0.020, 0.0}, none, 4},
        {},
        {0.050, 0.260, 0.100, {0.100, 0.100}, none, 3}}},
      {"inference_perf_no_tokenizer",  // one stamp per content chunk: one chunk, no TTFT
       {{none, 0.165, none, {}, none, 1},
        {0.108, 0.173, 0.0125, {0.030, 0.020}, none, 5},
        {0.0, 0.050, 0.050 / 3, {0.030, 0.020}, none, 4},
        {},
        {0.050, 0.260, 0.100, {0.100, 0.100}, none, 3}}},
  };
  REQUIRE(want.size() == tc::all_profiles().size());
  for (const tc::profile* p : tc::all_profiles()) {
    const auto& rows = want.at(std::string(p->name));
    for (std::size_t i = 0; i < recs.size(); ++i) {
      CAPTURE(p->name);
      CAPTURE(recs[i].id);
      const auto tl = tc::to_timeline(recs[i]);
      std::vector<double> pooled;
      const auto r = tc::evaluate(*p, tl, [&](double g) noexcept { pooled.push_back(g); });
      if (i == 3) {  // the failed request: not completed, no pooled samples
        CHECK_FALSE(r.completed);
        CHECK(pooled.empty());
        continue;
      }
      const expect& e = rows[i];
      const bool float_ms = p->arithmetic == tc::tool_arithmetic::float_ms;
      const auto near = [float_ms](std::optional<double> a, std::optional<double> b) {
        return float_ms ? close_float_ms(a, b) : close(a, b);
      };
      CHECK(r.completed);
      CHECK(near(r.ttft, e.ttft));
      CHECK(near(r.e2e, e.e2el));
      CHECK(near(r.tpot, e.tpot));
      CHECK(close(r.itl, e.itl));
      CHECK(r.output_tokens == e.n);
      CHECK(r.tpot_invalid == e.tpot_invalid);
      REQUIRE(pooled.size() == e.pooled.size());
      for (std::size_t k = 0; k < pooled.size(); ++k) CHECK(close(pooled[k], e.pooled[k]));
    }
  }
}

TEST_CASE("profiles: canonical reproduces the docs/library/definitions.md table") {
  const auto tl = tc::testing::script()
                      .arrive(0ms)
                      .send(2ms)
                      .queued(5ms)
                      .scheduled(40ms)
                      .chunk(100ms, 0, K::empty)
                      .chunk(120ms, 1)
                      .chunk(150ms, 3)
                      .chunk(170ms, 1)
                      .chunk(180ms, 0, K::usage)
                      .finish(180ms)
                      .timeline();
  std::vector<double> pooled, per_token;
  const auto r =
      tc::evaluate(tc::profiles::canonical, tl, [&](double g) noexcept { pooled.push_back(g); });
  tc::for_each_itl_per_token(tl, [&](auto g) { per_token.push_back(tc::to_seconds(g)); });
  const auto m = tc::canonical_metrics(tl);
  CHECK(close(r.ttft, m.ttft));
  CHECK(close(r.e2e, m.e2e));
  CHECK(close(r.tpot, m.tpot));
  CHECK(close(r.queue_time, m.queue_time));
  CHECK(close(r.prefill_time, m.prefill_time));
  CHECK(close(r.decode_time, m.decode_time));
  CHECK(close(r.normalized_latency, m.normalized_latency));
  CHECK(close(r.output_rate, m.output_rate));
  CHECK(pooled == per_token);
  CHECK(close(r.ttft, 0.120));  // docs/library/definitions.md's example column
  CHECK(close(r.tpot, 0.0125));
}

TEST_CASE("profiles: 100 samples at P99 separate the three percentile methods") {
  // TTFTs of 1..100 ms: numpy linear gives 99.01 ms, sorted[int(n p)] 100 ms, nearest rank 99.
  std::vector<tc::testing::scripted_timeline> tls;
  for (int i = 1; i <= 100; ++i)
    tls.push_back(tc::testing::script()
                      .send(0ms)
                      .chunk(std::chrono::milliseconds(i), 1)
                      .chunk(std::chrono::milliseconds(i + 10), 1)
                      .finish()
                      .timeline());
  tc::summary_options o;
  o.percentiles = {99};
  const auto lin = tc::summarize(tls, tc::profiles::vllm, o);
  const auto low = tc::summarize(tls, tc::profiles::trtllm_bench, o);
  const auto near = tc::summarize(tls, tc::profiles::gpt_manager_benchmark, o);
  CHECK(close(lin.ttft.at(99), 0.09901));
  CHECK(close(low.ttft.at(99), 0.100));
  CHECK(close(near.ttft.at(99), 0.099));
}

// --- each tool's published formula, re-implemented independently on a random trace ----------

namespace {
// numpy.percentile (linear), sorted[int(n p)], sorted[ceil(p n) - 1]; numpy / pandas std.
double pct_linear(std::vector<double> x, double q) {
  std::sort(x.begin(), x.end());
  const double h = (static_cast<double>(x.size()) - 1) * q;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, x.size() - 1);
  return x[lo] + (h - std::floor(h)) * (x[hi] - x[lo]);
}
double pct_lower(std::vector<double> x, double q) {
  std::sort(x.begin(), x.end());
  return x[std::min(static_cast<std::size_t>(static_cast<double>(x.size()) * q), x.size() - 1)];
}
double pct_nearest(std::vector<double> x, double q) {
  std::sort(x.begin(), x.end());
  const double h = std::ceil(q * static_cast<double>(x.size()));
  return x[h < 1 ? 0 : static_cast<std::size_t>(h) - 1];
}
double mean(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  return s / static_cast<double>(x.size());
}
double stdev(const std::vector<double>& x, double ddof) {
  const double m = mean(x);
  double s = 0;
  for (double v : x) s += (v - m) * (v - m);
  return std::sqrt(s / (static_cast<double>(x.size()) - ddof));
}

/// What a tool prints: its samples (seconds), and, for tools that do their own arithmetic, the
/// exact means they print (int64 ns for MLPerf, float ms for gptManagerBenchmark).
struct tool_result {
  std::vector<double> ttft, tpot, itl, e2el;
  double duration = 0;
  double completed = 0, output_tokens = 0;
  bool e2e_mean_median_swapped = false;     // legacy vLLM prints them swapped
  std::optional<double> output_throughput;  // when the tool computes it otherwise (float)
  std::optional<std::int64_t> mean_ns[4];   // ttft, tpot, itl, e2el
  std::optional<float> mean_ms[4];

  /// One completed request with its TTFT, E2E and output tokens (TPOT and ITL are each tool's).
  void add(double request_ttft, double request_e2el, double tokens) {
    ttft.push_back(request_ttft);
    e2el.push_back(request_e2el);
    completed += 1;
    output_tokens += tokens;
  }
};

long long ns(double s) { return std::llround(s * 1e9); }
double chunk_sum(const tc::trace_record& r) {
  double n = 0;
  for (const auto& c : r.chunks) n += c.tokens;
  return n;
}
double end_of(const tc::trace_record& r) {
  return r.end ? *r.end : (r.chunks.empty() ? r.send : r.chunks.back().time);
}
// Where the trace says the usage count came from (docs/library/trace-format.md): its
// usage_source, else its usage chunk, else unknown.
std::optional<tc::usage_source> source_of(const tc::trace_record& r) {
  if (r.usage_from) return r.usage_from;
  for (const auto& c : r.chunks)
    if (c.kind == K::usage) return tc::usage_source::usage_chunk;
  return std::nullopt;
}
// The usage count a tool reading it from `from` saw.
std::optional<double> usage_seen(const tc::trace_record& r,
                                 std::initializer_list<tc::usage_source> from) {
  const auto src = source_of(r);
  if (!r.usage_output_tokens || !src) return std::nullopt;
  for (const auto f : from)
    if (f == *src) return static_cast<double>(*r.usage_output_tokens);
  return std::nullopt;
}
std::optional<double> first_token(const tc::trace_record& r) {
  for (const auto& c : r.chunks)
    if (c.tokens > 0) return c.time;
  return std::nullopt;
}
// The final engine response: the last chunk carrying tokens, else the end.
double engine_end(const tc::trace_record& r) {
  for (auto it = r.chunks.rbegin(); it != r.chunks.rend(); ++it)
    if (it->tokens > 0) return it->time;
  return end_of(r);
}
// The benchmark start's stand-in: the earliest intended arrival.
double start_of(const std::vector<tc::trace_record>& rs) {
  double lo = 1e300;
  for (const auto& r : rs) lo = std::min(lo, r.arrival.value_or(r.send));
  return lo;
}
double latest_end(const std::vector<tc::trace_record>& rs) {
  double hi = -1e300;
  for (const auto& r : rs) hi = std::max(hi, end_of(r));
  return hi;
}

// vllm/benchmarks/lib/endpoint_request_func.py + serve.py calculate_metrics.
tool_result vllm_tool(const std::vector<tc::trace_record>& rs) {
  tool_result t;
  t.duration = latest_end(rs) - start_of(rs);
  for (const auto& r : rs) {
    bool first = false;
    double ttft = 0, recent = 0;
    std::vector<double> itl;
    for (const auto& c : r.chunks) {
      if (c.kind != K::text && c.kind != K::empty) continue;  // `if choices := data.get(...)`
      if (!first) {
        first = true;
        ttft = c.time - r.send;
      } else {
        itl.push_back(c.time - recent);
      }
      recent = c.time;
    }
    if (!r.ok || !first) continue;
    const double latency = recent - r.send;
    // `elif usage := data.get("usage")`: only a chunk without choices is read.
    double n = usage_seen(r, {tc::usage_source::usage_chunk}).value_or(0);
    if (n == 0) n = chunk_sum(r);  // stand-in for the tokenizer re-encode
    if (n > 1) t.tpot.push_back((latency - ttft) / (n - 1));
    t.itl.insert(t.itl.end(), itl.begin(), itl.end());
    t.add(ttft, latency, n);
  }
  return t;
}

// Legacy vLLM benchmark_serving.py + backend_request_func.py (mid-2024): the completions loop
// sets most_recent_timestamp inside `if text`, the chat loop for every chunk; `ttft == 0.0`
// means unmeasured; latency at [DONE]; N re-encoded (the chunk token sum); the default TTFT
// 0.0 enters the list; the summary swaps the mean and median E2E. It never asks for usage.
tool_result vllm_legacy_tool(const std::vector<tc::trace_record>& rs, bool chat) {
  tool_result t;
  t.duration = latest_end(rs) - start_of(rs);
  t.e2e_mean_median_swapped = true;
  for (const auto& r : rs) {
    if (!r.ok) continue;
    double ttft = 0.0, recent = 0, latency = end_of(r) - r.send;  // no [DONE]: the end
    std::vector<double> itl;
    for (const auto& c : r.chunks) {
      if (c.kind == K::usage) continue;  // never sent to a client that did not ask
      if (c.kind == K::done) {
        latency = c.time - r.send;
        continue;
      }
      if (c.kind == K::text) {
        if (ttft == 0.0)
          ttft = c.time - r.send;
        else
          itl.push_back(c.time - recent);
        if (!chat) recent = c.time;
      }
      if (chat) recent = c.time;
    }
    const double n = chunk_sum(r);
    if (n > 1) t.tpot.push_back((latency - ttft) / (n - 1));
    t.itl.insert(t.itl.end(), itl.begin(), itl.end());
    t.add(ttft, latency, n);
  }
  return t;
}

// sglang bench_serving: `ttft == 0.0` unmeasured, latency at every non-empty SSE line, N the
// usage of a chunk that carried it, else the requested length (the chunk token sum); native:
// the gap split over the chunk's new tokens.
tool_result sglang_tool(const std::vector<tc::trace_record>& rs, bool native) {
  tool_result t;
  t.duration = latest_end(rs) - start_of(rs);
  for (const auto& r : rs) {
    if (!r.ok) continue;
    double ttft = 0.0, recent = 0, latency = 0;
    std::vector<double> itl;
    for (const auto& c : r.chunks) {
      latency = c.time - r.send;
      if (native ? c.tokens == 0 : c.kind != K::text) continue;
      if (ttft == 0.0) {
        ttft = c.time - r.send;
      } else if (native) {
        const double gap = c.time - recent;
        for (std::uint32_t k = 0; k < c.tokens; ++k) itl.push_back(gap / c.tokens);
      } else {
        itl.push_back(c.time - recent);
      }
      recent = c.time;
    }
    // `output_len = (data.get("usage") or {}).get(...)` on every data line; a body's usage.
    const double n = usage_seen(r, {tc::usage_source::usage_chunk, tc::usage_source::content_chunk,
                                    tc::usage_source::body})
                         .value_or(chunk_sum(r));
    if (n > 1) t.tpot.push_back((latency - ttft) / (n - 1));
    t.itl.insert(t.itl.end(), itl.begin(), itl.end());
    t.add(ttft, latency, n);
  }
  return t;
}

// genai_perf llm_profile_data_parser.py: integer ns, empty responses removed first, ITL only
// `if num_responses > 1 and total_output_token > 1`.
tool_result genai_tool(const std::vector<tc::trace_record>& rs) {
  tool_result t;
  long long min_req = LLONG_MAX, max_res = LLONG_MIN;
  for (const auto& r : rs) {
    std::vector<long long> res;
    for (const auto& c : r.chunks)
      if (c.kind == K::text) res.push_back(ns(c.time));
    if (!r.ok || res.empty()) continue;
    const long long req = ns(r.send);
    min_req = std::min(min_req, req);
    max_res = std::max(max_res, res.back());
    const long long ttft = res.front() - req, lat = res.back() - req;
    const double n = chunk_sum(r);
    if (res.size() > 1 && n > 1) {
      const double v = std::nearbyint(static_cast<double>(lat - ttft) / (n - 1)) * 1e-9;
      t.tpot.push_back(v);
      t.itl.push_back(v);
    }
    t.add(static_cast<double>(ttft) * 1e-9, static_cast<double>(lat) * 1e-9, n);
  }
  t.duration = static_cast<double>(max_res - min_req) * 1e-9;
  return t;
}

// aiperf: a response is a message with non-empty content; TTFT / latency at the first / last
// response; ITL = (latency - TTFT)/(osl - 1) for osl >= 2; duration = max response - min
// request over valid requests.
tool_result aiperf_tool(const std::vector<tc::trace_record>& rs) {
  tool_result t;
  double lo = 1e300, hi = -1e300;
  for (const auto& r : rs) {
    std::vector<double> res;
    for (const auto& c : r.chunks)
      if (c.kind == K::text) res.push_back(c.time);
    if (!r.ok || res.empty()) continue;
    lo = std::min(lo, r.send);
    hi = std::max(hi, res.back());
    const double ttft = res.front() - r.send, lat = res.back() - r.send, n = chunk_sum(r);
    if (n >= 2) {
      t.tpot.push_back((lat - ttft) / (n - 1));
      t.itl.push_back((lat - ttft) / (n - 1));
    }
    t.add(ttft, lat, n);
  }
  t.duration = hi - lo;
  return t;
}

// llmperf openai_chat_completions_client.py + token_benchmark_ray.py: tokens_received counts
// every data line but [DONE] (a usage-only line is never sent: it asks for no usage).
tool_result llmperf_tool(const std::vector<tc::trace_record>& rs) {
  tool_result t;
  t.duration = latest_end(rs) - start_of(rs);
  for (const auto& r : rs) {
    if (!r.ok) continue;
    double ttft = 0, recent = 0, chunks = 0;
    std::vector<double> time_to_next_token;
    for (const auto& c : r.chunks) {
      if (c.kind == K::done || c.kind == K::usage) continue;
      chunks += 1;  // tokens_received += 1
      if (c.kind != K::text) continue;
      if (ttft == 0.0) {  // `if not ttft`
        ttft = c.time - r.send;
        time_to_next_token.push_back(ttft);
      } else {
        time_to_next_token.push_back(c.time - recent);
      }
      recent = c.time;
    }
    const double n = chunk_sum(r);
    double itl = 0;
    for (double g : time_to_next_token) itl += g;
    t.itl.push_back(n != 0.0 ? itl / chunks : 0);
    t.add(ttft, end_of(r) - r.send, n);
  }
  return t;
}

// tensorrt_llm/bench: engine responses; TTFT and TPOT 0 without a token, TPOT 0 for N <= 1;
// completed requests only (it aborts on a failure).
tool_result trtllm_tool(const std::vector<tc::trace_record>& rs) {
  tool_result t;
  double lo = 1e300, hi = -1e300;  // reporting.py: max(end_timestamp) - min(start_timestamp)
  for (const auto& r : rs) {
    if (!r.ok) continue;
    const auto first = first_token(r);
    const double n = chunk_sum(r), end = engine_end(r);
    lo = std::min(lo, r.send);
    hi = std::max(hi, end);
    t.tpot.push_back(n <= 1 ? 0.0 : (end - *first) / (n - 1));
    t.add(first ? *first - r.send : 0.0, end - r.send, n);
  }
  t.duration = hi - lo;
  return t;
}

// gptManagerBenchmark.cpp: duration<float, milli> per request, TPOT = that / float(N - 1) for
// N > 1, means std::accumulate(..., 0.F) / size() in the requests' order.
tool_result gpt_manager_tool(const std::vector<tc::trace_record>& rs) {
  tool_result t;
  auto fms = [](long long d) {
    return std::chrono::duration<float, std::milli>(std::chrono::nanoseconds(d)).count();
  };
  std::vector<float> ttft, tpot, e2e;
  double hi = -1e300;
  for (const auto& r : rs) {
    hi = std::max(hi, engine_end(r));
    if (!r.ok) continue;
    const auto first = first_token(r);
    const double n = chunk_sum(r);
    const long long end = ns(engine_end(r)), send = ns(r.send);
    e2e.push_back(fms(end - send));
    if (first) {
      ttft.push_back(fms(ns(*first) - send));
      if (n > 1) tpot.push_back(fms(end - ns(*first)) / static_cast<float>(n - 1));
    }
    t.completed += 1;
    t.output_tokens += n;
  }
  auto to_s = [](const std::vector<float>& v, std::vector<double>& out) {
    for (float f : v) out.push_back(static_cast<double>(f) / 1e3);
  };
  to_s(ttft, t.ttft);
  to_s(tpot, t.tpot);
  to_s(e2e, t.e2el);
  auto avg = [](const std::vector<float>& v) {
    float s = 0.F;
    for (float f : v) s += f;
    return s / static_cast<float>(v.size());
  };
  t.mean_ms[0] = avg(ttft);
  t.mean_ms[1] = avg(tpot);
  t.mean_ms[3] = avg(e2e);
  // mTotalLatency = duration<float, milli>(mEnd - mStart); tokens / (mTotalLatency / 1000).
  const float total_ms = fms(ns(hi) - ns(start_of(rs)));
  t.duration = static_cast<double>(total_ms) / 1e3;
  t.output_throughput =
      static_cast<double>(static_cast<float>(t.output_tokens) / (total_ms / 1000.F));
  return t;
}

// MLPerf loadgen logging.cc / results.cc: int64 ns from the scheduled time; n_tokens < 2 is
// logged and set to 0, so TPOT = (latency - TTFT) / -1 and no tokens count; means are the
// int64 sum / size_t count; the duration ends at the completion of the last issued query.
tool_result mlperf_tool(const std::vector<tc::trace_record>& rs) {
  tool_result t;
  double last_issued = -1e300, last_issued_end = 0;
  for (const auto& r : rs) {
    const double a = r.arrival.value_or(r.send);
    if (a >= last_issued) {
      last_issued = a;
      last_issued_end = engine_end(r);
    }
  }
  t.duration = static_cast<double>(ns(last_issued_end) - ns(start_of(rs))) * 1e-9;
  std::vector<std::int64_t> ttft, tpot, lat;
  for (const auto& r : rs) {
    if (!r.ok) continue;
    const auto first = first_token(r);
    const long long sched = ns(r.arrival.value_or(r.send));
    const long long latency = ns(engine_end(r)) - sched;
    const auto n = static_cast<long long>(chunk_sum(r));
    const long long n_tokens = n >= 2 ? n : 0;
    if (first) {
      const long long first_latency = ns(*first) - sched;
      ttft.push_back(first_latency);
      tpot.push_back((latency - first_latency) / (n_tokens - 1));
    }
    lat.push_back(latency);
    t.completed += 1;
    t.output_tokens += static_cast<double>(n_tokens);
  }
  auto to_s = [](const std::vector<std::int64_t>& v, std::vector<double>& out) {
    for (std::int64_t x : v) out.push_back(static_cast<double>(x) * 1e-9);
  };
  to_s(ttft, t.ttft);
  to_s(tpot, t.tpot);
  to_s(lat, t.e2el);
  auto avg = [](const std::vector<std::int64_t>& v) {
    std::int64_t acc = 0;
    for (std::int64_t x : v) acc += x;
    // NOLINTNEXTLINE(bugprone-narrowing-conversions): the tool's int64 / size_t
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(acc) / v.size());
  };
  t.mean_ns[0] = avg(ttft);
  t.mean_ns[1] = avg(tpot);
  t.mean_ns[3] = avg(lat);
  return t;
}

// A random trace with every separating feature: empty role chunks and empty chunks in
// mid-stream, multi-token chunks, usage and [DONE] chunks, a first token at the send time,
// 1-token and 0-token answers, missing / zero usage, issue delay, failures. Times are whole
// microseconds.
std::vector<tc::trace_record> random_trace(unsigned seed, int n) {
  std::mt19937 rng(seed);
  auto u = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
  std::vector<tc::trace_record> out;
  double t = 100.0;
  for (int i = 0; i < n; ++i) {
    tc::trace_record r;
    t += u(0, 20000) * 1e-6;
    r.arrival = t;
    r.send = t + u(0, 3) * 1e-3;
    r.prompt_tokens = static_cast<std::uint64_t>(u(1, 500));
    double c = r.send + (u(0, 9) == 0 ? 0.0 : u(1, 200000) * 1e-6);
    const bool no_tokens = u(0, 24) == 0;
    if (u(0, 1) || no_tokens) r.chunks.push_back({c, 0, K::empty});
    const int chunks = no_tokens ? 0 : u(0, 5) == 0 ? 1 : u(1, 30);
    std::uint64_t tokens = 0;
    for (int k = 0; k < chunks; ++k) {
      if (k > 0 || !r.chunks.empty()) c += u(1, 60000) * 1e-6;
      if (k > 0 && u(0, 9) == 0) {  // an empty chunk in mid-stream
        r.chunks.push_back({c, 0, K::empty});
        c += u(1, 30000) * 1e-6;
      }
      const auto tok = static_cast<std::uint32_t>(u(0, 4) == 0 ? u(2, 4) : 1);
      r.chunks.push_back({c, tok, K::text});
      tokens += tok;
    }
    const int usage = u(0, 5);
    const tc::usage_source sources[] = {tc::usage_source::usage_chunk,
                                        tc::usage_source::content_chunk, tc::usage_source::body,
                                        tc::usage_source::server};
    if (usage > 0) {
      c += u(0, 2000) * 1e-6;
      r.chunks.push_back({c, 0, K::usage});
      r.usage_output_tokens = usage == 1 ? 0 : tokens + static_cast<std::uint64_t>(u(0, 1));
      if (u(0, 1)) r.usage_from = sources[u(0, 3)];  // else: the usage chunk's, inferred
    } else if (u(0, 3) == 0) {                       // a usage count without a usage chunk
      r.usage_output_tokens = u(0, 1) ? 0 : tokens + 1;
      if (u(0, 2)) r.usage_from = sources[u(1, 3)];  // else: unknown, read by none
    }
    if (u(0, 1)) {
      c += u(0, 2000) * 1e-6;
      r.chunks.push_back({c, 0, K::done});
    }
    r.end = c + u(0, 1000) * 1e-6;
    r.ok = u(0, 19) != 0;
    out.push_back(std::move(r));
  }
  return out;
}

double rel(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-300); }

// The first [DONE] line, else the end (the tools that stop reading at [DONE]).
double done_or_end(const tc::trace_record& r) {
  for (const auto& c : r.chunks)
    if (c.kind == K::done) return c.time;
  return end_of(r);
}

// inference-perf reportgen/base.py summarize_requests: with a tokenizer every token of a content
// chunk stamped with the chunk's time (the re-tokenized count: the chunk's tokens), without one
// each content chunk stamped once (apis/chat.py chunk_times); TTFT, TPOT and ITL only for more
// than one time stamp; N the whole text re-tokenized (the content chunks' token sum); end_time
// after the stream was read to its end (parse_sse_stream's `break` leaves only the inner loop);
// total_time = max(end_time) - min(start_time) over every request.
tool_result inference_perf_tool(const std::vector<tc::trace_record>& rs, bool tokenizer) {
  tool_result t;
  double lo = 1e300, hi = -1e300;
  for (const auto& r : rs) {
    lo = std::min(lo, r.send);
    hi = std::max(hi, end_of(r));
  }
  t.duration = hi - lo;
  for (const auto& r : rs) {
    if (!r.ok) continue;
    std::vector<double> times;  // output_token_times
    double n = 0;
    for (const auto& c : r.chunks)
      if (c.kind == K::text) {
        n += c.tokens;
        if (!tokenizer) times.push_back(c.time);
        for (std::uint32_t k = 0; tokenizer && k < c.tokens; ++k) times.push_back(c.time);
      }
    if (times.size() > 1) {
      t.ttft.push_back(times.front() - r.send);
      if (n > 1) t.tpot.push_back((times.back() - times.front()) / (n - 1));
      for (std::size_t i = 0; i + 1 < times.size(); ++i) t.itl.push_back(times[i + 1] - times[i]);
    }
    t.e2el.push_back(end_of(r) - r.send);
    t.completed += 1;
    t.output_tokens += n;
  }
  return t;
}

// GuideLLM: request_stats.py, http.py, statistics.py (DistributionSummary.from_values, written
// out again here: a std::map merges equal values), metrics.py (`or 0.0`, the weights).
struct weighted_stats {
  double count = 0, mean = 0, stddev = 0;
  std::vector<double> at;  // at the requested percentiles
};
weighted_stats from_values(const std::vector<std::pair<double, double>>& xw,
                           const std::vector<double>& qs) {
  std::map<double, double> merged;
  weighted_stats w;
  for (const auto& [x, wt] : xw) {
    merged[x] += wt;
    w.count += wt;
  }
  std::vector<std::pair<double, double>> pdf;
  double total = 0;
  for (const auto& [x, wt] : merged)
    if (wt > 0) {
      pdf.emplace_back(x, wt);
      total += wt;
    }
  double cum = 0;
  std::vector<double> cdf;
  for (auto& e : pdf) {
    e.second /= total;
    cum += e.second;
    cdf.push_back(cum);
    w.mean += e.first * e.second;
  }
  for (const auto& e : pdf) w.stddev += (e.first - w.mean) * (e.first - w.mean) * e.second;
  w.stddev = std::sqrt(w.stddev);
  for (double q : qs) {
    const double prob = q == 99.9 ? 0.999 : q / 100;
    std::size_t i = 0;
    while (i + 1 < cdf.size() && cdf[i] < prob) ++i;
    w.at.push_back(pdf[i].first);
  }
  return w;
}

void check_guidellm(const std::vector<tc::trace_record>& rs, const tc::run_summary& s,
                    const std::vector<double>& qs) {
  std::vector<std::pair<double, double>> ttft, tpot, itl, e2e;
  double lo = 1e300, hi = -1e300, first_event = 1e300, last_event = -1e300, tokens = 0;
  double completed = 0;
  for (const auto& r : rs) {
    lo = std::min(lo, r.arrival.value_or(r.send));
    hi = std::max(hi, end_of(r));
    std::optional<double> first, last;
    double iterations = 0;
    bool content = false, done = false;
    for (const auto& c : r.chunks) {
      if (c.kind == K::text || c.kind == K::reasoning) {  // add_streaming_line returns 1
        if (!first) first = c.time;
        last = c.time;
        iterations += 1;
        content = content || c.kind == K::text;
      }
      done = done || c.kind == K::done;
    }
    // `if usage:` on every line before [DONE], or a non-streamed body; not the server's count.
    const auto usage = usage_seen(r, {tc::usage_source::usage_chunk,
                                      tc::usage_source::content_chunk, tc::usage_source::body});
    const double end = done_or_end(r);  // request_end
    first_event = std::min(first_event, first.value_or(end));
    last_event = std::max(last_event, last.value_or(end));
    // It stops reading at [DONE]: a failure after it is never seen.
    const bool ok = r.ok || done;
    if (!ok || !(content || (usage && *usage > 0))) {  // errored, post_validation
      tokens += iterations;                            // output metrics cleared: token_iterations
      continue;
    }
    const double n = usage ? *usage : iterations;
    tokens += n;
    completed += 1;
    ttft.emplace_back(first ? *first - r.send : 0.0, 1.0);
    if (n > 0) tpot.emplace_back((last.value_or(end) - r.send) / n, n);
    if (n > 1) itl.emplace_back(first ? (*last - *first) / (n - 1) : 0.0, n - 1);
    e2e.emplace_back(end - r.send, 1.0);
  }
  CHECK(s.completed == static_cast<std::uint64_t>(completed));
  CHECK(rel(*s.duration, hi - lo) < 1e-9);
  CHECK(rel(*s.request_throughput, static_cast<double>(rs.size()) / (hi - lo)) < 1e-9);
  CHECK(rel(*s.output_throughput, tokens / (last_event - first_event)) < 1e-9);
  const std::pair<const tc::distribution*, const std::vector<std::pair<double, double>>*>
      compared[] = {{&s.ttft, &ttft}, {&s.tpot, &tpot}, {&s.itl, &itl}, {&s.e2e, &e2e}};
  for (const auto& [d, xw] : compared) {
    const auto w = from_values(*xw, qs);
    CHECK(d->count == static_cast<std::uint64_t>(std::llround(w.count)));
    CHECK(rel(*d->mean, w.mean) < 1e-9);
    CHECK(rel(*d->stddev, w.stddev) < 1e-9);
    for (std::size_t i = 0; i < qs.size(); ++i) {
      CAPTURE(qs[i]);
      CHECK(rel(*d->at(qs[i]), w.at[i]) < 1e-9);
    }
  }
}

void check_against(const tc::run_summary& s, const tool_result& t, const tc::profile& p,
                   const std::vector<double>& qs) {
  CAPTURE(p.name);
  CHECK(s.completed == static_cast<std::uint64_t>(t.completed));
  CHECK(rel(*s.duration, t.duration) < 1e-9);
  CHECK(rel(*s.output_throughput, t.output_throughput.value_or(t.output_tokens / t.duration)) <
        1e-9);
  const std::pair<const tc::distribution*, const std::vector<double>*> compared[] = {
      {&s.ttft, &t.ttft}, {&s.tpot, &t.tpot}, {&s.itl, &t.itl}, {&s.e2e, &t.e2el}};
  for (std::size_t m = 0; m < 4; ++m) {
    const auto& [d, x] = compared[m];
    CAPTURE(m);
    REQUIRE(d->count == x->size());
    if (x->empty()) continue;
    if (t.mean_ns[m]) {  // exact: the tool's own integer mean
      CHECK(std::llround(*d->mean * 1e9) == *t.mean_ns[m]);
    } else if (t.mean_ms[m]) {  // exact: the tool's own float mean
      CHECK(static_cast<float>(*d->mean * 1e3) == *t.mean_ms[m]);
    } else if (m == 3 && t.e2e_mean_median_swapped) {
      CHECK(rel(*d->mean, pct_linear(*x, 0.5)) < 1e-9);
      CHECK(rel(*d->median, mean(*x)) < 1e-9);
    } else {
      CHECK(rel(*d->mean, mean(*x)) < 1e-9);
    }
    if (p.std_ddof) CHECK(rel(*d->stddev, stdev(*x, *p.std_ddof)) < 1e-9);
    for (double q : qs) {
      double want = 0;
      switch (p.percentile_method) {
        case tc::quantile_method::linear: want = pct_linear(*x, q / 100); break;
        case tc::quantile_method::lower: want = pct_lower(*x, q / 100); break;
        case tc::quantile_method::nearest_rank: want = pct_nearest(*x, q / 100); break;
      }
      CAPTURE(q);
      CHECK(rel(*d->at(q), want) < 1e-9);
    }
  }
}
}  // namespace

TEST_CASE("profiles: each tool's published formula, on a random trace, within 1e-9") {
  std::vector<tc::trace_record> recs = random_trace(42, 400);
  const auto seps = separating();
  recs.insert(recs.end(), seps.begin(), seps.end());
  std::vector<tc::trace_timeline> tls;
  for (const auto& r : recs) {
    REQUIRE_FALSE(tc::validate(r));
    tls.push_back(tc::to_timeline(r));
  }
  const std::vector<double> qs{1, 25, 50, 90, 99, 99.9};
  tc::summary_options o;
  o.percentiles = qs;
  namespace P = tc::profiles;
  const std::pair<const tc::profile*, tool_result> tools[] = {
      {&P::vllm, vllm_tool(recs)},
      {&P::vllm_legacy, vllm_legacy_tool(recs, false)},
      {&P::vllm_legacy_chat, vllm_legacy_tool(recs, true)},
      {&P::sglang_openai, sglang_tool(recs, false)},
      {&P::sglang_native, sglang_tool(recs, true)},
      {&P::genai_perf, genai_tool(recs)},
      {&P::aiperf, aiperf_tool(recs)},
      {&P::llmperf, llmperf_tool(recs)},
      {&P::trtllm_bench, trtllm_tool(recs)},
      {&P::gpt_manager_benchmark, gpt_manager_tool(recs)},
      {&P::mlperf, mlperf_tool(recs)},
      {&P::inference_perf, inference_perf_tool(recs, true)},
      {&P::inference_perf_no_tokenizer, inference_perf_tool(recs, false)}};
  for (const auto& [p, t] : tools) check_against(tc::summarize(tls, *p, o), t, *p, qs);
  check_guidellm(recs, tc::summarize(tls, P::guidellm, o), qs);
  CHECK(tc::summarize(tls, P::inference_perf, o).quirks.not_streamable > 0);
  CHECK(tc::summarize(tls, P::guidellm, o).quirks.ttft_defaulted > 0);
  // The trace exercises every quirk the profiles reproduce.
  CHECK(tc::summarize(tls, P::vllm_legacy_chat, o).quirks.gaps_split > 0);
  CHECK(tc::summarize(tls, P::vllm_legacy, o).quirks.ttft_defaulted > 0);
  CHECK(tc::summarize(tls, P::genai_perf, o).quirks.one_response > 0);
  CHECK(tc::summarize(tls, P::trtllm_bench, o).quirks.ttft_defaulted > 0);
  CHECK(tc::summarize(tls, P::trtllm_bench, o).quirks.failed_left_out > 0);
  const auto ml = tc::summarize(tls, P::mlperf, o);
  CHECK(ml.quirks.negative_tpot > 0);
  CHECK(ml.quirks.no_first_token > 0);
  CHECK(ml.quirks.ended_after_last_issued > 0);
  CHECK(ml.tpot.mean_by_tool);
  CHECK(tc::summarize(tls, P::gpt_manager_benchmark, o).ttft.mean_by_tool);
  // Summarising every profile at once (shared ITL streams, shared sorts) changes nothing.
  std::vector<const tc::profile*> all(tc::all_profiles().begin(), tc::all_profiles().end());
  const auto together = tc::summarize(tls, all, o);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto alone = tc::summarize(tls, *all[i], o);
    CAPTURE(all[i]->name);
    CHECK(together[i].itl.count == alone.itl.count);
    CHECK(together[i].itl.mean == alone.itl.mean);
    CHECK(together[i].itl.at(99) == alone.itl.at(99));
    CHECK(together[i].ttft.at(50) == alone.ttft.at(50));
    CHECK(together[i].output_throughput == alone.output_throughput);
  }
}

// --- issue 20: one test per quirk, on records that show it -----------------------------------

namespace {
namespace P = tc::profiles;

tc::trace_record rec(double send, std::vector<tc::trace_chunk> chunks, double end,
                     std::optional<std::uint64_t> usage = std::nullopt, bool ok = true) {
  tc::trace_record r;
  r.arrival = send;
  r.send = send;
  r.chunks = std::move(chunks);
  r.end = end;
  r.usage_output_tokens = usage;
  r.ok = ok;
  return r;
}

tc::run_summary run(const tc::profile& p, const std::vector<tc::trace_record>& recs,
                    std::optional<double> benchmark_start = std::nullopt) {
  tc::summary_options o;
  o.percentiles = {50};
  tc::run_summarizer<tc::trace_timeline> s(p, o);
  for (const auto& r : recs) s.add(tc::to_timeline(r));
  if (benchmark_start) s.set_benchmark_start(tc::trace_time(*benchmark_start));
  return s.take_summary();
}

/// The count of warning `quirk` in `s` (0: not warned), checking that its message names the
/// profile and the count.
std::uint64_t warned(const tc::run_summary& s, const std::string& quirk) {
  for (const auto& w : tc::profile_warnings(s))
    if (w.quirk == quirk) {
      CHECK(w.message.rfind(s.profile + ": ", 0) == 0);
      return w.count;
    }
  return 0;
}

std::vector<double> pooled_itl(const tc::profile& p, const tc::trace_record& r) {
  std::vector<double> v;
  (void)tc::evaluate(p, tc::to_timeline(r), [&](double g) noexcept { v.push_back(g); });
  return v;
}
}  // namespace

TEST_CASE("issue 20 item 1: legacy vLLM prints the median E2E as the mean and the mean as median") {
  auto ending = [](double e) { return rec(0, {{0.05, 1}, {e, 1}, {e, 0, K::done}}, e); };
  const std::vector<tc::trace_record> recs = {ending(0.1), ending(0.2), ending(0.6)};
  const auto legacy = run(P::vllm_legacy, recs);
  CHECK(close(legacy.e2e.mean, 0.2));    // np.median
  CHECK(close(legacy.e2e.median, 0.3));  // np.mean
  CHECK(warned(legacy, "mean_median_swapped") == 1);
  const auto chat = run(P::vllm_legacy_chat, recs);
  CHECK(close(chat.e2e.mean, 0.2));
  CHECK(warned(chat, "mean_median_swapped") == 1);
  const auto current = run(P::vllm, recs);  // `vllm bench serve`: fixed
  CHECK(close(current.e2e.mean, 0.3));
  CHECK(warned(current, "mean_median_swapped") == 0);
  // Equal mean and median: the swap changes nothing, and nothing is said.
  const auto same = run(P::vllm_legacy, {recs[1], recs[1]});
  CHECK(warned(same, "mean_median_swapped") == 0);
}

TEST_CASE("issue 20 item 2: legacy vLLM never reads usage: N is the re-encoded text") {
  const auto zero = rec(0, {{0.1, 1}, {0.2, 1}, {0.3, 1}, {0.31, 0, K::done}}, 0.31, 0);
  CHECK(tc::evaluate(P::vllm_legacy, tc::to_timeline(zero)).output_tokens == 3);
  CHECK(warned(run(P::vllm_legacy, {zero}), "usage_not_read") == 1);
  auto agreeing = zero;
  agreeing.usage_output_tokens = 3;
  CHECK(warned(run(P::vllm_legacy, {agreeing}), "usage_not_read") == 0);
  for (const tc::profile* p :
       {&P::vllm_legacy, &P::vllm_legacy_chat, &P::genai_perf, &P::aiperf, &P::llmperf}) {
    CAPTURE(p->name);
    CHECK_FALSE(p->requests_usage);
    CHECK(tc::evaluate(*p, tc::to_timeline(zero)).output_tokens == 3);
  }
}

TEST_CASE("issue 20 items 3 and 15: a completed answer without a response keeps TTFT 0") {
  // Role chunk, [DONE], no text: success with the default ttft = 0.0.
  const auto empty = rec(1.0, {{1.2, 0, K::empty}, {1.3, 0, K::done}}, 1.3);
  const auto text = rec(2.0, {{2.1, 1}, {2.2, 1}, {2.3, 0, K::done}}, 2.3);
  for (const tc::profile* p : {&P::vllm_legacy, &P::vllm_legacy_chat, &P::sglang_openai,
                               &P::sglang_native, &P::llmperf, &P::trtllm_bench}) {
    CAPTURE(p->name);
    const auto s = run(*p, {empty, text});
    CHECK(s.ttft.count == 2);
    CHECK(*s.ttft.min == 0.0);
    CHECK(warned(s, "ttft_defaulted") == 1);
    CHECK(warned(run(*p, {text}), "ttft_defaulted") == 0);
  }
  // trtllm-bench: TPOT 0 too (item 15); tokchron leaves both out.
  const auto trt = tc::evaluate(P::trtllm_bench, tc::to_timeline(empty));
  CHECK(trt.ttft == 0.0);
  CHECK(trt.tpot == 0.0);
  const auto canon = tc::evaluate(P::canonical, tc::to_timeline(empty));
  CHECK_FALSE(canon.ttft);
  CHECK_FALSE(canon.tpot);
  CHECK(warned(run(P::canonical, {empty, text}), "ttft_defaulted") == 0);
  // The engine-side tools that would read an unset first-token time: no TTFT, and said so.
  for (const tc::profile* p : {&P::gpt_manager_benchmark, &P::mlperf}) {
    CAPTURE(p->name);
    const auto s = run(*p, {empty, text});
    CHECK(s.ttft.count == 1);
    CHECK(warned(s, "no_first_token") == 1);
    CHECK(warned(run(*p, {text}), "no_first_token") == 0);
  }
}

TEST_CASE("issue 20 item 4: the legacy chat loop restarts the gap at an empty chunk") {
  const auto r = rec(0, {{0.1, 1}, {0.15, 0, K::empty}, {0.2, 1}, {0.3, 1}}, 0.3);
  const auto chat = pooled_itl(P::vllm_legacy_chat, r);
  REQUIRE(chat.size() == 2);
  CHECK(close(chat[0], 0.05));  // 0.2 - 0.15: the empty chunk split the gap
  CHECK(close(chat[1], 0.1));
  const auto completions = pooled_itl(P::vllm_legacy, r);
  REQUIRE(completions.size() == 2);
  CHECK(close(completions[0], 0.1));
  CHECK(warned(run(P::vllm_legacy_chat, {r}), "gaps_split") == 1);
  CHECK(warned(run(P::vllm_legacy, {r}), "gaps_split") == 0);
  // A role chunk before the first token splits nothing.
  const auto role = rec(0, {{0.05, 0, K::empty}, {0.1, 1}, {0.2, 1}}, 0.2);
  CHECK(warned(run(P::vllm_legacy_chat, {role}), "gaps_split") == 0);
}

TEST_CASE("issue 20 item 5: GenAI-Perf gives no ITL/TPOT when all tokens came in one response") {
  const auto one = rec(0, {{0.1, 3}}, 0.1);
  const auto r = tc::evaluate(P::genai_perf, tc::to_timeline(one));
  CHECK_FALSE(r.tpot);
  CHECK_FALSE(r.itl);
  const auto s = run(P::genai_perf, {one});
  CHECK(s.tpot.count == 0);
  CHECK(s.itl.count == 0);
  CHECK(warned(s, "one_response") == 1);
  const auto two = rec(0, {{0.1, 2}, {0.2, 1}}, 0.2);
  CHECK(tc::evaluate(P::genai_perf, tc::to_timeline(two)).tpot);
  CHECK(warned(run(P::genai_perf, {two}), "one_response") == 0);
  // AIPerf has no such condition: osl >= 2 is enough.
  CHECK(tc::evaluate(P::aiperf, tc::to_timeline(one)).tpot == 0.0);
}

TEST_CASE("issue 20 item 6: AIPerf skips chunks with empty content") {
  const auto r = rec(0, {{0.1, 0, K::empty}, {0.2, 1}, {0.3, 1}, {0.35, 0, K::empty}}, 0.4);
  const auto a = tc::evaluate(P::aiperf, tc::to_timeline(r));
  CHECK(close(a.ttft, 0.2));
  CHECK(close(a.e2e, 0.3));
  CHECK(close(a.tpot, 0.1));
}

TEST_CASE("issue 20 items 7 and 8: a tool that never asks for usage never sees a usage chunk") {
  // Role chunk, two text chunks, a usage-only chunk, [DONE].
  const auto r =
      rec(0, {{0.1, 0, K::empty}, {0.2, 1}, {0.3, 1}, {0.35, 0, K::usage}, {0.36, 0, K::done}},
          0.36, 2);
  // llmperf: tokens_received = 3 (role chunk included, usage chunk absent): ITL = 0.3 / 3.
  CHECK(close(tc::evaluate(P::llmperf, tc::to_timeline(r)).itl, 0.1));
  // AIPerf: the last response is the last text chunk, whatever follows.
  CHECK(close(tc::evaluate(P::aiperf, tc::to_timeline(r)).e2e, 0.3));
  for (const tc::profile* p :
       {&P::vllm_legacy, &P::vllm_legacy_chat, &P::genai_perf, &P::aiperf, &P::llmperf}) {
    CAPTURE(p->name);
    CHECK(warned(run(*p, {r}), "usage_chunks_ignored") == 1);
    auto no_usage = r;
    no_usage.chunks.erase(no_usage.chunks.begin() + 3);
    CHECK(warned(run(*p, {no_usage}), "usage_chunks_ignored") == 0);
  }
  // The tools that ask for usage (vllm, SGLang) and the engine-side ones: nothing to say.
  for (const tc::profile* p : {&P::vllm, &P::sglang_openai, &P::trtllm_bench, &P::mlperf}) {
    CAPTURE(p->name);
    CHECK(warned(run(*p, {r}), "usage_chunks_ignored") == 0);
  }
  CHECK(P::vllm.requests_usage);
  CHECK(P::sglang_openai.requests_usage);
}

TEST_CASE("issue 20 item 9: trtllm-bench's duration counts completed requests only") {
  const auto good = rec(0, {{0.1, 1}, {0.2, 1}}, 0.2);
  const auto failed = rec(0.1, {{0.3, 1}}, 5.0, std::nullopt, false);
  const auto s = run(P::trtllm_bench, {good, failed});
  CHECK(close(s.duration, 0.2));
  CHECK(warned(s, "failed_left_out") == 1);
  CHECK(close(run(P::canonical, {good, failed}).duration, 5.0));
  CHECK(warned(run(P::trtllm_bench, {good}), "failed_left_out") == 0);
}

TEST_CASE("issue 35 item 1: trtllm-bench's duration runs from the first completed request's send") {
  // StatsKeeper.generate_statistics_summary: total_latency_ns = max(end_timestamp) -
  // min(start_timestamp) over its records, which hold completed requests only; start_timestamp is
  // the submission (the send), not a benchmark start. A request that failed first moves nothing.
  const auto failed_first = rec(0.0, {{0.05, 1}}, 0.06, std::nullopt, false);
  auto late = rec(0.5, {{0.6, 1}, {0.7, 1}}, 0.9);
  late.arrival = 0.4;  // an issue delay: the start is the send all the same
  const auto s = run(P::trtllm_bench, {failed_first, late}, 0.0);
  CHECK(close(s.duration, 0.7 - 0.5));
  CHECK(close(s.request_throughput, 1 / 0.2));
  CHECK(close(s.output_throughput, 2 / 0.2));
  CHECK(warned(s, "failed_left_out") == 1);
  CHECK(warned(s, "no_benchmark_start") == 0);
  CHECK(warned(run(P::trtllm_bench, {failed_first, late}), "no_benchmark_start") == 0);
  // The canonical duration starts at the benchmark start and ends at the last finish.
  CHECK(close(run(P::canonical, {failed_first, late}, 0.0).duration, 0.9));
}

TEST_CASE("issue 20 item 10: gptManagerBenchmark computes in float ms, no TPOT for N = 1") {
  const auto one = rec(0, {{0.123456789, 1}}, 0.2);
  const auto two = rec(0, {{0.2, 1}, {0.2345678911, 1}}, 0.3);
  const auto three = rec(0, {{0.3000000007, 1}, {0.31, 2}}, 0.4);
  const auto r1 = tc::evaluate(P::gpt_manager_benchmark, tc::to_timeline(one));
  CHECK_FALSE(r1.tpot);  // the tool's avgGenT2TLatency stays empty: its intent
  const auto s = run(P::gpt_manager_benchmark, {one, two, three});
  CHECK(s.tpot.count == 2);
  // Hand computation in float: duration<float, milli> per request, a float sum / float(3).
  const float t1 = 123456789.F / 1e6F, t2 = 200000000.F / 1e6F, t3 = 300000001.F / 1e6F;
  const float want = (0.F + t1 + t2 + t3) / 3.F;
  CHECK(static_cast<float>(*s.ttft.mean * 1e3) == want);
  CHECK(*s.ttft.mean != (0.123456789 + 0.2 + 0.300000001) / 3);
  CHECK(warned(s, "mean_by_tool") >= 1);
  // Exact double arithmetic (canonical) says nothing.
  CHECK(warned(run(P::canonical, {one, two, three}), "mean_by_tool") == 0);
  // Whole milliseconds are exact in float: nothing changes, nothing is said.
  const auto whole = rec(0, {{0.1, 1}, {0.2, 1}}, 0.2);
  CHECK(warned(run(P::gpt_manager_benchmark, {whole, whole}), "mean_by_tool") == 0);
}

TEST_CASE("issue 20 item 11: MLPerf's means are int64 ns sums over size_t, truncated") {
  const auto a = rec(0, {{1e-9, 2}}, 1e-9), b = rec(0, {{2e-9, 2}}, 2e-9);
  const auto s = run(P::mlperf, {a, b});
  CHECK(std::llround(*s.ttft.mean * 1e9) == 1);  // (1 + 2) / 2 = 1 in integer ns
  CHECK(close(run(P::canonical, {a, b}).ttft.mean, 1.5e-9));
  CHECK(warned(s, "mean_by_tool") >= 1);
  CHECK(warned(run(P::mlperf, {a, a}), "mean_by_tool") == 0);
}

TEST_CASE("issue 20 item 12: MLPerf's duration ends at the last issued query's completion") {
  const auto early_long = rec(0, {{1, 1}, {10, 1}}, 10);
  const auto late_short = rec(1, {{2, 1}, {5, 1}}, 5);
  const auto s = run(P::mlperf, {early_long, late_short});
  CHECK(close(s.duration, 5.0));
  CHECK(close(s.output_throughput, 4.0 / 5.0));
  CHECK(close(s.request_throughput, 1.0 / 5.0));  // (n - 1) / duration
  CHECK(warned(s, "ended_after_last_issued") == 1);
  CHECK(close(run(P::canonical, {early_long, late_short}).duration, 10.0));
  const auto in_order = run(P::mlperf, {late_short, rec(2, {{3, 1}, {6, 1}}, 6)});
  CHECK(warned(in_order, "ended_after_last_issued") == 0);
}

TEST_CASE("issue 20 item 13: MLPerf keeps a negative TPOT for fewer than 2 tokens") {
  // N = 1: n_tokens is set to 0, TPOT = (latency - TTFT) / -1, kept; its token is not counted.
  // With the final response at the token (item 16) that TPOT is -0.
  const auto one = rec(0, {{0.1, 1}}, 0.3);
  const auto r = tc::evaluate(P::mlperf, tc::to_timeline(one));
  REQUIRE(r.tpot);
  CHECK(*r.tpot == 0.0);
  CHECK(r.output_tokens == 0);
  const auto two = rec(0, {{0.1, 1}, {0.3, 1}}, 0.3);
  const auto s = run(P::mlperf, {one, two});
  CHECK(s.tpot.count == 2);
  CHECK(s.output_tokens == 2);
  CHECK(warned(s, "negative_tpot") == 1);
  CHECK(warned(run(P::mlperf, {two}), "negative_tpot") == 0);
  // A negative int64 sum goes through the unsigned division: -3 ns over 3 samples.
  const auto d = tc::make_distribution({-5e-9, 1e-9, 1e-9}, P::mlperf, {50}, true);
  const std::uint64_t wrapped = (~std::uint64_t{0} - 2) / 3;  // (2^64 - 3) / 3
  CHECK(*d.mean == static_cast<double>(static_cast<std::int64_t>(wrapped)) / 1e9);
  CHECK(d.mean_by_tool);
}

TEST_CASE("issue 20 item 14: SGLang's N is the usage count only when a chunk carried it") {
  const auto no_chunk = rec(0, {{0.1, 1}, {0.2, 1}, {0.3, 1}}, 0.3, 0);
  CHECK(tc::evaluate(P::sglang_openai, tc::to_timeline(no_chunk)).output_tokens == 3);
  CHECK(tc::evaluate(P::sglang_native, tc::to_timeline(no_chunk)).output_tokens == 3);
  auto with_chunk = no_chunk;
  with_chunk.chunks.push_back({0.31, 0, K::usage});
  with_chunk.end = 0.31;
  CHECK(tc::evaluate(P::sglang_openai, tc::to_timeline(with_chunk)).output_tokens == 0);
}

TEST_CASE("issue 20 item 16: an end after the last token does not move engine-side tools") {
  const auto base = rec(0, {{0.1, 1}, {0.2, 2}}, 0.2);
  auto trailing = base;
  trailing.chunks.push_back({0.25, 0, K::usage});
  trailing.chunks.push_back({0.26, 0, K::done});
  trailing.end = 0.9;
  for (const tc::profile* p : {&P::trtllm_bench, &P::gpt_manager_benchmark, &P::mlperf}) {
    CAPTURE(p->name);
    const auto a = tc::evaluate(*p, tc::to_timeline(base));
    const auto b = tc::evaluate(*p, tc::to_timeline(trailing));
    CHECK(a.e2e == b.e2e);
    CHECK(a.ttft == b.ttft);
    CHECK(a.tpot == b.tpot);
    CHECK(a.output_tokens == b.output_tokens);
    CHECK(run(*p, {base}).duration == run(*p, {trailing}).duration);
    CHECK(tc::profile_warnings(run(*p, {trailing}, 0.0)).empty());
  }
}

TEST_CASE("issue 20 item 17: the benchmark start begins every profile's duration but two") {
  auto a = rec(1.0, {{1.1, 1}, {1.2, 1}}, 2.0);
  a.arrival = 0.8;
  const auto b = rec(1.5, {{1.6, 1}, {1.7, 1}}, 3.0);
  for (const tc::profile* p : tc::all_profiles()) {
    CAPTURE(p->name);
    const auto with = run(*p, {a, b}, 0.5);
    const auto without = run(*p, {a, b});
    CHECK(warned(with, "no_benchmark_start") == 0);
    if (!p->uses_benchmark_start()) {  // GenAI-Perf, AIPerf, trtllm-bench, inference-perf
      CHECK(with.duration == without.duration);
      CHECK(warned(without, "no_benchmark_start") == 0);
      // The first request's send to the last response (inference-perf: the last end_time).
      const double last =
          p->end == tc::e2e_end::done_chunk || p->end == tc::e2e_end::finish ? 3.0 : 1.7;
      CHECK(close(with.duration, last - 1.0));
      continue;
    }
    const double end = p->end == tc::e2e_end::last_token_chunk ? 1.7 : 3.0;
    CHECK(close(with.duration, end - 0.5));
    CHECK(close(without.duration, end - 0.8));  // the earliest intended arrival
    CHECK(warned(without, "no_benchmark_start") == 1);
  }
  // A known duration (a result file's) needs no start.
  tc::summary_options o;
  o.duration = 10;
  tc::run_summarizer<tc::trace_timeline> s(P::vllm, o);
  s.add(tc::to_timeline(a));
  CHECK(warned(s.take_summary(), "no_benchmark_start") == 0);
}

TEST_CASE("issue 20: no warning on a trace where no quirk applies") {
  // One text chunk per token, no role / usage / [DONE] chunk, N >= 2 everywhere, whole ms,
  // equal E2Es (legacy vLLM's swap changes nothing), the last issued request ends last.
  std::vector<tc::trace_record> recs;
  for (int i = 0; i < 4; ++i) {
    const double t = i;
    recs.push_back(rec(t, {{t + 0.1, 1}, {t + 0.2, 1}, {t + 0.3, 1}}, t + 0.3, 3));
  }
  for (const tc::profile* p : tc::all_profiles()) {
    CAPTURE(p->name);
    const auto w = tc::profile_warnings(run(*p, recs, 0.0));
    for (const auto& x : w) CAPTURE(x.message);
    CHECK(w.empty());
  }
}

// Issue 35: GuideLLM (vllm-project/guidellm@ee7a77457ba6) and inference-perf
// (kubernetes-sigs/inference-perf@7de5ef2ed6f7), one test per quirk.
TEST_CASE(
    "issue 35: GuideLLM's TPOT includes TTFT and divides by N; its ITL is (last - first)/(N-1)") {
  const auto r = rec(0, {{0.5, 1}, {0.6, 1}, {0.7, 1}}, 0.7, 3);
  const auto g = tc::evaluate(P::guidellm, tc::to_timeline(r));
  CHECK(close(g.ttft, 0.5));
  CHECK(close(g.tpot, 0.7 / 3));  // time_per_output_token_ms: (last - request_start) / N
  CHECK(close(g.itl, 0.1));       // inter_token_latency_ms: (last - first) / (N - 1)
  CHECK(close(tc::evaluate(P::vllm, tc::to_timeline(r)).tpot, 0.1));
}

TEST_CASE("issue 35: GuideLLM's N is the usage count, else one token per counted line") {
  const auto no_usage = rec(0, {{0.1, 3}, {0.2, 2}}, 0.2);
  CHECK(tc::evaluate(P::guidellm, tc::to_timeline(no_usage)).output_tokens == 2);
  CHECK(tc::evaluate(P::canonical, tc::to_timeline(no_usage)).output_tokens == 5);
  auto with_usage = no_usage;
  with_usage.usage_output_tokens = 5;
  with_usage.usage_from = tc::usage_source::content_chunk;
  CHECK(tc::evaluate(P::guidellm, tc::to_timeline(with_usage)).output_tokens == 5);
  with_usage.usage_output_tokens = 0;  // `or 0`: usage 0 stays 0, no TPOT or ITL
  const auto zero = tc::evaluate(P::guidellm, tc::to_timeline(with_usage));
  CHECK(zero.output_tokens == 0);
  CHECK_FALSE(zero.tpot);
  CHECK_FALSE(zero.itl);
}

TEST_CASE("issue 35: GuideLLM's E2E ends when the [DONE] line breaks the loop") {
  auto r = rec(0, {{0.1, 1}, {0.2, 1}, {0.35, 0, K::done}}, 0.5, 2);
  CHECK(close(tc::evaluate(P::guidellm, tc::to_timeline(r)).e2e, 0.35));
  r.chunks.pop_back();
  CHECK(close(tc::evaluate(P::guidellm, tc::to_timeline(r)).e2e, 0.5));
}

TEST_CASE("issue 35: GuideLLM weighs TPOT by N and ITL by N - 1") {
  auto a = rec(0, {{0.1, 1}, {0.2, 1}}, 0.2, 2);             // TPOT 0.1, ITL 0.1
  auto b = rec(0, {{0.1, 1}, {0.8, 1}}, 0.8, 8);             // TPOT 0.1, ITL 0.1
  auto c = rec(1, {{1.2, 1}, {1.3, 1}, {1.4, 1}}, 1.4, 4);   // TPOT 0.1, ITL 0.1
  auto d = rec(2, {{2.4, 1}, {2.6, 1}, {3.0, 1}}, 3.0, 10);  // TPOT 0.1, ITL 0.6 / 9
  for (auto* r : {&a, &b, &c, &d}) r->usage_from = tc::usage_source::content_chunk;
  const auto s = run(P::guidellm, {a, b, c, d});
  CHECK(s.tpot.count == 2 + 8 + 4 + 10);
  CHECK(close(s.tpot.mean, (2 * 0.1 + 8 * 0.1 + 4 * 0.1 + 10 * 0.1) / 24));
  CHECK(s.itl.count == 1 + 7 + 3 + 9);
  const double itl_b = 0.7 / 7, itl_c = 0.2 / 3, itl_d = 0.6 / 9;
  const double want = (1 * 0.1 + 7 * itl_b + 3 * itl_c + 9 * itl_d) / 20;
  CHECK(std::fabs(*s.itl.mean - want) <= 1e-15);
  // The unweighted mean (one value per request) differs.
  CHECK(std::fabs(*s.itl.mean - (0.1 + itl_b + itl_c + itl_d) / 4) > 1e-3);
  // Median by weight: d's ITL (weight 9 of 20) reaches the half.
  CHECK(close(s.itl.median, std::min({itl_b, itl_c, itl_d})));
}

TEST_CASE("issue 35: GuideLLM's percentile is the first value whose float cumsum reaches p") {
  std::vector<double> v;
  for (int i = 1; i <= 10; ++i) v.push_back(i * 1e-3);
  // cumsum of ten 0.1s is 0.8999999999999999 at the ninth: p90 is the tenth value.
  const auto g = tc::make_distribution(v, P::guidellm, {50, 90});
  CHECK(close(g.at(90), 10e-3));
  CHECK(close(g.at(50), 5e-3));
  CHECK(close(tc::make_distribution(v, P::gpt_manager_benchmark, {90}).at(90), 9e-3));
  CHECK(close(g.mean, 5.5e-3));
  CHECK(close(g.stddev, std::sqrt(8.25) * 1e-3));  // population std
}

TEST_CASE("issue 35: GuideLLM's rates: every request over the window, tokens over the token span") {
  const auto good = rec(0, {{1.0, 1}, {2.0, 1}}, 2.0, 2);
  const auto failed = rec(0.5, {{1.5, 1}}, 4.0, std::nullopt, false);
  const auto s = run(P::guidellm, {good, failed}, 0.0);
  CHECK(close(s.duration, 4.0));
  CHECK(close(s.request_throughput, 2 / 4.0));  // errored requests count
  // 2 + 1 output tokens (the errored one's counted line) over the first to the last token event.
  CHECK(close(s.output_throughput, 3 / 1.0));
  CHECK(close(run(P::canonical, {good, failed}, 0.0).output_throughput, 2 / 4.0));
}

TEST_CASE("issue 35: GuideLLM's success needs content or usage; a usage-only answer keeps TTFT 0") {
  const auto reasoning_only = rec(0, {{0.1, 2, K::reasoning}}, 0.2);
  CHECK_FALSE(tc::evaluate(P::guidellm, tc::to_timeline(reasoning_only)).completed);
  auto with_usage = reasoning_only;
  with_usage.usage_output_tokens = 2;
  with_usage.usage_from = tc::usage_source::content_chunk;
  const auto ru = tc::evaluate(P::guidellm, tc::to_timeline(with_usage));
  CHECK(ru.completed);
  CHECK(close(ru.ttft, 0.1));  // the reasoning line counts for TTFT
  const auto no_line = rec(0, {{0.1, 0, K::empty}, {0.3, 0, K::usage}}, 0.4, 4);
  const auto nl = tc::evaluate(P::guidellm, tc::to_timeline(no_line));
  CHECK(nl.completed);
  CHECK(close(nl.ttft, 0.0));
  CHECK(close(nl.tpot, 0.4 / 4));  // request_end - start over N
  const auto s = run(P::guidellm, {no_line}, 0.0);
  CHECK(warned(s, "ttft_defaulted") == 1);
  CHECK(s.itl.count == 3);  // the missing ITL enters as 0 with weight N - 1
  CHECK(close(s.itl.max, 0.0));
  CHECK(warned(run(P::guidellm, {rec(0, {{0.1, 1}, {0.2, 1}}, 0.2, 2)}, 0.0), "ttft_defaulted") ==
        0);
}

TEST_CASE("issue 35: GuideLLM's TTFOT is the first content line; without content it enters as 0") {
  const auto think = rec(0, {{0.1, 2, K::reasoning}, {0.3, 1}, {0.4, 1}}, 0.4, 4);
  const auto t = tc::evaluate(P::guidellm, tc::to_timeline(think));
  CHECK(close(t.ttft, 0.1));                                       // the reasoning line
  CHECK(close(t.ttfa, 0.3));                                       // time_to_first_output_token_ms
  auto reasoning_only = rec(1, {{1.2, 3, K::reasoning}}, 1.3, 3);  // usage: successful
  reasoning_only.usage_from = tc::usage_source::content_chunk;
  const auto s = run(P::guidellm, {think, reasoning_only}, 0.0);
  CHECK(s.ttfa.count == 2);
  CHECK(close(s.ttfa.min, 0.0));
  CHECK(close(s.ttfa.max, 0.3));
  CHECK(run(P::vllm, {think, reasoning_only}, 0.0).ttfa.count == 0);  // vLLM reports none
}

TEST_CASE("issue 35: inference-perf gives a request with fewer than 2 tokens no TTFT or TPOT") {
  const auto one = rec(0, {{0.1, 1}}, 0.2);
  const auto r = tc::evaluate(P::inference_perf, tc::to_timeline(one));
  CHECK(r.completed);
  CHECK_FALSE(r.ttft);
  CHECK_FALSE(r.tpot);
  CHECK(close(r.e2e, 0.2));
  const auto two = rec(0, {{0.1, 2}}, 0.2);  // 2 tokens in one chunk: streamable, TPOT 0
  const auto t = tc::evaluate(P::inference_perf, tc::to_timeline(two));
  CHECK(close(t.ttft, 0.1));
  CHECK(close(t.tpot, 0.0));
  const auto s = run(P::inference_perf, {one, two});
  CHECK(s.ttft.count == 1);
  CHECK(s.e2e.count == 2);
  CHECK(warned(s, "not_streamable") == 1);
  CHECK(warned(run(P::inference_perf, {two}), "not_streamable") == 0);
}

TEST_CASE("issue 35: inference-perf stamps every token with its chunk's time: gap, then zeros") {
  const auto r = rec(0, {{0.1, 2}, {0.4, 3}}, 0.4);
  const auto v = pooled_itl(P::inference_perf, r);  // the first chunk's extra token, then the gap
  REQUIRE(v.size() == 4);
  CHECK(v[0] == 0.0);
  CHECK(close(v[1], 0.3));
  CHECK(v[2] == 0.0);
  CHECK(v[3] == 0.0);
  const auto canonical = pooled_itl(P::canonical, r);  // gap / k per token
  REQUIRE(canonical.size() == 4);
  CHECK(close(canonical[1], 0.1));
  // Reasoning chunks are not content: they give no token time.
  const auto think = rec(0, {{0.1, 5, K::reasoning}, {0.3, 1}, {0.4, 1}}, 0.4);
  const auto t = tc::evaluate(P::inference_perf, tc::to_timeline(think));
  CHECK(close(t.ttft, 0.3));
  CHECK(t.output_tokens == 2);
}

TEST_CASE("issue 35: inference-perf's total_time spans every request, failed included") {
  const auto good = rec(1.0, {{1.1, 1}, {1.2, 1}}, 1.2);
  const auto failed = rec(0.5, {{0.6, 1}}, 3.0, std::nullopt, false);
  const auto s = run(P::inference_perf, {good, failed}, 0.0);
  CHECK(close(s.duration, 3.0 - 0.5));  // min(start_time) to max(end_time), not the benchmark start
  CHECK(close(s.request_throughput, 1 / 2.5));  // successful ones only
  CHECK(close(s.output_throughput, 2 / 2.5));
  CHECK(warned(s, "no_benchmark_start") == 0);
}

// Issue 47: what each tool does after [DONE] and where its token count comes from, read in the
// tools' own code at the commits the profiles cite.
TEST_CASE("issue 47: inference-perf reads past [DONE]: E2E at the end, a later failure fails") {
  // apis/streaming_parser.py:84-113: the `break` at [DONE] leaves the loop over buffered events,
  // the outer read goes on to the end of the stream; end_time after it (openai_client.py:537).
  auto r = rec(0, {{0.1, 1}, {0.2, 2}, {0.25, 0, K::done}}, 0.4, 3);
  for (const tc::profile* p : {&P::inference_perf, &P::inference_perf_no_tokenizer}) {
    CAPTURE(p->name);
    CHECK(close(tc::evaluate(*p, tc::to_timeline(r)).e2e, 0.4));
    CHECK(close(run(*p, {r}).duration, 0.4));  // total_time: max(end_time) - min(start_time)
  }
  // A stream that breaks after [DONE] raises StreamInterruptedError (streaming_parser.py:114-119):
  // a failed request (openai_client.py:488-518).
  r.ok = false;
  CHECK_FALSE(tc::evaluate(P::inference_perf, tc::to_timeline(r)).completed);
  CHECK(warned(run(P::inference_perf, {r}), "failed_after_done") == 0);
}

TEST_CASE("issue 47: GuideLLM stops at [DONE]: a failure after it is a success ending there") {
  // backends/openai/http.py:527-535: the [DONE] line breaks the loop; request_end follows (555).
  auto r = rec(0, {{0.1, 1}, {0.2, 1}, {0.25, 0, K::done}}, 0.9, 2, false);
  r.error = "connection reset after [DONE]";
  const auto g = tc::evaluate(P::guidellm, tc::to_timeline(r));
  CHECK(g.completed);
  CHECK(close(g.e2e, 0.25));
  CHECK(close(g.ttft, 0.1));
  const auto s = run(P::guidellm, {r}, 0.0);
  CHECK(s.completed == 1);
  CHECK(warned(s, "failed_after_done") == 1);
  // Without [DONE] the failure is inside the stream it reads: errored.
  r.chunks.pop_back();
  CHECK_FALSE(tc::evaluate(P::guidellm, tc::to_timeline(r)).completed);
  CHECK(warned(run(P::guidellm, {r}, 0.0), "failed_after_done") == 0);
  // The tools that read on fail it (vLLM, SGLang: an exception after [DONE] fails the request).
  r.chunks.push_back({0.25, 0, K::done});
  for (const tc::profile* p : {&P::vllm, &P::sglang_openai, &P::inference_perf})
    CHECK_FALSE(tc::evaluate(*p, tc::to_timeline(r)).completed);
}

TEST_CASE("issue 47: each tool's N reads usage only from where the tool reads it") {
  using U = tc::usage_source;
  // Three counted chunks of 1, 1 and 3 tokens, a usage count of 7.
  auto base = rec(0, {{0.1, 1}, {0.2, 1}, {0.3, 3}}, 0.4, 7);
  struct row {
    std::optional<U> source;
    bool usage_chunk;
    std::uint64_t vllm, sglang, guidellm;
  };
  // vLLM (endpoint_request_func.py, `elif usage := data.get("usage")`): a chunk without choices
  // only. SGLang (oai_chat_client.py, `(data.get("usage") or {})` on every line) and GuideLLM
  // (request_handlers.py:1197-1198 `if usage:` on every line; compile_non_streaming's body):
  // any chunk or body. None reads the server's own count. Unread: vLLM and SGLang the chunk
  // sum (re-encode / requested length stand-in), GuideLLM its counted lines.
  const row rows[] = {
      {U::usage_chunk, true, 7, 7, 7}, {U::content_chunk, false, 5, 7, 7},
      {U::body, false, 5, 7, 7},       {U::server, false, 5, 5, 3},
      {std::nullopt, true, 7, 7, 7},   // no source: its usage chunk's
      {std::nullopt, false, 5, 5, 3},  // no source, no usage chunk: unread
  };
  for (const row& w : rows) {
    CAPTURE(w.source ? tc::to_string(*w.source) : "none");
    auto r = base;
    r.usage_from = w.source;
    if (w.usage_chunk) r.chunks.push_back({0.35, 0, K::usage});
    REQUIRE_FALSE(tc::validate(r));
    CHECK(tc::evaluate(P::vllm, tc::to_timeline(r)).output_tokens == w.vllm);
    CHECK(tc::evaluate(P::sglang_openai, tc::to_timeline(r)).output_tokens == w.sglang);
    CHECK(tc::evaluate(P::guidellm, tc::to_timeline(r)).output_tokens == w.guidellm);
    CHECK(warned(run(P::guidellm, {r}, 0.0), "usage_unseen") == (w.guidellm == 7 ? 0 : 1));
    CHECK(warned(run(P::vllm, {r}, 0.0), "usage_unseen") == (w.vllm == 7 ? 0 : 1));
  }
}

TEST_CASE("issue 47: GuideLLM counts an errored request's lines, not its tokens, in tokens/s") {
  // schemas/response.py:109-117: a request not completed has its output metrics cleared, and
  // its response is None (scheduler/worker.py:512), so output_tokens falls back to
  // token_iterations (request_stats.py:139-144), whatever usage said.
  const auto good = rec(0, {{1.0, 1}, {2.0, 1}}, 2.0);
  auto failed = rec(0.5, {{1.2, 3}, {1.5, 4}}, 3.0, 9, false);
  failed.chunks.push_back({1.6, 0, K::usage});
  failed.usage_from = tc::usage_source::usage_chunk;
  const auto f = tc::evaluate(P::guidellm, tc::to_timeline(failed));
  CHECK_FALSE(f.completed);
  CHECK(f.output_tokens == 2);  // two streamed lines, not 7 tokens nor usage 9
  const auto s = run(P::guidellm, {good, failed}, 0.0);
  CHECK(close(s.output_throughput, (2 + 2) / 1.0));  // over the first to the last token event
  CHECK(s.output_tokens == 2);                       // completed requests' N only
}

TEST_CASE("issue 47: inference-perf without a tokenizer stamps each content chunk once") {
  // apis/chat.py:564-580: output_token_times = chunk_times; reportgen/base.py:513-518 re-stamps
  // per token only with a tokenizer in the config (762-766).
  const auto one_chunk = rec(0, {{0.1, 3}}, 0.2);
  CHECK(tc::evaluate(P::inference_perf, tc::to_timeline(one_chunk)).ttft);
  const auto nt = tc::evaluate(P::inference_perf_no_tokenizer, tc::to_timeline(one_chunk));
  CHECK_FALSE(nt.ttft);  // len(output_token_times) == 1: not streamable
  CHECK_FALSE(nt.tpot);
  CHECK(nt.output_tokens == 3);
  CHECK(warned(run(P::inference_perf_no_tokenizer, {one_chunk}), "not_streamable") == 1);
  // A content chunk of 0 tokens is still stamped; per-chunk ITL.
  const auto r = rec(0, {{0.1, 2}, {0.3, 0}, {0.4, 1}}, 0.4);
  const auto with = pooled_itl(P::inference_perf, r);
  const auto without = pooled_itl(P::inference_perf_no_tokenizer, r);
  CHECK(with == std::vector<double>{0.0, 0.3});
  REQUIRE(without.size() == 2);
  CHECK(close(without[0], 0.2));
  CHECK(close(without[1], 0.1));
  const auto e = tc::evaluate(P::inference_perf_no_tokenizer, tc::to_timeline(r));
  CHECK(close(e.tpot, 0.3 / 2));  // (last - first stamp) / (N - 1), N = 3
}

TEST_CASE("issue 42: MLPerf's 1-token TPOT is loadgen's (latency - TTFT) / -1: 0, kept") {
  // loadgen/logging.cc:442-476 (RecordSampleCompletion): n_tokens 1 is logged and set to 0, the
  // TPOT (latency - first token) / (0 - 1) stored; results.cc:100-136 (ProcessTokenLatencies)
  // sums, sorts and indexes every stored TPOT. The profile's completion is the final engine
  // response, the token's own chunk, so that TPOT is 0: on separating.jsonl the array is
  // {0, 12.5 ms, 16.666666 ms, 100 ms}: min 0, median sorted[2], mean the int64 sum / 4.
  std::vector<tc::trace_timeline> tls;
  for (const auto& r : separating()) tls.push_back(tc::to_timeline(r));
  tc::summary_options o;
  o.percentiles = {50};
  const auto s = tc::summarize(tls, P::mlperf, o);
  CHECK(s.tpot.count == 4);
  CHECK(*s.tpot.min == 0.0);
  CHECK(*s.tpot.at(50) == 16666666e-9);
  CHECK(*s.tpot.mean == static_cast<double>((0 + 12500000 + 16666666 + 100000000) / 4) / 1e9);
  CHECK(*s.tpot.max == 0.1);
  std::string message;
  for (const auto& w : tc::profile_warnings(s))
    if (w.quirk == "negative_tpot") message = w.message;
  CHECK(message.find("(latency - TTFT) / -1") != std::string::npos);
  CHECK(message.find("0 here") != std::string::npos);
}

TEST_CASE("issue 47: GuideLLM's concurrency mean: each request from its send to request_end") {
  // benchmark/schemas/metrics.py:890-904: request_concurrency over (request_start_time,
  // request_end_time), every status; request_end is taken at the [DONE] line (http.py:535-555).
  const auto a = rec(0, {{0.5, 1}, {1.0, 0, K::done}}, 3.0);  // [DONE] at 1.0, the end at 3.0
  const auto b = rec(0.5, {{1.0, 1}}, 1.5);
  const auto s = run(P::guidellm, {a, b}, 0.0);
  CHECK(close(s.duration, 3.0));
  CHECK(close(s.time_weighted_concurrency, (1.0 + 1.0) / 3.0));
  CHECK(close(run(P::canonical, {a, b}, 0.0).time_weighted_concurrency, (3.0 + 1.0) / 3.0));
}
