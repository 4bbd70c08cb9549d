// SPDX-License-Identifier: MIT
#include "published_points.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "calibrate.hpp"
#include "cli.hpp"
#include "loadgen.hpp"
#include "run_reports.hpp"

namespace batching {
namespace {

std::string trim(std::string s) {
  const auto a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return {};
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

std::vector<published_point> read_published_points(std::istream& in, const std::string& name) {
  std::vector<published_point> out;
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    std::vector<std::string> f;
    for (std::size_t pos = 0;;) {
      const auto at = t.find(" | ", pos);
      f.push_back(trim(t.substr(pos, at == std::string::npos ? std::string::npos : at - pos)));
      if (at == std::string::npos) break;
      pos = at + 3;
    }
    auto bad = [&](const std::string& field, const std::string& why) {
      throw std::invalid_argument(name + ":" + std::to_string(n) + ": field '" + field +
                                  "': " + why);
    };
    if (f.size() != 5) bad("(line)", "expected 5 fields separated by ' | '");
    published_point p;
    p.id = f[0];
    p.metric = f[1];
    if (p.metric != "ttft_mean" && p.metric != "tpot_mean" && p.metric != "output_tps")
      bad("metric", "'" + p.metric + "' is not ttft_mean, tpot_mean or output_tps");
    const auto v = parse_decimal(f[2]);
    if (!v || !(*v > 0)) bad("value", "'" + f[2] + "' is not a number > 0");
    p.value = *v;
    p.source = f[3];
    p.args = split_words(f[4]);
    if (p.id.empty() || p.args.empty()) bad(p.id.empty() ? "id" : "options", "empty");
    out.push_back(std::move(p));
  }
  return out;
}

double simulate_point(const published_point& p,
                      const std::vector<std::pair<std::string, double>>& sim) {
  command_line cl = parse_command_line(p.args);
  cl.progress = "never";
  for (const auto& [k, v] : sim) cl.base.sim.set(k, v);
  const report_settings settings = settings_from(cl);
  std::vector<configuration> configs = expand(cl);
  if (configs.size() != 1 || cl.base.backend != "sim")
    throw std::invalid_argument("point " + p.id + ": one sim run expected");
  configuration& c = configs.front();
  c.cfg.sched.validate();
  c.cfg.load.validate();
  auto be = make_backend(c.cfg);
  const outcome o = evaluate(c, run(c.cfg.sched, c.cfg.load, *be), settings);
  const auto& s = o.summary;
  std::optional<double> v;
  if (p.metric == "ttft_mean") v = s.ttft.mean;
  if (p.metric == "tpot_mean") v = s.tpot.mean;
  if (p.metric == "output_tps") v = s.output_throughput;
  if (!v || !(*v > 0)) throw std::runtime_error("point " + p.id + ": the run gave no " + p.metric);
  return *v;
}

int published_main(const std::vector<std::string>& args) {
  std::string file;
  bool fit = false;
  std::size_t max_evals = 300;
  std::vector<std::pair<std::string, double>> sim;
  std::vector<std::string> keys = default_fit_keys();
  try {
    tokchron_cli::option_once once;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      auto value = [&]() -> const std::string& {
        if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
        if (auto repeated = note_option(once, a.substr(2), args[i + 1]))
          throw std::invalid_argument(*repeated);
        return args[++i];
      };
      if (a == "--fit") {
        fit = true;
      } else if (a == "--max-evals") {
        const auto n = parse_decimal(value());
        if (!n || *n < 10 || *n != std::floor(*n))
          throw std::invalid_argument("--max-evals: an integer >= 10");
        max_evals = static_cast<std::size_t>(*n);
      } else if (a == "--fit-keys") {
        keys = parse_fit_keys(value());
      } else if (a == "--sim") {
        const std::string& kv = value();
        const auto eq = kv.find('=');
        const auto x = eq == std::string::npos ? std::nullopt : parse_decimal(kv.substr(eq + 1));
        if (!x) throw std::invalid_argument("--sim '" + kv + "': expected KEY=NUMBER");
        sim_config probe;
        probe.set(kv.substr(0, eq), *x);  // an unknown key is refused here
        sim.emplace_back(kv.substr(0, eq), *x);
      } else if (a == "--help") {
        std::cout << "usage: batching-executor published FILE [--sim KEY=VALUE]... [--fit]\n"
                     "  [--fit-keys eta_bw,eta_compute,t_fixed,t_seq,t_request] [--max-evals N]\n"
                     "Simulates every published point of FILE (tests/data/published_points.txt)\n"
                     "and prints sim / published and the RMS of the log ratios; --fit fits the\n"
                     "constants to the points first (Nelder-Mead on the RMS log error).\n";
        return 0;
      } else if (a.rfind("--", 0) == 0 || !file.empty()) {
        throw std::invalid_argument("unexpected argument '" + a + "'");
      } else {
        file = a;
      }
    }
    if (file.empty()) throw std::invalid_argument("no points file given");
  } catch (const std::invalid_argument& e) {
    std::cerr << "batching-executor published: " << e.what() << "\n";
    return 2;
  }
  try {
    std::ifstream in(file);
    if (!in) throw std::invalid_argument("cannot read '" + file + "'");
    const std::vector<published_point> pts = read_published_points(in, file);
    if (pts.empty()) throw std::invalid_argument(file + ": no points");
    // Two threads, each simulating every other point (the runs are independent).
    auto ratios = [&](const std::vector<std::pair<std::string, double>>& s) {
      std::vector<double> r(pts.size());
      auto half = [&](std::size_t first) {
        for (std::size_t i = first; i < pts.size(); i += 2)
          r[i] = simulate_point(pts[i], s) / pts[i].value;
      };
      auto other = std::async(std::launch::async, half, std::size_t(1));
      half(0);
      other.get();
      return r;
    };
    auto rms = [](const std::vector<double>& r) {
      double s = 0;
      for (double x : r) s += std::log(x) * std::log(x);
      return std::sqrt(s / double(r.size()));
    };
    if (fit) {
      sim_config start;  // the defaults, then the given overrides
      for (const auto& [k, v] : sim) start.set(k, v);
      const fit_result f = fit_constants(
          keys, start,
          [&](const std::vector<std::pair<std::string, double>>& c) {
            auto s = sim;
            s.insert(s.end(), c.begin(), c.end());
            const double e = rms(ratios(s));
            return e * e;
          },
          nelder_mead_options{1e-7, 1e-3, max_evals, 1});
      for (const auto& kv : f.constants) sim.push_back(kv);
      std::printf("fitted (%zu evaluations):", f.evals);
      for (const auto& [k, v] : f.constants) std::printf(" --sim %s=%.4g", k.c_str(), v);
      std::printf("\n");
    }
    const std::vector<double> r = ratios(sim);
    std::printf("%-18s %-11s %12s %12s %7s\n", "point", "metric", "published", "sim", "ratio");
    std::size_t within = 0;
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const auto& p = pts[i];
      const double v = p.value * r[i];
      const bool t = p.metric == "output_tps";
      std::printf("%-18s %-11s %12.*f %12.*f %7.2f\n", p.id.c_str(), p.metric.c_str(), t ? 0 : 2,
                  t ? p.value : p.value * 1e3, t ? 0 : 2, t ? v : v * 1e3, r[i]);
      within += r[i] >= 0.67 && r[i] <= 1.5;
    }
    std::printf(
        "ratio = sim / published (below 1: a time too short, a throughput too low); times in ms\n"
        "RMS log ratio %.3f; %zu of %zu points within [0.67, 1.5]\n",
        rms(r), within, pts.size());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "batching-executor published: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace batching
