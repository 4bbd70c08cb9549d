// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXAMPLES_BATCHING_EXECUTOR_TESTS_CROSS_CHECK_HPP
#define TOKCHRON_EXAMPLES_BATCHING_EXECUTOR_TESTS_CROSS_CHECK_HPP

// The cpu <-> cuda cross-check, shared by its two halves: tests/cross_check_cpu_test.cpp (always
// runs: fp32 against the CPU's emulation of the GPU's fp16 rounding) and tests/cross_check_cuda.cpp
// (the GPU against the CPU, when a GPU is present).
//
// Protocol: the fixed prompts below are prefilled in one batch, then decoded greedily for
// `decode_steps` batched steps, each model feeding its own sampled tokens. Every sampled step's
// logits are kept.
//
// Tolerance, from fp16 rounding. The GPU stores in fp16 (unit roundoff u = 2^-11) what the CPU
// keeps in fp32: every matrix-product input (the two norm outputs and the attention and SiLU
// outputs of each layer, the final norm output) and K and V: 6 L + 1 rounding sites on a
// token's path; the residual stream, accumulations and logits stay fp32 on both. One rounding
// perturbs a vector by a relative L2 of u / sqrt(3) (rounding errors uniform in +-u |x|); the
// perturbations are independent, so to first order they add in quadrature:
// sqrt(6 L + 1) u / sqrt(3). Layers, norms and softmax can amplify them; we allow a gain of 8:
//     tol = 8 sqrt(6 L + 1) u / sqrt(3)       (8.1e-3 for L = 2).
// The cpu half measures the actual figure for the emulation (printed) and shows the margin.
// Greedy tokens must match at every step where the reference's top-1 / top-2 margin exceeds
// sqrt(2) tol ||logits|| (the largest gap a rel-L2 error of tol can close); a step inside that
// margin is a near tie and ends the comparison of that prompt (counted, and reported).

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "model/forward.hpp"
#include "model/half.hpp"
#include "model/model.hpp"

namespace batching::compute::cross_check {

/// The cross-check model: 2 layers, d 256, 4 heads of 64, ffn 512, vocab 1024, seed 2024.
inline model_config config() {
  model_config c;
  c.layers = 2;
  c.hidden = 256;
  c.heads = 4;
  c.ffn = 512;
  c.vocab = 1024;
  c.seed = 2024;
  return c;
}
inline constexpr std::uint32_t prompt_lengths[] = {7, 16, 33, 64};
inline constexpr std::uint32_t decode_steps = 16;
inline constexpr std::uint32_t block_size = 16;
/// Blocks each sequence owns (enough for the longest prompt plus the decode steps).
inline constexpr std::uint32_t blocks_per_seq = (64 + decode_steps + block_size - 1) / block_size;
inline constexpr std::uint32_t num_blocks = 4 * blocks_per_seq;

/// The relative-L2 tolerance on logits derived above.
inline double fp16_tolerance(const model_config& c) {
  return 8.0 * std::sqrt(6.0 * c.layers + 1.0) * fp16_unit_roundoff / std::sqrt(3.0);
}

/// Runs one forward step on some backend (the cache is the backend's, `num_blocks` blocks of
/// `block_size`); same contract as `cpu_model::forward`.
using forward_fn = std::function<void(const forward_batch&, std::vector<std::int32_t>& next,
                                      std::vector<float>* logits)>;

/// What a run produced: per prompt, the sampled tokens and each sampled step's logits.
struct trace {
  std::vector<std::vector<std::int32_t>> tokens;
  std::vector<std::vector<std::vector<float>>> logits;
};

inline trace run(const forward_fn& fwd, const model_config& c) {
  const std::size_t n = std::size(prompt_lengths);
  std::vector<std::vector<std::int32_t>> seq(n);
  std::vector<std::vector<std::uint32_t>> blocks(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::uint32_t k = 0; k < prompt_lengths[i]; ++k)
      seq[i].push_back(prompt_token(c.seed, 1000 + i, k, c.vocab));
    // Interleaved block ids (sequence i owns i, i + n, ...): a paged, non-contiguous layout.
    for (std::uint32_t k = 0; k < blocks_per_seq; ++k)
      blocks[i].push_back(static_cast<std::uint32_t>(k * n + (n - 1 - i)));
  }
  trace t;
  t.tokens.resize(n);
  t.logits.resize(n);
  std::vector<std::int32_t> next;
  std::vector<float> logits;
  for (std::uint32_t step = 0; step <= decode_steps; ++step) {
    forward_batch b;
    b.block_size = block_size;
    for (std::size_t i = 0; i < n; ++i) {
      forward_seq f;
      f.past = step == 0 ? 0 : static_cast<std::uint32_t>(seq[i].size() - 1);
      f.n_new = step == 0 ? prompt_lengths[i] : 1;
      f.tokens = seq[i].data() + f.past;
      f.blocks = blocks[i].data();
      f.num_blocks = blocks_per_seq;
      f.sample = true;
      b.seqs.push_back(f);
    }
    fwd(b, next, &logits);
    for (std::size_t i = 0; i < n; ++i) {
      t.tokens[i].push_back(next[i]);
      t.logits[i].emplace_back(logits.begin() + std::ptrdiff_t(i * c.vocab),
                               logits.begin() + std::ptrdiff_t((i + 1) * c.vocab));
      seq[i].push_back(next[i]);
    }
  }
  return t;
}

/// The outcome of comparing a run with a reference run.
struct comparison {
  double max_rel_l2 = 0;
  std::size_t steps_compared = 0, near_ties = 0, token_mismatches = 0;
  std::string report;
};

inline comparison compare(const trace& got, const trace& ref, double tol, const model_config& c) {
  comparison r;
  for (std::size_t i = 0; i < ref.tokens.size(); ++i) {
    for (std::size_t k = 0; k < ref.tokens[i].size(); ++k) {
      const auto& want = ref.logits[i][k];
      const double e = relative_l2(got.logits[i][k].data(), want.data(), c.vocab);
      r.max_rel_l2 = std::max(r.max_rel_l2, e);
      ++r.steps_compared;
      if (got.tokens[i][k] == ref.tokens[i][k]) continue;
      // Top-1 / top-2 margin of the reference.
      float top1 = -INFINITY, top2 = -INFINITY;
      double norm = 0;
      for (float v : want) {
        norm += double(v) * v;
        if (v > top1) {
          top2 = top1;
          top1 = v;
        } else if (v > top2) {
          top2 = v;
        }
      }
      const bool tie = double(top1 - top2) <= std::sqrt(2.0) * tol * std::sqrt(norm);
      (tie ? r.near_ties : r.token_mismatches) += 1;
      char buf[160];
      std::snprintf(buf, sizeof buf, "prompt %zu step %zu: token %d vs %d, margin %.4g (%s)\n", i,
                    k, got.tokens[i][k], ref.tokens[i][k], double(top1 - top2),
                    tie ? "near tie" : "MISMATCH");
      r.report += buf;
      break;  // the sequences diverge from here
    }
  }
  return r;
}

}  // namespace batching::compute::cross_check

#endif  // TOKCHRON_EXAMPLES_BATCHING_EXECUTOR_TESTS_CROSS_CHECK_HPP
