// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_CORE_BACKEND_HPP
#define TOKCHRON_TOOLS_EXECUTOR_CORE_BACKEND_HPP

/// \file
/// The one interface between the scheduler and what runs a step: `backend::step(batch)`.
///
/// A step is one iteration of continuous batching (Orca/vLLM): every sequence in the batch
/// either prefills a chunk of its prompt (or, after a recompute preemption, of its prompt plus
/// the tokens it had already produced) or decodes one token. The scheduler owns the KV-cache
/// block accounting (paged, `block_size` tokens a block); each sequence carries its block
/// table, so a real backend with a paged KV pool of `kv_blocks()` blocks reads and writes
/// exactly the blocks the scheduler gave it. Backends: `sim` (roofline model on a virtual
/// clock, backends/sim_backend.hpp); real-compute ones (cpu on BLAS, cuda on cuBLAS) implement the
/// same class in their own files.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokchron/clock.hpp"
#include "tokchron/timeline/request_timeline.hpp"

namespace batching {

/// The executor's clock: nanoseconds since the start of a run. The sim backend advances it by
/// each step's modelled duration; a real-time backend's engine sets it from `steady_clock`.
using clock_type = tokchron::manual_clock;
using time_point = clock_type::time_point;
using duration = clock_type::duration;
/// Every request is recorded in one of these (every chunk kept, for ITL and traces).
using timeline = tokchron::basic_request_timeline<clock_type>;
/// The longest step a backend may model or predict, in seconds (31 years; the run's clock, 64-bit
/// nanoseconds, holds 292 years).
inline constexpr double max_step_s = 1e9;
/// The shortest step a virtual-time backend may model, in seconds (1 us; a real accelerator's
/// step takes milliseconds). A shorter one would let a run of D seconds take more than D x 10^6
/// steps, and a step that rounds to 0 ns would never move the clock: the run would have no end.
inline constexpr double min_step_s = 1e-6;

/// What one sequence does in one step.
///
/// Token positions: the sequence holds `past_tokens` tokens whose keys and values are already
/// in its KV blocks. A prefill step computes `prefill_tokens` more (positions past_tokens ..
/// past_tokens + prefill_tokens - 1); a decode step feeds the one token it sampled last
/// (position past_tokens). `samples` says whether the step ends with sampling a new token: for a
/// decode always, for a prefill only on the chunk that completes it.
struct sequence_work {
  std::uint64_t seq_id = 0;          ///< unique in a run, stable across steps and preemptions
  std::uint32_t past_tokens = 0;     ///< context already cached before this step
  std::uint32_t prefill_tokens = 0;  ///< tokens to prefill now (the chunk); 0 for a decode
  bool decode = false;               ///< feeds its last sampled token and samples one more
  bool samples = false;              ///< the step samples a token for this sequence
  std::uint32_t prompt_tokens = 0;   ///< the request's prompt length (for content generation)
  /// The first `reused_tokens` of the cached context came from a cache at this admission (the
  /// shared prefix's blocks, or the request's warm tokens): a chunk with `past_tokens ==
  /// reused_tokens` is the one its prefill starts with.
  std::uint32_t reused_tokens = 0;
  const std::uint32_t* blocks = nullptr;  ///< KV block ids, covering past + new tokens
  std::uint32_t num_blocks = 0;           ///< entries in `blocks`

  /// Tokens this step feeds through the model for this sequence.
  [[nodiscard]] std::uint32_t new_tokens() const noexcept { return decode ? 1u : prefill_tokens; }
};

/// One step's work. The block pointers stay valid until `step` returns.
struct batch {
  std::vector<sequence_work> seqs;
  std::uint32_t block_size = 16;  ///< tokens per KV block

  /// Tokens fed through the model in this step (what the token budget bounds).
  [[nodiscard]] std::uint32_t num_tokens() const noexcept {
    std::uint32_t n = 0;
    for (const auto& s : seqs) n += s.new_tokens();
    return n;
  }
  [[nodiscard]] std::uint32_t num_decodes() const noexcept {
    std::uint32_t n = 0;
    for (const auto& s : seqs) n += s.decode ? 1u : 0u;
    return n;
  }
  [[nodiscard]] std::uint32_t num_prefills() const noexcept {
    return static_cast<std::uint32_t>(seqs.size()) - num_decodes();
  }
  [[nodiscard]] bool empty() const noexcept { return seqs.empty(); }
};

/// What one sequence produced in a step.
struct sequence_output {
  std::uint32_t tokens = 0;    ///< tokens sampled (1 when `samples`, more with speculation)
  bool stop = false;           ///< the model produced a stop token (the sim never does)
  std::int32_t token_id = -1;  ///< the last sampled token id, when the backend has one
};

/// The outcome of one step.
struct step_result {
  duration elapsed{};                    ///< the step's duration, modelled or measured
  std::vector<sequence_output> outputs;  ///< one per `batch::seqs`, in the same order
};

/// Runs steps. Single-threaded: the engine calls it from one thread.
///
/// Errors: `step` throws `std::runtime_error` when the backend fails (a CUDA error, say); the
/// engine reports it and stops the run. It must not throw for a well-formed batch.
class backend {
 public:
  virtual ~backend() = default;

  /// A short description for reports, e.g. "sim a10g llama2-7b".
  [[nodiscard]] virtual std::string name() const = 0;
  /// True when time is modelled (the engine advances its clock by `elapsed`); false when the
  /// step really ran and the engine timestamps from `steady_clock`.
  [[nodiscard]] virtual bool virtual_time() const noexcept = 0;
  /// How many KV blocks of `block_size` tokens the backend can hold.
  [[nodiscard]] virtual std::uint32_t kv_blocks(std::uint32_t block_size) const = 0;
  /// Runs one step. Precondition: `b` is non-empty and its block tables cover every token.
  virtual step_result step(const batch& b) = 0;
  /// The sequence's KV blocks were freed (it finished or was preempted): drop its state.
  virtual void release(std::uint64_t /*seq_id*/) noexcept {}
  /// Time a request spends outside the engine loop before the scheduler sees it: a server's
  /// connection, parsing, chat template and tokenising, on threads of their own (so it delays
  /// that request only, never a step). The sim's `t_front`; 0 for a backend that is the server.
  [[nodiscard]] virtual duration front_latency() const noexcept { return duration(0); }
  /// Time from the engine finishing a request to its client acting on it (the last event's
  /// delivery, the client's own work): a closed-loop user's next request leaves this much
  /// later, and its slot stays empty meanwhile. The sim's `t_client`; 0 otherwise.
  [[nodiscard]] virtual duration client_latency() const noexcept { return duration(0); }
  /// A prediction of how long prefilling `tokens` tokens alone takes (for SLO-aware
  /// scheduling); empty when the backend cannot predict.
  [[nodiscard]] virtual std::optional<duration> predict_prefill(std::uint32_t /*tokens*/) const {
    return std::nullopt;
  }
};

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_CORE_BACKEND_HPP
