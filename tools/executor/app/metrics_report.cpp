// SPDX-License-Identifier: MIT
// --metrics-out: each run recorded into a tokchron::serving_metrics (export/serving_metrics.hpp,
// vLLM's bucket lists, tokchron names) labelled with its configuration, the snapshots merged
// family by family, plus each run's summary and SLA verdicts as gauges
// (export/summary_gauges.hpp) and the executor's own gauges; written by export/prometheus.hpp.
#include <string>

#include "run_reports.hpp"
#include "tokchron/export/prometheus.hpp"
#include "tokchron/export/serving_metrics.hpp"
#include "tokchron/export/summary_gauges.hpp"
#include "tokchron/exposition/buckets.hpp"
#include "tokchron/exposition/labels.hpp"

namespace batching {

std::string prometheus_text(const std::vector<outcome>& all) {
  tokchron::metrics_snapshot snap;
  for (const outcome& o : all) {
    tokchron::serving_metrics_options opt;
    opt.buckets = tokchron::bucket_layout::vllm();
    opt.labels = {{"config", o.conf.name}};
    tokchron::serving_metrics m(opt);
    for (const request& q : o.run.requests)
      if (measured(o.conf.cfg, q)) (void)m.record(q.tl);
    tokchron::metrics_snapshot one = m.snapshot();
    if (snap.families.empty()) {
      snap = std::move(one);
      continue;
    }
    for (std::size_t i = 0; i < one.families.size(); ++i)  // same families, same order
      for (auto& p : one.families[i].points) snap.families[i].points.push_back(std::move(p));
  }
  struct gauge {
    const char* name;
    const char* help;
    double (*value)(const outcome&);
  };
  for (const outcome& o : all) {
    tokchron::add_run_summary(snap, o.summary, {{"config", o.conf.name}});
    tokchron::add_verdicts(snap, o.verdicts, {{"config", o.conf.name}});
  }
  const gauge gauges[] = {
      {"tokchron_backend_busy_ratio", "Share of the run the backend spent in steps.",
       [](const outcome& o) { return o.run.engine.busy_fraction(); }},
      {"tokchron_kv_cache_usage_ratio", "Time-averaged share of KV-cache blocks in use.",
       [](const outcome& o) { return o.run.engine.kv_use_mean(); }},
  };
  for (const gauge& g : gauges) {
    auto& f = snap.family(g.name, g.help, tokchron::metric_kind::gauge);
    for (const outcome& o : all) f.add(g.value(o), {{"config", o.conf.name}});
  }
  return tokchron::to_prometheus(snap);
}

}  // namespace batching
