// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_BACKENDS_CUDA_CUDA_BACKEND_HPP
#define TOKCHRON_TOOLS_EXECUTOR_BACKENDS_CUDA_CUDA_BACKEND_HPP

/// \file
/// The `cuda` backend: the model of model/model.hpp on one GPU. Plain C++ header (no CUDA
/// types), so the executor includes it with the host compiler; built only when nvcc is found.
///
/// Weights and the paged KV cache are fp16 on the device (the weights are fp16-exact, so they are
/// the cpu backend's numbers); matrix products are `cublasGemmEx` (fp16 in, fp32 out, fp32
/// compute), one per weight matrix for the whole step; attention over the paged cache, RMSNorm,
/// RoPE, SiLU, residual adds and argmax are our kernels (cuda/kernels.cuh). Everything runs on
/// one stream; a step is timed by CUDA events around it, and its sampled tokens are copied back
/// and synchronised before `step` returns, so the engine's host timestamp is when the tokens
/// are available on the host. Every CUDA and cuBLAS call and every launch is checked.
///
/// NOT YET RUN ON A GPU: it compiles with nvcc 13 (sm_90) on a machine without one; the
/// cross-check (tests/cross_check_cuda.cpp) is what validates it when a GPU is present.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "backend.hpp"
#include "model/forward.hpp"
#include "model/model.hpp"
#include "model/token_book.hpp"

namespace batching {

/// Exit code of a program asked for the cuda backend on a machine without a usable GPU (77: the
/// "skipped" code of automake and ctest's SKIP_RETURN_CODE here).
inline constexpr int exit_no_gpu = 77;

/// No usable CUDA device (none, no driver, or the driver too old); what() says which.
struct no_gpu_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Empty when a CUDA device can be used, else why not.
[[nodiscard]] std::optional<std::string> cuda_unavailable_reason();

namespace compute {

/// The model's forward pass on the GPU, with the same contract as `cpu_model::forward` (host
/// inputs, host outputs). Owns the device weights (fp16), the KV cache (fp16) and grow-only
/// activation buffers. Single-threaded.
class cuda_model {
 public:
  /// Uploads `w` (fp16). Throws `no_gpu_error` without a usable device, `std::runtime_error`
  /// when a CUDA call fails (out of memory, say), `std::invalid_argument` for a head dim over
  /// 256.
  explicit cuda_model(const model_weights& w, int device = 0);
  /// Allocates the KV cache: `num_blocks` blocks of `block_size` tokens (any previous one is
  /// freed). Must precede `forward`. Throws `std::runtime_error` when it does not fit.
  void reserve_kv(std::uint32_t num_blocks, std::uint32_t block_size);
  ~cuda_model();
  cuda_model(const cuda_model&) = delete;
  cuda_model& operator=(const cuda_model&) = delete;

  /// Runs `b` (see `cpu_model::forward`); returns when the sampled tokens (and `logits`, when
  /// asked) are on the host.
  void forward(const forward_batch& b, std::vector<std::int32_t>& next,
               std::vector<float>* logits = nullptr);
  /// The last forward's device time (CUDA events around the step's work), milliseconds.
  [[nodiscard]] float last_step_ms() const noexcept;
  /// The device's name and its memory, e.g. "NVIDIA H200, 139.8 GiB".
  [[nodiscard]] std::string device_name() const;

 private:
  struct impl;
  std::unique_ptr<impl> p_;
};

/// Device memory bandwidth of `device` in bytes/s, counting bytes read plus bytes written (the
/// STREAM convention, as `measure_copy_bandwidth` on the host): the best of `repeats`
/// device-to-device copies of `bytes` (after one untimed), timed by CUDA events. Throws
/// `no_gpu_error` without a device, `std::runtime_error` when a CUDA call fails.
[[nodiscard]] double measure_device_bandwidth(int device, std::size_t bytes, int repeats);
/// Matrix-product throughput of `device` in FLOP/s for the backend's own call (cublasGemmEx, fp16
/// inputs, fp32 output and compute): an n x n x n product of pseudo-random data, best of
/// `repeats` (after one untimed), timed by CUDA events. Throws as `measure_device_bandwidth`.
[[nodiscard]] double measure_device_gemm_flops(int device, int n, int repeats);

}  // namespace compute

/// The cuda backend's settings.
struct cuda_backend_config {
  compute::model_config model;
  double kv_memory_bytes = 4294967296.0;  ///< KV pool (4 GiB of fp16: ~349k tokens by default)
  int device = 0;

  /// Keys: the model's, kv_memory (bytes), device. Throws `std::invalid_argument`.
  void set(std::string_view key, std::string_view value);
  void validate() const;
};

/// The cuda backend (real time). Single-threaded.
class cuda_backend final : public backend {
 public:
  /// Throws `no_gpu_error` without a usable device (callers exit with `exit_no_gpu`).
  explicit cuda_backend(const cuda_backend_config& cfg);
  ~cuda_backend() override;

  [[nodiscard]] std::string name() const override;
  [[nodiscard]] bool virtual_time() const noexcept override { return false; }
  [[nodiscard]] std::uint32_t kv_blocks(std::uint32_t block_size) const override;
  /// Throws `std::runtime_error` on a CUDA failure or an inconsistent batch.
  step_result step(const batch& b) override;
  void release(std::uint64_t seq_id) noexcept override { book_.release(seq_id); }

  /// The last step's device time (CUDA events), milliseconds.
  [[nodiscard]] float last_step_ms() const noexcept;

 private:
  cuda_backend_config cfg_;
  std::unique_ptr<compute::cuda_model> model_;
  std::string device_;
  compute::token_book book_;
  compute::forward_batch fb_;
  std::vector<std::int32_t> next_;
  std::uint32_t kv_block_size_ = 0;  ///< 0 until the first step allocates the KV cache
};

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_BACKENDS_CUDA_CUDA_BACKEND_HPP
