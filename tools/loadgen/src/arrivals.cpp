// SPDX-License-Identifier: MIT
#include "loadgen/arrivals.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "tokchron/clock.hpp"

namespace tokchron_loadgen {
namespace {

// `t` plus `seconds`, unless that reaches past max_arrival_s (or `seconds` is not a number).
std::optional<time_point> later(time_point t, double seconds) {
  if (!(seconds >= 0 && tokchron::to_seconds(t.time_since_epoch()) + seconds < max_arrival_s))
    return std::nullopt;
  return t + tokchron::from_seconds<duration>(seconds);
}

// The open loop's next arrival after `after`: gamma gaps with shape k and mean 1/rate (k = 1 is
// Poisson; k < 1 gives bursts, CV 1/sqrt k). Empty when it falls at or after `end`.
std::optional<time_point> next_open_arrival(const workload& w, rng& r, time_point after,
                                            time_point end) {
  const double gap = r.gamma(w.burstiness, 1.0 / (w.rate * w.burstiness));
  const auto at = later(after, gap);
  if (!at || *at >= end) return std::nullopt;  // open loop: no background
  return at;
}

std::string mib(std::uint64_t bytes) {
  return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB";
}

}  // namespace

std::uint64_t user_footprint() noexcept {
  return sizeof(rng) + 2 * sizeof(std::uint64_t) * 4;  // its rng, its entry in the arrival heap
}

arrival_count count_open_arrivals(const workload& w, double from_s, std::uint64_t limit) {
  arrival_count n;
  if (w.mode != arrival_mode::open) return n;
  w.validate();
  rng r(mix_seed(w.seed, 1));
  const time_point end(tokchron::from_seconds<duration>(w.duration_s));
  time_point t{};
  while (auto at = next_open_arrival(w, r, t, end)) {
    if (w.max_requests && n.total >= w.max_requests) break;
    if (n.total == limit) {
      n.capped = true;
      break;
    }
    ++n.total;
    if (tokchron::to_seconds(at->time_since_epoch()) >= from_s) ++n.from;
    t = *at;
  }
  return n;
}

void workload::validate() const {
  auto bad = [](const std::string& m) { throw std::invalid_argument("workload: " + m); };
  if (mode == arrival_mode::closed && users == 0) bad("users must be > 0");
  if (mode == arrival_mode::open && !(rate > 0 && std::isfinite(rate))) bad("rate must be > 0");
  if (!(burstiness > 0 && std::isfinite(burstiness))) bad("burstiness must be > 0");
  if (!(duration_s > 0 && duration_s < 1e7)) bad("duration must be in (0, 1e7) seconds");
  if (!(ramp_up_s >= 0)) bad("ramp_up must be >= 0");
  if (priority_levels == 0) bad("priority_levels must be > 0");
  if (!(predict_noise >= 0)) bad("predict_noise must be >= 0");
  if (shared_prefix > max_shared_prefix)
    bad("shared_prefix must be at most " + std::to_string(max_shared_prefix) + " tokens");
  if (!(reasoning_fraction >= 0 && reasoning_fraction <= 1))
    bad("reasoning_fraction must be in [0, 1]");
}

arrival_generator::arrival_generator(const workload& w) : w_(w), arrival_rng_(mix_seed(w.seed, 1)) {
  w_.validate();
  end_ = time_point(tokchron::from_seconds<duration>(w_.duration_s));
  if (w_.mode == arrival_mode::closed) {
    const std::uint64_t bytes = std::uint64_t(w_.users) * user_footprint();
    if (w_.memory_limit && bytes > w_.memory_limit)
      throw std::invalid_argument("workload: " + std::to_string(w_.users) + " users keep " +
                                  mib(bytes) + ", more than the memory limit (" +
                                  mib(w_.memory_limit) + ")");
    user_rng_.reserve(w_.users);
    for (std::uint32_t u = 0; u < w_.users; ++u) user_rng_.emplace_back(mix_seed(w_.seed, 100 + u));
    for (std::uint32_t u = 0; u < w_.users; ++u) {
      const double first =
          w_.ramp_up_s > 0 ? arrival_rng_.uniform(0, w_.ramp_up_s) : w_.think.sample(user_rng_[u]);
      if (const auto at = later(time_point{}, first)) push(*at, u);
    }
  } else {
    user_rng_.emplace_back(mix_seed(w_.seed, 100));
    schedule_open(time_point(duration(0)));
  }
}

void arrival_generator::push(time_point at, std::uint32_t user, double think) {
  if (w_.max_requests && scheduled_ >= w_.max_requests) return;
  ++scheduled_;
  queue_.push({at, user, think});
}

void arrival_generator::schedule_open(time_point after) {
  if (const auto at = next_open_arrival(w_, arrival_rng_, after, end_)) push(*at, 0);
}

std::optional<time_point> arrival_generator::next_arrival() const {
  if (queue_.empty()) return std::nullopt;
  return queue_.top().at;
}

void arrival_generator::release(time_point now, std::vector<arrival>& out) {
  while (!queue_.empty() && queue_.top().at <= now) {
    const pending p = queue_.top();
    queue_.pop();
    rng& r = user_rng_[w_.mode == arrival_mode::closed ? p.user : 0];
    arrival& q = out.emplace_back();
    q.id = released_++;
    q.user = p.user;
    q.at = p.at;
    if (p.think >= 0) q.think_s = p.think;
    const std::uint32_t own = w_.prompt.sample_length(r);
    q.prompt_tokens = own + w_.shared_prefix;  // both <= max_length (1e9): no overflow
    q.prefix_tokens = w_.shared_prefix;
    q.output_tokens = w_.output.sample_length(r);
    q.reasoning_tokens = static_cast<std::uint32_t>(
        std::min<double>(q.output_tokens, std::round(w_.reasoning_fraction * q.output_tokens)));
    const double noisy =
        static_cast<double>(q.output_tokens) * std::exp(w_.predict_noise * r.normal());
    // Any noise (--predict-noise 1e300 makes it 0 or inf) gives a prediction in [1, 2^32 - 1].
    q.predicted_output = noisy >= 4294967295.0 ? 4294967295u
                         : noisy >= 1.0        ? static_cast<std::uint32_t>(std::round(noisy))
                                               : 1u;
    q.priority = static_cast<std::int32_t>(r.below(w_.priority_levels));
    if (w_.mode == arrival_mode::open) schedule_open(p.at);
  }
}

void arrival_generator::on_finish(const arrival& a, time_point t) {
  if (w_.mode != arrival_mode::closed || a.user >= user_rng_.size()) return;
  const double think = w_.think.sample(user_rng_[a.user]);
  if (const auto at = later(t, think)) push(*at, a.user, think);
}

}  // namespace tokchron_loadgen
