// SPDX-License-Identifier: MIT
// --format json: each configuration's summary in tokchron-report's JSON schema (its own
// writer, examples/trace_report/report.hpp), with the executor's configuration, counters,
// verdicts and audit beside it.
#include <nlohmann/json.hpp>
#include <ostream>

#include "report.hpp"
#include "trace_report/report.hpp"

namespace batching {
namespace {
using ojson = nlohmann::ordered_json;

ojson value(const std::optional<double>& v) { return v ? ojson(*v) : ojson(nullptr); }

ojson verdicts_json(const tokchron::sla_verdict& s) {
  ojson a = ojson::array();
  for (const auto& v : s.verdicts) {
    ojson j;
    j["objective"] = v.target.to_string();
    j["status"] = std::string(tokchron::to_string(v.status));
    j["measured"] = value(v.measured);
    j["margin"] = value(v.margin);
    j["lower"] = std::isfinite(v.lower) ? ojson(v.lower) : ojson(nullptr);
    j["upper"] = std::isfinite(v.upper) ? ojson(v.upper) : ojson(nullptr);
    j["confidence"] = v.confidence;
    if (!v.reason.empty()) j["reason"] = std::string(v.reason);
    a.push_back(j);
  }
  return a;
}
}  // namespace

void write_json(std::ostream& out, const std::vector<outcome>& all) {
  ojson runs = ojson::array();
  for (const outcome& o : all) {
    ojson j;
    j["configuration"] = o.conf.name;
    ojson params = ojson::object();
    for (const auto& [k, v] : o.conf.parameters) params[k] = v;
    j["parameters"] = params;
    j["backend"] = make_backend(o.conf.cfg)->name();
    j["summary"] = tokchron_report::to_json(o.summary);
    const auto& e = o.run.engine;
    const auto& s = o.run.sched;
    j["engine"] = {{"steps", e.steps},
                   {"simulated_seconds", e.end_s},
                   {"busy_fraction", e.busy_fraction()},
                   {"mean_batch", e.mean_batch()},
                   {"kv_blocks", e.kv_blocks_total},
                   {"kv_use_mean", e.kv_use_mean()},
                   {"kv_use_peak", e.kv_use_peak()},
                   {"preemptions", s.preemptions},
                   {"prefill_first_steps", s.prefill_first_steps},
                   {"rejected_queue_timeout", s.rejected_timeout},
                   {"rejected_too_long", s.rejected_too_long},
                   {"wall_seconds", e.wall_s}};
    if (!o.verdicts.verdicts.empty()) {
      j["slo"] = verdicts_json(o.verdicts);
      j["slo_status"] = std::string(tokchron::to_string(o.verdicts.overall()));
    }
    ojson findings = ojson::array();
    for (const auto& f : o.audit.findings)
      findings.push_back({{"check", std::string(f.check)},
                          {"consistent", f.consistent},
                          {"claimed", f.claimed},
                          {"implied", f.implied},
                          {"factor", f.factor},
                          {"message", f.message}});
    j["audit"] = {{"consistent", o.audit.consistent()}, {"findings", findings}};
    runs.push_back(std::move(j));
  }
  ojson doc;
  doc["runs"] = std::move(runs);
  if (all.size() > 1 && !all.front().verdicts.verdicts.empty()) {
    const auto pts = load_points(all);
    const tokchron::capacity_plan plan = tokchron::plan_capacity(pts);
    doc["choice"] = plan.best ? ojson(pts[*plan.best].name) : ojson(nullptr);
    ojson rejected = ojson::array();
    for (const auto& a : plan.points) {
      if (a.meets) continue;
      ojson misses = ojson::array();
      for (const auto& m : a.misses) misses.push_back(m.to_string());
      rejected.push_back({{"configuration", pts[a.index].name}, {"misses", misses}});
    }
    doc["rejected"] = std::move(rejected);
  }
  out << doc.dump(2) << '\n';
}

}  // namespace batching
