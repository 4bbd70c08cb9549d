// SPDX-License-Identifier: MIT
#include "loadgen.hpp"

#include <stdexcept>
#include <string>

#include "tokchron/clock.hpp"

namespace batching {
namespace {

std::string whole_mib(std::uint64_t bytes) {
  return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB";
}

}  // namespace

std::uint64_t request_footprint(std::uint32_t output_tokens) noexcept {
  return sizeof(request) +
         2 * std::uint64_t(output_tokens) * sizeof(timeline::store_type::chunk_type);
}

std::uint64_t run_footprint(const workload& w, const std::deque<request>& requests) noexcept {
  std::uint64_t n = w.mode == arrival_mode::closed ? std::uint64_t(w.users) * user_footprint() : 0;
  for (const request& r : requests) n += request_footprint(r.output_tokens);
  return n;
}

load_generator::load_generator(const workload& w, const clock_type& clock)
    : arrivals_(w), clock_(clock) {
  if (w.mode == arrival_mode::closed) bytes_ = std::uint64_t(w.users) * user_footprint();
}

void load_generator::release(time_point now, std::vector<request*>& out) {
  released_.clear();
  arrivals_.release(now, released_);
  const workload& w = arrivals_.config();
  for (const tokchron_loadgen::arrival& a : released_) {
    request& q = requests_.emplace_back(clock_);
    q.id = a.id;
    q.user = a.user;
    q.arrival = a.at;
    q.think_s = a.think_s;
    q.prompt_tokens = a.prompt_tokens;
    q.prefix_tokens = a.prefix_tokens;
    q.output_tokens = a.output_tokens;
    q.reasoning_tokens = a.reasoning_tokens;
    q.predicted_output = a.predicted_output;
    q.priority = a.priority;
    q.tl.arrive(a.at);
    q.tl.send(a.at);
    q.tl.set_prompt_tokens(q.prompt_tokens);
    bytes_ += request_footprint(q.output_tokens);
    if (w.memory_limit && bytes_ > w.memory_limit)
      throw std::runtime_error(
          "workload: the run's requests would keep more than the " + whole_mib(w.memory_limit) +
          " of memory left to it by --memory-limit (" + std::to_string(requests_.size()) +
          " requests by t = " + std::to_string(tokchron::to_seconds(a.at.time_since_epoch())) +
          " s); lower --duration, --rate or --users, or raise --memory-limit");
    out.push_back(&q);
  }
}

void load_generator::on_finish(const request& r, time_point t) {
  tokchron_loadgen::arrival a;
  a.id = r.id;
  a.user = r.user;
  arrivals_.on_finish(a, t);
}

run_result run(const scheduler_config& cfg, const workload& load, backend& be,
               const step_observer& observe) {
  clock_type clock;
  load_generator gen(load, clock);
  return run(cfg, gen, clock, be, observe);
}

}  // namespace batching
