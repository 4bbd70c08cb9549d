// SPDX-License-Identifier: MIT
#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "common.hpp"

namespace plot {
namespace internal {

picture executor_picture(const plot_input& in, const plot_options& opt, const fs::path& dir) {
  picture pic;
  pic.name = "executor";
  pic.data.push_back("executor.dat");
  std::ostringstream d;
  d << "# executor over time, one block per configuration; time-weighted means per bin\n"
    << "# t_start t_end batch waiting kv_use batch_max waiting_max\n";
  double tmax = 0;
  for (std::size_t i = 0; i < in.executor.size(); ++i) {
    d << (i ? "\n\n" : "") << "# " << in.executor[i].label << '\n';
    const auto bins = bin_steps(in.executor[i], opt.executor_bins);
    for (const auto& x : bins)
      d << num(x.start) << ' ' << num(x.end) << ' ' << num(x.batch) << ' ' << num(x.waiting) << ' '
        << num(x.kv_use) << ' ' << x.batch_max << ' ' << x.waiting_max << '\n';
    if (bins.empty()) d << "- - - - - - -\n";
    if (!bins.empty()) tmax = std::max(tmax, bins.back().end);
  }
  write_file(dir / "executor.dat", d.str());

  std::ostringstream b;
  b << "  set multiplot layout 3,1 title " << gp(in.title + ": executor over time") << "\n"
    << "  set grid\n  set key top right box opaque font ',9'\n  set xrange [0:" << num(tmax + 1e-12)
    << "]\n";
  struct panel {
    const char* title;
    const char* ylabel;
    const char* expr;
  };
  const panel panels[] = {{"batch size (sequences per step, time-weighted mean)", "sequences", "3"},
                          {"queue length (requests waiting after admission)", "requests", "4"},
                          {"KV-cache use", "% of the pool", "($5*100)"}};
  for (int k = 0; k < 3; ++k) {
    b << "  set title " << gp(panels[k].title) << "\n  set ylabel " << gp(panels[k].ylabel)
      << "\n  set yrange [0:" << (k == 2 ? "105" : "*") << "]\n";
    if (k == 2) b << "  set xlabel 'time since the run started (s)'\n";
    b << "  plot ";
    for (std::size_t i = 0; i < in.executor.size(); ++i)
      b << (i ? ", \\\n       " : "") << "'executor.dat' index " << i
        << " using (($1+$2)/2):" << panels[k].expr << " with lines lw 1.5 lt " << i + 1 << " title "
        << gp(in.executor[i].label);
    b << "\n";
  }
  b << "  unset multiplot\n";
  write_file(dir / "executor.gp", script(pic.name, 1200, 900, b.str()));
  pic.caption =
      "Batch size, queue length and KV-cache use over the run, one line per configuration: "
      "look for a queue that keeps growing (overload) and KV use pinned near 100% "
      "(preemptions).";
  if (!in.drawn_note.empty()) pic.caption += " Shown: " + in.drawn_note + ".";
  return pic;
}

}  // namespace internal

std::vector<executor_bin> bin_steps(const executor_series& s, std::size_t bins) {
  if (bins == 0) throw std::invalid_argument("plot: the number of bins must be positive");
  std::vector<executor_bin> out;
  if (s.steps.empty()) return out;
  double end = 0;
  for (const auto& st : s.steps) end = std::max(end, st.end);
  if (!(end > 0)) return out;
  const double w = end / static_cast<double>(bins);
  out.resize(bins);
  for (std::size_t i = 0; i < bins; ++i) {
    out[i].start = w * static_cast<double>(i);
    out[i].end = i + 1 == bins ? end : w * static_cast<double>(i + 1);
  }
  for (const auto& st : s.steps) {
    if (!(st.end > st.start)) continue;
    auto first = static_cast<std::size_t>(std::max(0.0, st.start / w));
    for (std::size_t i = std::min(first, bins - 1); i < bins && out[i].start < st.end; ++i) {
      auto& b = out[i];
      const double overlap = std::min(st.end, b.end) - std::max(st.start, b.start);
      if (overlap <= 0) continue;
      b.batch += st.batch * overlap;
      b.waiting += st.waiting * overlap;
      if (st.kv_total) b.kv_use += static_cast<double>(st.kv_used) / st.kv_total * overlap;
      b.batch_max = std::max(b.batch_max, st.batch);
      b.waiting_max = std::max(b.waiting_max, st.waiting);
    }
  }
  for (auto& b : out) {
    const double len = b.end - b.start;
    if (len > 0) {
      b.batch /= len;
      b.waiting /= len;
      b.kv_use /= len;
    }
  }
  return out;
}

}  // namespace plot
