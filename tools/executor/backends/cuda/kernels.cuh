// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_BACKENDS_CUDA_KERNELS_CUH
#define TOKCHRON_TOOLS_EXECUTOR_BACKENDS_CUDA_KERNELS_CUH

/// \file
/// The cuda backend's own kernels (the matrix products are cuBLAS's). Every launcher enqueues on
/// `stream` and checks the launch (`cudaGetLastError`), throwing `std::runtime_error`.
/// Storage: weights, matrix-product inputs and the KV cache in fp16; the residual stream,
/// matrix-product outputs, norms, softmax and logits in fp32 (the rounding sites the CPU's
/// `fp16_activations` emulates, model/forward.hpp).

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace batching::compute::cuda {

/// Where a step's tokens are: per token its position and the offset of its sequence's block
/// table in `blocks` (device arrays, `tokens` entries).
struct token_index {
  const std::int32_t* token;   ///< input token id
  const std::int32_t* pos;     ///< position in its sequence
  const std::int32_t* table;   ///< offset of its sequence's block table in `blocks`
  const std::int32_t* blocks;  ///< all block tables, concatenated
  int tokens;
};

/// The paged KV cache: [layer][block][2][block_size][d] fp16.
struct kv_view {
  __half* data;
  int num_blocks, block_size, hidden;
  __host__ __device__ std::size_t offset(int layer, int kv, int block, int slot) const {
    return ((((std::size_t)layer * num_blocks + block) * 2 + kv) * block_size + slot) *
           (std::size_t)hidden;
  }
};

/// h[t][:] = embedding[token[t]][:] (fp16 -> fp32).
void embed(const __half* embedding, token_index ti, int d, float* h, cudaStream_t stream);
/// out[r][:] = fp16(rmsnorm(in[src(r)][:]) * gamma), src(r) = rows ? rows[r] : r.
void rmsnorm_half(const float* in, const std::int32_t* rows, int n_rows, const float* gamma, int d,
                  float eps, __half* out, cudaStream_t stream);
/// Rotates q and k of qkv ([t][3d], fp32, in place) by their positions, then writes k and v
/// (fp16) into the cache at their sequences' slots for `layer`.
void rope_and_store(float* qkv, token_index ti, const float* inv_freq, int heads, int head_dim,
                    kv_view kv, int layer, cudaStream_t stream);
/// o[t][head] = fp16(softmax(q k^T / sqrt(hd)) v) over positions 0..pos[t] of its sequence.
/// head_dim <= 256.
void attention(const float* qkv, token_index ti, kv_view kv, int layer, int heads, int head_dim,
               __half* o, cudaStream_t stream);
/// out[i] = fp16(silu(in[i])), i < n.
void silu_half(const float* in, std::size_t n, __half* out, cudaStream_t stream);
/// h[i] += x[i], i < n.
void add_inplace(float* h, const float* x, std::size_t n, cudaStream_t stream);
/// out[r] = argmax of logits[r][0..n) (lowest index on ties, NaN never wins).
void argmax_rows(const float* logits, int rows, int n, std::int32_t* out, cudaStream_t stream);

/// out[i] = fp16 of a value uniform in [-1, 1) drawn from a hash of (seed, i), i < n: non-constant
/// data for the throughput measurements (tensor cores draw less power on constant inputs).
void fill_uniform_half(__half* out, std::size_t n, std::uint64_t seed, cudaStream_t stream);

}  // namespace batching::compute::cuda

#endif  // TOKCHRON_TOOLS_EXECUTOR_BACKENDS_CUDA_KERNELS_CUH
