// SPDX-License-Identifier: MIT
// The cuda half of the cpu <-> cuda cross-check (tests/cross_check.hpp): same seed, same
// (fp16-exact) weights, same prompts; the GPU's greedy tokens must equal the cpu backend's and its
// logits must agree within the fp16 tolerance, against both the fp32 cpu run and the CPU's
// emulation of the GPU's rounding. Exits 77 (ctest: skipped) when no GPU is present.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "cross_check.hpp"
#include "cuda/cuda_backend.hpp"

using namespace batching::compute;

namespace {

cross_check::trace cpu_run(const model_weights& w, bool fp16) {
  paged_kv_cache kv(w.cfg, cross_check::num_blocks, cross_check::block_size);
  cpu_forward_options opt;
  opt.fp16_activations = fp16;
  cpu_model m(w, kv, opt);
  return cross_check::run([&](const forward_batch& b, std::vector<std::int32_t>& next,
                              std::vector<float>* logits) { m.forward(b, next, logits); },
                          w.cfg);
}

void report(const char* what, const cross_check::comparison& c, double tol) {
  std::printf(
      "cross-check cuda half: %s: max rel L2 %.3g (tolerance %.3g), %zu steps, %zu near "
      "ties, %zu mismatches\n%s",
      what, c.max_rel_l2, tol, c.steps_compared, c.near_ties, c.token_mismatches, c.report.c_str());
}

}  // namespace

TEST_CASE("cross-check, cuda half: the GPU's tokens and logits match the cpu backend's") {
  const model_config c = cross_check::config();
  const auto w = model_weights::random(c);
  cuda_model gpu(w);
  gpu.reserve_kv(cross_check::num_blocks, cross_check::block_size);
  std::printf("device: %s\n", gpu.device_name().c_str());
  const auto got =
      cross_check::run([&](const forward_batch& b, std::vector<std::int32_t>& next,
                           std::vector<float>* logits) { gpu.forward(b, next, logits); },
                       c);
  const double tol = cross_check::fp16_tolerance(c);
  const auto vs_fp32 = cross_check::compare(got, cpu_run(w, false), tol, c);
  const auto vs_emul = cross_check::compare(got, cpu_run(w, true), tol, c);
  report("cuda vs cpu fp32", vs_fp32, tol);
  report("cuda vs cpu fp16-emulated", vs_emul, tol);
  for (const auto* r : {&vs_fp32, &vs_emul}) {
    CHECK(r->max_rel_l2 <= tol);
    CHECK(r->token_mismatches == 0);
    CHECK(r->near_ties == 0);
    CHECK(r->steps_compared ==
          std::size(cross_check::prompt_lengths) * (cross_check::decode_steps + 1));
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
