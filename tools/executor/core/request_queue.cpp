// SPDX-License-Identifier: MIT
#include "request_queue.hpp"

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "names.hpp"

namespace batching {
namespace {

constexpr std::pair<std::string_view, policy> policy_names[] = {
    {"fcfs", policy::fcfs}, {"priority", policy::priority}, {"sjf", policy::sjf}};
constexpr std::pair<std::string_view, sjf_key> sjf_names[] = {
    {"prompt", sjf_key::prompt}, {"output", sjf_key::output}, {"predicted", sjf_key::predicted}};

}  // namespace

std::string_view to_string(policy p) noexcept { return name_of(p, policy_names); }
std::string_view to_string(sjf_key k) noexcept { return name_of(k, sjf_names); }
policy parse_policy(std::string_view s) { return parse_enum(s, "policy", policy_names); }
sjf_key parse_sjf_key(std::string_view s) { return parse_enum(s, "sjf_key", sjf_names); }

std::int64_t sjf_order::rank(const request& r) const noexcept {
  switch (key_) {
    case sjf_key::prompt: return r.prompt_tokens;
    case sjf_key::output: return r.output_tokens;
    case sjf_key::predicted: return r.predicted_output;
  }
  return r.prompt_tokens;
}

std::unique_ptr<queue_order> make_queue_order(policy p, sjf_key k) {
  switch (p) {
    case policy::priority: return std::make_unique<priority_order>();
    case policy::sjf: return std::make_unique<sjf_order>(k);
    case policy::fcfs: break;
  }
  return std::make_unique<fcfs_order>();
}

request_queue::request_queue(std::unique_ptr<queue_order> order) : order_(std::move(order)) {
  if (!order_) throw std::invalid_argument("request_queue: no queue order");
}

bool request_queue::before(const request& a, const request& b) const noexcept {
  auto key = [this](const request& r) {
    const bool first = r.resumed || r.promoted;
    return std::make_tuple(first ? 0 : 1, first ? 0 : order_->rank(r), r.arrival, r.id);
  };
  return key(a) < key(b);
}

void request_queue::push(request& r) { q_.push_back(&r); }

void request_queue::push_front(request& r) {
  r.resumed = true;
  insert_first(r);
}

void request_queue::insert_first(request& r) {
  if (unsorted_) {  // a full sort is due anyway
    q_.push_front(&r);
    return;
  }
  // Its place in the ordered prefix: among the first ones (resumed, promoted), which lead it.
  auto less = [this](const request* a, const request* b) { return before(*a, *b); };
  const auto end = q_.begin() + static_cast<std::ptrdiff_t>(sorted_);
  q_.insert(std::lower_bound(q_.begin(), end, &r, less), &r);
  ++sorted_;
}

void request_queue::promote(request& r) {
  if (r.promoted) return;
  if (unsorted_ || iterating_) {  // sorted at the next read
    r.promoted = true;
    unsorted_ = true;
    return;
  }
  // Found by its place under its old rank (the ordered prefix), or among the new arrivals.
  auto less = [this](const request* a, const request* b) { return before(*a, *b); };
  const auto end = q_.begin() + static_cast<std::ptrdiff_t>(sorted_);
  auto at = std::lower_bound(q_.begin(), end, &r, less);
  if (at != end && *at == &r) {
    q_.erase(at);
    --sorted_;
  } else {
    at = std::find(end, q_.end(), &r);
    if (at == q_.end()) {  // not waiting here: marked only
      r.promoted = true;
      return;
    }
    q_.erase(at);
  }
  r.promoted = true;
  insert_first(r);
}

void request_queue::sort() const {
  // Admission removes a prefix and removals keep the order, so usually only the new arrivals at
  // the end need sorting and merging in.
  if (!unsorted_ && sorted_ == q_.size()) return;
  auto less = [this](const request* a, const request* b) { return before(*a, *b); };
  if (unsorted_ || sorted_ > q_.size()) {
    std::sort(q_.begin(), q_.end(), less);
  } else {
    const auto mid = q_.begin() + static_cast<std::ptrdiff_t>(sorted_);
    std::sort(mid, q_.end(), less);
    // Arrivals that all go after the queue (FCFS, in arrival order) need no merge, so a step
    // of a long queue costs O(new log new) then.
    if (sorted_ > 0 && less(*mid, *(mid - 1))) std::inplace_merge(q_.begin(), mid, q_.end(), less);
  }
  unsorted_ = false;
  sorted_ = q_.size();
}

request& request_queue::at(std::size_t i) const {
  sort();
  return *q_.at(i);
}

void request_queue::pop_front(std::size_t n) {
  sort();
  n = std::min(n, q_.size());
  q_.erase(q_.begin(), q_.begin() + static_cast<std::ptrdiff_t>(n));
  sorted_ = sorted_ > n ? sorted_ - n : 0;
}

void request_queue::clear() noexcept {
  q_.clear();
  sorted_ = 0;
  unsorted_ = false;
}

}  // namespace batching
