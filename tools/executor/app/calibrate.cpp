// SPDX-License-Identifier: MIT
#include "calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <limits>
#include <queue>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine.hpp"
#include "loadgen.hpp"
#include "number_text.hpp"
#include "plot/plot.hpp"
#include "report/inputs.hpp"  // tokchron-report's reader of traces and vLLM result files
#include "tokchron/clock.hpp"
#include "tokchron/metrics/builtin_profiles.hpp"

namespace batching {
namespace {

// A fitted constant: its --sim key, and whether it is a fraction in (0, 1] (searched as a
// logit) or a time in seconds (searched as a log).
struct fit_key {
  const char* key;
  bool fraction;
};
// The first five are the default --fit.
constexpr fit_key fit_keys[] = {{"eta_bw", true},   {"eta_compute", true}, {"t_fixed", false},
                                {"t_seq", false},   {"t_request", false},  {"t_seq2", false},
                                {"t_front", false}, {"t_client", false}};
constexpr std::size_t default_fit_count = 5;

const fit_key& key_of(const std::string& k) {
  for (const auto& f : fit_keys)
    if (k == f.key) return f;
  throw std::invalid_argument("'" + k +
                              "' is not a fitted constant (eta_bw, eta_compute, t_fixed, t_seq, "
                              "t_request, t_seq2, t_front, t_client)");
}

double value_of(const sim_config& c, const std::string& k) {
  if (k == "eta_bw") return c.eta_bw;
  if (k == "eta_compute") return c.eta_compute;
  if (k == "t_fixed") return c.t_fixed_s;
  if (k == "t_seq") return c.t_seq_s;
  if (k == "t_seq2") return c.t_seq2_s;
  if (k == "t_front") return c.t_front_s;
  if (k == "t_client") return c.t_client_s;
  return c.t_request_s;
}

// The natural size of a time constant, from the starting constants: where a zero starts, and
// the least change the sensitivity check makes. t_fixed (1 ms if 0) sets the scale of a step;
// a sequence's share of a step starts at a tenth of it, the square term's at a hundredth; a
// request's start, its time outside the engine and its client's round trip at all of it.
double time_scale(const sim_config& start, const std::string& k) {
  const double step = start.t_fixed_s > 0 ? start.t_fixed_s : 1e-3;
  if (k == "t_seq") return step / 10;
  if (k == "t_seq2") return step / 100;
  return step;
}

// Search coordinate <-> value. A fraction's logit is capped so the value stays in (0, 1].
double to_search(const fit_key& f, double v, double scale) {
  if (f.fraction) {
    v = std::clamp(v, 1e-6, 1 - 1e-9);
    return std::log(v / (1 - v));
  }
  return std::log(v > 0 ? v : scale);
}
double from_search(const fit_key& f, double x) {
  if (f.fraction) return std::min(1.0, 1 / (1 + std::exp(-x)));
  return std::exp(std::clamp(x, -40.0, 10.0));  // 4e-18 s .. 6 hours
}

// Replays measured requests: at their recorded arrival times, or (concurrency N) each as soon
// as fewer than N are in flight, in arrival order (a closed loop without think time, or vLLM's
// --max-concurrency). With background, once every traced request is out, repeats of them keep N
// in flight until the traced ones have finished, and are then aborted, as batching-executor's
// closed loop does (its trace leaves those later requests out); they get ids from
// requests.size() on and arrive after end(). The repeats stand in for the requests sent after
// the traced ones, so they are the latest traced requests first (the last, then the one
// before): their cached prompt tokens are what the server's cache gave at the end of the run,
// not the cold cache its first requests found.
class replay_source final : public request_source {
 public:
  replay_source(const calib_trace& t, const clock_type& clock) : t_(t), clock_(clock) {}
  [[nodiscard]] time_point end() const noexcept override { return end_; }
  [[nodiscard]] std::optional<time_point> next_arrival() const override {
    if (t_.concurrency && in_flight_ >= *t_.concurrency) return std::nullopt;
    if (next_ >= t_.requests.size() && !(t_.background && t_.concurrency)) return std::nullopt;
    return due();
  }
  void release(time_point now, std::vector<request*>& out) override {
    while ((next_ < t_.requests.size() || (t_.background && t_.concurrency)) &&
           (!t_.concurrency || in_flight_ < *t_.concurrency) && due() <= now) {
      const std::size_t n = t_.requests.size();
      const replay_request& m =
          next_ < n ? t_.requests[next_] : t_.requests[n - 1 - (next_ - n) % n];
      const time_point when = due();
      request& q = requests_.emplace_back(clock_);
      q.id = next_++;
      q.prompt_tokens = m.prompt;
      q.output_tokens = m.output;
      q.predicted_output = m.output;
      q.warm_tokens = m.cached;
      q.arrival = when;
      q.tl.arrive(when);
      q.tl.send(when);
      q.tl.set_prompt_tokens(q.prompt_tokens);
      ++in_flight_;
      out.push_back(&q);
      if (next_ == t_.requests.size() && t_.background) end_ = when + duration(1);
    }
  }
  void on_finish(const request&, time_point t) override {
    --in_flight_;
    if (t_.concurrency) free_at_ = std::max(free_at_, t);
  }
  [[nodiscard]] std::deque<request> take_requests() override { return std::move(requests_); }

 private:
  // When the next request may go: its recorded arrival (none for a background one), not before
  // a slot freed, and a background one after end().
  [[nodiscard]] time_point due() const {
    if (next_ >= t_.requests.size()) return std::max(free_at_, end_);
    const time_point recorded(tokchron::from_seconds<duration>(t_.requests[next_].arrival_s));
    // A closed loop's first N go at their recorded times (its ramp), the rest when one frees.
    if (t_.closed && t_.concurrency && next_ >= *t_.concurrency) return free_at_;
    return std::max(recorded, free_at_);
  }
  const calib_trace& t_;
  clock_type clock_;
  std::deque<request> requests_;
  std::size_t next_ = 0;
  std::uint32_t in_flight_ = 0;
  time_point free_at_{};
  time_point end_ = time_point::max();
};

tokchron::summary_options summary_opts(const calib_settings& s) {
  tokchron::summary_options o;
  o.percentiles = s.percentiles;
  return o;
}

constexpr tokchron::metric_id compared[] = {tokchron::metric_id::ttft, tokchron::metric_id::tpot,
                                            tokchron::metric_id::itl, tokchron::metric_id::e2e};
const char* metric_name(tokchron::metric_id m) {
  switch (m) {
    case tokchron::metric_id::ttft: return "ttft";
    case tokchron::metric_id::tpot: return "tpot";
    case tokchron::metric_id::itl: return "itl";
    default: return "e2e";
  }
}

// The trace's own configuration with the fitted constants `c` applied.
sim_config with_constants(const calib_trace& t,
                          const std::vector<std::pair<std::string, double>>& c) {
  sim_config sim = t.cfg.sim;
  for (const auto& [k, v] : c) sim.set(k, v);
  return sim;
}

}  // namespace

std::vector<std::string> default_fit_keys() {
  std::vector<std::string> v;
  for (std::size_t i = 0; i < default_fit_count; ++i) v.emplace_back(fit_keys[i].key);
  return v;
}

std::vector<std::string> parse_fit_keys(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string k; std::getline(in, k, ',');) {
    (void)key_of(k);
    if (std::find(out.begin(), out.end(), k) != out.end())
      throw std::invalid_argument("'" + k + "' is named twice");
    out.push_back(k);
  }
  if (out.empty()) throw std::invalid_argument("no constant to fit");
  return out;
}

fit_result fit_constants(const std::vector<std::string>& keys, const sim_config& start,
                         const fit_objective& objective, const nelder_mead_options& opt) {
  fit_result out;
  std::vector<const fit_key*> fk;
  for (const auto& k : keys) fk.push_back(&key_of(k));
  auto constants = [&](const std::vector<double>& x, const std::vector<bool>& free,
                       const std::vector<double>& held) {
    std::vector<std::pair<std::string, double>> c;
    for (std::size_t i = 0; i < fk.size(); ++i)
      c.emplace_back(fk[i]->key, free[i] ? from_search(*fk[i], x[i]) : held[i]);
    return c;
  };
  std::vector<double> x0, held, scale;
  for (const auto* f : fk) {
    held.push_back(value_of(start, f->key));
    scale.push_back(f->fraction ? 0 : time_scale(start, f->key));
    x0.push_back(to_search(*f, held.back(), scale.back()));
  }
  std::vector<bool> free(fk.size(), true);
  out.rms_start = std::sqrt(objective(constants(x0, free, held)));
  std::vector<double> x = x0;
  // Each pass fits the free constants, then holds at their starting values those the error
  // does not depend on, and refits; until every free one is identified.
  for (std::size_t pass = 0; pass <= fk.size(); ++pass) {
    std::vector<std::size_t> idx;  // the free coordinates
    for (std::size_t i = 0; i < fk.size(); ++i)
      if (free[i]) idx.push_back(i);
    if (idx.empty()) break;
    std::vector<double> y, step;
    for (std::size_t i : idx) {
      y.push_back(x[i]);
      step.push_back(fk[i]->fraction ? 0.5 : 1.0);  // x1.65 / x2.7 to start
    }
    const nelder_mead_result r = nelder_mead(
        [&](const std::vector<double>& v) {
          std::vector<double> full = x;
          for (std::size_t j = 0; j < idx.size(); ++j) full[idx[j]] = v[j];
          return objective(constants(full, free, held));
        },
        y, step, opt);
    out.evals += r.evals;
    for (std::size_t j = 0; j < idx.size(); ++j) x[idx[j]] = r.x[j];
    out.rms = std::sqrt(r.f);
    // Sensitivity: each free constant x1.25 and x0.8 (a fraction capped at 1); a time is moved
    // by at least a quarter of its scale, so one fitted to about 0 is tested where it would
    // matter (and found identified, at 0, when the data rule it out).
    out.sensitivity.clear();
    bool dropped = false;
    for (std::size_t i = 0; i < fk.size(); ++i) {
      constant_sensitivity cs;
      cs.key = fk[i]->key;
      cs.value = free[i] ? from_search(*fk[i], x[i]) : held[i];
      if (free[i]) {
        auto at = [&](double moved) {
          std::vector<double> v = x;
          v[i] = to_search(*fk[i], moved, scale[i]);
          return std::sqrt(objective(constants(v, free, held)));
        };
        if (fk[i]->fraction) {
          cs.rms_up = at(std::min(1.0, cs.value * 1.25));
          cs.rms_down = at(cs.value * 0.8);
        } else {
          cs.rms_up = at(std::max(cs.value * 1.25, cs.value + scale[i] / 4));
          cs.rms_down = at(cs.value * 0.8);
        }
        out.evals += 2;
        cs.identifiable = std::max(cs.rms_up, cs.rms_down) - out.rms >= identifiable_rms;
        if (!cs.identifiable) {
          free[i] = false;  // held at its starting value in the refit
          x[i] = x0[i];
          dropped = true;
        }
      } else {
        cs.identifiable = false;
      }
      out.sensitivity.push_back(cs);
    }
    if (!dropped) break;
  }
  out.constants = constants(x, free, held);
  return out;
}

namespace {

calib_trace load_one_trace(const std::string& file, const std::string& kind, const run_config& cfg,
                           std::optional<std::uint32_t> concurrency, const calib_settings& s) {
  calib_trace t;
  t.file = file;
  t.cfg = cfg;
  t.concurrency = concurrency;
  if (const auto why = tokchron_report::unreadable_reason(file))  // X12: a trace is needed whole
    throw tokchron_report::input_error("cannot open " + file + ": " + *why);
  tokchron_report::loaded_inputs in = tokchron_report::load_inputs({file}, kind);
  if (in.malformed)
    throw std::invalid_argument("trace '" + file + "': " + std::to_string(in.malformed) +
                                " malformed line(s), the first " + in.errors.front().to_string() +
                                " (calibrate replays every request; fix or remove them)");
  if (in.timelines.empty()) throw std::invalid_argument("trace '" + file + "' has no requests");
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < in.timelines.size(); ++i) {
    const auto& tl = in.timelines[i];
    if (!tl.succeeded() || !tl.first_token_time()) {
      ++t.failed;
      continue;
    }
    if (!tl.prompt_tokens())
      throw std::invalid_argument("trace '" + file + "': request " + in.names[i] +
                                  " has no prompt_tokens; calibrate replays each request's "
                                  "prompt length");
    order.push_back(i);
  }
  if (order.empty())
    throw std::invalid_argument("trace '" + file + "': none of its " +
                                std::to_string(in.timelines.size()) +
                                " requests succeeded with a token; nothing to calibrate against");
  auto arrival = [&](std::size_t i) {
    const auto& tl = in.timelines[i];
    return tokchron::to_seconds(tl.arrival().value_or(*tl.send_time()).time_since_epoch());
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return arrival(a) < arrival(b); });
  const double t0 = arrival(order.front());
  const double kv_tokens =
      std::floor(cfg.sim.kv_capacity_tokens() / cfg.sched.block_size) * cfg.sched.block_size;
  for (std::size_t i : order) {
    const auto& tl = in.timelines[i];
    replay_request m;
    m.arrival_s = arrival(i) - t0;
    const std::uint64_t prompt = *tl.prompt_tokens();
    const std::uint64_t output = tl.reported_output_tokens().value_or(tl.output_tokens());
    if (prompt > max_length || output > max_length || output == 0)
      throw std::invalid_argument("trace '" + file + "': request " + in.names[i] + ": prompt " +
                                  std::to_string(prompt) + " / output " + std::to_string(output) +
                                  " tokens out of range [1, " + std::to_string(max_length) + "]");
    if (double(prompt + output) > kv_tokens)
      throw std::invalid_argument(
          "trace '" + file + "': request " + in.names[i] + " holds " +
          std::to_string(prompt + output) + " tokens, more than the configuration's KV cache (" +
          fmt("%.0f", kv_tokens) + " tokens on " + cfg.sim.hw.name + " with " + cfg.sim.model.name +
          "): the hardware, model or memory given do not match the trace");
    if (!cfg.sched.chunked_prefill && prompt > cfg.sched.max_num_batched_tokens)
      throw std::invalid_argument("trace '" + file + "': request " + in.names[i] + "'s prompt (" +
                                  std::to_string(prompt) +
                                  " tokens) exceeds --max-num-batched-tokens without chunked "
                                  "prefill: the configuration does not match the trace");
    m.prompt = static_cast<std::uint32_t>(prompt);
    m.output = static_cast<std::uint32_t>(output);
    m.cached = static_cast<std::uint32_t>(std::min(tl.cached_prompt_tokens().value_or(0), prompt));
    t.requests.push_back(m);
    t.timelines.push_back(in.timelines[i]);
  }
  tokchron::summary_options o = summary_opts(s);
  if (in.vllm) o.duration = in.duration;  // the benchmark's own duration
  t.measured = tokchron::summarize(t.timelines, tokchron::profiles::canonical, o);
  return t;
}

// The requests of segment k of `t`.
std::size_t segment_size(const calib_trace& t, std::size_t k) {
  const std::size_t to =
      k + 1 < t.segment_starts.size() ? t.segment_starts[k + 1] : t.requests.size();
  return to - t.segment_starts[k];
}

// Segment k of `t` as a trace of its own (the same configuration and replay).
calib_trace segment_of(const calib_trace& t, std::size_t k) {
  calib_trace g;
  g.cfg = t.cfg;
  g.concurrency = t.concurrency;
  g.background = t.background;
  g.closed = t.closed;
  const std::size_t from = t.segment_starts[k];
  const std::size_t to =
      k + 1 < t.segment_starts.size() ? t.segment_starts[k + 1] : t.requests.size();
  g.requests.assign(t.requests.begin() + static_cast<std::ptrdiff_t>(from),
                    t.requests.begin() + static_cast<std::ptrdiff_t>(to));
  return g;
}

run_result simulate_one(const calib_trace& t, const sim_config& sim) {
  clock_type clock;
  replay_source src(t, clock);
  sim_backend be(sim);
  return run(t.cfg.sched, src, clock, be);
}

}  // namespace

calib_trace load_calib_trace(const std::string& file, const std::string& kind,
                             const run_config& cfg, std::optional<std::uint32_t> concurrency,
                             const calib_settings& s) {
  std::vector<std::string> parts;
  std::stringstream in(file);
  for (std::string p; std::getline(in, p, '+');) {
    if (p.empty()) throw std::invalid_argument("trace '" + file + "': an empty part");
    parts.push_back(p);
  }
  if (parts.size() <= 1) {
    calib_trace t = load_one_trace(file, kind, cfg, concurrency, s);
    t.segment_starts = {0};
    return t;
  }
  // Rounds of one load measured apart (interleaved with other loads): each replayed on its
  // own, every request summarised together over the rounds' summed durations.
  calib_trace t;
  t.file = file;
  t.cfg = cfg;
  t.concurrency = concurrency;
  t.segment_starts.clear();
  double span = 0;
  for (const auto& p : parts) {
    calib_trace one = load_one_trace(p, kind, cfg, concurrency, s);
    t.segment_starts.push_back(t.requests.size());
    t.requests.insert(t.requests.end(), one.requests.begin(), one.requests.end());
    t.timelines.insert(t.timelines.end(), one.timelines.begin(), one.timelines.end());
    t.failed += one.failed;
    if (!one.measured.duration)
      throw std::invalid_argument("trace '" + p + "': no duration can be measured from it");
    span += *one.measured.duration;
  }
  tokchron::summary_options o = summary_opts(s);
  o.duration = span;
  t.measured = tokchron::summarize(t.timelines, tokchron::profiles::canonical, o);
  return t;
}

std::vector<run_result> simulate_run(const calib_trace& t, const sim_config& sim) {
  std::vector<run_result> out;
  if (t.segment_starts.size() <= 1) {
    out.push_back(simulate_one(t, sim));
    return out;
  }
  for (std::size_t k = 0; k < t.segment_starts.size(); ++k)
    out.push_back(simulate_one(segment_of(t, k), sim));
  return out;
}

tokchron::run_summary simulate_trace(const calib_trace& t, const sim_config& sim,
                                     const calib_settings& s) {
  const std::vector<run_result> runs = simulate_run(t, sim);
  tokchron::summary_options o = summary_opts(s);
  if (runs.size() > 1) {  // the rounds' durations, each as its own run measures it
    double span = 0;
    for (std::size_t k = 0; k < runs.size(); ++k) {
      tokchron::run_summarizer<timeline> one(tokchron::profiles::canonical, summary_opts(s));
      const std::size_t n = segment_size(t, k);
      for (const request& q : runs[k].requests)
        if (q.id < n) one.add(q.tl);
      span += one.summary().duration.value_or(0.0);
    }
    if (span > 0) o.duration = span;
  }
  tokchron::run_summarizer<timeline> sum(tokchron::profiles::canonical, o);
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const std::size_t n = runs.size() > 1 ? segment_size(t, k) : t.requests.size();
    for (const request& q : runs[k].requests)
      if (q.id < n) sum.add(q.tl);  // not the background
  }
  return sum.summary();
}

std::vector<calib_residual> residuals(const tokchron::run_summary& measured,
                                      const tokchron::run_summary& simulated,
                                      const calib_settings& s) {
  std::vector<calib_residual> out;
  for (const auto m : compared) {
    const auto* dm = measured.of(m);
    const auto* ds = simulated.of(m);
    for (double p : s.percentiles) {
      const auto a = dm->at(p);
      if (!a || !(*a > 0)) continue;  // the measured run has none (e.g. TPOT of 1-token outputs)
      const auto b = ds->at(p);
      out.push_back({metric_name(m), p, *a, b.value_or(0.0)});
    }
  }
  if (measured.output_throughput && *measured.output_throughput > 0)
    out.push_back(
        {"throughput", 0, *measured.output_throughput, simulated.output_throughput.value_or(0.0)});
  return out;
}

double mean_squared_log(const std::vector<calib_residual>& r, const calib_settings& s) {
  double sum = 0, w = 0;
  for (const auto& x : r) {
    const double weight = x.metric == "throughput" ? s.throughput_weight : 1.0;
    // A figure the sim lacks (0) counts as a factor of 10 off, so the search moves away from it.
    const double l = x.simulated > 0 ? std::log(x.simulated / x.measured) : std::log(10.0);
    sum += weight * l * l;
    w += weight;
  }
  return w > 0 ? sum / w : 0;
}

namespace {

const char* calibrate_usage =
    "usage: batching-executor calibrate [RUN OPTIONS] --trace FILE[,KEY=VALUE...] ...\n"
    "Fits the sim's constants to measured traces: each is replayed on the sim with the run's\n"
    "known configuration (the run options: --hw, --model, --precision, --sim, --max-batch-size,\n"
    "--max-num-batched-tokens, ...; KEY=VALUE after a trace's file: options of that trace only,\n"
    "e.g. --trace b8.jsonl,max_batch_size=8), and the constants minimise the log distance of the\n"
    "simulated to the measured TTFT, TPOT, ITL and E2E quantiles and output throughput.\n"
    "Per-trace keys besides the run options: concurrency=N (replay at most N requests in flight,\n"
    "in arrival order: a closed loop without think time, vLLM's --max-concurrency; default: the\n"
    "recorded arrival times), background=on (with concurrency: keep N in flight until the last\n"
    "traced request finished, as batching-executor's closed loop does; off: the end drains, as\n"
    "a benchmark that stops sending does), closed=on (with concurrency: after the first N, each\n"
    "request leaves when one finishes, plus the sim's t_client, not at its recorded time: a\n"
    "closed-loop load tool's trace), kind=auto|trace|vllm (a vLLM --save-detailed result).\n"
    "A request's cached_prompt_tokens are replayed as cached (not computed again).\n"
    "Options:\n"
    "  --fit KEYS          constants to fit (default eta_bw,eta_compute,t_fixed,t_seq,t_request;\n"
    "                      also t_seq2 (batch-size term), t_front (time outside the engine loop),\n"
    "                      t_client (a closed loop's client round trip))\n"
    "  --evaluate          fit nothing: score the constants given (--sim) on the traces\n"
    "  --percentiles LIST  quantiles compared (default 50,90,95,99)\n"
    "  --max-evals N       simulations the search may run (default 400)\n"
    "  --plot DIR          measured against simulated spectra (tools/plot)\n"
    "  --json-out FILE     the constants, the RMS log errors and every residual as JSON\n"
    "Prints the fitted constants as --sim options, which constants the traces identify, and\n"
    "the residual (simulated / measured) per trace, metric and quantile.\n"
    "Exit: 0 fitted, 2 bad command line or input, 1 a run failed.\n";

struct trace_arg {
  std::string file, kind = "auto";
  std::vector<std::pair<std::string, std::string>> options;
  std::optional<std::uint32_t> concurrency;
  bool background = false, closed = false;
};

trace_arg parse_trace_arg(const std::string& v) {
  trace_arg t;
  std::stringstream in(v);
  std::string part;
  std::getline(in, t.file, ',');
  if (t.file.empty()) throw std::invalid_argument("--trace '" + v + "': no file");
  while (std::getline(in, part, ',')) {
    const auto eq = part.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument("--trace '" + v + "': '" + part + "' is not KEY=VALUE");
    const std::string k = part.substr(0, eq), val = part.substr(eq + 1);
    if (k == "concurrency") {
      const auto n = parse_decimal(val);
      if (!n || *n < 1 || *n > 1e6 || *n != std::floor(*n))
        throw std::invalid_argument("--trace '" + v + "': concurrency '" + val +
                                    "' is not an integer in [1, 1000000]");
      t.concurrency = static_cast<std::uint32_t>(*n);
    } else if (k == "background" || k == "closed") {
      if (val != "on" && val != "off")
        throw std::invalid_argument("--trace '" + v + "': " + k + " '" + val + "' (on or off)");
      (k == "closed" ? t.closed : t.background) = val == "on";
    } else if (k == "kind") {
      if (val != "auto" && val != "trace" && val != "vllm")
        throw std::invalid_argument("--trace '" + v + "': kind '" + val +
                                    "' (auto, trace or vllm)");
      t.kind = val;
    } else {
      t.options.emplace_back(k, val);
    }
  }
  return t;
}

std::string pct_name(double p) { return "P" + fmt("%g", p); }

void print_residuals(const std::vector<calib_residual>& r, const calib_settings& s) {
  std::printf("    %-10s", "metric");
  for (double p : s.percentiles) std::printf(" %7s", pct_name(p).c_str());
  std::printf("   (simulated / measured)\n");
  for (const auto m : compared) {
    bool any = false;
    for (const auto& x : r) any = any || x.metric == metric_name(m);
    if (!any) continue;
    std::printf("    %-10s", metric_name(m));
    for (double p : s.percentiles) {
      const auto it = std::find_if(r.begin(), r.end(), [&](const calib_residual& x) {
        return x.metric == metric_name(m) && x.percentile == p;
      });
      std::printf(" %7s", it == r.end() ? "-" : fmt("%.3f", it->ratio()).c_str());
    }
    std::printf("\n");
  }
  for (const auto& x : r)
    if (x.metric == "throughput")
      std::printf("    %-10s %7.3f   (measured %.2f, simulated %.2f output tok/s)\n", "out tok/s",
                  x.ratio(), x.measured, x.simulated);
}

void print_fit(const fit_result& f) {
  std::printf("\nfitted constants (%zu simulations), ready to paste:\n ", f.evals);
  for (const auto& [k, v] : f.constants) std::printf(" --sim %s=%.4g", k.c_str(), v);
  std::printf(
      "\nRMS log error (all traces, metrics and quantiles): %.3f at the start, %.3f "
      "fitted (typical error %.1f %%)\n",
      f.rms_start, f.rms, (std::exp(f.rms) - 1) * 100);
  std::printf(
      "\nidentifiability (RMS log error with the constant x1.25 / x0.8, a time near 0 "
      "raised by a quarter of its scale; fitted %.4f):\n",
      f.rms);
  bool all_ok = true;
  for (const auto& c : f.sensitivity) {
    std::printf(
        "  %-12s %-10.4g %s\n", c.key.c_str(), c.value,
        c.identifiable
            ? (fmt("%.4f", c.rms_up) + " / " + fmt("%.4f", c.rms_down) + "  identified").c_str()
            : ("NOT identifiable from these traces (a 25 % change moves the error by "
               "less than " +
               fmt("%.3f", identifiable_rms) +
               "): kept at its starting value; measure a load point where it matters")
                  .c_str());
    all_ok = all_ok && c.identifiable;
  }
  for (const auto& c : f.sensitivity)
    if ((c.key == "eta_bw" || c.key == "eta_compute") && c.value >= 0.98)
      std::printf(
          "  warning: %s fitted at its cap of 1: the nominal %s is below what the "
          "server reaches; give a higher ceiling (--sim %s=...) and calibrate again\n",
          c.key.c_str(), c.key == "eta_bw" ? "bandwidth" : "FLOP rate",
          c.key == "eta_bw" ? "bandwidth" : "flops");
  if (!all_ok)
    std::printf(
        "  (eta_compute needs compute-bound steps: long prompts or large batches; t_seq "
        "needs several batch sizes; t_request needs TTFT of short prompts)\n");
}

}  // namespace

int calibrate_main(const std::vector<std::string>& args) {
  std::vector<calib_trace> traces;
  calib_settings settings;
  std::vector<std::string> keys = default_fit_keys();
  std::optional<std::string> plot_dir, json_out;
  bool evaluate = false;
  nelder_mead_options nm;
  sim_config start;
  try {
    std::vector<std::string> run_args;
    std::vector<trace_arg> targs;
    tokchron_cli::option_once once;
    for (std::size_t i = 0; i < args.size(); ++i) {
      std::string a = args[i];
      std::optional<std::string> inline_value;
      if (const auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
        inline_value = a.substr(eq + 1);
        a = a.substr(0, eq);
      }
      if (a == "--help") {
        std::cout << calibrate_usage;
        return 0;
      }
      // calibrate's own single-valued options are noted here; the run options it hands on are
      // checked by parse_command_line (the same rule); --trace is a list.
      const bool own = a == "--fit" || a == "--percentiles" || a == "--max-evals" ||
                       a == "--plot" || a == "--json-out";
      auto value = [&]() -> std::string {
        std::string v;
        if (inline_value) {
          v = *inline_value;
        } else {
          if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
          v = args[++i];
        }
        if (own)
          if (auto repeated = note_option(once, a.substr(2), v))
            throw std::invalid_argument(*repeated);
        return v;
      };
      if (a == "--evaluate") {
        if (inline_value) throw std::invalid_argument("--evaluate takes no value");
        if (evaluate) throw std::invalid_argument("--evaluate is given twice");
        evaluate = true;
      } else if (a == "--trace") {
        targs.push_back(parse_trace_arg(value()));
      } else if (a == "--fit") {
        keys = parse_fit_keys(value());
      } else if (a == "--percentiles") {
        settings.percentiles = tokchron::parse_percentiles(value());
        for (double p : settings.percentiles)
          if (p <= 0 || p >= 100)
            throw std::invalid_argument("--percentiles: each in (0, 100), not " + fmt("%g", p));
      } else if (a == "--max-evals") {
        const std::string v = value();
        const auto n = parse_decimal(v);
        if (!n || *n < 10 || *n > 100000 || *n != std::floor(*n))
          throw std::invalid_argument("--max-evals '" + v + "': an integer in [10, 100000]");
        nm.max_evals = static_cast<std::size_t>(*n);
      } else if (a == "--plot") {
        plot_dir = value();
      } else if (a == "--json-out") {
        json_out = value();
      } else if (a == "--backend" || a == "--sweep" || a == "--slo" || a == "--trace-out" ||
                 a == "--format" || a == "--metrics-out") {
        throw std::invalid_argument(a +
                                    " is not an option of calibrate (it fits the sim; see "
                                    "--help)");
      } else {
        run_args.push_back(a);
        if (a.rfind("--", 0) == 0) run_args.push_back(value());
      }
    }
    if (targs.empty()) throw std::invalid_argument("no --trace given");
    const command_line cl = parse_command_line(run_args);
    start = cl.base.sim;
    start.validate();
    for (const trace_arg& ta : targs) {
      run_config c = cl.base;
      std::string label = ta.file;
      for (const auto& [k, v] : ta.options) {
        set_option(c, k, v);
        label += " " + k + "=" + v;
      }
      if (ta.concurrency) label += " concurrency=" + std::to_string(*ta.concurrency);
      if (ta.background) label += " background=on";
      if (ta.closed) label += " closed=on";
      if (ta.background && !ta.concurrency)
        throw std::invalid_argument("--trace '" + ta.file + "': background=on needs concurrency=N");
      if (ta.closed && !ta.concurrency)
        throw std::invalid_argument("--trace '" + ta.file + "': closed=on needs concurrency=N");
      c.backend = "sim";
      c.sched.validate();
      c.sim.validate();
      traces.push_back(load_calib_trace(ta.file, ta.kind, c, ta.concurrency, settings));
      traces.back().label = label;
      traces.back().background = ta.background;
      traces.back().closed = ta.closed;
    }
  } catch (const std::exception& e) {  // usage errors and bad inputs alike: nothing was fitted
    std::cerr << "batching-executor calibrate: " << e.what()
              << "\n(run batching-executor calibrate --help for the options)\n";
    return 2;
  }
  try {
    std::printf("calibrate: %zu trace(s)\n", traces.size());
    for (std::size_t i = 0; i < traces.size(); ++i) {
      const auto& t = traces[i];
      std::printf("  #%zu %s: %zu requests replayed", i + 1, t.label.c_str(), t.requests.size());
      if (t.failed) std::printf(" (%zu failed, not replayed)", t.failed);
      const auto& sc = t.cfg.sim;
      std::printf(
          ", %s;\n     sim: %s %s %s (BW %.3g B/s, F %.3g FLOP/s, W %.4g B, KV %.4g B/token), "
          "max batch %u, token budget %u\n",
          t.concurrency ? ("at most " + std::to_string(*t.concurrency) + " in flight").c_str()
                        : "at their recorded arrival times",
          sc.hw.name.c_str(), sc.model.name.c_str(), sc.precision.name.c_str(), sc.hw.bandwidth,
          sc.hw.flops, sc.model.weight_bytes, sc.model.kv_bytes_per_token,
          t.cfg.sched.max_batch_size, t.cfg.sched.max_num_batched_tokens);
    }
    const fit_objective objective = [&](const std::vector<std::pair<std::string, double>>& c) {
      std::vector<calib_residual> all;
      for (const calib_trace& t : traces) {
        const auto r =
            residuals(t.measured, simulate_trace(t, with_constants(t, c), settings), settings);
        all.insert(all.end(), r.begin(), r.end());
      }
      return mean_squared_log(all, settings);
    };
    fit_result f;
    if (evaluate) {
      // Nothing moves: the constants are the run options' (--sim), reported under every key.
      for (const auto& k : keys) f.constants.emplace_back(k, value_of(start, k));
      f.rms = f.rms_start = std::sqrt(objective({}));
      f.evals = 1;
      std::printf("\nevaluated constants (nothing fitted):\n ");
      for (const auto& [k, v] : f.constants) std::printf(" --sim %s=%.4g", k.c_str(), v);
      std::printf(
          "\nRMS log error (all traces, metrics and quantiles): %.3f (typical error %.1f %%)\n",
          f.rms, (std::exp(f.rms) - 1) * 100);
    } else {
      f = fit_constants(keys, start, objective, nm);
      print_fit(f);
    }
    // Evaluated: each trace keeps its own constants (a trace's options may set some).
    const std::vector<std::pair<std::string, double>> applied =
        evaluate ? std::vector<std::pair<std::string, double>>{} : f.constants;
    std::vector<plot::run_series> series;
    nlohmann::json jtraces = nlohmann::json::array();
    for (std::size_t i = 0; i < traces.size(); ++i) {
      const auto& t = traces[i];
      const sim_config sim = with_constants(t, applied);
      const tokchron::run_summary simulated = simulate_trace(t, sim, settings);
      std::printf("\n#%zu %s:\n", i + 1, t.label.c_str());
      const std::vector<calib_residual> res = residuals(t.measured, simulated, settings);
      print_residuals(res, settings);
      if (json_out) {
        nlohmann::json jr = nlohmann::json::array();
        for (const auto& x : res)
          jr.push_back({{"metric", x.metric},
                        {"percentile", x.percentile},
                        {"measured", x.measured},
                        {"simulated", x.simulated},
                        {"ratio", x.ratio()}});
        jtraces.push_back({{"file", t.file},
                           {"label", t.label},
                           {"requests", t.requests.size()},
                           {"rms", std::sqrt(mean_squared_log(res, settings))},
                           {"residuals", std::move(jr)}});
      }
      if (plot_dir) {
        tokchron::summary_options o = summary_opts(settings);
        series.push_back(plot::summarize_series("measured #" + std::to_string(i + 1), t.timelines,
                                                tokchron::profiles::canonical, o));
        const std::vector<run_result> runs = simulate_run(t, sim);
        std::vector<timeline> tls;
        for (std::size_t k = 0; k < runs.size(); ++k)
          for (const request& q : runs[k].requests)
            if (q.id < (runs.size() > 1 ? segment_size(t, k) : t.requests.size()))
              tls.push_back(q.tl);
        series.push_back(plot::summarize_series("simulated #" + std::to_string(i + 1), tls,
                                                tokchron::profiles::canonical, o));
      }
    }
    if (plot_dir) {
      plot::plot_input in;
      in.title = "batching-executor calibrate";
      std::string command = "batching-executor calibrate";
      for (const auto& a : args) command += " " + a;
      in.command = command;
      in.printed_percentiles = settings.percentiles;
      in.runs = std::move(series);
      in.drawn_note = "each trace measured and simulated with the fitted constants";
      std::cerr << plot::write_plots(in, *plot_dir).to_string(*plot_dir) << "\n";
    }
    if (json_out) {
      nlohmann::json j;
      j["mode"] = evaluate ? "evaluate" : "fit";
      j["constants"] = nlohmann::json::object();
      for (const auto& [k, v] : f.constants) j["constants"][k] = v;
      j["rms_start"] = f.rms_start;
      j["rms"] = f.rms;
      j["evals"] = f.evals;
      nlohmann::json js = nlohmann::json::array();
      for (const auto& c : f.sensitivity)
        js.push_back({{"key", c.key},
                      {"value", c.value},
                      {"rms_up", c.rms_up},
                      {"rms_down", c.rms_down},
                      {"identifiable", c.identifiable}});
      j["sensitivity"] = std::move(js);
      j["traces"] = std::move(jtraces);
      std::ofstream o(*json_out);
      o << j.dump(2) << "\n";
      o.close();
      if (!o) throw std::runtime_error("cannot write " + *json_out);
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "batching-executor calibrate: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace batching
