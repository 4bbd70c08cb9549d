// SPDX-License-Identifier: MIT
#include "engine.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "tokchron/clock.hpp"

namespace batching {

run_result run(const scheduler_config& cfg, request_source& gen, const clock_type& clock,
               backend& be, const step_observer& observe) {
  const auto wall0 = std::chrono::steady_clock::now();
  scheduler sched(cfg, be.kv_blocks(cfg.block_size), &be);
  const bool virt = be.virtual_time();
  auto real_now = [&] {
    return time_point(
        std::chrono::duration_cast<duration>(std::chrono::steady_clock::now() - wall0));
  };
  engine_stats es;
  es.kv_blocks_total = sched.kv().total();
  std::vector<request*> arrived, done;
  // Sent, not yet at the scheduler: the backend's front latency (a server's other threads),
  // in arrival order (the latency is one constant).
  const duration front = be.front_latency();
  const duration client = be.client_latency();
  std::deque<request*> ingress;
  step_plan plan;
  std::uint64_t open = 0;  // run requests (arrived before the end) not yet finished
  auto collect = [&](time_point t) {
    done.clear();
    sched.take_finished(done);
    for (request* r : done) {
      if (r->arrival < gen.end()) --open;
      gen.on_finish(*r, t + client);  // when its client learns of it
    }
  };
  auto reaches = [&](const request& r) { return r.arrival + front; };
  for (;;) {
    if (!virt) clock.set(std::max(real_now(), clock.now()).time_since_epoch());
    const time_point now = clock.now();
    arrived.clear();
    gen.release(now, arrived);
    for (request* r : arrived) {
      if (r->arrival < gen.end()) ++open;
      ingress.push_back(r);
    }
    while (!ingress.empty() && reaches(*ingress.front()) <= now) {
      sched.add(*ingress.front(), now);
      ingress.pop_front();
    }
    collect(now);  // requests rejected on arrival
    const auto next_arrival = gen.next_arrival();
    if (open == 0 && (!next_arrival || *next_arrival >= gen.end())) {
      for (request* r : ingress) sched.add(*r, now);  // background ones on their way in
      ingress.clear();
      sched.abort_all(now);  // only background requests are left
      collect(now);
      break;
    }
    if (sched.schedule(now, plan)) {
      step_result res = be.step(plan.work);
      time_point end;
      if (virt) {
        if (!(res.elapsed < duration::max() - now.time_since_epoch()))
          throw std::runtime_error("executor: a step of " +
                                   std::to_string(tokchron::to_seconds(res.elapsed)) +
                                   " s would take the run's clock past its range (292 years)");
        end = now + std::max(res.elapsed, duration(1));
      } else {
        end = std::max(real_now(), now + duration(1));
        res.elapsed = end - now;
      }
      clock.set(end.time_since_epoch());
      const std::uint32_t used = sched.kv().used();
      es.kv_blocks_peak = std::max(es.kv_blocks_peak, used);
      es.kv_block_seconds += used * tokchron::to_seconds(end - now);
      es.busy_s += tokchron::to_seconds(end - now);
      es.batch_seconds += double(plan.work.seqs.size()) * tokchron::to_seconds(end - now);
      ++es.steps;
      if (observe) observe(plan, res, sched);
      sched.complete(plan, res, end);
      collect(end);
      continue;
    }
    collect(now);  // requests rejected by a queue timeout
    std::optional<time_point> next = gen.next_arrival();
    if (auto w = sched.next_wakeup(now); w && (!next || *w < *next)) next = w;
    if (!ingress.empty() && (!next || reaches(*ingress.front()) < *next))
      next = reaches(*ingress.front());
    if (!next) {
      if (!sched.idle())
        throw std::runtime_error("executor: " + std::to_string(sched.waiting()) +
                                 " requests wait but nothing can run (scheduler bug)");
      break;
    }
    if (virt) {
      clock.set(std::max(*next, now).time_since_epoch());
    } else {
      std::this_thread::sleep_until(wall0 + next->time_since_epoch());
      clock.set(std::max(real_now(), *next).time_since_epoch());
    }
  }
  es.end_s = tokchron::to_seconds(clock.now().time_since_epoch());
  es.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  run_result out;
  out.requests = gen.take_requests();
  out.engine = es;
  out.sched = sched.stats();
  return out;
}

}  // namespace batching
