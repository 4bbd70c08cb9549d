// SPDX-License-Identifier: MIT
// The cpu half of the cpu <-> cuda cross-check (tests/cross_check.hpp): runs everywhere. The
// fp32 cpu run is the reference the cuda half compares with; here the CPU's emulation of the
// GPU's fp16 storage must stay within the derived tolerance and produce the same greedy tokens.
#include <doctest/doctest.h>

#include <cstdio>

#include "cross_check.hpp"

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

}  // namespace

TEST_CASE("cross-check, cpu half: fp16 emulation within the fp16 tolerance, same greedy tokens") {
  const model_config c = cross_check::config();
  const auto w = model_weights::random(c);
  const auto ref = cpu_run(w, false);
  const auto again = cpu_run(w, false);
  CHECK(again.tokens == ref.tokens);  // deterministic, bit for bit
  CHECK(again.logits == ref.logits);

  const auto half = cpu_run(w, true);
  const double tol = cross_check::fp16_tolerance(c);
  const auto cmp = cross_check::compare(half, ref, tol, c);
  std::printf(
      "cross-check cpu half: fp16-emulated vs fp32 logits: max rel L2 %.3g (tolerance %.3g)"
      ", %zu steps, %zu near ties, %zu mismatches\n%s",
      cmp.max_rel_l2, tol, cmp.steps_compared, cmp.near_ties, cmp.token_mismatches,
      cmp.report.c_str());
  CHECK(cmp.steps_compared ==
        std::size(cross_check::prompt_lengths) * (cross_check::decode_steps + 1));
  CHECK(cmp.max_rel_l2 <= tol);
  CHECK(cmp.token_mismatches == 0);
  CHECK(cmp.near_ties == 0);  // these prompts have no near tie: every token is compared
  // The emulation really rounds: its error is of the order of one fp16 rounding, not 0.
  CHECK(cmp.max_rel_l2 > fp16_unit_roundoff / 10);
}
