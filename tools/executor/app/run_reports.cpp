// SPDX-License-Identifier: MIT
#include "run_reports.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>

#include "number_text.hpp"
#include "tokchron/io/trace.hpp"
#include "tokchron/io/trace_json_writer.hpp"
#include "tokchron/sla/evaluator.hpp"

namespace batching {
namespace {

std::string opt(const char* f, const std::optional<double>& v, double scale = 1) {
  return v ? fmt(f, *v * scale) : std::string("-");
}

std::string verdict_cell(const tokchron::sla_verdict& v) {
  if (v.verdicts.empty()) return "-";
  std::string s(tokchron::to_string(v.overall()));
  std::string which;
  for (const auto& x : v.verdicts)
    if (!x.passed())
      which += (which.empty() ? "" : ",") + std::string(tokchron::to_string(x.target.metric));
  if (!which.empty()) s += " (" + which + ")";
  return s;
}

std::string describe_load(const workload& w) {
  if (w.mode == arrival_mode::closed)
    return "closed loop, " + std::to_string(w.users) + " users, think " + w.think.spec();
  return "open loop, " + fmt("%g", w.rate) + " req/s, burstiness " + fmt("%g", w.burstiness);
}

void write_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows,
                 std::size_t left_columns = 1) {
  std::vector<std::size_t> width;
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], r[c].size());
    }
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t c = 0; c < r.size(); ++c) {
      const std::string pad(width[c] - r[c].size(), ' ');
      line += c < left_columns ? r[c] + pad : pad + r[c];
      if (c + 1 < r.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  }
}

// Prompt tokens the measured requests took from the prefix cache.
std::uint64_t cached_tokens(const outcome& o) {
  std::uint64_t n = 0;
  for (const request& q : o.run.requests)
    if (measured(o.conf.cfg, q)) n += q.tl.cached_prompt_tokens().value_or(0);
  return n;
}

}  // namespace

time_point benchmark_start(const run_config& c) noexcept {
  return time_point{} + tokchron::from_seconds<time_point::duration>(c.warmup_s);
}

bool measured(const run_config& c, const request& q) noexcept {
  const double a = tokchron::to_seconds(q.arrival.time_since_epoch());
  return a >= c.warmup_s && a < c.load.duration_s;
}

report_settings settings_from(const command_line& cl) {
  report_settings s;
  s.profile = tokchron::find_profile(cl.profile);
  if (!s.profile) {
    std::string names;
    for (const auto* p : tokchron::all_profiles())
      names += (names.empty() ? "" : ", ") + std::string(p->name);
    throw usage_error("--profile '" + cl.profile + "': unknown (" + names + ")");
  }
  try {
    if (cl.percentiles) s.summary.percentiles = tokchron::parse_percentiles(*cl.percentiles);
    for (const std::string& spec : cl.slos)
      for (const auto& o : tokchron::sla::parse(spec).objectives)
        s.objectives.objectives.push_back(o);
  } catch (const std::invalid_argument& e) {
    throw usage_error(e.what());
  }
  s.summary.gpus = 1;
  return s;
}

void apply_slo_defaults(run_config& c, const tokchron::sla& s) {
  if (c.sched.ttft_target) return;
  for (const auto& o : s.objectives)
    if (o.metric == tokchron::slo_metric::ttft && o.upper_bound()) {
      c.sched.ttft_target = tokchron::from_seconds<duration>(o.threshold);
      return;
    }
}

tokchron::claims claims_of(const outcome& o) {
  const tokchron::run_summary& s = o.summary;
  const run_config& c = o.conf.cfg;
  tokchron::claims k;
  k.name = o.conf.name;
  k.output_tps = s.output_throughput;
  k.total_tps = s.total_token_throughput;
  k.rps = s.request_throughput;
  k.mean_tpot_s = s.tpot.mean;
  k.p95_tpot_s = s.tpot.at(95);
  k.mean_ttft_s = s.ttft.mean;
  k.p95_ttft_s = s.ttft.at(95);
  k.mean_e2e_s = s.e2e.mean;
  k.concurrency = s.time_weighted_concurrency;
  k.max_batch_size = c.sched.max_batch_size;
  if (c.load.mode == arrival_mode::closed) {
    k.users = c.load.users;
    // The think time the users actually took (the mean of the draws of the measured
    // requests), not the distribution's nominal mean: the audit's queueing check subtracts
    // rps x think from the user count, so a 4 % sampling difference would move it by 30 %.
    double sum = 0;
    std::size_t n = 0;
    for (const request& q : o.run.requests)
      if (q.think_s && measured(c, q)) {
        sum += *q.think_s;
        ++n;
      }
    k.think_time_s = n ? sum / static_cast<double>(n) : c.load.think.mean();
  }
  k.mean_prompt_tokens = s.prompt_lengths.mean;
  k.mean_output_tokens = s.output_lengths.mean;
  k.gpus = 1;
  if (c.backend == "sim") {
    k.weight_bytes = c.sim.model.weight_bytes;
    k.memory_bandwidth_bytes_per_s = c.sim.hw.bandwidth;
  }
  return k;
}

outcome evaluate(configuration conf, run_result run, const report_settings& s) {
  outcome o;
  o.conf = std::move(conf);
  o.run = std::move(run);
  tokchron::run_summarizer<timeline> sum(*s.profile, s.summary);
  sum.set_benchmark_start(benchmark_start(o.conf.cfg));  // as its --trace-out says
  tokchron::slo_distributions<> dist;
  for (const request& q : o.run.requests) {
    if (!measured(o.conf.cfg, q)) continue;
    sum.add(q.tl);
    dist.add(q.tl);
  }
  o.summary = sum.summary();
  if (!s.objectives.objectives.empty()) {
    tokchron::evaluation_options eo;
    eo.method = s.profile->percentile_method;
    o.verdicts = dist.evaluate(s.objectives, eo);
  }
  o.claimed = claims_of(o);
  o.audit = tokchron::audit(o.claimed);
  return o;
}

std::vector<tokchron::load_point> load_points(const std::vector<outcome>& all) {
  std::vector<tokchron::load_point> pts;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const outcome& o = all[i];
    tokchron::load_point p;
    p.name = "#" + std::to_string(i + 1);  // the parameters follow it in the planner's lines
    p.parameters = o.conf.parameters;
    p.throughput = o.summary.output_throughput.value_or(0.0);
    p.verdicts = o.verdicts;
    pts.push_back(std::move(p));
  }
  return pts;
}

void write_sweep_table(std::ostream& out, const std::vector<outcome>& all) {
  if (all.empty()) return;
  const run_config& c0 = all.front().conf.cfg;
  out << "backend " << make_backend(c0)->name() << "; " << describe_load(c0.load) << "; prompts "
      << c0.load.prompt.spec() << ", outputs " << c0.load.output.spec() << "; "
      << fmt("%g", c0.load.duration_s) << " s of arrivals, seed " << c0.load.seed << "\n\n";
  // With reasoning answers the time to first answer token stands beside TTFT.
  const bool reasoning = std::any_of(all.begin(), all.end(), [](const outcome& o) {
    return o.conf.cfg.load.reasoning_fraction > 0;
  });
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"#", "configuration", "out tok/s", "P95 TTFT s", "P95 TPOT ms", "P99 ITL ms",
                  "busy", "batch", "KV mean/peak", "preempt", "rejected", "verdict"});
  if (reasoning) rows.back().insert(rows.back().begin() + 4, "P95 TTFA s");
  for (std::size_t i = 0; i < all.size(); ++i) {
    const outcome& o = all[i];
    const auto& s = o.summary;
    const auto& e = o.run.engine;
    rows.push_back(
        {"#" + std::to_string(i + 1), o.conf.name, opt("%.1f", s.output_throughput),
         opt("%.3f", s.ttft.at(95)), opt("%.1f", s.tpot.at(95), 1e3),
         opt("%.1f", s.itl.at(99), 1e3), fmt("%.0f%%", e.busy_fraction() * 100),
         fmt("%.1f", e.mean_batch()),
         fmt("%.0f%%", e.kv_use_mean() * 100) + "/" + fmt("%.0f%%", e.kv_use_peak() * 100),
         std::to_string(o.run.sched.preemptions),
         std::to_string(o.run.sched.rejected_timeout + o.run.sched.rejected_too_long),
         verdict_cell(o.verdicts)});
    if (reasoning) rows.back().insert(rows.back().begin() + 4, opt("%.3f", s.ttfa.at(95)));
  }
  write_table(out, rows, 2);
  const auto pts = load_points(all);
  bool judged = !all.front().verdicts.verdicts.empty();
  if (judged) {
    const tokchron::capacity_plan plan = tokchron::plan_capacity(pts);
    out << "\nCapacity planner (most output tokens/s that meets the SLA):\n";
    if (plan.best)
      out << "  choice: " << pts[*plan.best].name << " " << all[*plan.best].conf.name << " at "
          << fmt("%.1f", pts[*plan.best].throughput) << " output tok/s\n";
    out << plan.to_string(pts);
  }
  std::size_t inconsistent = 0;
  for (const outcome& o : all) inconsistent += o.audit.consistent() ? 0 : 1;
  out << "\nClaim audit (Little's law and the roofline floor on each row's own figures): "
      << (inconsistent == 0 ? "every row is consistent"
                            : std::to_string(inconsistent) + " rows inconsistent")
      << '\n';
  for (const outcome& o : all)
    if (!o.audit.consistent()) out << "  " << o.conf.name << ":\n" << o.audit.to_string();
}

void write_run_table(std::ostream& out, const outcome& o) {
  const auto& s = o.summary;
  const auto& c = o.conf.cfg;
  const auto& e = o.run.engine;
  const auto& st = o.run.sched;
  out << "backend " << make_backend(c)->name() << "; " << describe_load(c.load) << "; prompts "
      << c.load.prompt.spec() << ", outputs " << c.load.output.spec() << "; "
      << fmt("%g", c.load.duration_s) << " s of arrivals, seed " << c.load.seed << '\n'
      << "scheduler: max_batch_size " << c.sched.max_batch_size << ", max_num_batched_tokens "
      << c.sched.max_num_batched_tokens << ", chunked prefill "
      << (c.sched.chunked_prefill ? "on" : "off") << ", prefill priority "
      << to_string(c.sched.prefill) << ", policy " << to_string(c.sched.order) << ", kv "
      << to_string(c.sched.kv) << "\n\n";
  out << "profile " << s.profile << ": " << s.requests << " requests, " << s.completed
      << " completed, " << s.failed << " failed, duration " << opt("%.1f", s.duration) << " s\n"
      << "throughput: " << opt("%.3f", s.request_throughput) << " req/s, "
      << opt("%.1f", s.output_throughput) << " output tok/s, "
      << opt("%.1f", s.total_token_throughput) << " total tok/s; concurrency mean "
      << opt("%.1f", s.time_weighted_concurrency) << ", peak " << s.peak_concurrency << "\n\n";
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head{"metric (ms)", "count", "mean", "median"};
  for (const auto& p : s.ttft.percentiles) head.push_back(tokchron::percentile_key(p.percent));
  head.push_back("max");
  rows.push_back(head);
  auto add = [&](std::string_view name, const tokchron::distribution& d) {
    std::vector<std::string> r{std::string(name), std::to_string(d.count), opt("%.1f", d.mean, 1e3),
                               opt("%.1f", d.median, 1e3)};
    for (const auto& p : d.percentiles) r.push_back(opt("%.1f", p.value, 1e3));
    r.push_back(opt("%.1f", d.max, 1e3));
    rows.push_back(r);
  };
  for (const tokchron::metric_id id : tokchron::run_summary::kept)  // the table's time metrics
    if (tokchron::is_time_metric(id)) add(tokchron::to_string(id), *s.of(id));
  // A run with reasoning answers or a shared prefix: the time metrics of the metric table that
  // tell them apart (time to first answer token, reasoning time, time to second token, ICL).
  if (c.load.reasoning_fraction > 0 || c.load.shared_prefix > 0)
    for (const tokchron::metric_id id : tokchron::run_summary::kept_when_measured)
      if (tokchron::is_time_metric(id) && s.of(id)->count > 0)
        add(tokchron::to_string(id), *s.of(id));
  write_table(out, rows);
  out << "\nengine: " << e.steps << " steps, busy " << fmt("%.0f%%", e.busy_fraction() * 100)
      << ", mean batch " << fmt("%.1f", e.mean_batch()) << ", KV mean "
      << fmt("%.0f%%", e.kv_use_mean() * 100) << " peak " << fmt("%.0f%%", e.kv_use_peak() * 100)
      << " of " << e.kv_blocks_total << " blocks, " << st.preemptions << " preemptions, "
      << st.prefill_first_steps << " prefill-first steps, rejected "
      << st.rejected_timeout + st.rejected_too_long;
  if (st.rejected_timeout + st.rejected_too_long > 0)
    out << " (" << st.rejected_too_long << " too long for the KV cache or token budget, "
        << st.rejected_timeout << " queue timeouts)";
  out << ", simulated " << fmt("%.1f", e.end_s) << " s in " << fmt("%.3f", e.wall_s) << " s\n";
  if (c.load.shared_prefix > 0) {
    std::uint64_t prompt = 0;
    for (const request& q : o.run.requests)
      if (measured(c, q) && q.ever_scheduled) prompt += q.prompt_tokens;
    out << "prefix cache (shared prefix of " << c.load.shared_prefix << " tokens, "
        << (c.sched.prefix_caching ? "on" : "off") << "): " << st.prefix_hits << " hits, "
        << st.prefix_hit_tokens << " prompt tokens not prefilled";
    if (prompt > 0)
      out << " (measured requests: "
          << fmt("%.1f%%",
                 100.0 * static_cast<double>(cached_tokens(o)) / static_cast<double>(prompt))
          << " of their prompt tokens)";
    out << ", " << st.prefix_evictions << " cached blocks evicted\n";
  }
  if (c.load.reasoning_fraction > 0) {
    std::uint64_t thinking = 0, output = 0;
    for (const request& q : o.run.requests)
      if (measured(c, q)) {
        thinking += q.tl.reported_reasoning_tokens().value_or(0);
        output += q.tl.output_tokens();
      }
    out << "reasoning: " << thinking << " of " << output
        << " output tokens of the measured requests (" << fmt("%g", c.load.reasoning_fraction)
        << " of each answer)\n";
  }
  if (!o.verdicts.verdicts.empty())
    out << "\nSLA: " << tokchron::to_string(o.verdicts.overall()) << '\n' << o.verdicts.to_string();
  out << "\nclaim audit of these figures: "
      << (o.audit.consistent() ? "consistent" : "INCONSISTENT") << '\n'
      << o.audit.to_string();
}

void write_trace(std::ostream& out, const outcome& o) {
  for (const request& q : o.run.requests)
    if (measured(o.conf.cfg, q)) {
      auto rec = tokchron::to_trace_record(q.tl, time_point{}, std::to_string(q.id));
      rec.benchmark_start = tokchron::to_seconds(benchmark_start(o.conf.cfg).time_since_epoch());
      tokchron::write_trace_line(out, rec);
    }
}

}  // namespace batching
