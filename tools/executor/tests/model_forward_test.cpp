// SPDX-License-Identifier: MIT
// The model and its CPU forward pass: fp16 conversion, seeded weights, the batched OpenBLAS
// path against the naive reference, paged against contiguous KV, prefill-then-decode against
// full recompute, mixed batches against sequences run alone.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "cross_check.hpp"
#include "loadgen/random.hpp"
#include "model/forward.hpp"
#include "model/half.hpp"
#include "model/model.hpp"

using namespace batching::compute;

namespace {

// fp32 against the double reference. fp32's unit roundoff is u = 2^-24; a length-K dot product
// has a probabilistic error ~ sqrt(K) u sum|x w| (Higham & Mary 2019), ~ K u relative to the
// result for random data: 128 * 6e-8 = 8e-6 for the widest product of the test model. About 14
// products lie on a token's path; adding in quadrature gives ~3e-5, plus exp and rsqrt at a few
// ulps: 1e-4 bounds it with margin.
constexpr double fp32_tol = 1e-4;

// The test model: 2 layers, d 64, 4 heads of 16, ffn 128, vocab 256, seed 7.
model_config tiny_model() { return cross_check::small_model(64, 128, 256, 7); }

std::vector<std::int32_t> prompt(std::uint64_t id, std::uint32_t n, const model_config& c) {
  std::vector<std::int32_t> t(n);
  for (std::uint32_t i = 0; i < n; ++i) t[i] = prompt_token(c.seed, id, i, c.vocab);
  return t;
}

// Block tables drawn without replacement from a shuffled pool, as the scheduler's would be
// after some churn.
struct block_source {
  std::vector<std::uint32_t> free;
  explicit block_source(std::uint32_t n, std::uint64_t seed, bool shuffle = true) {
    free.resize(n);
    std::iota(free.begin(), free.end(), 0u);
    if (shuffle) {
      tokchron_loadgen::rng r(seed);
      for (std::size_t i = n - 1; i > 0; --i) std::swap(free[i], free[r.below(i + 1)]);
    }
  }
  std::vector<std::uint32_t> take(std::uint32_t k) {
    std::vector<std::uint32_t> t(free.end() - k, free.end());
    free.resize(free.size() - k);
    return t;
  }
};

// One sequence driven through the batched model.
struct seq {
  std::vector<std::int32_t> tokens;  // what has been fed or is about to be
  std::vector<std::uint32_t> blocks;
  std::uint32_t past = 0;
};

forward_seq work(seq& s, std::uint32_t n_new, bool sample) {
  forward_seq f;
  f.tokens = s.tokens.data() + s.past;
  f.past = s.past;
  f.n_new = n_new;
  f.blocks = s.blocks.data();
  f.num_blocks = static_cast<std::uint32_t>(s.blocks.size());
  f.sample = sample;
  return f;
}

}  // namespace

TEST_CASE("fp16 conversion: exact round trip and round-to-nearest-even") {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    const float f = half_to_float(b);
    if (std::isnan(f)) {
      CHECK(std::isnan(half_to_float(float_to_half(f))));
      continue;
    }
    REQUIRE(float_to_half(f) == b);
  }
  CHECK(round_to_half(1.0f + 1.0f / 2048) == 1.0f);                // tie: to even (down)
  CHECK(round_to_half(1.0f + 3.0f / 2048) == 1.0f + 2.0f / 1024);  // tie: to even (up)
  CHECK(round_to_half(1.0f + 1.0f / 2048 + 1e-6f) == 1.0f + 1.0f / 1024);
  CHECK(round_to_half(65519.0f) == 65504.0f);
  CHECK(std::isinf(round_to_half(65520.0f)));
  CHECK(round_to_half(std::ldexp(1.0f, -24)) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(round_to_half(std::ldexp(1.0f, -25)) == 0.0f);                   // tie to even: 0
  CHECK(round_to_half(std::ldexp(1.5f, -25)) == std::ldexp(1.0f, -24));
  // The unit roundoff bound over a sweep of normal values.
  tokchron_loadgen::rng r(3);
  for (int i = 0; i < 10000; ++i) {
    const float x = static_cast<float>(r.uniform(-1000, 1000));
    if (std::fabs(x) < 1e-3f) continue;
    REQUIRE(std::fabs(round_to_half(x) - x) <= fp16_unit_roundoff * std::fabs(x));
  }
}

TEST_CASE("weights: seeded, reproducible, fp16-representable") {
  const model_config c = tiny_model();
  const auto a = model_weights::random(c), b = model_weights::random(c);
  CHECK(a.layers[1].w_up == b.layers[1].w_up);
  CHECK(a.lm_head == b.lm_head);
  model_config c2 = c;
  c2.seed = 8;
  CHECK(model_weights::random(c2).layers[1].w_up != a.layers[1].w_up);
  for (float x : a.layers[0].wqkv) REQUIRE(round_to_half(x) == x);
  for (float x : a.embedding) REQUIRE(round_to_half(x) == x);
  CHECK(c.params() == c.streamed_params() + 256u * 64u);
  CHECK(c.layer_params() == 2u * 64 + 4u * 64 * 64 + 2u * 64 * 128);
  model_config bad = c;
  bad.heads = 5;
  CHECK_THROWS_AS(bad.validate(), std::invalid_argument);
  CHECK_THROWS_AS(bad.set("layers", "x"), std::invalid_argument);
  CHECK_THROWS_AS(bad.set("colour", "1"), std::invalid_argument);
}

TEST_CASE("batched BLAS forward equals the naive reference: prefill then decode") {
  const model_config c = tiny_model();
  const auto w = model_weights::random(c);
  const std::uint32_t bs = 4;
  paged_kv_cache kv(c, 64, bs);
  cpu_model m(w, kv);
  block_source pool(64, 11);
  std::vector<seq> seqs(3);
  const std::uint32_t lens[] = {5, 17, 33};
  const std::uint32_t decode_steps = 6;
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    seqs[i].tokens = prompt(i + 1, lens[i], c);
    seqs[i].blocks = pool.take((lens[i] + decode_steps + bs - 1) / bs);
  }
  std::vector<std::int32_t> next;
  std::vector<float> logits;
  forward_batch b;
  b.block_size = bs;
  for (auto& s : seqs) b.seqs.push_back(work(s, static_cast<std::uint32_t>(s.tokens.size()), true));
  m.forward(b, next, &logits);
  for (std::uint32_t step = 0; step <= decode_steps; ++step) {
    REQUIRE(logits.size() == seqs.size() * c.vocab);
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      auto& s = seqs[i];
      const auto ref = reference_logits(w, s.tokens);
      const float* want = ref.data() + (s.tokens.size() - 1) * c.vocab;
      const float* got = logits.data() + i * c.vocab;
      CAPTURE(step);
      CAPTURE(i);
      CHECK(relative_l2(got, want, c.vocab) < fp32_tol);
      CHECK(next[i] == argmax(want, c.vocab));
      s.past = static_cast<std::uint32_t>(s.tokens.size());
      s.tokens.push_back(next[i]);
    }
    if (step == decode_steps) break;
    b.seqs.clear();
    for (auto& s : seqs) b.seqs.push_back(work(s, 1, true));
    m.forward(b, next, &logits);
  }
}

TEST_CASE("chunked prefill equals one-shot prefill and the reference at every chunk end") {
  const model_config c = tiny_model();
  const auto w = model_weights::random(c);
  paged_kv_cache kv(c, 32, 8);
  cpu_model m(w, kv);
  block_source pool(32, 5);
  seq s;
  s.tokens = prompt(42, 41, c);
  s.blocks = pool.take(6);
  const auto ref = reference_logits(w, s.tokens);
  std::vector<std::int32_t> next;
  std::vector<float> logits;
  for (std::uint32_t chunk : {8u, 1u, 13u, 19u}) {
    forward_batch b;
    b.block_size = 8;
    b.seqs.push_back(work(s, chunk, true));
    m.forward(b, next, &logits);
    s.past += chunk;
    CAPTURE(s.past);
    CHECK(relative_l2(logits.data(), ref.data() + (s.past - 1) * c.vocab, c.vocab) < fp32_tol);
  }
  CHECK(s.past == 41);
}

TEST_CASE("paged KV: any block placement and block size give bit-identical results") {
  const model_config c = tiny_model();
  const auto w = model_weights::random(c);
  auto run = [&](std::uint32_t bs, bool shuffle) {
    const std::uint32_t blocks = 128 / bs;
    paged_kv_cache kv(c, blocks, bs);
    cpu_model m(w, kv);
    block_source pool(blocks, 99, shuffle);
    seq s;
    s.tokens = prompt(3, 37, c);
    s.blocks = pool.take((37 + 4 + bs - 1) / bs);
    std::vector<std::int32_t> next;
    std::vector<float> all, logits;
    forward_batch b;
    b.block_size = bs;
    b.seqs.push_back(work(s, 37, true));
    m.forward(b, next, &logits);
    for (int k = 0; k < 4; ++k) {
      all.insert(all.end(), logits.begin(), logits.end());
      s.past = static_cast<std::uint32_t>(s.tokens.size());
      s.tokens.push_back(next[0]);
      b.seqs[0] = work(s, 1, true);
      m.forward(b, next, &logits);
    }
    all.insert(all.end(), logits.begin(), logits.end());
    return all;
  };
  const auto contiguous = run(128, false);  // one block: a contiguous cache
  CHECK(run(16, false) == contiguous);
  CHECK(run(16, true) == contiguous);
  CHECK(run(1, true) == contiguous);
  CHECK(run(5 + 3, true) == contiguous);
}

TEST_CASE("a mixed batch (prefills, chunks and decodes) equals each sequence run alone") {
  const model_config c = tiny_model();
  const auto w = model_weights::random(c);
  // Sequence A decodes at position 20, B prefills its first 12 tokens, C prefills a middle
  // chunk (positions 9..14) without sampling, D samples after a 1-token chunk.
  auto setup = [&](paged_kv_cache& kv, cpu_model& m, std::vector<seq>& seqs) {
    block_source pool(kv.num_blocks(), 1);
    const std::uint32_t pasts[] = {20, 0, 9, 4};
    const std::uint32_t lens[] = {21, 12, 15, 5};
    seqs.resize(4);
    for (std::size_t i = 0; i < 4; ++i) {
      seqs[i].tokens = prompt(100 + i, lens[i], c);
      seqs[i].blocks = pool.take(8);
      if (pasts[i] > 0) {  // fill the cache up to `past`
        forward_batch b;
        b.block_size = kv.block_size();
        b.seqs.push_back(work(seqs[i], pasts[i], false));
        std::vector<std::int32_t> next;
        m.forward(b, next);
        seqs[i].past = pasts[i];
      }
    }
  };
  const bool sample[] = {true, true, false, true};
  paged_kv_cache kv1(c, 64, 4), kv2(c, 64, 4);
  cpu_model m1(w, kv1), m2(w, kv2);
  std::vector<seq> s1, s2;
  setup(kv1, m1, s1);
  setup(kv2, m2, s2);
  forward_batch b;
  b.block_size = 4;
  for (std::size_t i = 0; i < 4; ++i)
    b.seqs.push_back(
        work(s1[i], static_cast<std::uint32_t>(s1[i].tokens.size()) - s1[i].past, sample[i]));
  std::vector<std::int32_t> next, alone_next;
  std::vector<float> logits, alone;
  m1.forward(b, next, &logits);
  REQUIRE(logits.size() == 3u * c.vocab);
  CHECK(next[2] == -1);
  std::size_t row = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    forward_batch one;
    one.block_size = 4;
    one.seqs.push_back(
        work(s2[i], static_cast<std::uint32_t>(s2[i].tokens.size()) - s2[i].past, sample[i]));
    m2.forward(one, alone_next, &alone);
    if (!sample[i]) continue;
    CAPTURE(i);
    CHECK(relative_l2(logits.data() + row * c.vocab, alone.data(), c.vocab) < fp32_tol);
    CHECK(next[i] == alone_next[0]);
    const auto ref = reference_logits(w, s1[i].tokens);
    CHECK(relative_l2(alone.data(), ref.data() + (s1[i].tokens.size() - 1) * c.vocab, c.vocab) <
          fp32_tol);
    ++row;
  }
}

TEST_CASE("forward rejects block tables that do not cover the tokens") {
  const model_config c = tiny_model();
  const auto w = model_weights::random(c);
  paged_kv_cache kv(c, 4, 4);
  cpu_model m(w, kv);
  seq s;
  s.tokens = prompt(1, 9, c);
  s.blocks = {0, 1};  // covers 8 positions, 9 needed
  forward_batch b;
  b.block_size = 4;
  b.seqs.push_back(work(s, 9, true));
  std::vector<std::int32_t> next;
  CHECK_THROWS_AS(m.forward(b, next), std::invalid_argument);
  s.blocks = {0, 1, 7};  // out of range
  b.seqs[0] = work(s, 9, true);
  CHECK_THROWS_AS(m.forward(b, next), std::invalid_argument);
  b.block_size = 8;
  CHECK_THROWS_AS(m.forward(b, next), std::invalid_argument);
  model_config other = c;
  other.hidden = 32;
  paged_kv_cache wrong(other, 4, 4);
  CHECK_THROWS_AS(cpu_model(w, wrong), std::invalid_argument);
}
