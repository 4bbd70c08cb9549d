// SPDX-License-Identifier: MIT
#include "loadgen.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "tokchron/clock.hpp"

namespace batching {

void workload::validate() const {
  auto bad = [](const std::string& m) { throw std::invalid_argument("workload: " + m); };
  if (mode == arrival_mode::closed && users == 0) bad("users must be > 0");
  if (mode == arrival_mode::open && !(rate > 0 && std::isfinite(rate))) bad("rate must be > 0");
  if (!(burstiness > 0 && std::isfinite(burstiness))) bad("burstiness must be > 0");
  if (!(duration_s > 0 && duration_s < 1e7)) bad("duration must be in (0, 1e7) seconds");
  if (!(ramp_up_s >= 0)) bad("ramp_up must be >= 0");
  if (priority_levels == 0) bad("priority_levels must be > 0");
  if (!(predict_noise >= 0)) bad("predict_noise must be >= 0");
}

load_generator::load_generator(const workload& w, const clock_type& clock)
    : w_(w), clock_(clock), arrival_rng_(mix_seed(w.seed, 1)) {
  w_.validate();
  end_ = time_point(tokchron::from_seconds<duration>(w_.duration_s));
  if (w_.mode == arrival_mode::closed) {
    user_rng_.reserve(w_.users);
    for (std::uint32_t u = 0; u < w_.users; ++u) user_rng_.emplace_back(mix_seed(w_.seed, 100 + u));
    for (std::uint32_t u = 0; u < w_.users; ++u) {
      const double first =
          w_.ramp_up_s > 0 ? arrival_rng_.uniform(0, w_.ramp_up_s) : w_.think.sample(user_rng_[u]);
      push(time_point(tokchron::from_seconds<duration>(first)), u);
    }
  } else {
    user_rng_.emplace_back(mix_seed(w_.seed, 100));
    schedule_open(time_point(duration(0)));
  }
}

void load_generator::push(time_point at, std::uint32_t user, double think) {
  if (w_.mode == arrival_mode::open && at >= end_) return;  // open loop: no background
  if (w_.max_requests && scheduled_ >= w_.max_requests) return;
  ++scheduled_;
  queue_.push({at, user, think});
}

void load_generator::schedule_open(time_point after) {
  // Gamma gaps with shape k and mean 1/rate: k = 1 is Poisson; k < 1 gives bursts (CV 1/sqrt k).
  const double gap = arrival_rng_.gamma(w_.burstiness, 1.0 / (w_.rate * w_.burstiness));
  push(after + tokchron::from_seconds<duration>(gap), 0);
}

std::optional<time_point> load_generator::next_arrival() const {
  if (queue_.empty()) return std::nullopt;
  return queue_.top().at;
}

void load_generator::release(time_point now, std::vector<request*>& out) {
  while (!queue_.empty() && queue_.top().at <= now) {
    const pending p = queue_.top();
    queue_.pop();
    rng& r = user_rng_[w_.mode == arrival_mode::closed ? p.user : 0];
    request& q = requests_.emplace_back(clock_);
    q.id = requests_.size() - 1;
    q.user = p.user;
    q.arrival = p.at;
    if (p.think >= 0) q.think_s = p.think;
    q.prompt_tokens = w_.prompt.sample_length(r);
    q.output_tokens = w_.output.sample_length(r);
    const double noisy =
        static_cast<double>(q.output_tokens) * std::exp(w_.predict_noise * r.normal());
    q.predicted_output = static_cast<std::uint32_t>(std::max(1.0, std::round(noisy)));
    q.priority = static_cast<std::int32_t>(r.below(w_.priority_levels));
    q.tl.arrive(p.at);
    q.tl.send(p.at);
    q.tl.set_prompt_tokens(q.prompt_tokens);
    out.push_back(&q);
    if (w_.mode == arrival_mode::open) schedule_open(p.at);
  }
}

void load_generator::on_finish(const request& r, time_point t) {
  if (w_.mode != arrival_mode::closed) return;
  const double think = w_.think.sample(user_rng_[r.user]);
  push(t + tokchron::from_seconds<duration>(think), r.user, think);
}

run_result run(const scheduler_config& cfg, const workload& load, backend& be,
               const step_observer& observe) {
  clock_type clock;
  load_generator gen(load, clock);
  return run(cfg, gen, clock, be, observe);
}

}  // namespace batching
