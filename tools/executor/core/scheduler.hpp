// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_CORE_SCHEDULER_HPP
#define TOKCHRON_TOOLS_EXECUTOR_CORE_SCHEDULER_HPP

/// \file
/// An iteration-level (Orca / vLLM v1) continuous-batching scheduler.
///
/// Each step it builds one batch, bounded by `max_batch_size` running sequences and
/// `max_num_batched_tokens` tokens:
///  1. running sequences first, in admission order: a decode costs 1 token, an unfinished
///     prefill a chunk (the whole rest without chunked prefill). KV blocks are allocated as
///     needed; when the pool is empty a running sequence is preempted (fcfs/sjf: the last one;
///     priority: the lowest priority, latest arrival), its blocks freed and its computed tokens
///     reset to 0 (recompute), and it goes back to the head of the waiting queue;
///  2. then, only if nothing was preempted this step, waiting requests in policy order while
///     slots, tokens and blocks remain (the first that does not fit stops admission).
///
/// Prefill priority: `off` is decode-first, stall-free batching (Sarathi-Serve): decodes ride
/// along with prefill chunks. `always` is prefill-first (vLLM v0, Orca): whenever there is
/// prefill work, the step carries only prefills and the running decodes stall one step.
/// `slo_aware` is prefill-first only when the oldest waiter's queue time plus its predicted
/// prefill time would exceed `ttft_target`.
///
/// "Maximum waiting time" has two meanings and two knobs: `max_batch_delay` (Triton's
/// `max_queue_delay_microseconds`: hold new admissions, to form a larger batch, until the oldest
/// waiter has waited this long or the waiters would fill the free slots) and `max_queue_time`
/// (Triton's queue-policy timeout, the seed's `max_waiting_time`: a request not scheduled within
/// it is rejected or promoted, by `on_queue_timeout`).
///
/// Without chunked prefill a prompt is prefilled whole in one step (a prompt over the token
/// budget is rejected on arrival); a recompute after preemption is still chunked, since prompt
/// plus output may exceed the budget.
///
/// KV capacity: `max_utilization` allocates blocks as tokens are computed and preempts when
/// they run out; `guaranteed_no_evict` (TensorRT-LLM's default) reserves prompt + output blocks
/// at admission and never preempts.
///
/// Starvation: under `sjf` and `priority`, a request that waits `starvation_steps` steps is
/// promoted ahead of the policy order (Learning-to-Rank's starvation bound), so none waits
/// forever.
///
/// Prefix caching (vLLM's automatic prefix caching, kv_cache.hpp): a request's prompt blocks
/// are named by `request::block_hashes` (serve hashes the prompt's tokens; a generated workload's
/// shared system prompt of `prefix_tokens` gets the same hashes in every request). At admission
/// a request takes the longest run of its leading blocks that the cache holds, referenced: their
/// tokens are computed already (its `cached_tokens`). Only full blocks are cached, and never the
/// whole of a sequence (its last token is always computed, as in vLLM). A full prompt block is
/// cached when it is scheduled to be computed, so a request admitted later in the same step
/// already finds it (vLLM's `allocate_slots`). A block no running request references stays
/// cached until the pool hands it out again, least recently freed first: before anyone is
/// preempted. Single-threaded.

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <queue>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend.hpp"
#include "kv_cache.hpp"
#include "request.hpp"
#include "request_queue.hpp"

namespace batching {

enum class prefill_priority : std::uint8_t { off, always, slo_aware };
enum class kv_policy : std::uint8_t { max_utilization, guaranteed_no_evict };
enum class queue_timeout_action : std::uint8_t { reject, promote };

[[nodiscard]] std::string_view to_string(prefill_priority p) noexcept;
[[nodiscard]] std::string_view to_string(kv_policy p) noexcept;
[[nodiscard]] std::string_view to_string(queue_timeout_action a) noexcept;
/// Parsers for the names above; throw `std::invalid_argument` listing the choices.
[[nodiscard]] prefill_priority parse_prefill_priority(std::string_view s);
[[nodiscard]] kv_policy parse_kv_policy(std::string_view s);
[[nodiscard]] queue_timeout_action parse_queue_timeout_action(std::string_view s);

/// The scheduler's knobs. `validate()` throws `std::invalid_argument` naming the bad one.
struct scheduler_config {
  std::uint32_t max_batch_size = 16;            ///< running sequences (vLLM max_num_seqs)
  std::uint32_t max_num_batched_tokens = 2048;  ///< tokens a step (>= max_batch_size)
  bool chunked_prefill = true;
  prefill_priority prefill = prefill_priority::off;
  policy order = policy::fcfs;  ///< the waiting queue's order (request_queue.hpp)
  sjf_key sjf = sjf_key::prompt;
  std::uint32_t starvation_steps = 256;    ///< sjf/priority promotion bound; 0 = never
  std::optional<duration> max_queue_time;  ///< unset: no queue timeout
  queue_timeout_action on_queue_timeout = queue_timeout_action::reject;
  duration max_batch_delay{0};
  std::uint32_t block_size = 16;  ///< tokens per KV block
  kv_policy kv = kv_policy::max_utilization;
  std::optional<duration> ttft_target;   ///< for slo_aware prefill priority
  double prefill_tokens_per_s = 5000.0;  ///< fallback prefill prediction
  /// Reuse cached KV blocks of earlier prompts (vLLM `enable_prefix_caching`); no effect for
  /// requests without block hashes or a shared prefix.
  bool prefix_caching = true;

  void validate() const;
};

/// Counters of what the scheduler did.
struct scheduler_stats {
  std::uint64_t steps = 0, prefill_first_steps = 0, preemptions = 0;
  std::uint64_t rejected_timeout = 0, rejected_too_long = 0, aborted = 0;
  std::uint64_t promoted_starvation = 0, promoted_timeout = 0;
  std::uint32_t max_batch_seen = 0, max_tokens_seen = 0;
  std::uint64_t timeline_misuse = 0;  ///< timeline recording calls refused (must stay 0)
  /// Prefix cache: admissions that reused cached tokens, the tokens they reused (and so did not
  /// prefill), and cached blocks evicted (handed out again for other tokens).
  std::uint64_t prefix_hits = 0, prefix_hit_tokens = 0, prefix_evictions = 0;
};

/// One step's plan: the batch for the backend and the request behind each sequence.
struct step_plan {
  batch work;
  std::vector<request*> reqs;  ///< reqs[i] runs work.seqs[i]
  time_point start{};
  bool prefill_first = false;
  void clear() noexcept {
    work.seqs.clear();
    reqs.clear();
    prefill_first = false;
  }
};

/// The scheduler. Holds pointers to requests the caller owns; `be` (optional) is told when a
/// sequence's KV is released and asked for prefill predictions.
class scheduler {
 public:
  /// Throws `std::invalid_argument` for a bad config or an empty KV pool.
  scheduler(const scheduler_config& cfg, std::uint32_t kv_blocks, backend* be = nullptr);

  /// A request arrived at `now` (its timeline already carries its arrival): records `queued`,
  /// or finishes it as rejected when it can never run (prompt over the token budget without
  /// chunked prefill, or more KV than the whole pool).
  void add(request& r, time_point now);
  /// Builds the step to run at `now`; false when there is nothing to run.
  [[nodiscard]] bool schedule(time_point now, step_plan& plan);
  /// Applies a finished step: advances each sequence, records its chunk and, when it is done,
  /// its finish at `end`. Throws `std::runtime_error` for a result that does not match the plan.
  void complete(const step_plan& plan, const step_result& result, time_point end);
  /// Finishes every waiting and running request as aborted at `now` (a hard stop).
  void abort_all(time_point now);
  /// Finishes `r`, waiting or running, as aborted at `now` (its client went away): its KV
  /// blocks are released. False (and nothing changes) when `r` is not waiting or running here.
  bool abort(request& r, time_point now);
  /// Moves the requests finished since the last call (rejected ones included) into `out`.
  void take_finished(std::vector<request*>& out);
  /// The next time something changes without a step (a batch delay or queue timeout expiring).
  [[nodiscard]] std::optional<time_point> next_wakeup(time_point now) const;

  [[nodiscard]] std::size_t waiting() const noexcept { return waiting_.size(); }
  [[nodiscard]] std::size_t running() const noexcept { return running_.size(); }
  /// The running requests, in admission order.
  [[nodiscard]] const std::vector<request*>& running_requests() const noexcept { return running_; }
  [[nodiscard]] bool idle() const noexcept { return waiting_.empty() && running_.empty(); }
  [[nodiscard]] const block_pool& kv() const noexcept { return pool_; }
  /// KV blocks the prefix cache holds, referenced or not (0 when nothing is cached).
  [[nodiscard]] std::uint32_t prefix_cache_blocks() const noexcept { return pool_.cached(); }
  [[nodiscard]] const scheduler_stats& stats() const noexcept { return stats_; }
  [[nodiscard]] const scheduler_config& config() const noexcept { return cfg_; }

 private:
  void expire(time_point now);
  [[nodiscard]] bool wants_prefill_first(time_point now) const;
  [[nodiscard]] bool delay_holds(time_point now) const;
  [[nodiscard]] std::uint32_t chunk_for(const request& r, std::uint32_t budget) const noexcept;
  [[nodiscard]] std::uint32_t admit_blocks(const request& r, std::uint32_t n) const noexcept;
  [[nodiscard]] duration predict_prefill(std::uint32_t tokens) const;
  enum class step_kind : std::uint8_t { mixed, prefill_only, decode_only };
  void build(time_point now, step_kind kind, step_plan& plan);
  std::size_t pick_victim(std::size_t from) const;
  void preempt(std::size_t running_index, time_point now);
  void finish(request& r, time_point t, tokchron::finish_reason why);
  void add_work(step_plan& plan, request& r, std::uint32_t n, bool dec);
  [[nodiscard]] std::uint32_t cache_hit(const request& r) const;
  void cache_scheduled(request& r, std::uint32_t tokens);
  void release_blocks(request& r) noexcept;
  void record_chunk(request& r, std::uint32_t k, time_point t) noexcept;
  void note(tokchron::record_status s) noexcept {
    if (s != tokchron::record_status::ok) ++stats_.timeline_misuse;
  }
  void join(request& r);
  void leave(request& r) noexcept;
  [[nodiscard]] request* waiting_by_ticket(std::uint64_t ticket) const noexcept;
  [[nodiscard]] const request* oldest_waiting() const;
  [[nodiscard]] const request* first_to_time_out() const;
  void promote_starved();

  scheduler_config cfg_;
  block_pool pool_;
  backend* be_;
  request_queue waiting_;
  std::vector<request*> running_, finished_;
  scheduler_stats stats_;
  // What a step needs to know of the waiting requests, kept so that a step costs the same
  // however many wait (a burst of a million must not make every step scan a million): each
  // join of the queue gets a ticket (request::ticket), live in `queued_` until its request
  // leaves; `joins_` lists (ticket, schedule call) in join order, for the starvation bound;
  // `by_arrival_` (every waiting request) and `timing_out_` (those a queue timeout may end) are
  // min-heaps of (arrival, ticket). An entry whose ticket is no longer live is dropped where it
  // is met, and each list is rebuilt from the live tickets when more than half of it is dead.
  using arrival_entry = std::pair<time_point, std::uint64_t>;
  using arrival_heap =
      std::priority_queue<arrival_entry, std::vector<arrival_entry>, std::greater<>>;
  std::uint64_t last_ticket_ = 0, schedule_calls_ = 0;
  std::unordered_map<std::uint64_t, request*> queued_;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> joins_;
  mutable arrival_heap by_arrival_, timing_out_;
};

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_CORE_SCHEDULER_HPP
