// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
// --rate sweep, the steady-state window and --repeat (tools/bench/sweep.hpp): the rates, the
// window's rule and its figures on hand-made runs, Student's t, and the command line against the
// scripted server.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench_cli.hpp"
#include "scripted_server.hpp"
#include "sweep.hpp"

namespace tb = tokchron_bench;
namespace tc = tokchron;
using namespace std::chrono_literals;

namespace {

tc::trace_clock::time_point at(double s) {
  return tc::trace_clock::time_point(std::chrono::nanoseconds(static_cast<std::int64_t>(s * 1e9)));
}

// A request sent at `send` whose token chunks are (time, tokens), finished at the last chunk (or
// at `end` with `reason` when given).
tc::trace_timeline request(double send, std::vector<std::pair<double, std::uint32_t>> chunks,
                           std::optional<std::uint64_t> prompt = std::nullopt,
                           std::optional<double> end = std::nullopt,
                           tc::finish_reason reason = tc::finish_reason::stop) {
  tc::trace_timeline tl;
  REQUIRE(tl.arrive(at(send)) == tc::record_status::ok);
  REQUIRE(tl.send(at(send)) == tc::record_status::ok);
  if (prompt) tl.set_prompt_tokens(*prompt);
  for (const auto& [t, n] : chunks) REQUIRE(tl.chunk(at(t), n) == tc::record_status::ok);
  REQUIRE(tl.finish(at(end ? *end : chunks.back().first), reason) == tc::record_status::ok);
  return tl;
}

// An --otlp file: its resource's tokchron.bench.run and the requests its
// gen_ai.client.operation.duration counts (every attribute set); {"", 0} when it cannot be read.
std::pair<std::string, std::uint64_t> otlp_run(const std::string& path) {
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (!doc.is_object()) return {"", 0};
  std::pair<std::string, std::uint64_t> r{"", 0};
  const auto& rm = doc["resourceMetrics"][0];
  for (const auto& a : rm["resource"]["attributes"])
    if (a["key"] == "tokchron.bench.run") r.first = a["value"]["stringValue"].get<std::string>();
  for (const auto& m : rm["scopeMetrics"][0]["metrics"])
    if (m["name"] == "gen_ai.client.operation.duration")
      for (const auto& p : m["histogram"]["dataPoints"])
        r.second += std::stoull(p["count"].get<std::string>());
  return r;
}

std::uint64_t lines_of(const std::string& path) {
  std::ifstream in(path);
  std::uint64_t n = 0;
  for (std::string l; std::getline(in, l);) ++n;
  return n;
}

}  // namespace

TEST_CASE("sweep_rates: GuideLLM's linspace(synchronous, throughput, n + 1)[1:]") {
  CHECK(tb::sweep_rates(1, 9, 4) == std::vector<double>{3, 5, 7, 9});
  CHECK(tb::sweep_rates(2, 5, 1) == std::vector<double>{5});
  CHECK(tb::sweep_rates(0, 5, 5) == std::vector<double>{1, 2, 3, 4, 5});
  // a server slower under load than alone: the rates fall to its throughput
  CHECK(tb::sweep_rates(4, 2, 2) == std::vector<double>{3, 2});
  // GuideLLM stops at the first rate that is not positive
  CHECK(tb::sweep_rates(2, 0, 2) == std::vector<double>{1});
  CHECK_THROWS_AS((void)tb::sweep_rates(0, 0, 3), std::invalid_argument);
  CHECK_THROWS_AS((void)tb::sweep_rates(1, std::nan(""), 3), std::invalid_argument);
}

TEST_CASE("Student's t quantiles, and AIPerf's interval over runs") {
  // Published two-sided 95 % critical values (t(0.975, df)) and 99 % for df 4.
  const std::pair<double, double> known[] = {{1, 12.706204736}, {2, 4.302652730},
                                             {4, 2.776445105},  {9, 2.262157163},
                                             {29, 2.045229642}, {1000, 1.962339081}};
  for (const auto& k : known) {
    const double df = k.first, t = k.second;
    CAPTURE(df);
    CHECK(tb::student_t_quantile(0.975, df) == doctest::Approx(t).epsilon(1e-8));
    CHECK(tb::student_t_quantile(0.025, df) == doctest::Approx(-t).epsilon(1e-8));
  }
  CHECK(tb::student_t_quantile(0.995, 4) == doctest::Approx(4.604094871).epsilon(1e-8));
  CHECK(tb::student_t_quantile(0.5, 3) == 0);
  CHECK_THROWS_AS((void)tb::student_t_quantile(1, 3), std::invalid_argument);
  CHECK_THROWS_AS((void)tb::student_t_quantile(0.9, 0), std::invalid_argument);

  // mean 3, s = sqrt(2.5), half width t(0.975, 4) s / sqrt(5)
  const tb::interval i = tb::t_interval({1, 2, 3, 4, 5}, 0.95);
  CHECK(i.n == 5);
  CHECK(i.mean == doctest::Approx(3));
  CHECK(*i.sd == doctest::Approx(std::sqrt(2.5)));
  CHECK(*i.t == doctest::Approx(2.776445105));
  CHECK(i.high - i.mean == doctest::Approx(2.776445105 * std::sqrt(2.5) / std::sqrt(5.0)));
  CHECK(i.mean - i.low == doctest::Approx(i.high - i.mean));
  // one run: the value, no interval (AIPerf's single-run report)
  const tb::interval one = tb::t_interval({7}, 0.95);
  CHECK(one.mean == 7);
  CHECK(one.low == 7);
  CHECK(one.high == 7);
  CHECK(!one.sd);
  CHECK(!one.t);
  CHECK_THROWS_AS((void)tb::t_interval({}, 0.95), std::invalid_argument);
  CHECK_THROWS_AS((void)tb::t_interval({1, 2}, 1.0), std::invalid_argument);
  CHECK_THROWS_AS((void)tb::t_interval({1, INFINITY}, 0.9), std::invalid_argument);
}

TEST_CASE("the steady-state window: first end to the first end after the last send") {
  std::vector<tc::trace_timeline> run;
  run.push_back(request(0.0, {{1.0, 1}, {1.2, 1}}, 10));  // ends first: the window opens at 1.2
  run.push_back(request(0.5, {{1.5, 2}, {2.0, 1}}, 20));  // TTFT 1.0, TPOT 0.25
  run.push_back(request(1.0, {{1.1, 1}}, 5, 1.8, tc::finish_reason::error));  // failed in it
  run.push_back(request(2.0, {{2.5, 1}}, 7));                                 // one token: no TPOT
  run.push_back(request(3.0, {{3.2, 1}, {3.5, 1}}, 9));  // the last send; its end closes it
  run.push_back(request(0.6, {{3.6, 1}}, 4));            // ends after it, in the drain
  const tb::window_metrics w = tb::measure_window(run, tc::request_slo::parse("tpot:1s"));
  CHECK(w.requests == 6);
  CHECK(w.window.start_s == doctest::Approx(1.2));
  CHECK(w.window.end_s == doctest::Approx(3.5));
  CHECK(w.run_start_s == doctest::Approx(0.0));
  CHECK(w.ended == 4);  // not the request whose end opens it, nor the one in the drain
  CHECK(w.succeeded == 3);
  CHECK(w.failed == 1);
  // tokens by their own times: 1.5 (2), 2.0, 2.5, 3.2, 3.5; not 1.0 and 1.1 (before it), 1.2
  // (its start), 3.6 (after it)
  CHECK(w.output_tokens == 6);
  CHECK(*w.output_rate == doctest::Approx(6 / 2.3));
  CHECK(*w.request_rate == doctest::Approx(3 / 2.3));
  CHECK(*w.ttft_p50 == doctest::Approx(0.5));  // of 0.2, 0.5, 1.0 the nearest-rank median
  CHECK(*w.tpot_p99 == doctest::Approx(0.3));
  // GuideLLM's inclusion: the failed request is judged (not good), the 1-token one is left out,
  // the one in the drain is not counted at all
  REQUIRE(w.goodput);
  const tc::goodput_result& g = *w.goodput;
  CHECK(g.requests == 4);
  CHECK(g.excluded == 1);
  CHECK(g.good == 2);
  CHECK(*g.attainment() == doctest::Approx(2.0 / 3.0));
  CHECK(*g.goodput() == doctest::Approx(2 / 2.3));
  CHECK(*g.token_goodput() == doctest::Approx((20 + 3 + 9 + 2) / 2.3));
  const auto j = tb::window_json(w);
  CHECK(j["start_s"].get<double>() == doctest::Approx(1.2));
  CHECK(j["goodput"]["excluded"] == 1);
  std::ostringstream text;
  tb::print_window(text, w);
  CHECK(text.str().find("Steady state: 1.200 s to 3.500 s after the first arrival (2.300 s") !=
        std::string::npos);

  // no limits: no goodput; a run that sent its last request before any ended: no window
  CHECK(!tb::measure_window(run, std::nullopt).goodput);
  std::vector<tc::trace_timeline> short_run;
  short_run.push_back(request(0.0, {{1.0, 1}}));
  short_run.push_back(request(0.5, {{1.4, 1}}));
  const tb::window_metrics none = tb::measure_window(short_run, std::nullopt);
  CHECK(none.window.empty());
  CHECK(!none.request_rate);
  std::ostringstream t2;
  tb::print_window(t2, none);
  CHECK(t2.str().find("lengthen --duration") != std::string::npos);
}

namespace {

// A saturated engine's run: `users` closed-loop users in batches of `batch` that run in lockstep,
// batch k (1, 2, ..., batches) ending at k seconds plus `spread` x its request's index (a client
// reads a batch's ends one after another), each request sent 10 ms after its user's previous end
// (the first batch at 0), with 2 tokens at k - 0.5, its last token at its end and a prompt of 10.
std::vector<tc::trace_timeline> lockstep(unsigned batch, unsigned batches, double spread) {
  std::vector<tc::trace_timeline> run;
  for (unsigned k = 1; k <= batches; ++k)
    for (unsigned i = 0; i < batch; ++i) {
      const double end = k + spread * i;
      const double send = k == 1 ? 0.0 : (k - 1) + spread * i + 0.01;
      run.push_back(request(send, {{k - 0.5, 2}, {end, 1}}, 10));
    }
  return run;
}

}  // namespace

TEST_CASE("the steady-state window's rates are the true rates when ends come in batches") {
  // 6 batches of 8 ending at 1, 2, ..., 6 s: the engine completes 8 requests and 24 tokens a
  // second. The window opens at the first end (1 s), the last send is 5.01 s, and the window
  // closes at the first end after it (6 s): (1, 6] holds batches 2 to 6, 40 ends, 120 tokens.
  for (const double spread : {0.0, 1e-4}) {
    CAPTURE(spread);
    const tb::window_metrics w =
        tb::measure_window(lockstep(8, 6, spread), tc::request_slo::parse("ttft:10s"));
    CHECK(w.window.start_s == doctest::Approx(1.0));
    CHECK(w.window.end_s == doctest::Approx(6.0));
    CHECK(w.ended == 40);
    CHECK(w.succeeded == 40);
    CHECK(*w.request_rate == doctest::Approx(8.0).epsilon(1e-9));
    CHECK(*w.output_rate == doctest::Approx(24.0).epsilon(1e-9));
    REQUIRE(w.goodput);
    CHECK(*w.goodput->goodput() == doctest::Approx(8.0).epsilon(1e-9));
    CHECK(*w.goodput->token_goodput() == doctest::Approx(8.0 * (10 + 3)).epsilon(1e-9));
    CHECK(*w.goodput->output_token_goodput() == doctest::Approx(24.0).epsilon(1e-9));
  }
  // One user (the synchronous point): each request 0.5 s, the next sent 1 ms after its end;
  // the window from the first end to the last holds 9 requests in 9 cycles of 0.501 s.
  std::vector<tc::trace_timeline> one;
  double send = 0;
  for (int k = 0; k < 10; ++k) {
    one.push_back(request(send, {{send + 0.25, 1}, {send + 0.5, 1}}));
    send += 0.501;
  }
  const tb::window_metrics s = tb::measure_window(one, std::nullopt);
  CHECK(s.ended == 9);
  CHECK(s.window.length_s() == doctest::Approx(9 * 0.501));
  CHECK(*s.request_rate == doctest::Approx(1 / 0.501).epsilon(1e-9));
  CHECK(*s.output_rate == doctest::Approx(2 / 0.501).epsilon(1e-9));
}

TEST_CASE("the steady-state window is (start, end]: an event at its start is out, at its end in") {
  std::vector<tc::trace_timeline> run;
  run.push_back(request(0.0, {{0.5, 1}, {1.0, 1}}));  // ends first: opens the window at 1.0
  run.push_back(request(0.3, {{1.0, 2}}));            // ends at the opening too: out
  run.push_back(request(0.2, {{1.0, 4}, {2.0, 1}}));  // 4 tokens at the opening: out; ends at
                                                      // the first end after the last send: in
  run.push_back(request(1.2, {{2.0, 3}, {2.5, 1}}));  // the last send; 3 tokens at the close: in
  const tb::window_metrics w = tb::measure_window(run, std::nullopt);
  CHECK(w.window.start_s == doctest::Approx(1.0));
  CHECK(w.window.end_s == doctest::Approx(2.0));
  CHECK(w.ended == 1);          // 2.0; not the two at 1.0 (its start), not 2.5 (after it)
  CHECK(w.output_tokens == 4);  // at 2.0: 1 + 3
  CHECK(*w.request_rate == doctest::Approx(1.0));
  // the last send after every end: no end closes the window
  std::vector<tc::trace_timeline> open;
  open.push_back(request(0.0, {{1.0, 1}}));
  tc::trace_timeline unfinished;
  REQUIRE(unfinished.arrive(at(2.0)) == tc::record_status::ok);
  REQUIRE(unfinished.send(at(2.0)) == tc::record_status::ok);
  open.push_back(std::move(unfinished));
  CHECK(tb::measure_window(open, std::nullopt).window.empty());
}

TEST_CASE("--rate sweep against the scripted server: synchronous, throughput, rates between") {
  // Each stream: first token after 5 ms, a chunk every 5 ms, whatever the load.
  tb::scripted_server srv({5ms, 5ms, 2});
  const std::string url = "http://127.0.0.1:" + std::to_string(srv.port());
  const std::string dir = TOKCHRON_BENCH_TEST_DIR;
  const std::string trace = dir + "/rate_sweep.jsonl", otlp = dir + "/rate_sweep.otlp.json";
  std::remove(otlp.c_str());
  std::ostringstream out, err;
  const int rc = tb::run_cli(
      {"--url",        url,       "--rate",     "sweep",    "--sweep-points", "2",
       "--users",      "4",       "--duration", "0.6",      "--output-len",   "fixed:4",
       "--prompt-len", "fixed:2", "--format",   "json",     "--profile",      "canonical",
       "--progress",   "never",   "--goodput",  "ttft:10s", "--trace-out",    trace,
       "--otlp",       otlp},
      out, err);
  CAPTURE(err.str());
  CHECK(rc == 0);
  // one JSON document per point, each with its window
  std::vector<nlohmann::json> docs;
  std::istringstream in(out.str());
  for (std::string doc, line; std::getline(in, line);) {
    if (line.rfind("== ", 0) == 0) continue;  // each point's heading
    doc += line + "\n";
    if (line == "}") {
      docs.push_back(nlohmann::json::parse(doc));
      doc.clear();
    }
  }
  const std::string o = out.str();
  REQUIRE(docs.size() == 4);
  const auto sync_at = o.find("== rate = synchronous (1 user) ==");
  const auto most_at = o.find("== rate = throughput (4 users) ==");
  CHECK(sync_at < most_at);
  std::vector<double> measured;
  for (const auto& d : docs) {
    REQUIRE(d.contains("steady_state"));
    const auto& w = d["steady_state"];
    CHECK(w["end_s"].get<double>() > w["start_s"].get<double>());
    CHECK(w["goodput"]["good"].get<std::uint64_t>() <= w["succeeded"].get<std::uint64_t>());
    measured.push_back(w["request_rate"].get<double>());
  }
  // the two rates are GuideLLM's between the measured synchronous and throughput rates; the last
  // is the throughput's own
  const std::vector<double> rates = tb::sweep_rates(measured[0], measured[1], 2);
  REQUIRE(rates.size() == 2);
  for (const double r : rates) {
    std::ostringstream v;
    v << std::setprecision(6) << r;
    CAPTURE(v.str());
    CHECK(o.find("== rate = " + v.str() + " ==", most_at) != std::string::npos);
    std::ifstream f(std::string(TOKCHRON_BENCH_TEST_DIR) + "/rate_sweep.rate=" + v.str() +
                    ".jsonl");
    CHECK(f.good());
  }
  CHECK(rates.back() == doctest::Approx(measured[1]));
  // --otlp: a file per point named as its trace, its resource naming the point, its durations
  // the point's measured requests; FILE itself is not written
  std::vector<std::string> values = {"synchronous", "throughput"};
  for (const double r : rates) {
    std::ostringstream v;
    v << std::setprecision(6) << r;
    values.push_back(v.str());
  }
  for (const auto& v : values) {
    CAPTURE(v);
    const auto [run, requests] = otlp_run(dir + "/rate_sweep.otlp.rate=" + v + ".json");
    CHECK(run == "rate=" + v);
    CHECK(requests > 0);
    CHECK(requests == lines_of(dir + "/rate_sweep.rate=" + v + ".jsonl"));
  }
  CHECK(!std::ifstream(otlp).good());
  // the summary (on standard error beside JSON) has every point
  const std::string e = err.str();
  const auto summary = e.find("Rate sweep (each figure over the runs' steady-state windows");
  REQUIRE(summary != std::string::npos);
  CHECK(e.find("synchronous", summary) != std::string::npos);
  CHECK(e.find("goodput tok/s", summary) != std::string::npos);
}

TEST_CASE("--repeat: each point K times with its own seed, t intervals in the summary") {
  tb::scripted_server srv({1ms, 1ms, 2});
  const std::string url = "http://127.0.0.1:" + std::to_string(srv.port());
  const std::string dir = TOKCHRON_BENCH_TEST_DIR;
  const std::string trace = dir + "/repeat.jsonl", otlp = dir + "/repeat.otlp.json";
  std::remove(otlp.c_str());
  std::ostringstream out, err;
  const int rc = tb::run_cli({"--url",          url,
                              "--repeat",       "3",
                              "--users",        "2",
                              "--max-requests", "6",
                              "--output-len",   "uniform:2,40",
                              "--prompt-len",   "fixed:2",
                              "--profile",      "canonical",
                              "--progress",     "never",
                              "--trace-out",    trace,
                              "--otlp",         otlp},
                             out, err);
  CAPTURE(err.str());
  CHECK(rc == 0);
  const std::string o = out.str();
  std::vector<std::multiset<std::uint64_t>> lengths;  // each run's output lengths
  for (const char* k : {"1", "2", "3"}) {
    CHECK(o.find(std::string("== run ") + k + " of 3 ==") != std::string::npos);
    std::ifstream f(std::string(TOKCHRON_BENCH_TEST_DIR) + "/repeat.run=" + k + ".jsonl");
    lengths.emplace_back();
    for (std::string l; std::getline(f, l);)
      lengths.back().insert(nlohmann::json::parse(l)["usage_output_tokens"].get<std::uint64_t>());
    CHECK(lengths.back().size() == 6);
    // --otlp: each run's own file, not one overwritten by the next
    const auto [run, requests] = otlp_run(dir + "/repeat.otlp.run=" + k + ".json");
    CHECK(run == std::string("run=") + k);
    CHECK(requests == 6);
  }
  CHECK(!std::ifstream(otlp).good());
  // seeds 1, 2, 3: the runs draw different lengths (the seeds' draws, not chance)
  CHECK(lengths[0] != lengths[1]);
  CHECK(lengths[1] != lengths[2]);
  CHECK(srv.requests() == 18);
  const auto summary = o.find(
      "Repeated runs (each figure over the runs' steady-state windows: "
      "the mean, and in brackets its 95% t interval over the runs)");
  REQUIRE(summary != std::string::npos);
  CHECK(o.find(" [", summary) != std::string::npos);
  CHECK(srv.prompts().size() == 18);  // request ids continue from run to run: none sent twice
}

TEST_CASE("the sweep's options are checked before anything runs") {
  const std::pair<std::vector<std::string>, const char*> bad[] = {
      {{"--sweep-points", "3"}, "--sweep-points goes with --rate sweep"},
      {{"--rate", "sweep", "--sweep", "users=1,2"}, "--sweep does not go with --rate sweep"},
      {{"--rate", "sweep", "--think-time", "exp:1"}, "--think-time does not go with --rate sweep"},
      {{"--rate", "sweep", "--sweep-points", "0"}, "--sweep-points '0': must be an integer"},
      {{"--rate", "sweep", "--sweep-points", "2.5"}, "must be an integer in [1, 100]"},
      {{"--repeat", "0"}, "--repeat '0': must be an integer in [1, 1000]"},
      {{"--confidence", "1"}, "--confidence '1': must be a number in (0, 1)"},
      {{"--rate", "sweep", "--rate", "sweep"}, "--rate is given twice"},
      {{"--rate", "sweeps"}, "--rate"},
  };
  for (const auto& b : bad) {
    const std::string why = b.second;
    const std::vector<std::string>& args = b.first;
    CAPTURE(why);
    std::ostringstream o, e;
    CHECK(tb::run_cli(args, o, e) == 2);
    CHECK(e.str().find(why) != std::string::npos);
  }
}
