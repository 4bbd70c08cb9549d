// SPDX-License-Identifier: MIT
#include "plot/plot.hpp"

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "tokchron/metrics/canonical.hpp"

#include "common.hpp"

namespace plot {
namespace {

namespace fs = std::filesystem;
using namespace internal;

/// The absolute path of `prog` (searched on PATH unless it contains a '/'), if executable.
std::optional<std::string> find_program(const std::string& prog) {
  if (prog.empty()) return std::nullopt;
  if (prog.find('/') != std::string::npos)
    return ::access(prog.c_str(), X_OK) == 0 ? std::optional<std::string>(prog) : std::nullopt;
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "/usr/bin:/bin";
  while (true) {
    const std::size_t colon = std::min(rest.find(':'), rest.size());
    std::string cand(rest.substr(0, colon));
    if (cand.empty()) cand = ".";
    cand += "/" + prog;
    if (::access(cand.c_str(), X_OK) == 0) return cand;
    if (colon == rest.size()) break;
    rest.remove_prefix(colon + 1);
  }
  return std::nullopt;
}

/// Runs `gnuplot NAME.gp` in `dir`, appending its output to dir/gnuplot.log. True on exit 0.
bool run_gnuplot(const std::string& exe, const fs::path& dir, const std::string& name) {
  const std::string log = (dir / "gnuplot.log").string();
  const std::string dir_s = dir.string(), file = name + ".gp";
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("plot: fork: ") + std::strerror(errno));
  if (pid == 0) {
    if (::chdir(dir_s.c_str()) != 0) ::_exit(126);
    std::FILE* f = std::fopen(log.c_str(), "a");
    if (f) {
      ::dup2(::fileno(f), 1);
      ::dup2(::fileno(f), 2);
    }
    ::execl(exe.c_str(), exe.c_str(), file.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      throw std::runtime_error(std::string("plot: waitpid: ") + std::strerror(errno));
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

plot_result plot_trace(const std::vector<tokchron::trace_timeline>& tls,
                       const std::vector<std::string>& names,
                       const std::vector<const tokchron::profile*>& profiles,
                       const tokchron::summary_options& o, const tokchron::sla& sla,
                       const std::string& title, const std::string& command, const std::string& dir,
                       const plot_options& opt) {
  plot_input in;
  in.title = title;
  in.command = command;
  in.sla = sla;
  in.printed_percentiles = o.percentiles;
  if (in.printed_percentiles.empty() && !profiles.empty())
    in.printed_percentiles = tokchron::parse_percentiles(profiles.front()->default_percentiles);
  for (const tokchron::profile* p : profiles)
    in.runs.push_back(summarize_series(std::string(p->name), tls, *p, o, sla));
  if (!names.empty() && names.size() != tls.size())
    throw std::invalid_argument("plot: " + std::to_string(names.size()) + " names for " +
                                std::to_string(tls.size()) + " requests");
  in.samples = pick_samples(
      tls,
      [&](std::size_t i) { return names.empty() ? "request " + std::to_string(i + 1) : names[i]; },
      tokchron::trace_clock::time_point{});
  in.samples_from = "the trace";
  return write_plots(in, dir, opt);
}

std::string plot_result::to_string(const std::string& dir) const {
  std::size_t rendered = 0;
  for (const auto& p : pictures) rendered += p.rendered;
  std::string s = "plot: wrote " + std::to_string(pictures.size()) + " pictures' data and scripts";
  if (rendered) s += ", rendered " + std::to_string(rendered) + " (SVG and PNG)";
  s += ", to " + (fs::path(dir) / "index.html").string();
  if (!note.empty()) s += "\nplot: " + note;
  return s;
}

plot_result write_plots(const plot_input& in, const std::string& dir_name,
                        const plot_options& opt) {
  return write_plots(in, dir_name, {}, opt);
}

plot_result write_plots(const plot_input& in, const std::string& dir_name,
                        const std::vector<picture>& extra, const plot_options& opt) {
  if (in.sweep && in.sweep->points.size() != in.runs.size())
    throw std::invalid_argument("plot: a sweep needs one run per load point (" +
                                std::to_string(in.sweep->points.size()) + " points, " +
                                std::to_string(in.runs.size()) + " runs)");
  for (std::size_t i : in.drawn)
    if (i >= in.runs.size())
      throw std::invalid_argument("plot: drawn run " + std::to_string(i) + " does not exist");
  const fs::path dir(dir_name);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("plot: cannot create " + dir.string() + ": " + ec.message());
  std::vector<double> printed =
      in.printed_percentiles.empty() ? std::vector<double>{50, 90, 95, 99} : in.printed_percentiles;

  plot_result res;
  bool any_latency = false;
  for (const auto& m : latency_metrics)
    if (has_samples(in.runs, m)) {
      any_latency = true;
      res.pictures.push_back(latency_picture(in, m, dir));
    }
  if (has_reasoning(in.runs)) res.pictures.push_back(latency_picture(in, answer_metric, dir));
  if (any_latency) res.pictures.push_back(spectrum_overview(in, dir));
  if (in.sweep && !in.sweep->points.empty()) res.pictures.push_back(frontier_picture(in, dir));
  if (!in.samples.empty()) res.pictures.push_back(timeline_picture(in, dir));
  if (!in.executor.empty()) res.pictures.push_back(executor_picture(in, opt, dir));
  res.pictures.insert(res.pictures.end(), extra.begin(), extra.end());

  if (opt.render) {
    const auto exe = find_program(opt.gnuplot);
    res.gnuplot_found = exe.has_value();
    if (exe) {
      fs::remove(dir / "gnuplot.log", ec);
      for (auto& p : res.pictures) {
        if (!run_gnuplot(*exe, dir, p.name))
          throw std::runtime_error("plot: gnuplot failed on " + (dir / (p.name + ".gp")).string() +
                                   " (see " + (dir / "gnuplot.log").string() + ")");
        p.rendered = fs::is_regular_file(dir / (p.name + ".svg")) &&
                     fs::is_regular_file(dir / (p.name + ".png"));
        if (!p.rendered)
          throw std::runtime_error("plot: gnuplot wrote no picture for " + p.name + ".gp");
      }
    } else {
      res.note = "gnuplot (" + opt.gnuplot +
                 ") was not found, so no picture was rendered; the data files and scripts are "
                 "written: install it (Debian: apt-get install gnuplot-nox) and run `gnuplot "
                 "NAME.gp` in this directory for each picture.";
    }
  } else {
    res.note =
        "rendering was switched off; run `gnuplot NAME.gp` in this directory for each "
        "picture.";
  }
  write_file(dir / "index.html", index_html(in, res, printed));
  return res;
}

}  // namespace plot
