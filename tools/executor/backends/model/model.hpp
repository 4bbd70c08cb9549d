// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_BACKENDS_MODEL_MODEL_HPP
#define TOKCHRON_TOOLS_EXECUTOR_BACKENDS_MODEL_MODEL_HPP

/// \file
/// The small decoder-only transformer both real-compute backends run, and its seeded weights.
///
/// Per token (h the fp32 residual stream, width d, `heads` heads of d / heads):
///
///     h  = embedding[token]
///     per layer:  a = rmsnorm(h) * attn_norm;  q,k,v = Wqkv a;  rope(q, k, position)
///                 append k, v to the sequence's paged KV cache
///                 o = per head softmax(q K^T / sqrt(hd)) V   over positions 0..position
///                 h += Wo o
///                 m = rmsnorm(h) * mlp_norm;  h += Wdown silu(Wup m)
///     logits = lm_head (rmsnorm(h) * final_norm);  next token = argmax (lowest id on ties)
///
/// rmsnorm(x) = x / sqrt(mean(x^2) + eps); rope rotates pairs (2i, 2i+1) of each head by
/// position * theta^(-2i / hd). Matrices are row-major [out][in]. Weights are drawn from the
/// seed (uniform, standard deviation 1 / sqrt(fan_in); norms 1 +- 0.1) and rounded to fp16
/// values, so the fp32 copy and an fp16 copy of them are the same numbers.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace batching::compute {

/// The model's shape and seed. `validate()` throws `std::invalid_argument` naming the bad field.
struct model_config {
  std::uint32_t layers = 4;
  std::uint32_t hidden = 768;  ///< d
  std::uint32_t heads = 12;    ///< d must be a multiple; head dim must be even (rope)
  std::uint32_t ffn = 3072;    ///< MLP inner width
  std::uint32_t vocab = 8192;
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  std::uint64_t seed = 1;

  [[nodiscard]] std::uint32_t head_dim() const noexcept { return hidden / heads; }
  /// Parameters of one layer (two norms, Wqkv, Wo, Wup, Wdown).
  [[nodiscard]] std::uint64_t layer_params() const noexcept;
  /// Every parameter, embedding included.
  [[nodiscard]] std::uint64_t params() const noexcept;
  /// Parameters a step reads whatever its batch (all but the embedding, of which a step reads
  /// one row a token): the weight bytes of the roofline are this times bytes per parameter.
  [[nodiscard]] std::uint64_t streamed_params() const noexcept;
  /// KV floats a token occupies: 2 (K, V) * layers * d.
  [[nodiscard]] std::uint64_t kv_values_per_token() const noexcept {
    return 2ull * layers * hidden;
  }
  /// Sets one field by name (layers, hidden, heads, ffn, vocab, seed, norm_eps, rope_theta).
  /// Throws `std::invalid_argument` for an unknown key or a value that is not a number.
  void set(std::string_view key, std::string_view value);
  void validate() const;
  /// "L4 d768 h12 f3072 V8192".
  [[nodiscard]] std::string describe() const;
};

/// One layer's weights (fp32, fp16-representable).
struct layer_weights {
  std::vector<float> attn_norm;  ///< [d]
  std::vector<float> wqkv;       ///< [3d][d]: rows 0..d-1 give q, then k, then v
  std::vector<float> wo;         ///< [d][d]
  std::vector<float> mlp_norm;   ///< [d]
  std::vector<float> w_up;       ///< [ffn][d]
  std::vector<float> w_down;     ///< [d][ffn]
};

/// All weights. Immutable once made; sharing one between threads is safe.
struct model_weights {
  model_config cfg;
  std::vector<float> embedding;  ///< [vocab][d]
  std::vector<layer_weights> layers;
  std::vector<float> final_norm;  ///< [d]
  std::vector<float> lm_head;     ///< [vocab][d]

  /// Draws the weights of `cfg` from `cfg.seed`: the same seed gives the same bits on every
  /// platform (each matrix has its own stream, `mix_seed(seed, index)`). O(params).
  /// Throws `std::invalid_argument` for an invalid config.
  [[nodiscard]] static model_weights random(const model_config& cfg);
};

/// The deterministic content of a prompt: token `i` of sequence `seq_id`'s prompt (the
/// scheduler sends lengths, not text). Same on every backend.
[[nodiscard]] std::int32_t prompt_token(std::uint64_t seed, std::uint64_t seq_id, std::uint32_t i,
                                        std::uint32_t vocab) noexcept;

/// Index of the largest of `n` values (the lowest index on ties; NaN never wins). O(n).
[[nodiscard]] std::int32_t argmax(const float* v, std::size_t n) noexcept;

}  // namespace batching::compute

#endif  // TOKCHRON_TOOLS_EXECUTOR_BACKENDS_MODEL_MODEL_HPP
