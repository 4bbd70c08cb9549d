// SPDX-License-Identifier: MIT
// batching-executor: runs a workload through the continuous-batching scheduler on a backend
// and reports through tokchron; with --sweep, one row per configuration and the planner's pick.
// Exit codes: 0 done (and, for one run with --slo, every objective passed; for a sweep with
// --slo, some configuration meets the SLA), 2 bad command line, 3 an objective failed or no
// configuration meets the SLA, 4 undecided, 1 a run failed.
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "calibrate.hpp"
#include "cli.hpp"
#ifdef BATCHING_HAVE_CUDA_BACKEND
#include "cuda/cuda_backend.hpp"
#endif
#include "engine.hpp"
#include "interleave.hpp"
#include "pictures/executor_plot.hpp"
#include "published_points.hpp"
#include "run_limits.hpp"
#include "run_reports.hpp"
#include "server.hpp"
#include "tokchron/sla/capacity.hpp"

namespace {

// A progress bar on stderr, only when stderr is a terminal.
class progress_bar {
 public:
  progress_bar(std::size_t total, bool enabled) : total_(total), on_(enabled && isatty(2)) {}
  void show(std::size_t done, const std::string& what) const {
    if (!on_) return;
    const int width = 30;
    const int filled = static_cast<int>(width * done / (total_ ? total_ : 1));
    std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu %-48.48s", filled, "##############################",
                 width - filled, "", done, total_, what.c_str());
    std::fflush(stderr);
  }
  void done() const {
    if (on_) std::fprintf(stderr, "\r%*s\r", 100, "");
  }

 private:
  std::size_t total_;
  bool on_;
};

std::string numbered(const std::string& path, std::size_t i) {
  const auto dot = path.find_last_of('.');
  const auto slash = path.find_last_of('/');
  const std::string n = "-" + std::to_string(i + 1);
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + n;
  return path.substr(0, dot) + n + path.substr(dot);
}

void write_file(const std::string& path, const std::string& what,
                const std::function<void(std::ostream&)>& body) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + what + " to '" + path + "'");
  body(f);
  f.flush();
  if (!f) throw std::runtime_error("writing " + what + " to '" + path + "' failed");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace batching;
  if (argc > 1 && std::string(argv[1]) == "serve")  // the OpenAI HTTP server (serve/)
    return serve::serve_main(std::vector<std::string>(argv + 2, argv + argc));
  if (argc > 1 && std::string(argv[1]) == "calibrate")
    return calibrate_main(std::vector<std::string>(argv + 2, argv + argc));
  if (argc > 1 && std::string(argv[1]) == "published")
    return published_main(std::vector<std::string>(argv + 2, argv + argc));
  command_line cl;
  report_settings settings;
  std::vector<configuration> configs;
  try {
    cl = parse_command_line(std::vector<std::string>(argv + 1, argv + argc));
    if (cl.help) {
      std::cout << usage();
      return 0;
    }
    settings = settings_from(cl);
    configs = expand(cl);
    for (configuration& c : configs) {
      apply_slo_defaults(c.cfg, settings.objectives);
      c.cfg.sched.validate();
      c.cfg.load.memory_limit = cl.memory_limit;
      c.cfg.load.validate();
      check_run(c.cfg, *make_backend(c.cfg));  // make_backend validates the backend's constants
    }
#ifdef BATCHING_HAVE_CUDA_BACKEND
  } catch (const no_gpu_error& e) {  // --backend cuda on a machine without a usable GPU
    std::cerr << "batching-executor: " << e.what() << "\n";
    return exit_no_gpu;
#endif
  } catch (const std::invalid_argument& e) {
    std::cerr << "batching-executor: " << e.what() << "\n(run with --help for the options)\n";
    return 2;
  }
  try {
    std::vector<outcome> outcomes;
    std::vector<plot::executor_series> steps(cl.plot ? configs.size() : 0);  // --plot
    const progress_bar bar(configs.size(), cl.progress == "auto");
    std::uint64_t kept = 0;  // by the runs so far, against --memory-limit
    if (cl.interleave) {
      bar.show(0, "all configurations, in turns");
      std::vector<run_result> runs =
          run_interleaved(configs, cl.memory_limit, cl.plot ? &steps : nullptr);
      for (std::size_t i = 0; i < configs.size(); ++i)
        outcomes.push_back(evaluate(configs[i], std::move(runs[i]), settings));
    }
    for (std::size_t i = outcomes.size(); i < configs.size(); ++i) {
      bar.show(i, configs[i].name);
      if (kept >= cl.memory_limit)
        throw std::runtime_error("the runs before configuration " + configs[i].name +
                                 " keep all of the memory limit; raise --memory-limit");
      configs[i].cfg.load.memory_limit = cl.memory_limit - kept;
      auto be = make_backend(configs[i].cfg);
      run_result r = run(configs[i].cfg.sched, configs[i].cfg.load, *be,
                         cl.plot ? plot::record_steps(steps[i]) : step_observer{});
      kept += run_footprint(configs[i].cfg.load, r.requests);
      outcomes.push_back(evaluate(configs[i], std::move(r), settings));
    }
    bar.show(configs.size(), "done");
    bar.done();
    if (cl.trace_out)
      for (std::size_t i = 0; i < outcomes.size(); ++i)
        write_file(outcomes.size() == 1 ? *cl.trace_out : numbered(*cl.trace_out, i), "the trace",
                   [&](std::ostream& f) { write_trace(f, outcomes[i]); });
    if (cl.metrics_out)
      write_file(*cl.metrics_out, "the metrics",
                 [&](std::ostream& f) { f << prometheus_text(outcomes); });
    if (cl.plot) {
      std::string command = "batching-executor";
      for (int a = 1; a < argc; ++a) command += std::string(" ") + argv[a];
      std::cerr
          << plot::plot_executor(outcomes, steps, settings, command, *cl.plot).to_string(*cl.plot)
          << '\n';
    }
    if (cl.format == "json")
      write_json(std::cout, outcomes);
    else if (outcomes.size() == 1)
      write_run_table(std::cout, outcomes.front());
    else
      write_sweep_table(std::cout, outcomes);
    if (settings.objectives.objectives.empty()) return 0;
    if (outcomes.size() == 1) return outcomes.front().verdicts.exit_code();
    return tokchron::plan_capacity(load_points(outcomes)).best ? 0 : 3;
  } catch (const std::exception& e) {
    std::cerr << "batching-executor: " << e.what() << '\n';
    return 1;
  }
}
