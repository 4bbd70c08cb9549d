// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_BACKENDS_CPU_BACKEND_HPP
#define TOKCHRON_TOOLS_EXECUTOR_BACKENDS_CPU_BACKEND_HPP

/// \file
/// The `cpu` backend: the model of model/model.hpp really run, on OpenBLAS, on a real clock.
///
/// Each step feeds every sequence's new tokens through one batched forward pass (one sgemm per
/// weight matrix for the whole step, so a decode step reads the weights once), writes K and V
/// into the paged cache at the scheduler's block ids, and samples greedily. Prompts are the
/// deterministic `prompt_token` sequence of the request's id; sampled tokens are kept per
/// sequence so a decode feeds the last one and a recompute after preemption refeeds them.
///
/// Default size (4 layers, d 768, ffn 3072, vocab 8192: 138 MB of fp32 weights streamed per
/// step) is far above this machine's caches, so a decode step is memory-bandwidth bound and a
/// long prefill compute bound, as on a GPU. OpenBLAS's thread count is set explicitly
/// (`openblas_set_num_threads(threads)`, default 1) when the backend is made.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend.hpp"
#include "model/forward.hpp"
#include "model/model.hpp"
#include "model/token_book.hpp"

namespace batching {

/// The cpu backend's settings. `set(key, value)` sets one by name.
struct cpu_backend_config {
  compute::model_config model;
  double kv_memory_bytes = 1073741824.0;  ///< KV pool size (1 GiB: ~43k tokens by default)
  /// OpenBLAS threads and attention threads. 1 by default: on this 2-core machine, shared with
  /// other builds, 2 threads measured 1.1-2.2x slower per decode step (OpenBLAS's threads wait
  /// on each other whenever one is descheduled); use 2 on an idle 2-core machine.
  unsigned threads = 1;
  bool measure_bandwidth = true;  ///< measure copy bandwidth once (for `name()`)
  /// `clock=cpu`: a step lasts the CPU time this thread spent in it (CLOCK_THREAD_CPUTIME_ID),
  /// and the run's clock advances by it (as the sim's does) instead of following the wall: on a
  /// machine shared with other work, the wall time of a step measures the other processes too,
  /// its CPU time does not. Needs threads = 1 (OpenBLAS then computes in this thread).
  bool cpu_clock = false;

  /// Keys: the model's (layers, hidden, heads, ffn, vocab, seed, norm_eps, rope_theta),
  /// kv_memory (bytes), threads, clock (wall or cpu). Throws `std::invalid_argument` for an
  /// unknown key or bad value.
  void set(std::string_view key, std::string_view value);
  /// Throws `std::invalid_argument` when a value is out of range.
  void validate() const;
};

/// Copy bandwidth of this machine in bytes/s, counting bytes read plus bytes written (the
/// STREAM convention): the best of `repeats` memcpy's of a `bytes` buffer, far above the caches.
/// Takes about repeats * bytes / bandwidth. Thread-safe.
[[nodiscard]] double measure_copy_bandwidth(std::size_t bytes = std::size_t(256) << 20,
                                            int repeats = 5);

/// The cpu backend. Single-threaded use (as every backend); runs OpenBLAS's threads inside.
class cpu_backend final : public backend {
 public:
  /// Draws the weights (about a second at the default size). Throws `std::invalid_argument`
  /// for a bad config.
  explicit cpu_backend(const cpu_backend_config& cfg);

  /// "cpu L4 d768 h12 f3072 V8192, 138.3 MB weights, 2 threads; copy 9.1 GB/s, decode floor
  /// 15.2 ms" (the floor: streamed weight bytes / measured copy bandwidth).
  [[nodiscard]] std::string name() const override;
  /// False: steps take the wall time they take; true with `clock=cpu`.
  [[nodiscard]] bool virtual_time() const noexcept override { return cfg_.cpu_clock; }
  [[nodiscard]] std::uint32_t kv_blocks(std::uint32_t block_size) const override;
  /// Runs the step for real. Throws `std::runtime_error` when the batch is inconsistent with
  /// the tokens it has seen (a decode with no sampled token to feed, say) or the block size
  /// changes between steps.
  step_result step(const batch& b) override;
  /// Drops the sequence's KV state; its tokens are parked (the last 4096 sequences) so a
  /// preempted sequence recomputes the tokens it really produced.
  void release(std::uint64_t seq_id) noexcept override;
  /// Seconds per prefill token observed so far (an average over prefill-only steps) times
  /// `tokens`; empty before the first such step.
  [[nodiscard]] std::optional<duration> predict_prefill(std::uint32_t tokens) const override;

  [[nodiscard]] const cpu_backend_config& config() const noexcept { return cfg_; }
  [[nodiscard]] const compute::model_weights& weights() const noexcept { return w_; }
  /// Streamed weight bytes a step reads (fp32).
  [[nodiscard]] double weight_bytes() const noexcept;
  /// The measured copy bandwidth (bytes/s), 0 when not measured.
  [[nodiscard]] double bandwidth() const noexcept { return bandwidth_; }
  /// The token history (prompt + sampled) of a live sequence; empty when unknown.
  [[nodiscard]] std::vector<std::int32_t> tokens(std::uint64_t seq_id) const;

 private:
  cpu_backend_config cfg_;
  compute::model_weights w_;
  double bandwidth_ = 0;
  std::unique_ptr<compute::paged_kv_cache> kv_;
  std::unique_ptr<compute::cpu_model> model_;
  compute::token_book book_;
  double prefill_s_ = 0, prefill_tokens_ = 0;
  // Per step scratch.
  compute::forward_batch fb_;
  std::vector<std::int32_t> next_;
};

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_BACKENDS_CPU_BACKEND_HPP
