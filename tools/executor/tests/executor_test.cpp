// SPDX-License-Identifier: MIT
// End to end: the command line, determinism of the sim for a seed, the trade-offs the sweep
// must show, and --trace-out read back by tokchron-report's library giving the same summary.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "cli.hpp"
#include "engine.hpp"
#include "report/report.hpp"
#include "run_reports.hpp"

using namespace batching;

namespace {
command_line parse(std::initializer_list<std::string> args) {
  return parse_command_line(std::vector<std::string>(args));
}
outcome run_one(const command_line& cl, std::size_t which = 0) {
  const report_settings s = settings_from(cl);
  std::vector<configuration> cs = expand(cl);
  configuration c = cs.at(which);
  apply_slo_defaults(c.cfg, s.objectives);
  auto be = make_backend(c.cfg);
  run_result r = run(c.cfg.sched, c.cfg.load, *be);
  return evaluate(c, std::move(r), s);
}
std::string trace_of(const outcome& o) {
  std::ostringstream os;
  write_trace(os, o);
  return os.str();
}
void same(const std::optional<double>& a, const std::optional<double>& b, const char* what) {
  CAPTURE(what);
  REQUIRE(a.has_value() == b.has_value());
  if (a) CHECK(*a == doctest::Approx(*b).epsilon(1e-12));
}
void same(const tokchron::distribution& a, const tokchron::distribution& b, const char* what) {
  CAPTURE(what);
  CHECK(a.count == b.count);
  same(a.mean, b.mean, "mean");
  same(a.stddev, b.stddev, "std");
  same(a.min, b.min, "min");
  same(a.max, b.max, "max");
  REQUIRE(a.percentiles.size() == b.percentiles.size());
  for (std::size_t i = 0; i < a.percentiles.size(); ++i)
    same(a.percentiles[i].value, b.percentiles[i].value, "p");
}
}  // namespace

TEST_CASE("cli: options, sweeps in order, errors name the option") {
  const command_line cl =
      parse({"--max-batch-size", "8", "--think-time=exp:25", "--sweep", "max_batch_size=8,16",
             "--sweep", "output_len=uniform:10,20;fixed:5", "--slo", "p95(ttft)<1.5s"});
  CHECK(cl.base.sched.max_batch_size == 8);
  CHECK(cl.base.load.think.mean() == 25);
  const auto cs = expand(cl);
  REQUIRE(cs.size() == 4);
  CHECK(cs[0].name == "max_batch_size=8 output_len=uniform:10,20");
  CHECK(cs[1].name == "max_batch_size=8 output_len=fixed:5");
  CHECK(cs[3].cfg.sched.max_batch_size == 16);
  CHECK(cs[3].cfg.load.output.mean() == 5);
  CHECK(settings_from(cl).objectives.objectives.size() == 1);
  auto err = [](std::initializer_list<std::string> a) {
    try {
      (void)parse(a);
    } catch (const usage_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(err({"--max-batch-size", "0"}).find("--max-batch-size") != std::string::npos);
  CHECK(err({"--policy", "lifo"}).find("fcfs") != std::string::npos);
  CHECK(err({"--prompt-len", "normal:300"}).find("expected 2 numbers") != std::string::npos);
  CHECK(err({"--sweep", "max_batch=8"}).find("unknown option") != std::string::npos);
  CHECK(err({"--bogus", "1"}).find("--bogus") != std::string::npos);
  CHECK(err({"--users"}).find("needs a value") != std::string::npos);
  CHECK_THROWS_AS((void)settings_from(parse({"--slo", "p95(ttft)<1.5"})), usage_error);  // no unit
  CHECK_THROWS_AS((void)expand(parse({"--sweep", "max_batch_size=8,x"})), usage_error);
  // slo_aware takes its target from the TTFT objective
  run_config c = parse({"--prefill-priority", "slo_aware"}).base;
  apply_slo_defaults(c, tokchron::sla::parse("p95(tpot)<100ms, p95(ttft)<1.5s"));
  CHECK(c.sched.ttft_target == std::chrono::milliseconds(1500));
}

TEST_CASE("sim: the same seed gives the same run, another seed another") {
  const auto a = trace_of(run_one(parse({"--users", "20", "--duration", "60", "--seed", "7"})));
  const auto b = trace_of(run_one(parse({"--users", "20", "--duration", "60", "--seed", "7"})));
  const auto c = trace_of(run_one(parse({"--users", "20", "--duration", "60", "--seed", "8"})));
  CHECK(a.size() > 10000);
  CHECK(a == b);
  CHECK(a != c);
}

TEST_CASE(
    "sweep: bigger batches raise throughput and TPOT; prefill priority trades TPOT for TTFT") {
  // The seed's scenario without think time: every user always has a request queued.
  const command_line sat = parse({"--users", "50", "--duration", "200", "--warmup", "30", "--sweep",
                                  "max_batch_size=8,16", "--sweep", "prefill_priority=off,always"});
  const outcome b8 = run_one(sat, 0), b8p = run_one(sat, 1), b16 = run_one(sat, 2);
  CHECK(*b16.summary.output_throughput > 1.5 * *b8.summary.output_throughput);
  CHECK(*b16.summary.tpot.at(95) > *b8.summary.tpot.at(95));
  CHECK(*b16.summary.ttft.at(95) < *b8.summary.ttft.at(95));  // fewer queued ahead
  CHECK(*b8p.summary.tpot.at(95) > *b8.summary.tpot.at(95));  // decodes stall behind prefills
  CHECK(*b8p.summary.itl.at(99) > *b8.summary.itl.at(99));
  // With users thinking and room in the batch, a new request's prefill goes first: lower TTFT.
  // Under the constants of the time this was written (eta_bw 0.8, eta_c 0.55, t_fixed 2 ms, no
  // per-sequence or per-request cost): with the fitted defaults' 1 ms per starting request the
  // gain at 25 s think is gone (the main job's table: 118 vs 124 ms), at 10 s it remains.
  const command_line idle = parse({"--users",
                                   "50",
                                   "--think-time",
                                   "exp:25",
                                   "--duration",
                                   "600",
                                   "--warmup",
                                   "60",
                                   "--max-batch-size",
                                   "32",
                                   "--sweep",
                                   "prefill_priority=off,always",
                                   "--sim",
                                   "eta_bw=0.8",
                                   "--sim",
                                   "eta_compute=0.55",
                                   "--sim",
                                   "t_fixed=0.002",
                                   "--sim",
                                   "t_seq=0",
                                   "--sim",
                                   "t_request=0"});
  const outcome off = run_one(idle, 0), on = run_one(idle, 1);
  CHECK(*on.summary.ttft.at(95) < *off.summary.ttft.at(95));
  CHECK(*on.summary.tpot.at(95) > *off.summary.tpot.at(95));
  // Each run's own figures pass the claim audit.
  for (const outcome* o : {&b8, &b8p, &b16, &off, &on}) {
    CAPTURE(o->conf.name);
    CHECK(o->audit.consistent());
    CHECK(o->audit.findings.size() >= 5);
  }
}

TEST_CASE("--trace-out read by tokchron-report's library gives the executor's summary") {
  const command_line cl = parse({"--users", "16", "--think-time", "exp:2", "--duration", "60",
                                 "--warmup", "5", "--max-batch-size", "8"});
  const outcome o = run_one(cl);
  const std::string path = "batching_executor_e2e_trace.jsonl";
  {
    std::ofstream f(path);
    write_trace(f, o);
  }
  tokchron_report::report_settings rs;  // canonical profile, 50,90,95,99
  tokchron_report::input_stats stats;
  const auto sums = tokchron_report::summarize_files({path}, "auto", rs, stats);
  std::remove(path.c_str());
  REQUIRE(sums.size() == 1);
  const tokchron::run_summary& t = sums.front();
  const tokchron::run_summary& e = o.summary;
  CHECK(e.requests > 50);
  CHECK(t.requests == e.requests);
  CHECK(t.completed == e.completed);
  CHECK(t.output_tokens == e.output_tokens);
  CHECK(t.input_tokens == e.input_tokens);
  same(t.duration, e.duration, "duration");
  same(t.request_throughput, e.request_throughput, "rps");
  same(t.output_throughput, e.output_throughput, "output tps");
  same(t.time_weighted_concurrency, e.time_weighted_concurrency, "concurrency");
  CHECK(t.peak_concurrency == e.peak_concurrency);
  same(t.ttft, e.ttft, "ttft");
  same(t.tpot, e.tpot, "tpot");
  same(t.itl, e.itl, "itl");
  same(t.e2e, e.e2e, "e2e");
  same(t.queue_time, e.queue_time, "queue_time");
  same(t.prefill_time, e.prefill_time, "prefill_time");
}
