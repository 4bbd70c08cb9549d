// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_TESTS_CROSS_CHECK_HPP
#define TOKCHRON_TOOLS_EXECUTOR_TESTS_CROSS_CHECK_HPP

// The cpu <-> cuda cross-check, shared by its two halves: tests/cross_check_cpu_test.cpp (always
// runs: fp32 against the CPU's emulation of the GPU's fp16 rounding) and tests/cross_check_cuda.cpp
// (the GPU against the CPU, when a GPU is present).
//
// Protocol: the fixed prompts below are prefilled in one batch, then decoded greedily for
// `decode_steps` batched steps, each model feeding its own sampled tokens (or, teacher-forced,
// the reference's; below). Every sampled step's logits are kept.
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
//
// Tokens, from the same bound. Let r be the reference's logits at a step, g the run's, e = g - r,
// and suppose ||e|| <= tol ||r||. For any two tokens a, b: |(g_a - g_b) - (r_a - r_b)| =
// |e_a - e_b| <= sqrt(2) sqrt(e_a^2 + e_b^2) <= sqrt(2) ||e|| <= sqrt(2) tol ||r||. So if the
// run picks b where the reference picked a, then r_a - r_b <= sqrt(2) tol ||r||: only a token
// whose reference logit is within that margin of the reference's top one can be picked, and
// where the top-1 / top-2 gap exceeds the margin the tokens must agree. A differing token inside
// the margin is a near tie: either token is acceptable (counted, reported, not an error); one
// outside it is a mismatch (an error: the argmax, or what the logits were computed from, is
// wrong). A near tie is not hypothetical: the closest top-1 / top-2 gap over these prompts is
// about 1e-4 of the logits' norm (`min_gap`, printed by both halves), some 100x inside the
// margin sqrt(2) tol = 1.1e-2, so a GPU may legitimately flip that token.
//
// Free-running vs teacher-forced. After a differing token the two runs feed different inputs
// and nothing later is comparable: `compare` stops a prompt at the first step whose inputs
// differ. A run given `teacher` (normally the reference) feeds the teacher's tokens instead of
// its own, so every step stays comparable whatever the near ties: the GPU half runs both.
//
// Non-finite values. Any NaN or infinity among either run's logits, compared step or not, fails
// the comparison (`non_finite`, and `max_rel_l2` becomes +inf): an error measure taken with
// std::max would drop a NaN (std::max(0.0, NaN) is 0.0), and an argmax that skips NaN can still
// pick the right token from partly NaN logits.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/forward.hpp"
#include "model/half.hpp"
#include "model/model.hpp"

namespace batching::compute::cross_check {

/// A two-layer test model of 4 heads: width `hidden`, MLP width `ffn`, `vocab` tokens, weights
/// drawn from `seed`.
inline model_config small_model(std::uint32_t hidden, std::uint32_t ffn, std::uint32_t vocab,
                                std::uint64_t seed) {
  model_config c;
  c.layers = 2;
  c.heads = 4;
  c.hidden = hidden;
  c.ffn = ffn;
  c.vocab = vocab;
  c.seed = seed;
  return c;
}
/// The cross-check model: 2 layers, d 256, 4 heads of 64, ffn 512, vocab 1024, seed 2024.
inline model_config config() { return small_model(256, 512, 1024, 2024); }
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

/// What a run produced: per prompt, the sampled tokens, each sampled step's logits, and the
/// tokens fed to decode steps 1.. (its own sampled tokens, or a teacher's).
struct trace {
  std::vector<std::vector<std::int32_t>> tokens;
  std::vector<std::vector<std::vector<float>>> logits;
  std::vector<std::vector<std::int32_t>> inputs;
};

/// Runs the protocol. With `teacher` (a trace of this protocol), decode step k + 1 is fed
/// `teacher->tokens[i][k]` instead of the run's own token. Throws `std::invalid_argument` when
/// `teacher` has another shape, `std::runtime_error` when `fwd` returns too few tokens or logits.
inline trace run(const forward_fn& fwd, const model_config& c, const trace* teacher = nullptr) {
  const std::size_t n = std::size(prompt_lengths);
  if (teacher) {
    bool ok = teacher->tokens.size() == n;
    for (std::size_t i = 0; ok && i < n; ++i) ok = teacher->tokens[i].size() > decode_steps - 1;
    if (!ok) throw std::invalid_argument("cross-check: the teacher trace has another shape");
  }
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
  t.inputs.resize(n);
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
    if (next.size() != n || logits.size() != n * std::size_t(c.vocab))
      throw std::runtime_error("cross-check: the forward step returned " +
                               std::to_string(next.size()) + " tokens and " +
                               std::to_string(logits.size()) + " logits, expected " +
                               std::to_string(n) + " and " + std::to_string(n * c.vocab));
    for (std::size_t i = 0; i < n; ++i) {
      t.tokens[i].push_back(next[i]);
      t.logits[i].emplace_back(logits.begin() + std::ptrdiff_t(i * c.vocab),
                               logits.begin() + std::ptrdiff_t((i + 1) * c.vocab));
      if (step == decode_steps) continue;  // the last token is not fed
      const std::int32_t in = teacher ? teacher->tokens[i][step] : next[i];
      t.inputs[i].push_back(in);
      seq[i].push_back(in);
    }
  }
  return t;
}

/// Runs the protocol on the CPU model with weights `w`: in fp32, or with `fp16` the CPU's
/// emulation of the GPU's fp16 storage. Both halves take their reference from it.
inline trace cpu_run(const model_weights& w, bool fp16) {
  paged_kv_cache kv(w.cfg, num_blocks, block_size);
  cpu_forward_options opt;
  opt.fp16_activations = fp16;
  cpu_model m(w, kv, opt);
  return run([&](const forward_batch& b, std::vector<std::int32_t>& next,
                 std::vector<float>* logits) { m.forward(b, next, logits); },
             w.cfg);
}

/// The outcome of comparing a run with a reference run.
struct comparison {
  double max_rel_l2 = 0;  ///< over compared steps; +inf when `non_finite` > 0
  std::size_t steps_compared = 0, near_ties = 0, token_mismatches = 0;
  std::size_t non_finite = 0;  ///< steps of either trace holding a NaN or an infinity
  /// The reference's smallest top-1 / top-2 gap over the compared steps, over its logits' norm.
  double min_gap = INFINITY;
  std::string report;
};

/// Compares `got` with the reference `ref` (the argument at the top of this file): every step
/// up to the first whose inputs differ; a step that either trace lacks, or whose logits have the
/// wrong length, is a mismatch.
inline comparison compare(const trace& got, const trace& ref, double tol, const model_config& c) {
  comparison r;
  char buf[200];
  auto note = [&](const char* line) { r.report += line; };
  // Non-finite logits anywhere, compared or not.
  for (const trace* t : {&got, &ref})
    for (std::size_t i = 0; i < t->logits.size(); ++i)
      for (std::size_t k = 0; k < t->logits[i].size(); ++k) {
        std::size_t bad = 0;
        for (float v : t->logits[i][k]) bad += std::isfinite(v) ? 0 : 1;
        if (bad == 0) continue;
        ++r.non_finite;
        r.max_rel_l2 = INFINITY;
        std::snprintf(buf, sizeof buf, "prompt %zu step %zu: %zu non-finite logits in the %s\n", i,
                      k, bad, t == &got ? "run" : "reference");
        note(buf);
      }
  for (std::size_t i = 0; i < ref.tokens.size(); ++i) {
    for (std::size_t k = 0; k < ref.tokens[i].size(); ++k) {
      if (k > 0 && i < got.inputs.size() && i < ref.inputs.size() && k - 1 < got.inputs[i].size() &&
          k - 1 < ref.inputs[i].size() && got.inputs[i][k - 1] != ref.inputs[i][k - 1])
        break;  // the runs were fed different tokens: nothing further is comparable
      if (i >= ref.logits.size() || k >= ref.logits[i].size() ||
          ref.logits[i][k].size() != c.vocab || i >= got.tokens.size() ||
          k >= got.tokens[i].size() || i >= got.logits.size() || k >= got.logits[i].size() ||
          got.logits[i][k].size() != c.vocab) {
        ++r.token_mismatches;
        std::snprintf(buf, sizeof buf, "prompt %zu step %zu: MISSING from a run\n", i, k);
        note(buf);
        break;
      }
      const auto& want = ref.logits[i][k];
      const double e = relative_l2(got.logits[i][k].data(), want.data(), c.vocab);
      ++r.steps_compared;
      if (!std::isfinite(e)) {
        r.max_rel_l2 = INFINITY;
        continue;  // counted in non_finite above (a finite pair has a finite error)
      }
      r.max_rel_l2 = std::max(r.max_rel_l2, e);
      float top = -INFINITY, second = -INFINITY;
      double norm = 0;
      for (float v : want) {
        norm += double(v) * v;
        if (v > top) {
          second = top;
          top = v;
        } else if (v > second) {
          second = v;
        }
      }
      if (norm > 0) r.min_gap = std::min(r.min_gap, (double(top) - second) / std::sqrt(norm));
      const std::int32_t g = got.tokens[i][k], w = ref.tokens[i][k];
      if (g == w) continue;
      // Where the run's token stands among the reference's logits.
      const double bound = std::sqrt(2.0) * tol * std::sqrt(norm);
      const bool in_range = g >= 0 && std::uint32_t(g) < c.vocab;
      const double behind = in_range ? double(top) - double(want[std::size_t(g)]) : INFINITY;
      const bool tie = behind <= bound;
      (tie ? r.near_ties : r.token_mismatches) += 1;
      std::snprintf(buf, sizeof buf,
                    "prompt %zu step %zu: token %d vs %d, %.4g behind the top logit, margin "
                    "%.4g (%s)\n",
                    i, k, g, w, behind, bound, tie ? "near tie: either is acceptable" : "MISMATCH");
      note(buf);
    }
  }
  return r;
}

}  // namespace batching::compute::cross_check

#endif  // TOKCHRON_TOOLS_EXECUTOR_TESTS_CROSS_CHECK_HPP
