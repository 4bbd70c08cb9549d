// SPDX-License-Identifier: MIT
#include "scheduler.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>

#include "names.hpp"

namespace batching {
namespace {

constexpr std::pair<std::string_view, prefill_priority> prefill_names[] = {
    {"off", prefill_priority::off},
    {"always", prefill_priority::always},
    {"slo_aware", prefill_priority::slo_aware}};
constexpr std::pair<std::string_view, kv_policy> kv_names[] = {
    {"max_utilization", kv_policy::max_utilization},
    {"guaranteed_no_evict", kv_policy::guaranteed_no_evict}};
constexpr std::pair<std::string_view, queue_timeout_action> timeout_names[] = {
    {"reject", queue_timeout_action::reject}, {"promote", queue_timeout_action::promote}};

}  // namespace

std::string_view to_string(prefill_priority p) noexcept { return name_of(p, prefill_names); }
std::string_view to_string(kv_policy p) noexcept { return name_of(p, kv_names); }
std::string_view to_string(queue_timeout_action a) noexcept { return name_of(a, timeout_names); }
prefill_priority parse_prefill_priority(std::string_view s) {
  return parse_enum(s, "prefill_priority", prefill_names);
}
kv_policy parse_kv_policy(std::string_view s) { return parse_enum(s, "kv_policy", kv_names); }
queue_timeout_action parse_queue_timeout_action(std::string_view s) {
  return parse_enum(s, "on_queue_timeout", timeout_names);
}

void scheduler_config::validate() const {
  auto bad = [](const std::string& m) { throw std::invalid_argument("scheduler: " + m); };
  if (max_batch_size == 0) bad("max_batch_size must be > 0");
  if (max_num_batched_tokens < max_batch_size)
    bad("max_num_batched_tokens (" + std::to_string(max_num_batched_tokens) +
        ") must be >= max_batch_size (" + std::to_string(max_batch_size) +
        "), or running decodes could wait forever");
  if (block_size == 0) bad("block_size must be > 0");
  if (max_queue_time && *max_queue_time < duration::zero()) bad("max_queue_time must be >= 0");
  if (max_batch_delay < duration::zero()) bad("max_batch_delay must be >= 0");
  if (prefill == prefill_priority::slo_aware && !ttft_target)
    bad("prefill_priority slo_aware needs a TTFT target (an --slo on ttft, or --ttft-target)");
  if (!(prefill_tokens_per_s > 0)) bad("prefill_tokens_per_s must be > 0");
}

scheduler::scheduler(const scheduler_config& cfg, std::uint32_t kv_blocks, backend* be)
    : cfg_(cfg),
      pool_(kv_blocks, cfg.block_size),
      be_(be),
      waiting_(make_queue_order(cfg.order, cfg.sjf)) {
  cfg_.validate();
  if (kv_blocks == 0) throw std::invalid_argument("scheduler: the KV cache has no blocks");
}

void scheduler::add(request& r, time_point now) {
  r.state = request_state::waiting;
  if (!cfg_.chunked_prefill && r.prompt_tokens > cfg_.max_num_batched_tokens) {
    ++stats_.rejected_too_long;
    finish(r, now, tokchron::finish_reason::rejected);
    return;
  }
  if (pool_.blocks_for(std::uint64_t(r.prompt_tokens) + r.output_tokens) > pool_.total()) {
    ++stats_.rejected_too_long;
    finish(r, now, tokchron::finish_reason::rejected);
    return;
  }
  if (cfg_.prefix_caching && r.block_hashes.empty() && r.prefix_tokens > 0) {
    // A generated workload's shared system prompt: the same tokens heading every prompt.
    const std::uint32_t prefix = std::min(r.prefix_tokens, r.prompt_tokens);
    block_hasher h(pool_.block_size(), r.block_hashes);
    for (std::uint32_t t = 0; t < prefix / pool_.block_size() * pool_.block_size(); ++t)
      h.add(block_hasher::shared_prefix_key(t));
  }
  note(r.tl.queued(now));
  waiting_.push(r);
  join(r);
}

void scheduler::join(request& r) {
  r.ticket = ++last_ticket_;
  queued_.emplace(r.ticket, &r);
  const std::size_t stale = 2 * queued_.size() + 64;  // past it, a list is rebuilt
  if (cfg_.order != policy::fcfs && cfg_.starvation_steps > 0) {
    joins_.emplace_back(r.ticket, schedule_calls_);
    if (joins_.size() > stale) {
      std::deque<std::pair<std::uint64_t, std::uint64_t>> live;
      for (const auto& j : joins_)
        if (waiting_by_ticket(j.first)) live.push_back(j);
      joins_.swap(live);
    }
  }
  if (cfg_.prefill == prefill_priority::slo_aware || cfg_.max_batch_delay > duration::zero()) {
    by_arrival_.emplace(r.arrival, r.ticket);
    if (by_arrival_.size() > stale) {
      std::vector<arrival_entry> live;
      for (const auto& [ticket, q] : queued_) live.emplace_back(q->arrival, ticket);
      by_arrival_ = arrival_heap(std::greater<>(), std::move(live));
    }
  }
  if (cfg_.max_queue_time && !r.ever_scheduled) {
    timing_out_.emplace(r.arrival, r.ticket);
    if (timing_out_.size() > stale) {
      std::vector<arrival_entry> live;
      for (const auto& [ticket, q] : queued_)
        if (!q->ever_scheduled && !q->promoted) live.emplace_back(q->arrival, ticket);
      timing_out_ = arrival_heap(std::greater<>(), std::move(live));
    }
  }
}

void scheduler::leave(request& r) noexcept {
  queued_.erase(r.ticket);
  r.ticket = 0;
  if (queued_.empty()) {  // nothing waits: every entry is dead
    joins_.clear();
    by_arrival_ = arrival_heap();
    timing_out_ = arrival_heap();
  }
}

request* scheduler::waiting_by_ticket(std::uint64_t ticket) const noexcept {
  const auto it = queued_.find(ticket);
  return it == queued_.end() ? nullptr : it->second;
}

const request* scheduler::oldest_waiting() const {
  while (!by_arrival_.empty()) {
    if (const request* r = waiting_by_ticket(by_arrival_.top().second)) return r;
    by_arrival_.pop();
  }
  return nullptr;
}

// The earliest arrival among the requests a queue timeout may end (never scheduled, not
// promoted); a promotion is for good, so a promoted one is dropped.
const request* scheduler::first_to_time_out() const {
  while (!timing_out_.empty()) {
    const request* r = waiting_by_ticket(timing_out_.top().second);
    if (r && !r->ever_scheduled && !r->promoted) return r;
    timing_out_.pop();
  }
  return nullptr;
}

// The starvation bound (sjf, priority): a request waiting `starvation_steps` schedule calls
// since it joined is promoted. Joins come in call order, so only the front of `joins_` can be
// due.
void scheduler::promote_starved() {
  while (!joins_.empty()) {
    const auto [ticket, at] = joins_.front();
    request* r = waiting_by_ticket(ticket);
    if (r && schedule_calls_ - at < cfg_.starvation_steps) return;
    joins_.pop_front();
    if (r && !r->promoted && !r->resumed) {
      waiting_.promote(*r);
      ++stats_.promoted_starvation;
    }
  }
}

void scheduler::release_blocks(request& r) noexcept {
  pool_.release(r.blocks);
  r.cached_blocks = 0;
}

std::uint32_t scheduler::cache_hit(const request& r) const {
  if (!cfg_.prefix_caching || r.block_hashes.empty() || r.computed != 0 || !r.blocks.empty())
    return 0;
  // Never the whole sequence: its last token is computed to sample (vLLM's
  // max_cache_hit_length = num_tokens - 1).
  return pool_.cached_prefix(r.block_hashes, (r.num_tokens() - 1) / pool_.block_size());
}

void scheduler::cache_scheduled(request& r, std::uint32_t tokens) {
  if (!cfg_.prefix_caching) return;
  const auto full = static_cast<std::uint32_t>(
      std::min<std::size_t>({r.block_hashes.size(), tokens / pool_.block_size(), r.blocks.size()}));
  for (std::uint32_t i = r.cached_blocks; i < full; ++i)
    pool_.cache(r.blocks[i], r.block_hashes[i]);
  r.cached_blocks = std::max(r.cached_blocks, full);
}

void scheduler::finish(request& r, time_point t, tokchron::finish_reason why) {
  release_blocks(r);
  std::vector<std::uint32_t>().swap(r.blocks);  // a finished request keeps no block table
  std::vector<std::uint64_t>().swap(r.block_hashes);
  if (be_ && r.ever_scheduled) be_->release(r.id);
  if (r.reasoning_tokens > 0)  // the usage's completion_tokens_details.reasoning_tokens
    r.tl.set_reported_reasoning_tokens(std::min(r.generated, r.reasoning_tokens));
  note(r.tl.finish(t, why));
  r.state = request_state::finished;
  finished_.push_back(&r);
}

void scheduler::expire(time_point now) {
  if (!cfg_.max_queue_time) return;
  // The queue is scanned only when its oldest candidate has timed out.
  const request* first = first_to_time_out();
  if (!first || !(now - first->arrival > *cfg_.max_queue_time)) return;
  waiting_.remove_if([&](request& r) {
    const bool timed_out =
        !r.ever_scheduled && !r.promoted && now - r.arrival > *cfg_.max_queue_time;
    if (!timed_out) return false;
    if (cfg_.on_queue_timeout == queue_timeout_action::reject) {
      ++stats_.rejected_timeout;
      leave(r);
      finish(r, now, tokchron::finish_reason::rejected);
      return true;
    }
    waiting_.promote(r);
    ++stats_.promoted_timeout;
    return false;
  });
}

duration scheduler::predict_prefill(std::uint32_t tokens) const {
  if (be_)
    if (auto d = be_->predict_prefill(tokens)) return *d;
  return tokchron::from_seconds<duration>(std::min(tokens / cfg_.prefill_tokens_per_s, max_step_s));
}

bool scheduler::delay_holds(time_point now) const {
  if (cfg_.max_batch_delay <= duration::zero() || waiting_.empty()) return false;
  const request* head = &waiting_.at(0);
  if (head->resumed || head->promoted) return false;
  const std::size_t free_slots = cfg_.max_batch_size - running_.size();
  if (waiting_.size() >= free_slots) return false;
  time_point oldest = head->arrival;
  for (const request* r : waiting_) oldest = std::min(oldest, r->arrival);
  return now - oldest < cfg_.max_batch_delay;
}

std::uint32_t scheduler::chunk_for(const request& r, std::uint32_t budget) const noexcept {
  if (r.decoding()) return budget >= 1 ? 1u : 0u;
  const std::uint32_t need = r.pending_tokens();
  // A recompute after preemption (prompt + generated tokens) may exceed the budget even when
  // every prompt fits, so it is chunked whatever `chunked_prefill` says.
  if (cfg_.chunked_prefill || r.generated > 0) return std::min(need, budget);
  return need <= budget ? need : 0u;
}

std::uint32_t scheduler::admit_blocks(const request& r, std::uint32_t n) const noexcept {
  if (cfg_.kv == kv_policy::guaranteed_no_evict)
    return pool_.blocks_for(std::uint64_t(r.prompt_tokens) + r.output_tokens);
  return pool_.blocks_for(std::uint64_t(r.computed) + n);
}

bool scheduler::wants_prefill_first(time_point now) const {
  if (cfg_.prefill == prefill_priority::off) return false;
  bool work = std::any_of(running_.begin(), running_.end(),
                          [](const request* r) { return !r->decoding(); });
  if (!work && !waiting_.empty() && running_.size() < cfg_.max_batch_size && !delay_holds(now))
    work = true;
  if (!work) return false;
  if (cfg_.prefill == prefill_priority::always) return true;
  // slo_aware: the oldest waiter's queue time plus its predicted prefill breaks the target.
  const request* oldest = oldest_waiting();
  if (!oldest) return false;
  return (now - oldest->arrival) + predict_prefill(oldest->pending_tokens()) > *cfg_.ttft_target;
}

std::size_t scheduler::pick_victim(std::size_t from) const {
  if (cfg_.order != policy::priority) return running_.size() - 1;
  std::size_t worst = from;
  for (std::size_t i = from + 1; i < running_.size(); ++i) {
    const request* a = running_[i];
    const request* w = running_[worst];
    if (std::tie(a->priority, a->arrival, a->id) > std::tie(w->priority, w->arrival, w->id))
      worst = i;
  }
  return worst;
}

void scheduler::preempt(std::size_t i, time_point now) {
  request& r = *running_[i];
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
  release_blocks(r);
  if (be_) be_->release(r.id);
  r.computed = 0;
  r.state = request_state::waiting;
  note(r.tl.preempted(now));
  waiting_.push_front(r);  // resumed: ahead of the policy order
  join(r);
  ++stats_.preemptions;
}

void scheduler::add_work(step_plan& plan, request& r, std::uint32_t n, bool dec) {
  sequence_work w;
  w.seq_id = r.id;
  w.past_tokens = r.computed;
  w.decode = dec;
  w.prefill_tokens = dec ? 0 : n;
  w.samples = r.computed + n == r.num_tokens();
  w.prompt_tokens = r.prompt_tokens;
  w.reused_tokens = r.reused_tokens;
  plan.work.seqs.push_back(w);
  plan.reqs.push_back(&r);
}

void scheduler::build(time_point now, step_kind kind, step_plan& plan) {
  const bool prefill_first = kind == step_kind::prefill_only;
  std::uint32_t budget = cfg_.max_num_batched_tokens;
  bool preempted = false;
  // 1. running sequences, in admission order.
  for (std::size_t i = 0; i < running_.size() && budget > 0;) {
    request& r = *running_[i];
    const bool dec = r.decoding();
    const bool skip = (prefill_first && dec) || (kind == step_kind::decode_only && !dec);
    const std::uint32_t n = skip ? 0u : chunk_for(r, budget);
    if (n == 0) {
      ++i;
      continue;
    }
    const std::uint32_t need = pool_.blocks_for(std::uint64_t(r.computed) + n);
    bool self = false;
    while (!pool_.grow(r.blocks, need)) {
      const std::size_t v = pick_victim(i);
      self = running_[v] == &r;
      preempt(v, now);
      preempted = true;
      if (self) break;
    }
    if (self) continue;  // r left running_; index i now holds the next one
    cache_scheduled(r, r.computed + n);
    add_work(plan, r, n, dec);
    budget -= n;
    ++i;
  }
  // 2. admissions, in policy order, only when nothing was preempted.
  if (preempted || kind == step_kind::decode_only) return;
  std::size_t admitted = 0;
  while (admitted < waiting_.size() && running_.size() < cfg_.max_batch_size && budget > 0) {
    request& r = waiting_.at(admitted);
    if (!r.resumed && !r.promoted && delay_holds(now)) break;
    // The prefix cache's blocks: their tokens are computed already.
    const std::uint32_t hit = cache_hit(r);
    r.computed = hit * pool_.block_size();
    if (!r.ever_scheduled && r.warm_tokens > 0)  // the engine's own cache: computed already
      r.computed = std::max(r.computed, std::min(r.warm_tokens, r.num_tokens() - 1));
    const std::uint32_t n = chunk_for(r, budget);
    const std::uint32_t blocks = n == 0 ? 0 : admit_blocks(r, n);
    // Hit blocks no one references leave the free queue: they cost free blocks too.
    if (n == 0 || blocks - hit + pool_.idle_in_prefix(r.block_hashes, hit) > pool_.free()) {
      r.computed = 0;  // not admitted: it holds nothing
      break;
    }
    pool_.share(r.blocks, r.block_hashes, hit);
    r.cached_blocks = hit;
    if (!pool_.grow(r.blocks, blocks)) throw std::logic_error("kv cache: a checked grow failed");
    cache_scheduled(r, r.computed + n);
    if (!r.ever_scheduled &&
        (r.prefix_tokens > 0 || !r.block_hashes.empty() || r.warm_tokens > 0)) {
      r.cached_tokens = r.computed;
      r.tl.set_cached_prompt_tokens(r.cached_tokens);
    }
    if (r.computed > 0) {
      ++stats_.prefix_hits;
      stats_.prefix_hit_tokens += r.computed;
    }
    r.reused_tokens = r.computed;
    r.state = request_state::running;
    r.resumed = false;
    r.promoted = false;
    r.ever_scheduled = true;
    leave(r);
    note(r.tl.scheduled(now));
    running_.push_back(&r);
    add_work(plan, r, n, false);
    budget -= n;
    ++admitted;
  }
  waiting_.pop_front(admitted);
}

bool scheduler::schedule(time_point now, step_plan& plan) {
  plan.clear();
  plan.start = now;
  plan.work.block_size = pool_.block_size();
  expire(now);
  const bool pf = wants_prefill_first(now);
  // Prefill-first steps are all-prefill, or all-decode when no prefill can run (vLLM v0).
  build(now, pf ? step_kind::prefill_only : step_kind::mixed, plan);
  if (pf && plan.work.empty()) build(now, step_kind::decode_only, plan);
  plan.prefill_first = pf && !plan.work.empty() && plan.work.num_decodes() == 0;
  // Waiting requests that were not admitted age by one step.
  ++schedule_calls_;
  if (cfg_.order != policy::fcfs && cfg_.starvation_steps > 0) promote_starved();
  stats_.prefix_evictions = pool_.evictions();
  if (plan.work.empty()) return false;
  // Block tables are final only now (later sequences may have preempted nothing, but a
  // vector may have grown), so point at them here.
  for (std::size_t i = 0; i < plan.reqs.size(); ++i) {
    plan.work.seqs[i].blocks = plan.reqs[i]->blocks.data();
    plan.work.seqs[i].num_blocks = static_cast<std::uint32_t>(plan.reqs[i]->blocks.size());
  }
  ++stats_.steps;
  if (plan.prefill_first) ++stats_.prefill_first_steps;
  stats_.max_batch_seen =
      std::max(stats_.max_batch_seen, static_cast<std::uint32_t>(plan.work.seqs.size()));
  stats_.max_tokens_seen = std::max(stats_.max_tokens_seen, plan.work.num_tokens());
  return true;
}

void scheduler::complete(const step_plan& plan, const step_result& result, time_point end) {
  if (result.outputs.size() != plan.work.seqs.size())
    throw std::runtime_error("backend returned " + std::to_string(result.outputs.size()) +
                             " outputs for a batch of " + std::to_string(plan.work.seqs.size()));
  bool any_done = false;
  for (std::size_t i = 0; i < plan.reqs.size(); ++i) {
    request& r = *plan.reqs[i];
    const sequence_work& w = plan.work.seqs[i];
    const sequence_output& out = result.outputs[i];
    r.computed += w.new_tokens();
    if (!w.samples) continue;
    if (out.tokens == 0)
      throw std::runtime_error("backend produced no token for sequence " +
                               std::to_string(w.seq_id) + ", which had to sample one");
    record_chunk(r, std::min(out.tokens, r.output_tokens - r.generated), end);
    if (r.generated >= r.output_tokens || out.stop) {
      finish(r, end,
             r.generated >= r.output_tokens && !out.stop ? tokchron::finish_reason::length
                                                         : tokchron::finish_reason::stop);
      any_done = true;
    }
  }
  if (any_done)
    running_.erase(
        std::remove_if(running_.begin(), running_.end(),
                       [](const request* r) { return r->state == request_state::finished; }),
        running_.end());
}

void scheduler::record_chunk(request& r, std::uint32_t k, time_point t) noexcept {
  // The answer's first `reasoning_tokens` are reasoning; a step that crosses the boundary
  // records its reasoning tokens, then its answer tokens, at the same time.
  const std::uint32_t g0 = r.generated;
  r.generated += k;
  const std::uint32_t thinking =
      std::min(r.generated, r.reasoning_tokens) - std::min(g0, r.reasoning_tokens);
  if (thinking > 0) note(r.tl.chunk(t, thinking, tokchron::chunk_kind::reasoning));
  if (k > thinking) note(r.tl.chunk(t, k - thinking));
}

void scheduler::abort_all(time_point now) {
  for (request* r : running_) {
    ++stats_.aborted;
    finish(*r, now, tokchron::finish_reason::aborted);
  }
  for (request* r : waiting_) {
    ++stats_.aborted;
    finish(*r, now, tokchron::finish_reason::aborted);
  }
  running_.clear();
  for (request* r : waiting_) r->ticket = 0;
  waiting_.clear();
  queued_.clear();
  joins_.clear();
  by_arrival_ = arrival_heap();
  timing_out_ = arrival_heap();
}

bool scheduler::abort(request& r, time_point now) {
  if (r.state == request_state::running) {
    const auto it = std::find(running_.begin(), running_.end(), &r);
    if (it == running_.end()) return false;
    running_.erase(it);
  } else if (r.state == request_state::waiting) {
    if (waiting_.remove_if([&](const request& w) { return &w == &r; }) == 0) return false;
    leave(r);
  } else {
    return false;
  }
  ++stats_.aborted;
  finish(r, now, tokchron::finish_reason::aborted);
  return true;
}

void scheduler::take_finished(std::vector<request*>& out) {
  out.insert(out.end(), finished_.begin(), finished_.end());
  finished_.clear();
}

std::optional<time_point> scheduler::next_wakeup(time_point now) const {
  std::optional<time_point> t;
  auto consider = [&](time_point c) {
    if (c > now && (!t || c < *t)) t = c;
  };
  if (waiting_.empty()) return t;
  if (cfg_.max_queue_time)
    if (const request* r = first_to_time_out())
      consider(r->arrival + *cfg_.max_queue_time + duration(1));
  if (cfg_.max_batch_delay > duration::zero())
    if (const request* r = oldest_waiting()) consider(r->arrival + cfg_.max_batch_delay);
  return t;
}

}  // namespace batching
