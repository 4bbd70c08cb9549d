// SPDX-License-Identifier: MIT
// calibrate (app/calibrate.hpp): the optimiser, the new model terms and presets, recovering
// known constants from traces the sim itself made, identifiability, and bad inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "calibrate.hpp"
#include "cli.hpp"
#include "nelder_mead.hpp"
#include "report.hpp"

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
  const fit_result f = fit_constants(
      {"eta_bw", "eta_compute", "t_fixed", "t_seq"}, start,
      [&](const std::vector<std::pair<std::string, double>>& c) {
        std::vector<calib_residual> all;
        for (const auto& t : traces) {
          sim_config sc = t.cfg.sim;
          for (const auto& [k, v] : c) sc.set(k, v);
          const auto r = residuals(t.measured, simulate_trace(t, sc, s), s);
          all.insert(all.end(), r.begin(), r.end());
        }
        return mean_squared_log(all, s);
      },
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
    for (const auto& [k, v] : c) sc.set(k, v);
    batch b;
    for (int i = 0; i < n; ++i) {
      sequence_work d;
      d.past_tokens = 600;
      d.decode = d.samples = true;
      b.seqs.push_back(d);
    }
    return sim_backend(sc).cost(b).seconds;
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
