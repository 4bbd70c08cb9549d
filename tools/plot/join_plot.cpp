// SPDX-License-Identifier: MIT
#include "plot/join_plot.hpp"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <sstream>
#include <utility>

#include "common.hpp"

namespace plot {
namespace {

using namespace internal;

/// One stacked-bar picture: `name`.dat holds rank, the three parts and the id, requests sorted
/// by their sum (the client's latency).
picture split_picture(const std::vector<split_request>& rows, const char* name, const char* what,
                      std::optional<double> split_request::*server,
                      std::optional<double> split_request::*back, const fs::path& dir) {
  struct row {
    double a, b, c;
    const std::string* id;
  };
  std::vector<row> v;
  for (const split_request& r : rows)
    if (r.to_server && r.*server && r.*back)
      v.push_back({*r.to_server, *(r.*server), *(r.*back), &r.id});
  std::stable_sort(v.begin(), v.end(),
                   [](const row& x, const row& y) { return x.a + x.b + x.c < y.a + y.b + y.c; });
  double largest = 0;
  for (const row& r : v) largest = std::max(largest, r.a + r.b + r.c);
  const time_unit u = unit_for(largest);
  std::ostringstream d;
  d << "# rank to_server server return id (seconds; sorted by the client's " << what << ")\n";
  for (std::size_t i = 0; i < v.size(); ++i)
    d << i + 1 << ' ' << num(v[i].a) << ' ' << num(v[i].b) << ' ' << num(v[i].c) << ' '
      << quoted_field(*v[i].id) << '\n';
  const std::string file = std::string(name) + ".dat";
  write_file(dir / file, d.str());
  picture pic;
  pic.name = name;
  pic.data = {file};
  std::ostringstream b;
  const std::string sc = num(u.scale);
  b << "  set title " << gp(std::string("Client ") + what + " of each request, split") << "\n"
    << "  set xlabel 'request (sorted by the client''s " << what << ")'\n"
    << "  set ylabel " << gp(std::string(what) + " (" + u.name + ")") << "\n"
    << "  set style fill solid 1.0 noborder\n  set boxwidth 0.9 relative\n"
    << "  set key top left\n  set grid ytics\n";
  if (v.empty()) {  // an empty data file would stop gnuplot: say so on an empty frame
    b << "  set xrange [0:1]\n  set yrange [0:1]\n"
      << "  set label 1 'no request could be split' at graph 0.5,0.5 center\n"
      << "  plot 2 notitle\n";
  } else {
    const char* srv = server == &split_request::server_ttft ? "first token" : "end";
    b << "  set xrange [0:" << v.size() + 1 << "]\n"
      << "  plot '" << file << "' using 1:(($2+$3+$4)*" << sc
      << ") with boxes lc rgb '#5dade2' title 'way back (server " << srv << " -> client)', \\\n"
      << "       '' using 1:(($2+$3)*" << sc
      << ") with boxes lc rgb '#f39c12' title 'server (arrival -> "
      << (server == &split_request::server_ttft ? "first token: queue + prefill" : "end")
      << ")', \\\n"
      << "       '' using 1:($2*" << sc
      << ") with boxes lc rgb '#7f8c8d' title 'to the server (client send -> server arrival)'\n";
  }
  write_file(dir / (std::string(name) + ".gp"), script(pic.name, 1200, 500, b.str()));
  pic.caption = std::string("Each request's client ") + what +
                ", one bar each, sorted: grey is the time before the server saw the request, "
                "orange the server's part, blue the way back. A negative part (clock error) hides "
                "or inverts its segment; the printed table counts them.";
  return pic;
}

}  // namespace

plot_result plot_split(const std::vector<split_request>& rows, std::vector<run_series> runs,
                       const std::vector<double>& printed, const std::string& title,
                       const std::string& command, const std::string& report_text,
                       const std::string& dir, const plot_options& opt) {
  const fs::path d(dir);
  std::error_code ec;
  fs::create_directories(d, ec);
  if (ec) throw std::runtime_error("plot: cannot create " + d.string() + ": " + ec.message());
  std::vector<picture> pics = {
      split_picture(rows, "split_ttft", "TTFT", &split_request::server_ttft,
                    &split_request::ttft_return, d),
      split_picture(rows, "split_e2e", "E2E", &split_request::server_e2e,
                    &split_request::e2e_return, d)};
  plot_input in;
  in.title = title;
  in.command = command;
  in.report_text = report_text;
  in.runs = std::move(runs);
  in.printed_percentiles = printed;
  return write_plots(in, dir, pics, opt);
}

}  // namespace plot
