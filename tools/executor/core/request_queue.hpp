// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_CORE_REQUEST_QUEUE_HPP
#define TOKCHRON_TOOLS_EXECUTOR_CORE_REQUEST_QUEUE_HPP

/// \file
/// The waiting queue and its ordering policies, apart from the scheduler that admits from it
/// (as vLLM keeps its `RequestQueue`, with FCFS, priority and SJF queues behind one interface
/// and `create_request_queue(policy)`, in vllm/v1/core/sched/request_queue.py, vllm-project/vllm
/// at 0097c7e, apart from its scheduler).
///
/// A policy (`queue_order`) ranks a request: lower goes first, ties go to the earlier arrival and
/// then the lower id, so the order is total and a run is deterministic. Whatever the policy, a
/// request that was preempted (`push_front`) or promoted (`promote`: the starvation bound or a
/// queue timeout) goes ahead of every other, among themselves by arrival. The queue is read in
/// order (`at`, iteration), but puts itself in order lazily, when it is next read: new arrivals
/// are sorted and merged in, so a step costs O(new log new + waiting), not a full sort, and
/// O(new log new) when they all go last (FCFS); a preempted or promoted request is moved to its
/// place among the first (a binary search and a move of the queue's pointers, no sort; a
/// promotion inside `remove_if` costs a full sort at the next read). Single-threaded.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string_view>

#include "request.hpp"

namespace batching {

/// The waiting-queue policies.
enum class policy : std::uint8_t { fcfs, priority, sjf };
/// What `sjf` ranks by: the prompt, the true output length, or its noisy prediction.
enum class sjf_key : std::uint8_t { prompt, output, predicted };

[[nodiscard]] std::string_view to_string(policy p) noexcept;
[[nodiscard]] std::string_view to_string(sjf_key k) noexcept;
/// Parsers for the names above; throw `std::invalid_argument` listing the choices.
[[nodiscard]] policy parse_policy(std::string_view s);
[[nodiscard]] sjf_key parse_sjf_key(std::string_view s);

/// A queue policy: the rank of a request (lower goes first).
class queue_order {
 public:
  virtual ~queue_order() = default;
  [[nodiscard]] virtual policy kind() const noexcept = 0;
  /// The request's rank; ties go to the earlier arrival, then the lower id.
  [[nodiscard]] virtual std::int64_t rank(const request& r) const noexcept = 0;
};

/// First come, first served: every rank is 0, so arrival decides.
class fcfs_order final : public queue_order {
 public:
  [[nodiscard]] policy kind() const noexcept override { return policy::fcfs; }
  [[nodiscard]] std::int64_t rank(const request&) const noexcept override { return 0; }
};

/// Lower `request::priority` first (vLLM's priority policy).
class priority_order final : public queue_order {
 public:
  [[nodiscard]] policy kind() const noexcept override { return policy::priority; }
  [[nodiscard]] std::int64_t rank(const request& r) const noexcept override { return r.priority; }
};

/// Shortest job first, by the prompt, the output or the predicted output length.
class sjf_order final : public queue_order {
 public:
  explicit sjf_order(sjf_key k) noexcept : key_(k) {}
  [[nodiscard]] policy kind() const noexcept override { return policy::sjf; }
  [[nodiscard]] std::int64_t rank(const request& r) const noexcept override;

 private:
  sjf_key key_;
};

/// The policy `p` (`k` is what sjf ranks by).
[[nodiscard]] std::unique_ptr<queue_order> make_queue_order(policy p, sjf_key k = sjf_key::prompt);

/// The waiting requests, in policy order. Holds pointers to requests the caller owns.
class request_queue {
 public:
  using const_iterator = std::deque<request*>::const_iterator;

  /// Throws `std::invalid_argument` when `order` is null.
  explicit request_queue(std::unique_ptr<queue_order> order);

  /// A new arrival (not in the queue): it takes its place in the policy order.
  void push(request& r);
  /// A preempted request (not in the queue): marks it `resumed`, so it goes ahead of the policy
  /// order.
  void push_front(request& r);
  /// Marks a waiting request `promoted` (it goes ahead of the policy order). No-op when it
  /// already is.
  void promote(request& r);

  /// The i-th request in order. Throws `std::out_of_range` unless i < size().
  [[nodiscard]] request& at(std::size_t i) const;
  /// Removes the first `n` requests in order (those the scheduler admitted).
  void pop_front(std::size_t n);
  /// Calls `drop(request&)` for every request, in order, and removes those for which it returns
  /// true, keeping the others' order; `drop` may `promote` the ones it keeps. Returns how many
  /// it removed.
  template <class Drop>
  std::size_t remove_if(Drop&& drop);
  /// Removes every request.
  void clear() noexcept;

  [[nodiscard]] std::size_t size() const noexcept { return q_.size(); }
  [[nodiscard]] bool empty() const noexcept { return q_.empty(); }
  /// The requests in order (a `promote` while iterating takes effect at the next read).
  [[nodiscard]] const_iterator begin() const {
    sort();
    return q_.begin();
  }
  [[nodiscard]] const_iterator end() const noexcept { return q_.end(); }
  [[nodiscard]] const queue_order& order() const noexcept { return *order_; }

  /// True when `a` goes before `b`.
  [[nodiscard]] bool before(const request& a, const request& b) const noexcept;

 private:
  void sort() const;
  void insert_first(request& r);  // r (resumed or promoted, not in q_) into its place

  std::unique_ptr<queue_order> order_;
  // The order is a cache of the queue's value: reads put it in order.
  mutable std::deque<request*> q_;
  mutable bool unsorted_ = false;   // q_ needs a full sort (promotion, preemption)
  mutable std::size_t sorted_ = 0;  // q_[0, sorted_) is in order; later ones are new arrivals
  bool iterating_ = false;          // inside remove_if: q_ must not move
};

template <class Drop>
std::size_t request_queue::remove_if(Drop&& drop) {
  sort();
  std::size_t kept = 0;
  iterating_ = true;
  struct done_iterating {
    bool& flag;
    ~done_iterating() { flag = false; }
  } guard{iterating_};
  for (request* r : q_)
    if (!drop(*r)) q_[kept++] = r;
  const std::size_t removed = q_.size() - kept;
  q_.resize(kept);
  sorted_ = kept;  // removals keep the order of what stays
  return removed;
}

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_CORE_REQUEST_QUEUE_HPP
