// SPDX-License-Identifier: MIT
// The cpu backend behind the executor's backend interface: token bookkeeping across chunks,
// decodes and a recompute preemption, KV pool sizing, and a short real-time engine run.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "cpu_backend.hpp"
#include "engine.hpp"
#include "loadgen.hpp"
#include "model/forward.hpp"

using namespace batching;

namespace {

cpu_backend_config tiny() {
  cpu_backend_config c;
  c.model.layers = 2;
  c.model.hidden = 64;
  c.model.heads = 4;
  c.model.ffn = 128;
  c.model.vocab = 256;
  c.model.seed = 5;
  c.kv_memory_bytes = 64.0 * 16 * (2 * 2 * 64) * 4;  // 64 blocks of 16 tokens
  c.threads = 2;
  c.measure_bandwidth = false;
  return c;
}

sequence_work prefill(std::uint64_t id, std::uint32_t prompt, std::uint32_t past,
                      std::uint32_t chunk, bool samples, const std::vector<std::uint32_t>& blocks) {
  sequence_work s;
  s.seq_id = id;
  s.prompt_tokens = prompt;
  s.past_tokens = past;
  s.prefill_tokens = chunk;
  s.samples = samples;
  s.blocks = blocks.data();
  s.num_blocks = static_cast<std::uint32_t>(blocks.size());
  return s;
}

sequence_work decode(std::uint64_t id, std::uint32_t prompt, std::uint32_t past,
                     const std::vector<std::uint32_t>& blocks) {
  sequence_work s = prefill(id, prompt, past, 0, true, blocks);
  s.decode = true;
  return s;
}

// The greedy continuation of `tokens` by the naive reference.
std::int32_t reference_next(const compute::model_weights& w, const std::vector<std::int32_t>& t) {
  const auto lg = compute::reference_logits(w, t);
  return compute::argmax(lg.data() + (t.size() - 1) * w.cfg.vocab, w.cfg.vocab);
}

}  // namespace

TEST_CASE("cpu backend: chunks, decodes, a second sequence and a recompute preemption") {
  cpu_backend be(tiny());
  CHECK_FALSE(be.virtual_time());
  CHECK(be.kv_blocks(16) == 64);
  CHECK(be.kv_blocks(8) == 128);
  CHECK(be.name().find("cpu L2 d64 h4 f128 V256") == 0);
  const auto& w = be.weights();
  const std::vector<std::uint32_t> b1 = {7, 3}, b2 = {12};
  batch b;
  b.block_size = 16;

  b.seqs = {prefill(1, 10, 0, 6, false, b1)};  // first chunk: nothing sampled
  auto r = be.step(b);
  REQUIRE(r.outputs.size() == 1);
  CHECK(r.outputs[0].tokens == 0);
  CHECK(r.elapsed.count() > 0);
  b.seqs = {prefill(1, 10, 6, 4, true, b1)};  // completes the prompt: samples
  r = be.step(b);
  std::vector<std::int32_t> want = be.tokens(1);
  REQUIRE(want.size() == 11);
  want.pop_back();
  CHECK(r.outputs[0].tokens == 1);
  CHECK_FALSE(r.outputs[0].stop);
  CHECK(r.outputs[0].token_id == reference_next(w, want));
  CHECK(be.predict_prefill(100).has_value());

  for (std::uint32_t k = 0; k < 3; ++k) {  // decodes of 1, with 2 prefilling on the first
    b.seqs = {decode(1, 10, 10 + k, b1)};
    if (k == 0) b.seqs.push_back(prefill(2, 5, 0, 5, true, b2));
    if (k > 0) b.seqs.push_back(decode(2, 5, 5 + k - 1, b2));
    r = be.step(b);
    REQUIRE(r.outputs.size() == 2);
    for (std::uint64_t id : {1u, 2u}) {
      auto h = be.tokens(id);
      const std::int32_t last = h.back();
      h.pop_back();
      CHECK(last == reference_next(w, h));
      CHECK(r.outputs[id - 1].token_id == last);
    }
  }
  const auto before = be.tokens(1);  // 10 prompt + 4 sampled
  REQUIRE(before.size() == 14);

  // Preempted (KV freed), then recomputed from position 0 in two chunks, into other blocks.
  be.release(1);
  CHECK(be.tokens(1).empty());
  const std::vector<std::uint32_t> nb = {20, 21};
  b.seqs = {prefill(1, 10, 0, 8, false, nb)};
  be.step(b);
  b.seqs = {prefill(1, 10, 8, 5, true, nb)};  // 13 = prompt + 3 of the 4 sampled tokens fed
  r = be.step(b);
  auto after = be.tokens(1);
  REQUIRE(after.size() == 14);
  CHECK(std::vector<std::int32_t>(after.begin(), after.begin() + 13) ==
        std::vector<std::int32_t>(before.begin(), before.begin() + 13));
  CHECK(after[13] == before[13]);  // recomputing gives the token it had produced
  b.seqs = {decode(1, 10, 13, nb)};
  r = be.step(b);
  auto h = be.tokens(1);
  const std::int32_t last = h.back();
  h.pop_back();
  CHECK(last == reference_next(w, h));

  // A decode with nothing to feed is an inconsistent batch.
  b.seqs = {decode(9, 4, 4, b2)};
  CHECK_THROWS_AS(be.step(b), std::runtime_error);
  b.block_size = 8;
  b.seqs = {prefill(3, 4, 0, 4, true, b2)};
  CHECK_THROWS_AS(be.step(b), std::runtime_error);
}

TEST_CASE("cpu backend: config keys and validation") {
  cpu_backend_config c = tiny();
  c.set("layers", "3");
  c.set("threads", "1");
  c.set("kv_memory", "1e8");
  CHECK(c.model.layers == 3);
  CHECK(c.threads == 1);
  CHECK(c.kv_memory_bytes == 1e8);
  CHECK_THROWS_AS(c.set("threads", "0"), std::invalid_argument);
  CHECK_THROWS_AS(c.set("nope", "1"), std::invalid_argument);
  c.kv_memory_bytes = 10;  // not one block
  cpu_backend be(c);
  CHECK_THROWS_AS((void)be.kv_blocks(16), std::invalid_argument);
}

TEST_CASE("cpu backend: a short closed-loop run on the real clock") {
  cpu_backend be(tiny());
  scheduler_config sc;
  sc.max_batch_size = 4;
  sc.max_num_batched_tokens = 64;
  workload wl;
  wl.users = 3;
  wl.prompt = distribution::parse("fixed:20", quantity::prompt_length);
  wl.output = distribution::parse("fixed:6", quantity::output_length);
  wl.duration_s = 60;  // max_requests ends the run, not the clock
  wl.max_requests = 6;
  std::uint64_t steps = 0, sampled = 0;
  auto res = run(sc, wl, be, [&](const step_plan& p, const step_result& r, const scheduler&) {
    ++steps;
    REQUIRE(r.outputs.size() == p.work.seqs.size());
    for (std::size_t i = 0; i < r.outputs.size(); ++i) {
      CHECK(r.outputs[i].tokens == (p.work.seqs[i].samples ? 1u : 0u));
      if (r.outputs[i].tokens) {
        ++sampled;
        CHECK(r.outputs[i].token_id >= 0);
        CHECK(r.outputs[i].token_id < 256);
      }
    }
  });
  REQUIRE(!res.requests.empty());
  REQUIRE(res.requests.size() == 6);
  for (const auto& q : res.requests) CHECK(q.tl.output_tokens() == 6);
  CHECK(sampled == 6 * res.requests.size());
  CHECK(steps == res.engine.steps);
  CHECK(res.engine.busy_s > 0);
}
