// SPDX-License-Identifier: MIT
// The cuda half of the cpu <-> cuda cross-check (tests/cross_check.hpp): same seed, same
// (fp16-exact) weights, same prompts, compared with both the fp32 cpu run and the CPU's emulation
// of the GPU's rounding. Exits 77 (ctest: skipped) when no GPU is present.
//
// What is asserted, and why (the argument is at the top of cross_check.hpp):
// - logits within the fp16 tolerance at every compared step, and no NaN or infinity anywhere;
// - the GPU's token equals the CPU's wherever the CPU's top-1 / top-2 gap exceeds the margin
//   sqrt(2) tol ||logits|| that a relative error of tol can close (`token_mismatches == 0`);
//   inside the margin either token is acceptable: near ties are printed, not asserted. These
//   prompts do have a gap inside the margin (min_gap ~1e-4 of the norm against 1.1e-2), and a
//   change of summation order (cuBLAS picks its own per GPU and version) moves such a gap by a
//   good fraction of its size, so "no near tie flips" would be a property of one GPU and one
//   library version, not of a correct backend;
// - two runs: free-running (the GPU feeds its own tokens, what the backend does in service; a
//   near tie ends that prompt's comparison, since the inputs differ from there) and
//   teacher-forced (fed the fp32 run's tokens, so every one of the 68 steps is compared
//   whatever the near ties).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>

#include "cross_check.hpp"
#include "cuda/cuda_backend.hpp"

using namespace batching::compute;

namespace {

void report(const char* what, const cross_check::comparison& c, double tol) {
  std::printf(
      "cross-check cuda half: %s: max rel L2 %.3g (tolerance %.3g), %zu steps, %zu near "
      "ties (informational), %zu mismatches, %zu steps with non-finite logits, smallest "
      "top-1/top-2 gap %.3g of the norm (margin %.3g)\n%s",
      what, c.max_rel_l2, tol, c.steps_compared, c.near_ties, c.token_mismatches, c.non_finite,
      c.min_gap, std::sqrt(2.0) * tol, c.report.c_str());
}

}  // namespace

TEST_CASE("cross-check, cuda half: the GPU's tokens and logits match the cpu backend's") {
  const model_config c = cross_check::config();
  const auto w = model_weights::random(c);
  cuda_model gpu(w);
  gpu.reserve_kv(cross_check::num_blocks, cross_check::block_size);
  std::printf("device: %s\n", gpu.device_name().c_str());
  const cross_check::forward_fn on_gpu =
      [&](const forward_batch& b, std::vector<std::int32_t>& next, std::vector<float>* logits) {
        gpu.forward(b, next, logits);
      };
  const auto fp32 = cross_check::cpu_run(w, false), emul = cross_check::cpu_run(w, true);
  // The CPU's two runs pick the same tokens (the cpu half asserts it), so forcing the GPU with
  // the fp32 run's tokens gives it the inputs of both.
  REQUIRE(emul.tokens == fp32.tokens);
  // Free-running first: the KV cache's positions are rewritten by the forced run (same blocks).
  const auto free_run = cross_check::run(on_gpu, c);
  const auto forced = cross_check::run(on_gpu, c, &fp32);
  const double tol = cross_check::fp16_tolerance(c);
  const std::size_t all = std::size(cross_check::prompt_lengths) * (cross_check::decode_steps + 1);
  struct named {
    const char* what;
    cross_check::comparison cmp;
    bool forced;
  };
  const named runs[] = {
      {"free-running vs cpu fp32", cross_check::compare(free_run, fp32, tol, c), false},
      {"free-running vs cpu fp16-emulated", cross_check::compare(free_run, emul, tol, c), false},
      {"teacher-forced vs cpu fp32", cross_check::compare(forced, fp32, tol, c), true},
      {"teacher-forced vs cpu fp16-emulated", cross_check::compare(forced, emul, tol, c), true}};
  for (const named& r : runs) {
    report(r.what, r.cmp, tol);
    CAPTURE(r.what);
    CHECK(r.cmp.non_finite == 0);
    CHECK(r.cmp.max_rel_l2 <= tol);
    CHECK(r.cmp.token_mismatches == 0);
    if (r.forced) {
      CHECK(r.cmp.steps_compared == all);
    } else {
      // Each prompt's prefill step at least; a near tie ends a prompt early (printed above).
      CHECK(r.cmp.steps_compared >= std::size(cross_check::prompt_lengths));
      CHECK(r.cmp.steps_compared <= all);
    }
  }
}

int main(int argc, char** argv) {
  if (auto why = batching::cuda_unavailable_reason()) {
    std::printf("cross_check_cuda: SKIPPED: %s (the cpu half, cross_check_cpu_test, still ran)\n",
                why->c_str());
    return batching::exit_no_gpu;
  }
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
