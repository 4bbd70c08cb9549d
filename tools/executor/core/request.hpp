// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_CORE_REQUEST_HPP
#define TOKCHRON_TOOLS_EXECUTOR_CORE_REQUEST_HPP

/// \file
/// One request as the executor sees it: what the load generator asked for, the scheduler's
/// state, and the tokchron timeline that records what happened to it.

#include <cstdint>
#include <optional>
#include <vector>

#include "backend.hpp"

namespace batching {

enum class request_state : std::uint8_t { created, waiting, running, finished };

/// A request. Owned by the load generator (stable address for the whole run); the scheduler
/// keeps pointers. Single-threaded.
struct request {
  explicit request(const clock_type& clock) : tl(clock) {}

  // --- what was asked (set by the load generator) ------------------------------------------
  std::uint64_t id = 0;
  std::uint32_t user = 0;  ///< closed loop: the user who sent it
  std::uint32_t prompt_tokens = 1;
  /// The prompt's first tokens that are the shared system prompt of a generated workload (no
  /// text: the scheduler names their blocks with `block_hasher::shared_prefix_key` when
  /// `block_hashes` is empty; 0: none). At most `prompt_tokens`.
  std::uint32_t prefix_tokens = 0;
  /// The chain hashes of the prompt's full KV blocks (kv_cache.hpp's `block_hasher`), the
  /// prefix cache's keys: serve derives them from the prompt's tokens. Empty: nothing of the
  /// prompt but `prefix_tokens` can come from the cache.
  std::vector<std::uint64_t> block_hashes;
  /// The prompt's first tokens whose KV the engine already holds when the request arrives, from
  /// a cache of its own outside the shared prefix (a llama.cpp slot keeps its previous prompt):
  /// they are not computed again at the first admission. A trace's `cached_prompt_tokens`, as
  /// `calibrate` replays it; at most `prompt_tokens - 1` are used (the last is computed to
  /// sample). Only the sim backend has no KV to fill for them.
  std::uint32_t warm_tokens = 0;
  /// The answer's first tokens that are reasoning (recorded as `chunk_kind::reasoning`); the
  /// rest of `output_tokens` is the answer proper. At most `output_tokens`.
  std::uint32_t reasoning_tokens = 0;
  std::uint32_t output_tokens = 1;     ///< the response's length: it ends after this many
  std::uint32_t predicted_output = 1;  ///< a noisy prediction of `output_tokens` (SJF)
  std::int32_t priority = 0;           ///< lower runs first under the priority policy
  time_point arrival{};                ///< the intended arrival (= queued: no network here)
  /// Closed loop: the user's think time between its previous response and this request
  /// (empty for a user's first request and in open loop).
  std::optional<double> think_s;

  // --- scheduler state ---------------------------------------------------------------------
  request_state state = request_state::created;
  std::uint32_t computed = 0;         ///< tokens whose KV is cached
  std::uint32_t generated = 0;        ///< output tokens produced so far
  std::vector<std::uint32_t> blocks;  ///< the KV block table (each entry a reference)
  /// The leading entries of `blocks` already offered to the prefix cache (hits, and full prompt
  /// blocks scheduled for computation).
  std::uint32_t cached_blocks = 0;
  /// Prompt tokens served from the prefix cache at its first scheduling (its trace's
  /// `cached_prompt_tokens`).
  std::uint32_t cached_tokens = 0;
  /// The cached context it was admitted with (prefix cache and warm tokens): the chunk with
  /// `computed == reused_tokens` is the one its prefill starts with.
  std::uint32_t reused_tokens = 0;
  /// Its latest join of the waiting queue, numbered by the scheduler (0: not waiting).
  std::uint64_t ticket = 0;
  bool promoted = false;  ///< jumps the policy order (starvation bound, timeout)
  bool resumed = false;   ///< waiting again after a preemption (goes first)
  bool ever_scheduled = false;

  /// The record of its life (arrival, queued, scheduled, preempted, chunks, finish).
  timeline tl;

  /// Tokens of the sequence so far: prompt plus generated output.
  [[nodiscard]] std::uint32_t num_tokens() const noexcept { return prompt_tokens + generated; }
  /// Tokens still to compute before the next token can be sampled (1 when decoding).
  [[nodiscard]] std::uint32_t pending_tokens() const noexcept { return num_tokens() - computed; }
  /// True when the next step for it is a decode (not a prefill or recompute).
  [[nodiscard]] bool decoding() const noexcept { return generated > 0 && pending_tokens() == 1; }
};

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_CORE_REQUEST_HPP
