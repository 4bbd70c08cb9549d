// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#include "sweep.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "number_text.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/quantile/exact.hpp"

namespace tokchron_bench {

namespace {

double trace_seconds(tc::trace_clock::time_point t) { return tc::to_seconds(t.time_since_epoch()); }

// The regularized incomplete beta function I_x(a, b) by its continued fraction (modified
// Lentz), taken on the side where it converges fast (x < (a + 1) / (a + b + 2)).
double beta_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 500; ++m) {
    const double dm = m;
    double num = dm * (b - dm) * x / ((a + 2 * dm - 1) * (a + 2 * dm));
    d = 1 + num * d;
    c = 1 + num / c;
    if (std::fabs(d) < tiny) d = tiny;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    num = -(a + dm) * (a + b + dm) * x / ((a + 2 * dm) * (a + 2 * dm + 1));
    d = 1 + num * d;
    c = 1 + num / c;
    if (std::fabs(d) < tiny) d = tiny;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < 1e-15) break;
  }
  return h;
}

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

// P(T <= t) for Student's t with df degrees of freedom.
double student_t_cdf(double t, double df) {
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
  return t >= 0 ? 1 - tail : tail;
}

std::optional<double> nearest_rank(tc::exact_quantiles<double>& q, double p) {
  return q.quantile(p, tc::quantile_method::nearest_rank);
}

}  // namespace

std::vector<double> sweep_rates(double synchronous, double throughput, unsigned n) {
  if (!std::isfinite(synchronous) || !std::isfinite(throughput))
    throw std::invalid_argument("the synchronous and throughput rates must be finite");
  if (!(synchronous > 0) && !(throughput > 0))
    throw std::invalid_argument(
        "neither the synchronous nor the throughput point completed a request in its "
        "steady-state window: there is no rate to sweep");
  std::vector<double> rates;
  for (unsigned i = 1; i <= n; ++i) {
    const double r =
        synchronous + (throughput - synchronous) * static_cast<double>(i) / static_cast<double>(n);
    if (!(r > 0)) break;
    rates.push_back(r);
  }
  return rates;
}

window_metrics measure_window(const std::vector<tc::trace_timeline>& run,
                              const std::optional<tc::request_slo>& slo) {
  window_metrics w;
  w.requests = run.size();
  double last_send = -std::numeric_limits<double>::infinity();
  double first_arrival = std::numeric_limits<double>::infinity();
  std::vector<double> ends;
  ends.reserve(run.size());
  for (const auto& tl : run) {
    if (const auto s = tl.send_time()) last_send = std::max(last_send, trace_seconds(*s));
    if (const auto a = tl.arrival()) first_arrival = std::min(first_arrival, trace_seconds(*a));
    if (const auto f = tl.finish_time()) ends.push_back(trace_seconds(*f));
  }
  if (ends.empty() || !std::isfinite(last_send)) return w;
  std::sort(ends.begin(), ends.end());
  // Both edges are the first end at or after an instant (the run's start, its last send), so
  // they sit at the same place in a burst of ends: (start, end] then holds whole batches.
  const auto closing = std::lower_bound(ends.begin(), ends.end(), last_send);
  if (closing == ends.end()) return w;
  w.run_start_s = std::isfinite(first_arrival) ? first_arrival : 0.0;
  w.window = {ends.front(), *closing};
  if (w.window.empty()) return w;
  const double from = w.window.start_s, to = w.window.end_s;
  const auto inside = [&](double t) { return t > from && t <= to; };
  tc::exact_quantiles<double> ttft, tpot, e2e;
  std::optional<tc::goodput_counter> good;
  if (slo) good.emplace(*slo, tc::goodput_options{tc::missing_metric_rule::excluded});
  for (const auto& tl : run) {
    for (const auto& c : tl.store().chunks())
      if (c.tokens > 0 && inside(trace_seconds(c.time))) w.output_tokens += c.tokens;
    const auto f = tl.finish_time();
    if (!f || !inside(trace_seconds(*f))) continue;
    ++w.ended;
    const tc::request_metrics m = tc::canonical_metrics(tl);
    if (good) (void)good->add(m);
    if (!m.counted()) {
      ++w.failed;
      continue;
    }
    ++w.succeeded;
    if (m.ttft) (void)ttft.add(*m.ttft);
    if (m.tpot) (void)tpot.add(*m.tpot);
    if (m.e2e) (void)e2e.add(*m.e2e);
  }
  const double len = w.window.length_s();
  w.request_rate = static_cast<double>(w.succeeded) / len;
  w.output_rate = static_cast<double>(w.output_tokens) / len;
  w.ttft_p50 = nearest_rank(ttft, 0.5);
  w.ttft_p99 = nearest_rank(ttft, 0.99);
  w.tpot_p50 = nearest_rank(tpot, 0.5);
  w.tpot_p99 = nearest_rank(tpot, 0.99);
  w.e2e_p50 = nearest_rank(e2e, 0.5);
  w.e2e_p99 = nearest_rank(e2e, 0.99);
  if (good) w.goodput = good->result(len);
  return w;
}

double student_t_quantile(double p, double df) {
  if (!(p > 0 && p < 1) || !(df > 0) || !std::isfinite(df))
    throw std::invalid_argument("student_t_quantile: p must be in (0, 1) and df positive");
  if (p == 0.5) return 0;
  if (p < 0.5) return -student_t_quantile(1 - p, df);
  double lo = 0, hi = 1;
  while (student_t_cdf(hi, df) < p) {
    lo = hi;
    hi *= 2;
    if (hi > 1e15) return hi;
  }
  while (hi - lo > 1e-10 * std::max(1.0, hi)) {
    const double mid = 0.5 * (lo + hi);
    (student_t_cdf(mid, df) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

interval t_interval(const std::vector<double>& xs, double confidence) {
  if (xs.empty()) throw std::invalid_argument("t_interval: no values");
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument("t_interval: the confidence must be in (0, 1)");
  interval r;
  r.n = xs.size();
  double sum = 0;
  for (const double x : xs) {
    if (!std::isfinite(x)) throw std::invalid_argument("t_interval: a value is not finite");
    sum += x;
  }
  r.mean = sum / static_cast<double>(r.n);
  r.low = r.high = r.mean;
  if (r.n < 2) return r;
  double ss = 0;
  for (const double x : xs) ss += (x - r.mean) * (x - r.mean);
  r.sd = std::sqrt(ss / static_cast<double>(r.n - 1));
  r.t = student_t_quantile(1 - (1 - confidence) / 2, static_cast<double>(r.n - 1));
  const double half = *r.t * *r.sd / std::sqrt(static_cast<double>(r.n));
  r.low = r.mean - half;
  r.high = r.mean + half;
  return r;
}

namespace {

// The runs' values of one figure (those that have it).
template <class Get>
std::optional<interval> over_runs(const point_runs& p, double confidence, Get get) {
  std::vector<double> xs;
  for (const auto& w : p.runs)
    if (const std::optional<double> v = get(w)) xs.push_back(*v);
  if (xs.empty()) return std::nullopt;
  return t_interval(xs, confidence);
}

std::optional<double> good_rate(const window_metrics& w) {
  return w.goodput ? w.goodput->goodput() : std::nullopt;
}
std::optional<double> token_good_rate(const window_metrics& w) {
  return w.goodput ? w.goodput->token_goodput() : std::nullopt;
}

std::string cell(const std::optional<interval>& i, double scale, int digits) {
  if (!i) return "-";
  std::string s = fixed(i->mean * scale, digits);
  if (i->n > 1)
    s += " [" + fixed(i->low * scale, digits) + ", " + fixed(i->high * scale, digits) + "]";
  return s;
}

nlohmann::json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

void print_window(std::ostream& out, const window_metrics& w) {
  if (w.window.empty()) {
    out << "Steady state: none (no request ended before the run's last send, or none at or "
           "after it: lengthen --duration)\n";
    return;
  }
  const double t0 = w.run_start_s;
  out << "Steady state: " << fixed(w.window.start_s - t0, 3) << " s to "
      << fixed(w.window.end_s - t0, 3) << " s after the first arrival ("
      << fixed(w.window.length_s(), 3)
      << " s: after the first end of a request, to the first end at or after the last send); "
      << w.ended << " of " << w.requests << " requests ended in it, " << w.failed << " failed\n";
  out << "  requests/s " << fixed(*w.request_rate, 3) << ", output tok/s "
      << fixed(*w.output_rate, 1);
  const auto ms = [&](const char* name, const std::optional<double>& p50,
                      const std::optional<double>& p99) {
    if (p50)
      out << ", " << name << " P50 " << fixed(*p50 * 1e3, 2) << " ms P99 " << fixed(*p99 * 1e3, 2)
          << " ms";
  };
  ms("TTFT", w.ttft_p50, w.ttft_p99);
  ms("TPOT", w.tpot_p50, w.tpot_p99);
  ms("E2E", w.e2e_p50, w.e2e_p99);
  out << '\n';
  if (w.goodput) {
    const tc::goodput_result& g = *w.goodput;
    out << "  goodput: " << fixed(*g.goodput(), 3) << " requests/s, "
        << fixed(*g.token_goodput(), 1) << " tokens/s (prompt + output), "
        << fixed(*g.output_token_goodput(), 1) << " output tokens/s; " << g.good << " good of "
        << g.requests - g.excluded << " judged";
    if (const auto a = g.attainment()) out << " (" << fixed(*a * 100, 1) << "%)";
    out << ", " << g.requests - g.completed << " failed (not good), " << g.excluded
        << " left out (a limited metric undefined, e.g. TPOT of one token)";
    if (g.good_without_prompt_count > 0)
      out << "; " << g.good_without_prompt_count
          << " good requests reported no prompt tokens (their prompts are not in tokens/s)";
    out << '\n';
  }
}

nlohmann::json window_json(const window_metrics& w) {
  nlohmann::json j;
  j["rule"] = "(first end, first end at or after the last send]";
  j["start_s"] = w.window.start_s - w.run_start_s;
  j["end_s"] = w.window.end_s - w.run_start_s;
  j["length_s"] = w.window.empty() ? 0.0 : w.window.length_s();
  j["requests"] = w.requests;
  j["ended"] = w.ended;
  j["succeeded"] = w.succeeded;
  j["failed"] = w.failed;
  j["output_tokens"] = w.output_tokens;
  j["request_rate"] = optional_json(w.request_rate);
  j["output_rate"] = optional_json(w.output_rate);
  j["ttft_p50_s"] = optional_json(w.ttft_p50);
  j["ttft_p99_s"] = optional_json(w.ttft_p99);
  j["tpot_p50_s"] = optional_json(w.tpot_p50);
  j["tpot_p99_s"] = optional_json(w.tpot_p99);
  j["e2e_p50_s"] = optional_json(w.e2e_p50);
  j["e2e_p99_s"] = optional_json(w.e2e_p99);
  if (w.goodput) {
    const tc::goodput_result& g = *w.goodput;
    j["goodput"] = {{"good", g.good},
                    {"judged", g.requests - g.excluded},
                    {"failed", g.requests - g.completed},
                    {"excluded", g.excluded},
                    {"attainment", optional_json(g.attainment())},
                    {"request_rate", optional_json(g.goodput())},
                    {"token_rate", optional_json(g.token_goodput())},
                    {"output_token_rate", optional_json(g.output_token_goodput())},
                    {"good_prompt_tokens", g.good_prompt_tokens},
                    {"good_output_tokens", g.good_output_tokens}};
  }
  return j;
}

void print_summary(std::ostream& out, const std::string& title,
                   const std::vector<point_runs>& points, double confidence) {
  bool repeated = false, goodput = false;
  for (const auto& p : points) {
    repeated = repeated || p.runs.size() > 1;
    for (const auto& w : p.runs) goodput = goodput || w.goodput.has_value();
  }
  out << '\n' << title << " (each figure over the runs' steady-state windows";
  if (repeated)
    out << ": the mean, and in brackets its " << fixed(confidence * 100, 0)
        << "% t interval over the runs";
  out << "):\n";
  std::vector<std::vector<std::string>> rows{
      {"point", "offered req/s", "runs", "req/s", "output tok/s", "P50 TTFT ms", "P50 TPOT ms"}};
  if (goodput) {
    rows[0].emplace_back("goodput req/s");
    rows[0].emplace_back("goodput tok/s");
  }
  for (const auto& p : points) {
    std::vector<std::string> r{p.label, p.offered ? fixed(*p.offered, 3) : "-",
                               std::to_string(p.runs.size())};
    r.push_back(cell(
        over_runs(p, confidence, [](const window_metrics& w) { return w.request_rate; }), 1, 3));
    r.push_back(cell(
        over_runs(p, confidence, [](const window_metrics& w) { return w.output_rate; }), 1, 1));
    r.push_back(
        cell(over_runs(p, confidence, [](const window_metrics& w) { return w.ttft_p50; }), 1e3, 2));
    r.push_back(
        cell(over_runs(p, confidence, [](const window_metrics& w) { return w.tpot_p50; }), 1e3, 2));
    if (goodput) {
      r.push_back(cell(over_runs(p, confidence, good_rate), 1, 3));
      r.push_back(cell(over_runs(p, confidence, token_good_rate), 1, 1));
    }
    rows.push_back(std::move(r));
  }
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  for (const auto& r : rows) {
    out << ' ';
    for (std::size_t i = 0; i < r.size(); ++i)
      out << ' ' << (i == 0 ? std::left : std::right) << std::setw(static_cast<int>(width[i]))
          << r[i];
    out << std::right << '\n';
  }
}

}  // namespace tokchron_bench
