// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_BACKENDS_MODEL_FORWARD_HPP
#define TOKCHRON_TOOLS_EXECUTOR_BACKENDS_MODEL_FORWARD_HPP

/// \file
/// The model's forward pass on the CPU: a batched one over a paged KV cache with OpenBLAS
/// sgemm for every matrix product (what the cpu backend runs), and a naive reference (plain
/// loops, double accumulation, contiguous KV, full recompute) that tests check it against.
///
/// A step's matrix products take all of the step's tokens at once ([T x d] times [d x out]),
/// so a decode step of B sequences reads every weight once, not B times: the property that
/// makes decode memory-bandwidth bound and batching pay off.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "model/model.hpp"

namespace batching::compute {

/// A paged KV cache: `num_blocks` blocks of `block_size` token slots, each slot holding K and V
/// (d floats each) for every layer. Block ids are the scheduler's (kv_cache.hpp). Memory is
/// reserved, not touched, at construction. Single-writer.
class paged_kv_cache {
 public:
  /// Throws `std::invalid_argument` when `block_size` or `num_blocks` is 0; `std::bad_alloc`
  /// when the memory cannot be reserved.
  paged_kv_cache(const model_config& cfg, std::uint32_t num_blocks, std::uint32_t block_size);

  /// K (kv = 0) or V (kv = 1) of `layer` in `block`'s `slot`: d floats. Unchecked.
  [[nodiscard]] float* at(std::uint32_t layer, std::uint32_t kv, std::uint32_t block,
                          std::uint32_t slot) noexcept {
    return data_.get() +
           (((std::size_t(layer) * blocks_ + block) * 2 + kv) * block_size_ + slot) * hidden_;
  }
  [[nodiscard]] std::uint32_t num_blocks() const noexcept { return blocks_; }
  [[nodiscard]] std::uint32_t layers() const noexcept { return layers_; }
  [[nodiscard]] std::uint32_t hidden() const noexcept { return hidden_; }
  [[nodiscard]] std::uint32_t block_size() const noexcept { return block_size_; }
  [[nodiscard]] std::size_t bytes() const noexcept {
    return std::size_t(layers_) * blocks_ * 2 * block_size_ * hidden_ * sizeof(float);
  }

 private:
  std::uint32_t layers_, hidden_, blocks_, block_size_;
  std::unique_ptr<float[]> data_;
};

/// One sequence's part of a forward step: `n_new` tokens at positions past .. past + n_new - 1
/// (a decode is n_new = 1). `blocks` must cover past + n_new positions and must not be shared
/// with another sequence of the batch.
struct forward_seq {
  const std::int32_t* tokens = nullptr;  ///< the n_new input token ids
  std::uint32_t past = 0;                ///< positions already in the cache
  std::uint32_t n_new = 0;
  const std::uint32_t* blocks = nullptr;
  std::uint32_t num_blocks = 0;
  bool sample = false;  ///< compute logits of the last new token and its argmax
};

/// One step: the sequences and the cache's block size.
struct forward_batch {
  std::vector<forward_seq> seqs;
  std::uint32_t block_size = 16;
};

/// Options of the batched CPU forward.
struct cpu_forward_options {
  /// Round what the cuda backend stores in fp16 (every matrix-product input, K and V) to fp16,
  /// so the CPU reproduces the GPU's rounding: the cross-check's error model.
  bool fp16_activations = false;
  /// Threads for the attention loops (the matrix products use OpenBLAS's own threads).
  unsigned threads = 1;
};

/// The batched forward pass over a paged cache. Holds scratch buffers that grow to the largest
/// step seen. Single-threaded use (it runs `threads` worker threads inside `forward`).
class cpu_model {
 public:
  /// `w` and `kv` must outlive the model. Throws `std::invalid_argument` when `kv` was made for
  /// another shape.
  cpu_model(const model_weights& w, paged_kv_cache& kv, cpu_forward_options opt = {});

  /// Runs `b`: writes every new token's K and V into the cache, and for each sequence with
  /// `sample` its argmax into `next[i]` (-1 for the others; `next` is resized to the batch).
  /// When `logits` is non-null it receives the sampled sequences' logits, row after row
  /// ([sampled][vocab], in batch order). Cost: 2 * streamed_params * T FLOP in sgemm plus
  /// 4 * L * d * (sum of attended positions) in attention, T = the step's tokens.
  /// Throws `std::invalid_argument` when a sequence's blocks do not cover its positions or a
  /// block id is out of range.
  void forward(const forward_batch& b, std::vector<std::int32_t>& next,
               std::vector<float>* logits = nullptr);

  [[nodiscard]] const model_weights& weights() const noexcept { return w_; }

 private:
  void attention(const forward_batch& b, std::uint32_t layer);

  const model_weights& w_;
  paged_kv_cache& kv_;
  cpu_forward_options opt_;
  std::vector<float> inv_freq_;
  // Scratch, [tokens][width] row-major.
  std::vector<float> h_, x_, qkv_, o_, tmp_, up_, rows_, logits_;
  std::vector<std::uint32_t> tok_seq_, tok_pos_;
};

/// Rope inverse frequencies theta^(-2i / hd), i < hd / 2, in float, as every backend uses them.
[[nodiscard]] std::vector<float> rope_inv_freq(const model_config& cfg);

/// The naive reference: logits at every position of `tokens` ([n][vocab]) by full recompute,
/// plain loops with double accumulation and a contiguous KV cache. O(n * params + n^2 * L * d).
[[nodiscard]] std::vector<float> reference_logits(const model_weights& w,
                                                  const std::vector<std::int32_t>& tokens);

/// Relative L2 distance ||a - b|| / ||b|| of two equally long vectors (0 when both are 0).
[[nodiscard]] double relative_l2(const float* a, const float* b, std::size_t n) noexcept;

}  // namespace batching::compute

#endif  // TOKCHRON_TOOLS_EXECUTOR_BACKENDS_MODEL_FORWARD_HPP
