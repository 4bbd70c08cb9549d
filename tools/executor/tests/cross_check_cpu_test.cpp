// SPDX-License-Identifier: MIT
// The cpu half of the cpu <-> cuda cross-check (tests/cross_check.hpp): runs everywhere. The
// fp32 cpu run is the reference the cuda half compares with; here the CPU's emulation of the
// GPU's fp16 storage must stay within the derived tolerance and produce the same greedy tokens.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "cross_check.hpp"

using namespace batching::compute;

TEST_CASE("cross-check, cpu half: fp16 emulation within the fp16 tolerance, same greedy tokens") {
  const model_config c = cross_check::config();
  const auto w = model_weights::random(c);
  const auto ref = cross_check::cpu_run(w, false);
  const auto again = cross_check::cpu_run(w, false);
  CHECK(again.tokens == ref.tokens);  // deterministic, bit for bit
  CHECK(again.logits == ref.logits);

  const auto half = cross_check::cpu_run(w, true);
  const double tol = cross_check::fp16_tolerance(c);
  const auto cmp = cross_check::compare(half, ref, tol, c);
  std::printf(
      "cross-check cpu half: fp16-emulated vs fp32 logits: max rel L2 %.3g (tolerance %.3g)"
      ", %zu steps, %zu near ties, %zu mismatches, smallest top-1/top-2 gap %.3g of the "
      "logits' norm (near-tie margin %.3g)\n%s",
      cmp.max_rel_l2, tol, cmp.steps_compared, cmp.near_ties, cmp.token_mismatches, cmp.min_gap,
      std::sqrt(2.0) * tol, cmp.report.c_str());
  CHECK(cmp.steps_compared ==
        std::size(cross_check::prompt_lengths) * (cross_check::decode_steps + 1));
  CHECK(cmp.max_rel_l2 <= tol);
  CHECK(cmp.token_mismatches == 0);
  CHECK(cmp.non_finite == 0);
  // Both runs are on this CPU: they pick the same tokens even at the closest gap, which is
  // inside the near-tie margin (min_gap above), so every step is compared.
  CHECK(cmp.near_ties == 0);
  // The emulation really rounds: its error is of the order of one fp16 rounding, not 0.
  CHECK(cmp.max_rel_l2 > fp16_unit_roundoff / 10);
}

TEST_CASE("cross-check: a NaN or an infinity in either run's logits fails the comparison") {
  const model_config c = cross_check::config();
  const auto w = model_weights::random(c);
  const auto ref = cross_check::cpu_run(w, false);
  const double tol = cross_check::fp16_tolerance(c);
  const auto same = cross_check::compare(ref, ref, tol, c);
  REQUIRE(same.max_rel_l2 == 0);
  REQUIRE(same.non_finite == 0);
  REQUIRE(same.token_mismatches == 0);
  // Poison one logit that is not the sampled token's, so the greedy tokens are unchanged and only
  // the logits can tell (a NaN never wins the argmax). Step 3 of prompt 1, and the last step of
  // prompt 0, which a free-running comparison reaches too.
  for (const auto& where :
       {std::pair<std::size_t, std::size_t>{1, 3}, {0, cross_check::decode_steps}}) {
    const std::size_t prompt = where.first, step = where.second;
    const std::int32_t token = ref.tokens[prompt][step];
    const std::size_t at = token == 5 ? 6 : 5;
    for (const float bad : {std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY}) {
      for (const bool in_reference : {false, true}) {
        CAPTURE(prompt);
        CAPTURE(bad);
        CAPTURE(in_reference);
        auto run = ref, want = ref;
        (in_reference ? want : run).logits[prompt][step][at] = bad;
        const auto cmp = cross_check::compare(run, want, tol, c);
        // std::max(0.0, NaN) is 0.0: an error maximum over steps drops a NaN step's error.
        CHECK_FALSE(cmp.max_rel_l2 <= tol);
        CHECK(cmp.non_finite == 1);
        CHECK(cmp.report.find("non-finite") != std::string::npos);
      }
    }
  }
}

TEST_CASE("cross-check: tokens agree outside the near-tie margin, either is fine inside it") {
  const model_config c = cross_check::config();
  const auto w = model_weights::random(c);
  const auto ref = cross_check::cpu_run(w, false);
  const double tol = cross_check::fp16_tolerance(c);
  const std::size_t prompt = 2, step = 5;
  const auto& logits = ref.logits[prompt][step];
  const std::int32_t top = ref.tokens[prompt][step];
  double norm = 0;
  for (float v : logits) norm += double(v) * v;
  const double margin = std::sqrt(2.0) * tol * std::sqrt(norm);
  // The run's token changed at one step, its logits unchanged (within any tolerance): a token far
  // behind the top is a mismatch; one within the margin is a near tie.
  std::int32_t far = -1;
  for (std::size_t v = 0; v < logits.size(); ++v) {
    if (std::int32_t(v) == top) continue;
    const double behind = double(logits[std::size_t(top)]) - logits[v];
    if (behind > 2 * margin && far < 0) far = std::int32_t(v);
  }
  REQUIRE(far >= 0);
  auto run = ref;
  run.tokens[prompt][step] = far;
  auto cmp = cross_check::compare(run, ref, tol, c);
  CHECK(cmp.token_mismatches == 1);
  CHECK(cmp.near_ties == 0);
  // Make a near tie: raise another token of the reference to just below the top (inside the
  // margin) and let the run pick it.
  auto want = ref;
  const std::int32_t close = far;
  want.logits[prompt][step][std::size_t(close)] =
      static_cast<float>(logits[std::size_t(top)] - margin / 4);
  run.logits = want.logits;
  run.tokens[prompt][step] = close;
  cmp = cross_check::compare(run, want, tol, c);
  CHECK(cmp.token_mismatches == 0);
  CHECK(cmp.near_ties == 1);
  // Free-running, the prompt's comparison ends after the differing token's step (its inputs
  // differ from there); teacher-forced, the inputs stay the reference's and every step counts.
  const std::size_t all = std::size(cross_check::prompt_lengths) * (cross_check::decode_steps + 1);
  CHECK(cmp.steps_compared == all);  // `run` still records the reference's inputs
  run.inputs[prompt][step] = close;
  cmp = cross_check::compare(run, want, tol, c);
  CHECK(cmp.steps_compared == all - (cross_check::decode_steps - step));
  // A token outside the vocabulary is a mismatch, never a near tie.
  run = ref;
  run.tokens[prompt][step] = std::int32_t(c.vocab);
  CHECK(cross_check::compare(run, ref, tol, c).token_mismatches == 1);
  // A step missing from the run is a mismatch.
  run = ref;
  run.logits[prompt].pop_back();
  CHECK(cross_check::compare(run, ref, tol, c).token_mismatches == 1);
  // So is one missing from the reference, or logits of the wrong length.
  CHECK(cross_check::compare(ref, run, tol, c).token_mismatches == 1);
  run = ref;
  run.logits[prompt][step].pop_back();
  CHECK(cross_check::compare(run, ref, tol, c).token_mismatches == 1);
}

TEST_CASE("cross-check: a teacher-forced run is fed the teacher's tokens") {
  const model_config c = cross_check::config();
  const auto w = model_weights::random(c);
  const auto ref = cross_check::cpu_run(w, false);
  paged_kv_cache kv(w.cfg, cross_check::num_blocks, cross_check::block_size);
  cpu_model m(w, kv);
  // A teacher whose tokens are shifted by one: the forced run's inputs are the teacher's, and
  // its logits differ from the free run's from step 1 on.
  auto teacher = ref;
  for (auto& t : teacher.tokens)
    for (auto& x : t) x = (x + 1) % std::int32_t(c.vocab);
  const auto forced =
      cross_check::run([&](const forward_batch& b, std::vector<std::int32_t>& next,
                           std::vector<float>* logits) { m.forward(b, next, logits); },
                       c, &teacher);
  for (std::size_t i = 0; i < forced.inputs.size(); ++i) {
    REQUIRE(forced.inputs[i].size() == cross_check::decode_steps);
    for (std::size_t k = 0; k < cross_check::decode_steps; ++k)
      CHECK(forced.inputs[i][k] == teacher.tokens[i][k]);
    CHECK(forced.logits[i][0] == ref.logits[i][0]);  // the prefill step has no fed token
    CHECK(forced.logits[i][1] != ref.logits[i][1]);
  }
  // Against the free run, only the prefill steps are comparable.
  const auto cmp = cross_check::compare(forced, ref, cross_check::fp16_tolerance(c), c);
  CHECK(cmp.steps_compared == std::size(cross_check::prompt_lengths));
  auto short_teacher = ref;
  short_teacher.tokens.pop_back();
  CHECK_THROWS_AS(cross_check::run(
                      [&](const forward_batch&, std::vector<std::int32_t>&, std::vector<float>*) {},
                      c, &short_teacher),
                  std::invalid_argument);
  // A forward step that returns nothing is reported, not read out of bounds.
  CHECK_THROWS_AS(
      cross_check::run(
          [&](const forward_batch&, std::vector<std::int32_t>&, std::vector<float>*) {}, c),
      std::runtime_error);
}
