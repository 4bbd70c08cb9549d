// SPDX-License-Identifier: MIT
// Tests of the plotting library on synthetic runs: the data files carry the summary's exact
// values, the frontier is the planner's, the sample picks and the executor bins are right,
// gnuplot renders every picture (or, when missing, the data and scripts are still written).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "plot/plot.hpp"
#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/sla/evaluator.hpp"

namespace fs = std::filesystem;

namespace {

/// A small deterministic generator (the same numbers under every standard library).
struct lcg {
  std::uint64_t s;
  double uniform() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) * (1.0 / 9007199254740992.0);
  }
};

/// `n` requests: queueing, prefill, a few multi-token chunks, usage chunks; some preempted,
/// one failed. `slow` stretches every latency (a second "configuration").
std::vector<tokchron::trace_record> synthetic(int n, double slow, std::uint64_t seed) {
  lcg g{seed};
  std::vector<tokchron::trace_record> out;
  for (int i = 0; i < n; ++i) {
    tokchron::trace_record r;
    r.id = "r" + std::to_string(i);
    r.arrival = i * 0.05;
    r.send = *r.arrival;
    r.queued = r.send;
    double t = *r.queued + slow * 0.2 * -std::log(1 - g.uniform());
    r.scheduled = t;
    r.prompt_tokens = 100 + static_cast<std::uint64_t>(g.uniform() * 300);
    t += slow * (0.02 + 0.0002 * static_cast<double>(*r.prompt_tokens));
    const int chunks = 5 + static_cast<int>(g.uniform() * 40);
    if (i % 17 == 3) r.preempted.push_back(t - 0.001);
    for (int c = 0; c < chunks; ++c) {
      r.chunks.push_back({t, c % 7 == 6 ? 3u : 1u, tokchron::chunk_kind::text});
      t += slow * (0.015 + 0.02 * g.uniform());
    }
    r.chunks.push_back({t, 0, tokchron::chunk_kind::usage});
    r.end = t;
    if (i == 7) {
      r.ok = false;
      r.error = "boom";
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<tokchron::trace_timeline> timelines(const std::vector<tokchron::trace_record>& rs) {
  std::vector<tokchron::trace_timeline> out;
  for (const auto& r : rs) out.push_back(tokchron::to_timeline(r));
  return out;
}

/// A data file's rows (comments and blank lines skipped), as text fields; `block` picks the
/// gnuplot index (blocks are separated by two blank lines).
std::vector<std::vector<std::string>> read_rows(const fs::path& p, int block = 0) {
  std::ifstream f(p);
  REQUIRE(f);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  int blanks = 0, cur = 0;
  while (std::getline(f, line)) {
    if (line.empty()) {
      if (++blanks == 2) ++cur;
      continue;
    }
    blanks = 0;
    if (line[0] == '#' || cur != block) continue;
    std::istringstream is(line);
    std::vector<std::string> fields;
    std::string x;
    while (is >> x) fields.push_back(x);
    rows.push_back(fields);
  }
  return rows;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("tokchron_plot_test_" + name);
  fs::remove_all(d);
  return d;
}

/// Two profiles of one trace, as tokchron-report --profile all would draw them.
plot::plot_input trace_input(const tokchron::sla& sla) {
  static const auto records = synthetic(400, 1.0, 42);
  static const auto tls = timelines(records);
  plot::plot_input in;
  in.title = "synthetic <trace> \"q\"";
  in.sla = sla;
  in.runs.push_back(
      plot::summarize_series("canonical", tls, tokchron::profiles::canonical, {}, sla));
  in.runs.push_back(plot::summarize_series("vllm", tls, tokchron::profiles::vllm, {}, sla));
  in.samples = plot::pick_samples(records);
  return in;
}

}  // namespace

TEST_CASE("the spectrum's percentiles: whole percents and a log-spaced tail to P99.99") {
  const auto p = plot::spectrum_percentiles();
  REQUIRE(std::is_sorted(p.begin(), p.end()));
  CHECK(std::adjacent_find(p.begin(), p.end()) == p.end());
  CHECK(p.front() == 0);
  CHECK(p.back() == 100);
  for (double must : {50.0, 90.0, 95.0, 99.0, 99.9, 99.99})
    CHECK(std::find(p.begin(), p.end(), must) != p.end());
  // Above P99 every step of 1/(1-p) is 10^(1/25).
  const auto it = std::find(p.begin(), p.end(), 99.0);
  for (auto a = it; a + 1 != p.end() - 1; ++a)
    CHECK(std::log10((100 - *a) / (100 - *(a + 1))) == doctest::Approx(1.0 / 25).epsilon(1e-9));

  const auto q = plot::plot_percentiles({12.5, 50}, tokchron::sla::parse("p97.5(ttft) < 2s"));
  for (double must : {12.5, 50.0, 95.0, 97.5})
    CHECK(std::find(q.begin(), q.end(), must) != q.end());
  CHECK_THROWS_AS((void)plot::plot_percentiles({101}), std::invalid_argument);
}

TEST_CASE("latency data files carry the printed summary's exact values") {
  const auto sla = tokchron::sla::parse("p95(ttft) < 1.5s, p99(tpot) < 40ms");
  const auto in = trace_input(sla);
  const fs::path dir = fresh_dir("latency");
  plot::plot_options opt;
  opt.render = false;
  const auto res = plot::write_plots(in, dir.string(), opt);
  CHECK(res.note.find("switched off") != std::string::npos);

  // What the CLI prints: the same trace summarised at the profile's default percentiles.
  const auto tls = timelines(synthetic(400, 1.0, 42));
  const tokchron::profile* profs[] = {&tokchron::profiles::canonical, &tokchron::profiles::vllm};
  std::vector<tokchron::run_summary> printed;
  for (const auto* p : profs) {
    tokchron::summary_options o;
    o.percentiles = {50, 90, 95, 99, 99.9};
    printed.push_back(tokchron::summarize(tls, *p, o));
  }
  struct m {
    const char* file;
    tokchron::distribution tokchron::run_summary::*member;
  };
  for (const m& x : {m{"latency_ttft.dat", &tokchron::run_summary::ttft},
                     m{"latency_tpot.dat", &tokchron::run_summary::tpot},
                     m{"latency_itl.dat", &tokchron::run_summary::itl},
                     m{"latency_e2e.dat", &tokchron::run_summary::e2e}}) {
    CAPTURE(x.file);
    const auto rows = read_rows(dir / x.file);
    REQUIRE(rows.size() == in.runs[0].summary.ttft.percentiles.size());
    int matched = 0;
    for (const auto& row : rows) {
      REQUIRE(row.size() == 2 + in.runs.size());
      const double pc = std::strtod(row[0].c_str(), nullptr);
      if (pc < 100)
        CHECK(std::strtod(row[1].c_str(), nullptr) == doctest::Approx(1 / (1 - pc / 100)));
      for (std::size_t i = 0; i < in.runs.size(); ++i) {
        const double v = std::strtod(row[2 + i].c_str(), nullptr);
        CHECK(v == *(in.runs[i].summary.*x.member).at(pc));  // exact: the text round-trips
        if (auto want = (printed[i].*x.member).at(pc)) {
          CHECK(v == *want);
          ++matched;
        }
      }
    }
    CHECK(matched == 10);  // 5 printed percentiles x 2 profiles
  }
  // The profiles really differ (ITL per token vs per chunk), so the columns are not copies.
  CHECK(in.runs[0].summary.itl.at(50) != in.runs[1].summary.itl.at(50));

  // Scripts draw the SLO lines and keep labels literal.
  const std::string gp = slurp(dir / "latency_ttft.gp");
  CHECK(gp.find("SLO p95(ttft) < 1.5s") != std::string::npos);
  CHECK(gp.find("set logscale x") != std::string::npos);
  CHECK(gp.find("'P99.99' 10000") != std::string::npos);
  CHECK(slurp(dir / "latency_tpot.gp").find("SLO p99(tpot) < 40ms") != std::string::npos);
  const std::string page = slurp(dir / "index.html");
  CHECK(page.find("synthetic &lt;trace&gt; &quot;q&quot;") != std::string::npos);
  CHECK(page.find("<trace>") == std::string::npos);
  CHECK(page.find("<img") == std::string::npos);  // nothing rendered
  CHECK(page.find("<th>P95</th>") != std::string::npos);
}

TEST_CASE("the summary table shows the printed percentiles' values") {
  auto in = trace_input({});
  in.printed_percentiles = {50, 99};
  const fs::path dir = fresh_dir("table");
  plot::plot_options opt;
  opt.render = false;
  (void)plot::write_plots(in, dir.string(), opt);
  const std::string page = slurp(dir / "index.html");
  CHECK(page.find("<th>P99</th>") != std::string::npos);
  CHECK(page.find("<th>P90</th>") == std::string::npos);
  char want[40];
  std::snprintf(want, sizeof want, "<td>%.5g</td>", *in.runs[0].summary.ttft.at(99) * 1e3);
  CHECK(page.find(want) != std::string::npos);
  CHECK(page.find("<td>399</td>") != std::string::npos);  // completed: one of 400 failed
}

TEST_CASE("pick_samples: the slowest, the median and the most-preempted request") {
  std::vector<tokchron::trace_record> rs;
  auto rec = [](const std::string& id, double e2e, int pre) {
    tokchron::trace_record r;
    r.id = id;
    r.send = 0;
    r.scheduled = 0.01;
    for (int i = 0; i < pre; ++i) r.preempted.push_back(0.02 + 0.001 * i);
    r.chunks.push_back({0.03, 1, tokchron::chunk_kind::text});
    r.chunks.push_back({e2e, 1, tokchron::chunk_kind::text});
    r.end = e2e;
    return r;
  };
  rs.push_back(rec("a", 1.0, 0));
  rs.push_back(rec("b", 5.0, 0));
  rs.push_back(rec("c", 2.0, 1));
  rs.push_back(rec("d", 3.0, 2));
  rs.push_back(rec("e", 4.0, 2));
  tokchron::trace_record none;  // no token: never picked
  none.id = "z";
  none.send = 0;
  none.end = 99;
  rs.push_back(none);
  auto s = plot::pick_samples(rs);
  REQUIRE(s.size() == 3);
  CHECK(s[0].role == "slowest");
  CHECK(s[0].record.id == "b");
  CHECK(s[1].role == "median");
  CHECK(s[1].record.id == "d");  // e2e 1,2,3,4,5: the third
  CHECK(s[2].role == "preempted");
  CHECK(s[2].record.id == "e");  // two preemptions, slower than d

  rs.erase(rs.begin() + 1);  // without b the slowest is e, also the most preempted
  s = plot::pick_samples(rs);
  REQUIRE(s.size() == 2);
  CHECK(s[0].record.id == "e");
  CHECK(s[0].role == "slowest, preempted");
  CHECK(plot::pick_samples({}).empty());
}

TEST_CASE("the timeline data lays each request out from its arrival") {
  auto in = trace_input({});
  const fs::path dir = fresh_dir("timeline");
  plot::plot_options opt;
  opt.render = false;
  (void)plot::write_plots(in, dir.string(), opt);
  const auto spans = read_rows(dir / "timeline.dat", 0);
  const auto chunks = read_rows(dir / "timeline.dat", 1);
  const auto pre = read_rows(dir / "timeline.dat", 2);
  REQUIRE(in.samples.size() == 3);
  std::size_t want_chunks = 0, want_pre = 0;
  for (const auto& s : in.samples) {
    for (const auto& c : s.record.chunks) want_chunks += c.tokens > 0;
    want_pre += s.record.preempted.size();
  }
  CHECK(chunks.size() == want_chunks);
  CHECK(pre.size() == want_pre);
  CHECK(want_pre >= 1);
  // Row 1's queue span ends at its scheduling time, measured from its arrival.
  const auto& r = in.samples[0].record;
  bool found = false;
  for (const auto& s : spans)
    if (s[0] == "1" && s[3] == "0") {
      CHECK(std::strtod(s[2].c_str(), nullptr) == doctest::Approx(*r.scheduled - *r.arrival));
      found = true;
    }
  CHECK(found);
}

TEST_CASE("the timeline draws reasoning and answer tokens apart") {
  // One reasoning request (4 reasoning chunks, then 3 answer chunks) and one without reasoning.
  auto in = trace_input({});
  tokchron::trace_record r;
  r.id = "think";
  r.arrival = r.send = 0;
  r.scheduled = 0.1;
  for (int i = 0; i < 4; ++i)
    r.chunks.push_back({0.2 + 0.1 * i, 1, tokchron::chunk_kind::reasoning});
  for (int i = 0; i < 3; ++i) r.chunks.push_back({0.6 + 0.1 * i, 2, tokchron::chunk_kind::text});
  r.end = 0.9;
  tokchron::trace_record plain = r;
  plain.id = "plain";
  for (auto& c : plain.chunks) c.kind = tokchron::chunk_kind::text;
  in.samples = {{"slowest", r}, {"median", plain}};
  const fs::path dir = fresh_dir("timeline_reasoning");
  plot::plot_options opt;
  opt.render = false;
  (void)plot::write_plots(in, dir.string(), opt);
  const auto spans = read_rows(dir / "timeline.dat", 0);
  const auto chunks = read_rows(dir / "timeline.dat", 1);
  REQUIRE(chunks.size() == 14);
  std::size_t reasoning_rows[3] = {0, 0, 0};
  for (const auto& c : chunks) {
    REQUIRE(c.size() == 4);
    if (c[3] == "1") ++reasoning_rows[std::stoi(c[0])];
  }
  CHECK(reasoning_rows[1] == 4);  // row 1's reasoning chunks, and none in row 2
  CHECK(reasoning_rows[2] == 0);
  // Row 1: a reasoning span from the first token (0.2) to the first answer token (0.6), then
  // decode to the last; row 2 decodes from its first token.
  bool reasoning_span = false, decode1 = false, decode2 = false;
  for (const auto& s : spans) {
    const double a = std::strtod(s[1].c_str(), nullptr), b = std::strtod(s[2].c_str(), nullptr);
    if (s[0] == "1" && s[3] == "5") {
      reasoning_span = true;
      CHECK(a == doctest::Approx(0.2));
      CHECK(b == doctest::Approx(0.6));
    }
    if (s[0] == "1" && s[3] == "3") {
      decode1 = true;
      CHECK(a == doctest::Approx(0.6));
      CHECK(b == doctest::Approx(0.8));
    }
    if (s[0] == "2" && s[3] == "3") {
      decode2 = true;
      CHECK(a == doctest::Approx(0.2));
    }
    CHECK(!(s[0] == "2" && s[3] == "5"));
  }
  CHECK(reasoning_span);
  CHECK(decode1);
  CHECK(decode2);
  const std::string script = slurp(dir / "timeline.gp");
  CHECK(script.find("reasoning token chunk") != std::string::npos);
  CHECK(script.find("#8e44ad") != std::string::npos);  // the reasoning colour
}

TEST_CASE("with reasoning answers the spectrum draws the time to first answer token") {
  // 200 requests: 3 reasoning chunks, then 5 answer chunks; the answer starts 0.1-0.3 s after
  // the first token.
  std::vector<tokchron::trace_record> rs;
  for (int i = 0; i < 200; ++i) {
    tokchron::trace_record r;
    r.id = std::to_string(i);
    r.arrival = r.send = i * 0.5;
    const double first = r.send + 0.05 + 0.001 * i;
    for (int k = 0; k < 3; ++k)
      r.chunks.push_back({first + 0.1 * k * (1 + i % 3) / 3.0, 1, tokchron::chunk_kind::reasoning});
    for (int k = 0; k < 5; ++k)
      r.chunks.push_back({first + 0.3 + 0.02 * k, 1, tokchron::chunk_kind::text});
    r.end = r.chunks.back().time;
    rs.push_back(r);
  }
  plot::plot_input in;
  in.title = "reasoning";
  in.runs.push_back(
      plot::summarize_series("canonical", timelines(rs), tokchron::profiles::canonical));
  REQUIRE(in.runs[0].summary.reasoning_time.count == 200);
  const fs::path dir = fresh_dir("spectrum_ttfa");
  plot::plot_options opt;
  opt.render = false;
  const auto res = plot::write_plots(in, dir.string(), opt);
  bool ttfa_picture = false;
  for (const auto& p : res.pictures) ttfa_picture = ttfa_picture || p.name == "latency_ttfa";
  CHECK(ttfa_picture);
  // The data is the summary's TTFA, exactly, and above TTFT by the reasoning.
  const auto rows = read_rows(dir / "latency_ttfa.dat", 0);
  REQUIRE(!rows.empty());
  std::size_t compared = 0;
  for (const auto& row : rows) {
    const double pc = std::strtod(row[0].c_str(), nullptr);
    const auto want = in.runs[0].summary.ttfa.at(pc);
    if (!want || row[2] == "-") continue;
    CHECK(std::strtod(row[2].c_str(), nullptr) == *want);
    CHECK(*want > *in.runs[0].summary.ttft.at(pc));
    ++compared;
  }
  CHECK(compared > 50);
  const std::string script = slurp(dir / "spectrum.gp");
  CHECK(script.find("'latency_ttfa.dat'") != std::string::npos);
  CHECK(script.find("TTFT, and TTFA dashed") != std::string::npos);

  SUBCASE("without reasoning neither is drawn") {
    auto plain = trace_input({});
    const fs::path d2 = fresh_dir("spectrum_plain");
    const auto r2 = plot::write_plots(plain, d2.string(), opt);
    for (const auto& p : r2.pictures) CHECK(p.name != "latency_ttfa");
    const std::string s2 = slurp(d2 / "spectrum.gp");
    CHECK(s2.find("ttfa") == std::string::npos);
  }
}

TEST_CASE("the frontier is the planner's: points, choice and SLA region") {
  // Four configurations, each slower than the last: the planner's choice must be marked.
  const auto sla = tokchron::sla::parse("p95(ttft) < 1.5s, p95(tpot) < 30ms");
  plot::plot_input in;
  in.title = "sweep";
  in.sla = sla;
  plot::sweep_result sw;
  const double slow[] = {0.5, 1.0, 2.0, 4.0};
  for (int k = 0; k < 4; ++k) {
    const auto tls = timelines(synthetic(300, slow[k], 7));
    in.runs.push_back(plot::summarize_series("b" + std::to_string(8 << k), tls,
                                             tokchron::profiles::canonical, {}, sla));
    tokchron::slo_distributions<> dist;
    for (const auto& tl : tls) dist.add(tl);
    tokchron::load_point p;
    p.name = in.runs.back().label;
    p.parameters = {{"max_batch_size", std::to_string(8 << k)}, {"prefill_priority", "off"}};
    p.throughput = 1000.0 * (k + 1);  // more throughput, more latency: a trade-off
    p.verdicts = dist.evaluate(sla);
    sw.points.push_back(p);
  }
  sw.plan = tokchron::plan_capacity(sw.points);
  REQUIRE(sw.plan.best);
  in.sweep = sw;
  const fs::path dir = fresh_dir("frontier");
  plot::plot_options opt;
  opt.render = false;
  (void)plot::write_plots(in, dir.string(), opt);
  const auto rows = read_rows(dir / "frontier.dat", 0);
  REQUIRE(rows.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(std::strtod(rows[i][1].c_str(), nullptr) == sw.points[i].throughput);
    CHECK(std::strtod(rows[i][2].c_str(), nullptr) == *in.runs[i].summary.ttft.at(95));
    CHECK(std::strtod(rows[i][3].c_str(), nullptr) == *in.runs[i].summary.tpot.at(95));
    CHECK(rows[i][4] == (sw.plan.points[i].meets ? "1" : "0"));
    CHECK(rows[i][5] == (*sw.plan.best == i ? "1" : "0"));
  }
  CHECK(rows[0][8] == "\"mbs=8");  // the label's first field (labels are quoted strings)
  // Every point is on the frontier here (each trades throughput for latency).
  CHECK(read_rows(dir / "frontier.dat", 1).size() == sw.plan.frontier.size());
  const std::string gp = slurp(dir / "frontier.gp");
  CHECK(gp.find("SLA region: p95(ttft) < 1.5s") != std::string::npos);
  CHECK(gp.find("SLA region: p95(tpot) < 30ms") != std::string::npos);
  CHECK(gp.find("planner's choice") != std::string::npos);
  const std::string page = slurp(dir / "index.html");
  CHECK(page.find("planner&#39;s choice") == std::string::npos);
  CHECK(page.find("meets (planner's choice)") != std::string::npos);

  in.runs.pop_back();
  CHECK_THROWS_AS((void)plot::write_plots(in, dir.string(), opt), std::invalid_argument);
}

TEST_CASE("executor bins are time-weighted and keep the integrals") {
  plot::executor_series s{"cfg", {}};
  // Steps of uneven length, some spanning bin edges, with an idle gap.
  double t = 0;
  double batch_integral = 0, kv_integral = 0;
  for (int i = 0; i < 50; ++i) {
    const double len = 0.013 + 0.007 * (i % 5);
    plot::executor_step st{t,
                           t + len,
                           static_cast<std::uint32_t>(1 + i % 8),
                           static_cast<std::uint32_t>(i % 3),
                           static_cast<std::uint32_t>(10 * i),
                           1000};
    batch_integral += st.batch * len;
    kv_integral += st.kv_used / 1000.0 * len;
    s.steps.push_back(st);
    t += len + (i == 20 ? 0.5 : 0);
  }
  const auto bins = plot::bin_steps(s, 17);
  REQUIRE(bins.size() == 17);
  CHECK(bins.front().start == 0);
  CHECK(bins.back().end == s.steps.back().end);
  double b = 0, kv = 0;
  for (const auto& x : bins) {
    b += x.batch * (x.end - x.start);
    kv += x.kv_use * (x.end - x.start);
    CHECK(x.batch <= x.batch_max);
    CHECK(x.batch_max <= 8);
  }
  CHECK(b == doctest::Approx(batch_integral).epsilon(1e-12));
  CHECK(kv == doctest::Approx(kv_integral).epsilon(1e-12));
  // The idle gap's bin (from 0.5 s of idleness) has a mean below its busy neighbours' maxima.
  bool idle_seen = false;
  for (const auto& x : bins) idle_seen = idle_seen || (x.batch == 0 && x.batch_max == 0);
  CHECK(idle_seen);
  CHECK(plot::bin_steps({"e", {}}, 10).empty());
  CHECK_THROWS_AS((void)plot::bin_steps(s, 0), std::invalid_argument);
}

TEST_CASE("without gnuplot the data and scripts are still written and the page says so") {
  auto in = trace_input({});
  const fs::path dir = fresh_dir("nognuplot");
  plot::plot_options opt;
  opt.gnuplot = "/nonexistent/gnuplot";
  const auto res = plot::write_plots(in, dir.string(), opt);
  CHECK_FALSE(res.gnuplot_found);
  CHECK(res.note.find("was not found") != std::string::npos);
  CHECK(res.to_string(dir.string()).find("was not found") != std::string::npos);
  for (const auto& p : res.pictures) {
    CHECK_FALSE(p.rendered);
    CHECK(fs::is_regular_file(dir / (p.name + ".gp")));
    for (const auto& d : p.data) CHECK(fs::file_size(dir / d) > 0);
    CHECK_FALSE(fs::exists(dir / (p.name + ".svg")));
  }
  const std::string page = slurp(dir / "index.html");
  CHECK(page.find("was not found") != std::string::npos);
  CHECK(page.find("not rendered: run <code>gnuplot latency_ttft.gp") != std::string::npos);
}

TEST_CASE("gnuplot renders every picture as SVG and PNG") {
  // CI's plots stage sets TOKCHRON_PLOT_REQUIRE_GNUPLOT=1: there a missing gnuplot fails.
  const char* req = std::getenv("TOKCHRON_PLOT_REQUIRE_GNUPLOT");
  const bool required = req && std::string(req) == "1";
  auto in = trace_input(tokchron::sla::parse("p95(ttft) < 1.5s, p95(tpot) < 40ms"));
  plot::executor_series s{"b16 it's", {}};
  for (int i = 0; i < 200; ++i)
    s.steps.push_back({i * 0.03, i * 0.03 + 0.025, static_cast<std::uint32_t>(i % 16),
                       static_cast<std::uint32_t>(i / 10), static_cast<std::uint32_t>(i * 4), 900});
  in.executor.push_back(s);
  const fs::path dir = fresh_dir("render");
  const auto res = plot::write_plots(in, dir.string());
  if (!res.gnuplot_found) {
    CHECK_FALSE(required);
    MESSAGE("gnuplot not found: rendering not checked");
    return;
  }
  CHECK(res.note.empty());
  std::vector<std::string> names;
  for (const auto& p : res.pictures) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"latency_ttft", "latency_tpot", "latency_itl",
                                          "latency_e2e", "spectrum", "timeline", "executor"});
  const std::string page = slurp(dir / "index.html");
  for (const auto& p : res.pictures) {
    CAPTURE(p.name);
    CHECK(p.rendered);
    const std::string svg = slurp(dir / (p.name + ".svg"));
    CHECK(svg.find("<svg") != std::string::npos);
    const std::string png = slurp(dir / (p.name + ".png"));
    REQUIRE(png.size() > 2000);
    CHECK(png.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
    CHECK(page.find("<img src=\"" + p.name + ".svg\"") != std::string::npos);
  }
  // The SLO threshold is drawn: its title appears as text in the spectrum's SVG.
  CHECK(slurp(dir / "latency_ttft.svg").find("SLO p95(ttft) &lt; 1.5s") != std::string::npos);
}

TEST_CASE("plot_trace: one line per profile, printed percentiles kept, samples picked") {
  const auto records = synthetic(300, 1.0, 9);
  const auto tls = timelines(records);
  tokchron::summary_options o;
  o.percentiles = {50, 99.9};
  o.gpus = 2;
  const std::vector<const tokchron::profile*> profs = {&tokchron::profiles::vllm,
                                                       &tokchron::profiles::sglang_openai};
  const fs::path dir = fresh_dir("plot_trace");
  plot::plot_options opt;
  opt.render = false;
  std::vector<std::string> names;
  for (const auto& r : records) names.push_back(r.id);
  const auto res = plot::plot_trace(tls, names, profs, o, tokchron::sla::parse("p99(itl) < 50ms"),
                                    "trace", "tokchron-report x", dir.string(), opt);
  CHECK(res.pictures.size() == 6);  // four metrics, the overview, the timeline
  const auto rows = read_rows(dir / "latency_itl.dat");
  const auto printed_vllm = tokchron::summarize(tls, tokchron::profiles::vllm, o);
  const auto printed_sgl = tokchron::summarize(tls, tokchron::profiles::sglang_openai, o);
  int seen = 0;
  for (const auto& row : rows) {
    const double pc = std::strtod(row[0].c_str(), nullptr);
    if (pc != 50 && pc != 99.9) continue;
    CHECK(std::strtod(row[2].c_str(), nullptr) == *printed_vllm.itl.at(pc));
    CHECK(std::strtod(row[3].c_str(), nullptr) == *printed_sgl.itl.at(pc));
    ++seen;
  }
  CHECK(seen == 2);
  const std::string page = slurp(dir / "index.html");
  CHECK(page.find("<th>P99.9</th>") != std::string::npos);
  CHECK(page.find("<th>P95</th>") == std::string::npos);
  CHECK(page.find("tokchron-report x") != std::string::npos);
  // The token timeline names its requests by trace id ("slowest (r17): ..."), not by position.
  const std::string timeline = slurp(dir / "timeline.gp");
  CHECK(timeline.find("slowest (r") != std::string::npos);
  CHECK(timeline.find("(request ") == std::string::npos);
  // The timeline picks equal the record-based picks (same requests, same roles).
  const auto a = plot::pick_samples(records);
  const auto b = plot::pick_samples(
      tls, [](std::size_t i) { return "r" + std::to_string(i); },
      tokchron::trace_clock::time_point{});
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].role == b[i].role);
    CHECK(a[i].record == b[i].record);
  }
}
