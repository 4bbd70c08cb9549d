// SPDX-License-Identifier: MIT
// --format json: each configuration's summary, verdicts and audit in the library's JSON schema
// (tokchron/export/json.hpp, the one tokchron-report writes), with the executor's
// configuration and counters beside them.
#include <nlohmann/json.hpp>
#include <ostream>

#include "run_reports.hpp"
#include "tokchron/export/json.hpp"

namespace batching {

void write_json(std::ostream& out, const std::vector<outcome>& all) {
  using ojson = nlohmann::ordered_json;
  ojson runs = ojson::array();
  for (const outcome& o : all) {
    ojson j;
    j["configuration"] = o.conf.name;
    ojson params = ojson::object();
    for (const auto& [k, v] : o.conf.parameters) params[k] = v;
    j["parameters"] = params;
    j["backend"] = make_backend(o.conf.cfg)->name();
    j["summary"] = tokchron::summary_json(o.summary);
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
                   {"prefix_cache_hits", s.prefix_hits},
                   {"prefix_cache_hit_tokens", s.prefix_hit_tokens},
                   {"prefix_cache_evicted_blocks", s.prefix_evictions},
                   {"wall_seconds", e.wall_s}};
    if (!o.verdicts.verdicts.empty()) j["slo"] = tokchron::sla_json(o.verdicts);
    j["audit"] = tokchron::audit_json(o.audit);
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
