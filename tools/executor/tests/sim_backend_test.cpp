// SPDX-License-Identifier: MIT
// The roofline formula against hand-computed steps, the presets' KV capacity, and jitter.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

#include "sim_backend.hpp"

using namespace batching;

namespace {
sequence_work decode(std::uint32_t past) {
  sequence_work w;
  w.past_tokens = past;
  w.decode = true;
  w.samples = true;
  return w;
}
sequence_work prefill(std::uint32_t past, std::uint32_t chunk, bool last = true) {
  sequence_work w;
  w.past_tokens = past;
  w.prefill_tokens = chunk;
  w.samples = last;
  return w;
}
// a10g + llama2-7b with the constants the hand-computed values below assume (the defaults
// before the published-point fit of docs/tools/executor.md), stated here so the defaults may move.
sim_config exact() {
  sim_config c;
  c.eta_bw = 0.8;
  c.eta_compute = 0.55;
  c.t_fixed_s = 0.002;
  c.t_seq_s = 0;
  c.t_request_s = 0;
  c.jitter = 0;
  return c;
}
}  // namespace

// Expected values computed by hand (python, independently of this code) from executor.md's
// formula with A10G 600 GB/s, 125 TF, eta 0.8 / 0.55, t_fixed 2 ms, Llama-2-7B P = 6.74e9,
// W = 13.48e9 B, kvB = 524288 B, L = 32, d = 4096.
TEST_CASE("sim: decode batch of 8 at context 450 is memory bound, 34.02 ms") {
  sim_backend be(exact());
  batch b;
  for (int i = 0; i < 8; ++i) b.seqs.push_back(decode(450));
  const step_cost k = be.cost(b);
  CHECK(k.bytes == doctest::Approx(15371631104.0).epsilon(1e-12));
  CHECK(k.flops == doctest::Approx(109731631104.0).epsilon(1e-12));
  CHECK(k.memory_s == doctest::Approx(0.032024231466666664).epsilon(1e-12));
  CHECK(k.compute_s == doctest::Approx(0.001596096452421818).epsilon(1e-12));
  CHECK_FALSE(k.compute_bound());
  CHECK(k.seconds == doctest::Approx(0.034024231466666666).epsilon(1e-12));
  const step_result r = be.step(b);
  CHECK(r.elapsed == std::chrono::nanoseconds(34024231));  // no jitter: the model, to the ns
  REQUIRE(r.outputs.size() == 8);
  for (const auto& o : r.outputs) CHECK(o.tokens == 1);
}

TEST_CASE("sim: a 300-token prefill is compute bound, 61.16 ms") {
  sim_backend be(exact());
  batch b;
  b.seqs.push_back(prefill(0, 300));
  const step_cost k = be.cost(b);
  CHECK(k.bytes == doctest::Approx(13637286400.0).epsilon(1e-12));
  CHECK(k.flops == doctest::Approx(4067592960000.0).epsilon(1e-12));
  CHECK(k.compute_bound());
  CHECK(k.seconds == doctest::Approx(0.061164988509090905).epsilon(1e-12));
  CHECK(be.predict_prefill(300) == std::chrono::nanoseconds(61164989));
}

TEST_CASE("sim: a mixed step (chunk 200 after 100, one decode at 50)") {
  sim_backend be(exact());
  batch b;
  b.seqs.push_back(prefill(100, 200, false));
  b.seqs.push_back(decode(50));
  const step_cost k = be.cost(b);
  CHECK(k.bytes == doctest::Approx(13664025088.0).epsilon(1e-12));
  CHECK(k.flops == doctest::Approx(2730478258688.0).epsilon(1e-12));
  CHECK(k.seconds == doctest::Approx(0.04171604739909818).epsilon(1e-12));
  const step_result r = be.step(b);
  CHECK(r.outputs[0].tokens == 0);  // a partial prefill samples nothing
  CHECK(r.outputs[1].tokens == 1);
}

TEST_CASE("sim: KV capacity from memory; about 30 sequences of 450 tokens on an A10G") {
  sim_backend be(exact());
  // (24e9 * 0.9 - 13.48e9 - 2^30) / 2^19 = 13439.67 tokens -> 839 blocks of 16
  CHECK(be.kv_blocks(16) == 839);
  CHECK(be.kv_blocks(16) * 16 / 450 == 29);
  sim_config c = exact();
  c.model = model_preset("llama3-8b");  // GQA: a quarter of the KV bytes per token
  CHECK(sim_backend(c).kv_blocks(16) ==
        static_cast<std::uint32_t>((24e9 * 0.9 - 16.06e9 - 1073741824.0) / 131072.0 / 16));
  c.hw = hardware_preset("h200");
  CHECK(sim_backend(c).kv_blocks(16) > 50000);
}

TEST_CASE("sim: every constant can be overridden; bad ones are rejected") {
  sim_config c = exact();
  c.set("bandwidth", 1.2e12);
  c.set("t_fixed", 0.0);
  sim_backend be(c);
  batch b;
  b.seqs.push_back(decode(0));
  // bytes = W + kvB, all memory bound: (13.48e9 + 524288) / (0.8 * 1.2e12)
  CHECK(be.cost(b).seconds == doctest::Approx((13.48e9 + 524288.0) / 0.96e12).epsilon(1e-12));
  CHECK_THROWS_AS(c.set("bandwith", 1), std::invalid_argument);
  sim_config m = exact();
  m.set("memory", 10e9);  // the weights alone do not fit
  CHECK_THROWS_AS(sim_backend{m}, std::invalid_argument);
  CHECK_THROWS_AS((void)hardware_preset("v100"), std::invalid_argument);
  CHECK_THROWS_AS((void)model_preset("gpt-5"), std::invalid_argument);
  sim_config e = exact();
  e.eta_bw = 0;
  CHECK_THROWS_AS(sim_backend{e}, std::invalid_argument);
}

TEST_CASE("sim: jitter is seeded, bounded and centred") {
  sim_config c = exact();
  c.jitter = 0.05;
  batch b;
  for (int i = 0; i < 16; ++i) b.seqs.push_back(decode(300));
  sim_backend a(c), a2(c);
  c.seed = 2;
  sim_backend other(c);
  const double model = sim_backend(exact()).cost(b).seconds - 0.002;
  double sum = 0;
  bool differs = false;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    const auto x = a.step(b).elapsed;
    CHECK(x == a2.step(b).elapsed);  // same seed, same sequence
    differs |= x != other.step(b).elapsed;
    const double f = (tokchron::to_seconds(x) - 0.002) / model - 1;
    CHECK(std::abs(f) <= 3 * 0.05 + 1e-6);  // clipped at 3 sd
    sum += f;
  }
  CHECK(differs);
  // mean of n draws of sd 0.05: |mean| < 5 standard errors
  CHECK(std::abs(sum / n) < 5 * 0.05 / std::sqrt(double(n)));
}
