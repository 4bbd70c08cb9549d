// SPDX-License-Identifier: MIT
// batching-executor: temporary smoke driver (replaced by the CLI).
#include <cstdio>

#include "engine.hpp"
#include "sim_backend.hpp"
#include "tokchron/metrics/canonical.hpp"

int main() {
  using namespace batching;
  for (std::uint32_t bs : {8u, 16u, 32u}) {
    for (double think : {0.0, 25.0}) {
      for (auto pp : {prefill_priority::off, prefill_priority::always}) {
        sim_config sc;
        sim_backend be(sc);
        scheduler_config cfg;
        cfg.max_batch_size = bs;
        cfg.prefill = pp;
        workload w;
        if (think > 0) w.think = distribution::parse("exp:25", quantity::seconds);
        auto r = run(cfg, w, be);
        std::vector<double> ttft, tpot;
        double toks = 0;
        for (auto& q : r.requests) {
          if (auto t = tokchron::ttft(q.tl)) ttft.push_back(tokchron::to_seconds(*t));
          if (auto t = tokchron::tpot(q.tl)) tpot.push_back(tokchron::to_seconds(*t));
          toks += double(q.tl.output_tokens());
        }
        std::sort(ttft.begin(), ttft.end());
        std::sort(tpot.begin(), tpot.end());
        std::printf(
            "bs %2u think %4.0f pp %-6s reqs %5zu tps %7.1f p95ttft %7.3f p95tpot %6.4f busy %.2f "
            "kv %.2f pre %llu wall %.3f\n",
            bs, think, std::string(to_string(pp)).c_str(), r.requests.size(), toks / r.engine.end_s,
            ttft[ttft.size() * 95 / 100], tpot[tpot.size() * 95 / 100], r.engine.busy_fraction(),
            r.engine.kv_use_mean(), (unsigned long long)r.sched.preemptions, r.engine.wall_s);
      }
    }
  }
}
