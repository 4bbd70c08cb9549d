// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_BACKENDS_SIM_BACKEND_HPP
#define TOKCHRON_TOOLS_EXECUTOR_BACKENDS_SIM_BACKEND_HPP

/// \file
/// `sim_backend`: a roofline model of one accelerator running one decoder-only model, on a
/// virtual clock (docs/tools/executor.md):
///
///     bytes = W + kvB (sum of decode contexts + sum of prefill pasts) + kvB new_tokens
///     flops = 2 P new_tokens + sum_prefill 4 L d c (past + c/2) + sum_decode 4 L d (past + 1)
///     t     = t_fixed + t_seq n_seqs + t_seq2 n_seqs^2 + t_request n_starts
///             + max(bytes / (eta_bw BW), flops / (eta_c F)) (1 + jitter)
///
/// n_seqs: the sequences in the step; n_starts: those whose prefill starts in it (past = 0, or
/// past = the tokens a cache gave it at admission). t_seq2 is the batch-size term of an engine
/// whose steps grow faster than linearly with the sequences in them (0 by default).
/// Outside the steps: every request reaches the scheduler t_front after it was sent (work on
/// a server's other threads, which stalls no step), and a closed-loop user's next request
/// leaves t_client after the engine finished its previous one (`front_latency`,
/// `client_latency`).
/// W weight bytes, P parameters, kvB KV bytes per token, L layers, d hidden size, c a
/// sequence's prefill chunk, past its cached context; a decode attends over past + 1 positions.
/// jitter is sigma * z, z standard normal clipped to [-3, 3], seeded: the same seed gives the
/// same step times. KV capacity: (memory * mem_util - W - activation_reserve) / kvB tokens.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend.hpp"
#include "loadgen/random.hpp"

namespace batching {

/// An accelerator: memory bytes, bandwidth (bytes/s) and the dense throughput (FLOP/s) of the
/// precision in use (`flops`); `flops_16` and `flops_8` are the data sheet's dense fp16/bf16 and
/// fp8 figures (0: no fp8 tensor cores), from which `sim_config::set_precision` picks `flops`.
struct hardware_spec {
  std::string name;
  double memory_bytes = 0, bandwidth = 0, flops = 0;
  double flops_16 = 0, flops_8 = 0;
};
/// A model: parameters, weight bytes, KV bytes per token, layers and hidden size, and the KV
/// values a token stores (2 x layers x KV width, whatever their size).
struct model_spec {
  std::string name;
  double params = 0, weight_bytes = 0, kv_bytes_per_token = 0;
  std::uint32_t layers = 0, hidden = 0;
  double kv_values_per_token = 0;
};

/// Presets `a10g`, `a100-80g`, `h100`, `h200` (fp16 throughput in `flops`); throws
/// `std::invalid_argument` listing them.
[[nodiscard]] hardware_spec hardware_preset(std::string_view name);
/// Presets `llama2-7b`, `llama3-8b`, `llama3.1-8b` (fp16 weights and KV); throws listing them.
[[nodiscard]] model_spec model_preset(std::string_view name);

/// Storage and arithmetic precision: bytes per weight and per KV value, and which of the
/// hardware's throughputs the matrix products run at.
struct precision_spec {
  std::string name;
  double weight_bytes = 2, kv_bytes = 2;
  bool fp8_compute = false;
};
/// Presets `fp16`, `bf16` (2-byte weights and KV, 16-bit tensor throughput), `fp8` (1-byte
/// weights and KV, fp8 tensor throughput), `fp8-weights` (1-byte weights, 2-byte KV, fp8
/// throughput); throws listing them.
[[nodiscard]] precision_spec precision_preset(std::string_view name);

/// Every constant of the model; `set(key, value)` overrides one by name.
struct sim_config {
  hardware_spec hw = hardware_preset("a10g");
  model_spec model = model_preset("llama2-7b");
  precision_spec precision = precision_preset("fp16");
  double eta_bw = 0.9957;  ///< achieved fraction of peak bandwidth (docs/tools/executor.md, fit)
  double eta_compute = 0.5789;  ///< achieved fraction of peak FLOP/s (fit)
  double t_fixed_s = 0.003616;  ///< per-step launch/scheduling overhead (fit)
  double t_seq_s = 4.647e-6;    ///< per-sequence cost of a step (sampling, bookkeeping; fit)
  double t_seq2_s = 0;          ///< per squared sequence count of a step (batch-size term)
  double t_request_s = 0.001;   ///< per-request cost of the step its prefill starts in
  double t_front_s = 0;   ///< a request's time before the engine loop (HTTP, template, tokens)
  double t_client_s = 0;  ///< a closed-loop client's time between a finish and its next send
  double jitter = 0.02;   ///< sd of the relative step-time noise
  double mem_util = 0.9;  ///< share of memory the engine may use (vLLM gpu_memory_utilization)
  double activation_reserve_bytes = 1073741824.0;  ///< kept free for activations (1 GiB)
  std::uint64_t seed = 1;

  /// Overrides one constant: bandwidth, flops, memory (hardware); params, weight_bytes,
  /// kv_bytes_per_token, layers, hidden (model); eta_bw, eta_compute, t_fixed, t_seq, t_seq2,
  /// t_request, t_front, t_client, jitter, mem_util, activation_reserve. Values are plain numbers
  /// in base units (bytes, FLOP/s, seconds). Throws `std::invalid_argument` for an unknown key or
  /// bad value.
  void set(std::string_view key, double value);
  /// The names `set` takes, comma-separated (for error messages and help).
  [[nodiscard]] static const char* keys() noexcept;
  /// Sets the hardware preset, at the current precision's throughput.
  void set_hardware(std::string_view name);
  /// Sets the model preset, its bytes at the current precision.
  void set_model(std::string_view name);
  /// Sets the precision: weight and KV bytes from the model's parameters and KV values, FLOP/s
  /// from the hardware's fp16 or fp8 figure. Throws `std::invalid_argument` for fp8 on hardware
  /// without fp8 throughput. `--sim` overrides given after it still win.
  void set_precision(std::string_view name);
  /// Throws `std::invalid_argument` when a constant is out of range or no KV fits.
  void validate() const;
  /// KV tokens that fit in memory after weights and the activation reserve (may be <= 0).
  [[nodiscard]] double kv_capacity_tokens() const noexcept;
};

/// The cost of one step before jitter.
struct step_cost {
  double bytes = 0, flops = 0;
  double memory_s = 0, compute_s = 0;  ///< bytes / (eta_bw BW), flops / (eta_c F)
  double overhead_s = 0;  ///< t_fixed + t_seq n_seqs + t_seq2 n_seqs^2 + t_request n_starts
  double seconds = 0;     ///< overhead_s + max(memory_s, compute_s)
  [[nodiscard]] bool compute_bound() const noexcept { return compute_s > memory_s; }
};

/// The simulated backend. Deterministic for a seed; single-threaded.
class sim_backend final : public backend {
 public:
  /// Throws `std::invalid_argument` for an invalid config.
  explicit sim_backend(const sim_config& cfg);

  [[nodiscard]] std::string name() const override;
  [[nodiscard]] bool virtual_time() const noexcept override { return true; }
  [[nodiscard]] std::uint32_t kv_blocks(std::uint32_t block_size) const override;
  step_result step(const batch& b) override;
  [[nodiscard]] std::optional<duration> predict_prefill(std::uint32_t tokens) const override;
  [[nodiscard]] duration front_latency() const noexcept override;
  [[nodiscard]] duration client_latency() const noexcept override;

  /// The roofline cost of `b` (no jitter): the formula at the top of this file.
  [[nodiscard]] step_cost cost(const batch& b) const noexcept;
  [[nodiscard]] const sim_config& config() const noexcept { return cfg_; }

 private:
  sim_config cfg_;
  tokchron_loadgen::rng rng_;
};

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_BACKENDS_SIM_BACKEND_HPP
