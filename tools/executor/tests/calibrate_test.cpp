// SPDX-License-Identifier: MIT
// calibrate (app/calibrate.hpp): the optimiser, the new model terms and presets, recovering
// known constants from traces the sim itself made, identifiability, and bad inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "calibrate.hpp"
#include "cli.hpp"
#include "loadgen.hpp"
#include "nelder_mead.hpp"
#include "run_reports.hpp"
#include "scheduler.hpp"

using namespace batching;

namespace {

// Runs batching-executor's options `args` on the sim and writes the trace to `path`.
void make_trace(const std::vector<std::string>& args, const std::string& path) {
  command_line cl = parse_command_line(args);
  configuration c = expand(cl).front();
  auto be = make_backend(c.cfg);
  const outcome o = evaluate(c, run(c.cfg.sched, c.cfg.load, *be), settings_from(cl));
  std::ofstream f(path);
  write_trace(f, o);
}

std::string temp_path(const std::string& name) {
  return std::string(P_tmpdir) + "/bx_calibrate_test_" + name;
}

run_config config_of(const std::vector<std::string>& args) { return parse_command_line(args).base; }

double value(const fit_result& f, const std::string& k) {
  for (const auto& [key, v] : f.constants)
    if (key == k) return v;
  return NAN;
}
const constant_sensitivity& sens(const fit_result& f, const std::string& k) {
  for (const auto& s : f.sensitivity)
    if (s.key == k) return s;
  throw std::logic_error("no " + k);
}

// calibrate's objective over `traces` (which must outlive it).
fit_objective objective_of(const std::vector<calib_trace>& traces, const calib_settings& s) {
  return [&traces, s](const std::vector<std::pair<std::string, double>>& c) {
    std::vector<calib_residual> all;
    for (const auto& t : traces) {
      sim_config sc = t.cfg.sim;
      for (const auto& [k, v] : c) sc.set(k, v);
      const auto r = residuals(t.measured, simulate_trace(t, sc, s), s);
      all.insert(all.end(), r.begin(), r.end());
    }
    return mean_squared_log(all, s);
  };
}

// The cost of a decode step of n sequences at context `past` under `base` with `c` applied.
double decode_step_s(const std::vector<std::pair<std::string, double>>& c, sim_config base, int n,
                     std::uint32_t past) {
  for (const auto& [k, v] : c) base.set(k, v);
  batch b;
  for (int i = 0; i < n; ++i) {
    sequence_work d;
    d.past_tokens = past;
    d.decode = d.samples = true;
    b.seqs.push_back(d);
  }
  return sim_backend(base).cost(b).seconds;
}

}  // namespace

TEST_CASE("nelder_mead: minimises the Rosenbrock function") {
  const auto r = nelder_mead(
      [](const std::vector<double>& x) {
        return 100 * std::pow(x[1] - x[0] * x[0], 2) + std::pow(1 - x[0], 2);
      },
      {-1.2, 1.0}, {0.5, 0.5}, nelder_mead_options{1e-12, 1e-8, 2000, 1});
  CHECK(r.x[0] == doctest::Approx(1).epsilon(1e-4));
  CHECK(r.x[1] == doctest::Approx(1).epsilon(1e-4));
  CHECK_THROWS_AS(nelder_mead([](const std::vector<double>&) { return 0.0; }, {}, {}),
                  std::invalid_argument);
}

TEST_CASE("sim: per-sequence and per-request costs are added per step") {
  sim_config c;
  c.jitter = 0;
  c.t_seq_s = 20e-6;
  c.t_request_s = 3e-3;
  sim_backend be(c), plain([] {
    sim_config p;
    p.jitter = 0;
    p.t_seq_s = p.t_request_s = 0;
    return p;
  }());
  batch b;
  for (int i = 0; i < 8; ++i) {
    sequence_work d;
    d.past_tokens = 100;
    d.decode = d.samples = true;
    b.seqs.push_back(d);
  }
  sequence_work start;  // a prefill that starts: past 0
  start.prefill_tokens = 50;
  b.seqs.push_back(start);
  sequence_work cont = start;  // a later chunk of another prompt: no per-request cost
  cont.past_tokens = 50;
  b.seqs.push_back(cont);
  // 10 sequences x 20 us + 1 start x 3 ms on top of the roofline
  CHECK(be.cost(b).seconds - plain.cost(b).seconds == doctest::Approx(10 * 20e-6 + 3e-3));
  CHECK(be.cost(b).overhead_s == doctest::Approx(c.t_fixed_s + 10 * 20e-6 + 3e-3));
  sim_config bad;
  bad.set("t_seq", -1e-6);
  CHECK_THROWS_AS(bad.validate(), std::invalid_argument);
}

TEST_CASE("sim: precision presets set bytes and throughput; memory in GiB") {
  sim_config c;
  c.set_hardware("h100");
  c.set_model("llama3.1-8b");
  CHECK(c.hw.memory_bytes == 80.0 * 1073741824.0);
  CHECK(c.model.weight_bytes == 2 * 8.03e9);
  CHECK(c.model.kv_bytes_per_token == 131072);
  c.set_precision("fp8");
  CHECK(c.model.weight_bytes == 8.03e9);
  CHECK(c.model.kv_bytes_per_token == 65536);
  CHECK(c.hw.flops == 1979e12);
  c.set_hardware("h200");  // keeps the precision
  CHECK(c.hw.flops == 1979e12);
  c.set_model("llama2-7b");
  CHECK(c.model.kv_bytes_per_token == 262144);
  c.set_precision("fp8-weights");
  CHECK(c.model.kv_bytes_per_token == 524288);
  c.set_precision("bf16");
  CHECK(c.hw.flops == 989e12);
  CHECK(c.model.weight_bytes == 13.48e9);
  sim_config a;
  a.set_hardware("a100-80g");
  CHECK_THROWS_WITH_AS(a.set_precision("fp8"), doctest::Contains("no fp8"), std::invalid_argument);
  CHECK_THROWS_AS(a.set_precision("int4"), std::invalid_argument);
  // The CLI applies them in order; --sim after them wins.
  const run_config r = config_of({"--hw", "h100", "--precision", "fp8", "--model", "llama3.1-8b",
                                  "--sim", "weight_bytes=9e9"});
  CHECK(r.sim.model.weight_bytes == 9e9);
  CHECK(r.sim.model.kv_bytes_per_token == 65536);
}

TEST_CASE("calibrate: recovers the constants that made two load points") {
  // Truth: constants unlike the defaults; no jitter, so the replay at the true constants is the
  // run itself and the fit's error there is 0.
  const std::vector<std::string> truth = {"--sim", "eta_bw=0.6",    "--sim", "eta_compute=0.4",
                                          "--sim", "t_fixed=0.004", "--sim", "t_seq=0.0002",
                                          "--sim", "t_request=0",   "--sim", "jitter=0"};
  const std::vector<std::string> common = {"--rate",       "4",
                                           "--duration",   "40",
                                           "--prompt-len", "uniform:100,1200",
                                           "--output-len", "uniform:10,60",
                                           "--progress",   "never"};
  std::vector<calib_trace> traces;
  calib_settings s;
  for (const char* mbs : {"2", "12"}) {
    std::vector<std::string> a = truth;
    a.insert(a.end(), common.begin(), common.end());
    a.insert(a.end(), {"--max-batch-size", mbs});
    const std::string path = temp_path(std::string("mbs") + mbs + ".jsonl");
    make_trace(a, path);
    const run_config cfg =
        config_of({"--max-batch-size", mbs, "--sim", "t_request=0", "--sim", "jitter=0"});
    traces.push_back(load_calib_trace(path, "auto", cfg, std::nullopt, s));
    std::remove(path.c_str());
  }
  CHECK(traces[0].requests.size() > 100);
  sim_config start;  // the constants before the published-point fit, as a start away from truth
  start.eta_bw = 0.8;
  start.eta_compute = 0.55;
  start.t_fixed_s = 0.002;
  start.t_seq_s = 0;
  start.jitter = 0;
  const fit_result f =
      fit_constants({"eta_bw", "eta_compute", "t_fixed", "t_seq"}, start, objective_of(traces, s),
                    nelder_mead_options{1e-10, 1e-5, 600, 2});
  CHECK(f.rms_start > 0.1);
  CHECK(f.rms < 0.01);  // 1 %: the search's tolerance, not a model error (there is none here)
  CHECK(sens(f, "eta_bw").identifiable);
  CHECK(sens(f, "t_fixed").identifiable);
  // Each constant alone moves the error, but memory-bound decode steps of one model give only
  // t_fixed + W / (eta_bw BW) (+ t_seq per sequence): what is recovered is the step time. A
  // batch-1 decode at context 600, and a batch-8 one, within 3 % (three times the fit's error).
  auto step_time = [&](const std::vector<std::pair<std::string, double>>& c, int n) {
    sim_config sc;
    sc.jitter = 0;
    sc.t_request_s = 0;
    return decode_step_s(c, sc, n, 600);
  };
  const std::vector<std::pair<std::string, double>> true_c = {{"eta_bw", 0.6},
                                                              {"eta_compute", 0.4},
                                                              {"t_fixed", 0.004},
                                                              {"t_seq", 0.0002},
                                                              {"t_request", 0}};
  for (int n : {1, 8}) {
    CAPTURE(n);
    CHECK(step_time(f.constants, n) == doctest::Approx(step_time(true_c, n)).epsilon(0.03));
  }
  // And a batch size never seen (6) is predicted within 3 % in throughput and P95 TPOT.
  const std::string path = temp_path("mbs6.jsonl");
  std::vector<std::string> a = truth;
  a.insert(a.end(), common.begin(), common.end());
  a.insert(a.end(), {"--max-batch-size", "6"});
  make_trace(a, path);
  const calib_trace held = load_calib_trace(
      path, "auto",
      config_of({"--max-batch-size", "6", "--sim", "t_request=0", "--sim", "jitter=0"}),
      std::nullopt, s);
  std::remove(path.c_str());
  sim_config fitted = held.cfg.sim;
  for (const auto& [k, v] : f.constants) fitted.set(k, v);
  const auto predicted = simulate_trace(held, fitted, s);
  CHECK(*predicted.output_throughput ==
        doctest::Approx(*held.measured.output_throughput).epsilon(0.03));
  CHECK(*predicted.tpot.at(95) == doctest::Approx(*held.measured.tpot.at(95)).epsilon(0.03));
}

TEST_CASE("calibrate: batch-1 decode says nothing of compute efficiency") {
  const std::string path = temp_path("b1.jsonl");
  make_trace({"--users", "1", "--prompt-len", "fixed:16", "--output-len", "fixed:100", "--duration",
              "20", "--max-batch-size", "1", "--progress", "never"},
             path);
  calib_settings s;
  const calib_trace t = load_calib_trace(path, "auto", config_of({"--max-batch-size", "1"}), 1u, s);
  std::remove(path.c_str());
  const fit_result f = fit_constants({"eta_bw", "eta_compute"}, sim_config{},
                                     [&](const std::vector<std::pair<std::string, double>>& c) {
                                       sim_config sc = t.cfg.sim;
                                       for (const auto& [k, v] : c) sc.set(k, v);
                                       return mean_squared_log(
                                           residuals(t.measured, simulate_trace(t, sc, s), s), s);
                                     });
  CHECK(sens(f, "eta_bw").identifiable);
  CHECK_FALSE(sens(f, "eta_compute").identifiable);
  CHECK(value(f, "eta_compute") == sim_config{}.eta_compute);  // kept at its starting value
}

TEST_CASE("calibrate: bad inputs are refused with the file and the reason") {
  calib_settings s;
  const run_config cfg = config_of({});
  const std::string empty = temp_path("empty.jsonl");
  std::ofstream(empty).close();
  CHECK_THROWS_WITH_AS((void)load_calib_trace(empty, "auto", cfg, std::nullopt, s),
                       doctest::Contains("has no requests"), std::invalid_argument);
  const std::string failed = temp_path("failed.jsonl");
  std::ofstream(failed)
      << R"({"id":"a","send":0,"prompt_tokens":10,"chunks":[],"ok":false,"error":"timeout"})"
      << "\n";
  CHECK_THROWS_WITH_AS((void)load_calib_trace(failed, "auto", cfg, std::nullopt, s),
                       doctest::Contains("none of its 1 requests succeeded"),
                       std::invalid_argument);
  const std::string huge = temp_path("huge.jsonl");
  std::ofstream(huge) << R"({"id":"big","send":0,"prompt_tokens":20000,"chunks":[[0.5,1],[0.6,1]]})"
                      << "\n";
  CHECK_THROWS_WITH_AS((void)load_calib_trace(huge, "auto", cfg, std::nullopt, s),
                       doctest::Contains("do not match the trace"), std::invalid_argument);
  const std::string noprompt = temp_path("noprompt.jsonl");
  std::ofstream(noprompt) << R"({"id":"x","send":0,"chunks":[[0.5,1],[0.6,1]]})"
                          << "\n";
  CHECK_THROWS_WITH_AS((void)load_calib_trace(noprompt, "auto", cfg, std::nullopt, s),
                       doctest::Contains("has no prompt_tokens"), std::invalid_argument);
  const std::string bad = temp_path("bad.jsonl");
  std::ofstream(bad) << R"({"id":"x","send":"soon","chunks":[]})"
                     << "\n";
  CHECK_THROWS_WITH_AS((void)load_calib_trace(bad, "auto", cfg, std::nullopt, s),
                       doctest::Contains("line 1"), std::invalid_argument);
  CHECK_THROWS_AS((void)load_calib_trace(temp_path("missing.jsonl"), "auto", cfg, std::nullopt, s),
                  std::exception);
  CHECK_THROWS_AS((void)parse_fit_keys("eta_bw,memory"), std::invalid_argument);
  CHECK_THROWS_AS((void)parse_fit_keys("eta_bw,eta_bw"), std::invalid_argument);
  for (const auto& p : {empty, failed, huge, noprompt, bad}) std::remove(p.c_str());
}

// --- a server's terms outside the roofline (issue 44, item 5) ------------------------------

namespace {

// Runs `args` on the sim and returns every request (in creation order).
std::deque<request> run_requests(const std::vector<std::string>& args) {
  const run_config c = config_of(args);
  sim_backend be(c.sim);
  return run(c.sched, c.load, be).requests;
}

double seconds_between(time_point a, time_point b) { return tokchron::to_seconds(b - a); }

}  // namespace

TEST_CASE("sim: warm tokens are not computed again; the step starts at them") {
  sim_config c;
  c.jitter = 0;
  scheduler_config sc;
  sim_backend be(c);
  scheduler sched(sc, be.kv_blocks(sc.block_size), &be);
  clock_type clock;
  request r(clock), full(clock);
  r.prompt_tokens = 100;
  r.warm_tokens = 80;
  full.id = 1;
  full.prompt_tokens = 50;
  full.warm_tokens = 50;  // the whole prompt: the last token is still computed
  for (request* q : {&r, &full}) {
    q->output_tokens = 3;
    q->tl.arrive(clock.now());
    sched.add(*q, clock.now());
  }
  step_plan plan;
  REQUIRE(sched.schedule(clock.now(), plan));
  REQUIRE(plan.work.seqs.size() == 2);
  CHECK(plan.work.seqs[0].past_tokens == 80);
  CHECK(plan.work.seqs[0].prefill_tokens == 20);
  CHECK(plan.work.seqs[0].reused_tokens == 80);
  CHECK(plan.work.seqs[1].past_tokens == 49);
  CHECK(plan.work.seqs[1].prefill_tokens == 1);
  CHECK(r.tl.cached_prompt_tokens() == 80u);
  CHECK(full.tl.cached_prompt_tokens() == 49u);
  // Both count as starts (t_request), and cost what a 20-token chunk after 80 costs.
  sim_config no_req = c;
  no_req.t_request_s = 0;
  CHECK(be.cost(plan.work).seconds - sim_backend(no_req).cost(plan.work).seconds ==
        doctest::Approx(2 * c.t_request_s));
}

TEST_CASE("calibrate: a trace's cached prompt tokens are replayed as cached") {
  // The truth: a shared prefix of 512 tokens before 600-token prompts, served from the prefix
  // cache. The replay knows nothing of the prefix; it replays each request's
  // cached_prompt_tokens.
  const std::vector<std::string> args = {
      "--users",    "6",     "--prompt-len",     "fixed:600", "--output-len", "fixed:20",
      "--duration", "20",    "--shared-prefix",  "512",       "--sim",        "jitter=0",
      "--progress", "never", "--max-batch-size", "4"};
  const std::string path = temp_path("warm.jsonl");
  make_trace(args, path);
  calib_settings s;
  calib_trace t = load_calib_trace(
      path, "auto", config_of({"--max-batch-size", "4", "--sim", "jitter=0"}), 6u, s);
  std::remove(path.c_str());
  // batching-executor's closed loop: its users keep sending until the last traced request has
  // finished, so the replay keeps 6 in flight too (background=on). Without it the last
  // requests decode without the next requests' prefills beside them: in this run one of each
  // request's 19 ITLs is such a prefill step, 82 of 1558, so the P95 ITL lies on that class's
  // edge and two missing ones move it to a decode step's (simulated / measured 0.77). The
  // background repeats the latest requests (512 cached); repeating the first, which found the
  // cache cold, makes the P99 TPOT 12 % longer.
  t.closed = true;
  t.background = true;
  std::size_t warm = 0;
  for (const auto& q : t.requests) warm += q.cached > 0 ? 1 : 0;
  // Every request but those sent before the prefix was first computed (at most one a user).
  CHECK(warm + 6 >= t.requests.size());
  CHECK(t.requests.back().cached == 512);
  auto rms = [&](const calib_trace& x) {
    return std::sqrt(
        mean_squared_log(residuals(x.measured, simulate_trace(x, x.cfg.sim, s), s), s));
  };
  CHECK(rms(t) < 0.01);  // the run itself, at its own constants
  // The same file as two rounds of one load: each replayed alone, pooled over both durations.
  make_trace(args, path);
  const calib_trace twice = load_calib_trace(
      path + "+" + path, "auto", config_of({"--max-batch-size", "4", "--sim", "jitter=0"}), 6u, s);
  std::remove(path.c_str());
  CHECK(twice.requests.size() == 2 * t.requests.size());
  CHECK(twice.segment_starts == std::vector<std::size_t>{0, t.requests.size()});
  CHECK(*twice.measured.output_throughput ==
        doctest::Approx(*t.measured.output_throughput).epsilon(1e-9));
  calib_trace twice_closed = twice;
  twice_closed.closed = true;
  twice_closed.background = true;
  const auto one = simulate_trace(t, t.cfg.sim, s);
  const auto two = simulate_trace(twice_closed, t.cfg.sim, s);
  CHECK(*two.output_throughput == doctest::Approx(*one.output_throughput).epsilon(1e-9));
  CHECK(*two.ttft.max == doctest::Approx(*one.ttft.max).epsilon(1e-9));
  calib_trace cold = t;  // the same trace with the cache forgotten: every prompt recomputed
  for (auto& q : cold.requests) q.cached = 0;
  CHECK(rms(cold) > 0.1);
}

TEST_CASE("sim: t_front delays a request before the engine and stalls no step") {
  // An open loop: the same arrivals reach the engine t_front later, so the run is the same run
  // shifted: TTFT longer by exactly t_front, TPOT unchanged. t_request, charged inside the
  // step, stalls the co-batched decodes instead.
  const std::vector<std::string> base = {"--rate",       "20",        "--duration",   "10",
                                         "--prompt-len", "fixed:200", "--output-len", "fixed:30",
                                         "--progress",   "never"};
  auto with = [&](const char* request_s, const char* front_s) {
    std::vector<std::string> a = base;
    a.insert(a.end(), {"--sim", request_s, "--sim", front_s});
    return run_requests(a);
  };
  const auto plain = with("t_request=0", "t_front=0");
  const auto front = with("t_request=0", "t_front=0.01");
  const auto inside = with("t_request=0.05", "t_front=0");
  REQUIRE(plain.size() == front.size());
  REQUIRE(plain.size() > 80);
  double tpot_plain = 0, tpot_inside = 0;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    const auto& p = plain[i].tl;
    const auto& f = front[i].tl;
    CAPTURE(i);
    CHECK(
        seconds_between(*f.arrival(), *f.first_token_time()) ==
        doctest::Approx(seconds_between(*p.arrival(), *p.first_token_time()) + 0.01).epsilon(1e-6));
    CHECK(seconds_between(*f.first_token_time(), *f.finish_time()) ==
          doctest::Approx(seconds_between(*p.first_token_time(), *p.finish_time())).epsilon(1e-6));
    tpot_plain += seconds_between(*p.first_token_time(), *p.finish_time());
    tpot_inside += seconds_between(*inside[i].tl.first_token_time(), *inside[i].tl.finish_time());
  }
  // About 1 s of decoding a request sees 5 others start, each stalling a step by 50 ms: +25 %.
  CHECK(tpot_inside > 1.1 * tpot_plain);
}

TEST_CASE("sim: t_client leaves a closed-loop user's slot empty for its round trip") {
  const std::vector<std::string> base = {
      "--users",      "1",        "--duration", "5",     "--prompt-len", "fixed:50",
      "--output-len", "fixed:10", "--progress", "never", "--sim",        "t_client=0.003"};
  const auto reqs = run_requests(base);
  REQUIRE(reqs.size() > 10);
  for (std::size_t i = 1; i + 1 < reqs.size(); ++i) {
    CAPTURE(i);
    CHECK(seconds_between(*reqs[i - 1].tl.finish_time(), *reqs[i].tl.arrival()) ==
          doctest::Approx(0.003).epsilon(1e-6));
  }
  // calibrate's closed replay does the same: after the first N, a request leaves t_client
  // after a finish, whatever its recorded send time.
  const std::string path = temp_path("client.jsonl");
  make_trace(base, path);
  calib_settings s;
  calib_trace t = load_calib_trace(path, "auto", config_of({}), 1u, s);
  std::remove(path.c_str());
  for (auto& q : t.requests) q.arrival_s = 0;  // recorded times that would allow no gap
  t.closed = true;
  sim_config at = t.cfg.sim;
  at.t_client_s = 0.003;
  const run_result r = simulate_run(t, at).front();
  for (std::size_t i = 1; i < t.requests.size(); ++i)
    CHECK(seconds_between(*r.requests[i - 1].tl.finish_time(), *r.requests[i].tl.arrival()) ==
          doctest::Approx(0.003).epsilon(1e-6));
}

TEST_CASE("calibrate: a batch-size term is fitted where decode steps grow faster than linearly") {
  // Decode-only steps measured at batch 1, 2 and 4 (closed loops of that many users): 0.23,
  // 0.26 and 0.40 ms, as llama-server's were (issue 44). A line through batch 1 and 2 misses
  // batch 4 by 30 %; t_seq2 n^2 takes the rest.
  sim_config truth;
  truth.jitter = 0;
  truth.t_request_s = 0;
  truth.t_fixed_s = 0.21e-3;
  truth.t_seq_s = 0;
  truth.t_seq2_s = 0.0133e-3;
  truth.set("bandwidth", 1e15);  // the roofline far below the overheads
  truth.set("flops", 1e18);
  std::vector<std::string> sim_args;
  for (const auto& [k, v] :
       std::vector<std::pair<const char*, double>>{{"jitter", 0},
                                                   {"t_request", 0},
                                                   {"t_fixed", truth.t_fixed_s},
                                                   {"t_seq", 0},
                                                   {"t_seq2", truth.t_seq2_s},
                                                   {"bandwidth", 1e15},
                                                   {"flops", 1e18}}) {
    sim_args.push_back("--sim");
    sim_args.push_back(std::string(k) + "=" + std::to_string(v));
  }
  calib_settings s;
  std::vector<calib_trace> traces;
  for (const char* users : {"1", "2", "4"}) {
    std::vector<std::string> a = sim_args;
    a.insert(a.end(), {"--users", users, "--max-batch-size", "4", "--prompt-len", "fixed:8",
                       "--output-len", "fixed:40", "--duration", "2", "--progress", "never"});
    const std::string path = temp_path(std::string("seq2_") + users + ".jsonl");
    make_trace(a, path);
    std::vector<std::string> cfg = {
        "--max-batch-size", "4",     "--sim",          "jitter=0", "--sim",
        "t_request=0",      "--sim", "bandwidth=1e15", "--sim",    "flops=1e18"};
    traces.push_back(load_calib_trace(path, "auto", config_of(cfg),
                                      static_cast<std::uint32_t>(std::stoi(users)), s));
    traces.back().closed = true;
    std::remove(path.c_str());
  }
  const fit_objective objective = objective_of(traces, s);
  sim_config start = traces.front().cfg.sim;
  start.t_fixed_s = 0.5e-3;
  start.t_seq_s = 0.05e-3;
  const nelder_mead_options nm{1e-10, 1e-6, 500, 2};
  const fit_result linear = fit_constants({"t_fixed", "t_seq"}, start, objective, nm);
  const fit_result square = fit_constants({"t_fixed", "t_seq", "t_seq2"}, start, objective, nm);
  // A line cannot hold batch 1, 2 and 4: its error is several times the fit's tolerance (1 %).
  CHECK(linear.rms > 0.02);
  CHECK(square.rms < 0.01);
  CHECK(sens(square, "t_seq2").identifiable);
  for (int n : {1, 2, 4}) {
    CAPTURE(n);
    CHECK(decode_step_s(square.constants, start, n, 30) ==
          doctest::Approx(decode_step_s({}, truth, n, 30)).epsilon(0.03));
  }
}

TEST_CASE("calibrate --evaluate scores the constants given, fitting nothing") {
  const std::vector<std::string> truth = {"--sim",         "t_fixed=0.006", "--sim",
                                          "t_front=0.004", "--sim",         "t_client=0.002"};
  std::vector<std::string> a = truth;
  a.insert(a.end(), {"--users", "3", "--prompt-len", "uniform:50,400", "--output-len",
                     "uniform:5,40", "--duration", "20", "--progress", "never"});
  const std::string path = temp_path("evaluate.jsonl");
  const std::string json_path = temp_path("evaluate.json");
  make_trace(a, path);
  auto rms_of = [&](std::vector<std::string> sim) {
    std::vector<std::string> args = {"--evaluate", "--json-out", json_path};
    args.insert(args.end(), sim.begin(), sim.end());
    args.insert(args.end(), {"--trace", path + ",concurrency=3,closed=on"});
    REQUIRE(calibrate_main(args) == 0);
    std::ifstream in(json_path);
    const auto j = nlohmann::json::parse(in);
    CHECK(j.at("mode") == "evaluate");
    CHECK(j.at("evals") == 1);
    REQUIRE(j.at("traces").size() == 1);
    CHECK(j.at("traces")[0].at("rms").get<double>() == doctest::Approx(j.at("rms").get<double>()));
    return j.at("rms").get<double>();
  };
  const double at_truth = rms_of(truth);
  CHECK(at_truth < 0.05);  // the sim's own jitter, seeded alike: replays differ only in order
  CHECK(rms_of({"--sim", "t_fixed=0.006"}) > at_truth + 0.05);  // front and client missing
  std::vector<std::string> bad = {"--evaluate", "--evaluate", "--trace", path};
  CHECK(calibrate_main(bad) == 2);
  std::remove(path.c_str());
  std::remove(json_path.c_str());
}
