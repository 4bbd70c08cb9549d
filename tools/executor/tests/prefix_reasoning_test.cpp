// SPDX-License-Identifier: MIT
// The shared system prompt's prefix cache and reasoning answers: a cached prefix saves exactly
// the sim's modelled prefill cost of its tokens; the KV accounting stays exact with shared
// blocks (counted once, referenced by every request that reuses them, evicted only when none
// does); an answer's first tokens are recorded as reasoning chunks, and its reasoning count as
// the usage's.
#include <doctest/doctest.h>

#include <cmath>
#include <deque>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "engine.hpp"
#include "fake_backend.hpp"
#include "loadgen.hpp"
#include "scheduler.hpp"
#include "sim_backend.hpp"

using namespace batching;
using batching::testing::fake_backend;

namespace {

// One user, each request alone on the engine (a think time far longer than a request).
workload lone_requests(std::uint32_t prefix) {
  workload w;
  w.mode = arrival_mode::closed;
  w.users = 1;
  w.think = distribution::fixed(5, quantity::seconds);
  w.prompt = distribution::parse("fixed:100", quantity::prompt_length);
  w.output = distribution::parse("fixed:10", quantity::output_length);
  w.duration_s = 20;
  w.shared_prefix = prefix;
  return w;
}

double ttft_s(const request& q) {
  return tokchron::to_seconds(*q.tl.first_token_time() - q.arrival);
}

// The sim's cost of prefilling `chunk` tokens over `past` cached ones, `reused` of them from the
// prefix cache, alone in a step.
double prefill_cost(const sim_backend& be, std::uint32_t past, std::uint32_t chunk,
                    std::uint32_t reused) {
  batch b;
  sequence_work w;
  w.past_tokens = past;
  w.prefill_tokens = chunk;
  w.reused_tokens = reused;
  w.samples = true;
  b.seqs.push_back(w);
  return be.cost(b).seconds;
}

}  // namespace

TEST_CASE("a cached shared prefix saves exactly its modelled prefill cost") {
  sim_config sc;
  sc.jitter = 0;  // step times are the roofline's, exactly
  sim_backend be(sc);
  scheduler_config cfg;  // block_size 16: a 512-token prefix is 32 full blocks
  const run_result r = run(cfg, lone_requests(512), be);
  REQUIRE(r.requests.size() >= 3);
  const request& first = r.requests[0];
  CHECK(first.prompt_tokens == 612);
  CHECK(first.tl.cached_prompt_tokens() == 0u);  // nothing cached yet: it computes the prefix
  const double full = prefill_cost(be, 0, 612, 0);
  CHECK(ttft_s(first) == doctest::Approx(full).epsilon(1e-9));
  const double cached = prefill_cost(be, 512, 100, 512);
  CHECK(cached < full);
  for (std::size_t i = 1; i < r.requests.size(); ++i) {
    const request& q = r.requests[i];
    if (!q.tl.first_token_time()) continue;  // background, aborted
    CHECK(q.tl.cached_prompt_tokens() == 512u);
    // Its TTFT is the uncached suffix's prefill over the cached prefix: the saving is exactly
    // the modelled cost of the prefix's prefill (1 ns: the clock's rounding).
    CHECK(std::abs(ttft_s(q) - cached) < 2e-9);
    CHECK(std::abs((ttft_s(first) - ttft_s(q)) - (full - cached)) < 4e-9);
  }
  CHECK(r.sched.prefix_hits == r.requests.size() - 1);
  CHECK(r.sched.prefix_hit_tokens == 512 * (r.requests.size() - 1));

  SUBCASE("prefix caching off: every request prefills all of its prompt") {
    scheduler_config off = cfg;
    off.prefix_caching = false;
    sim_backend be2(sc);
    const run_result r2 = run(off, lone_requests(512), be2);
    for (const request& q : r2.requests)
      if (q.tl.first_token_time()) {
        CHECK(std::abs(ttft_s(q) - full) < 2e-9);
        CHECK(q.tl.cached_prompt_tokens() == 0u);
      }
    CHECK(r2.sched.prefix_hits == 0);
  }
  SUBCASE("a prefix shorter than a block is not cached; only full blocks are") {
    sim_backend be3(sc);
    const run_result r3 = run(cfg, lone_requests(40), be3);  // 2 full blocks: 32 tokens
    REQUIRE(r3.requests.size() >= 2);
    CHECK(r3.requests[1].tl.cached_prompt_tokens() == 32u);
    CHECK(std::abs(ttft_s(r3.requests[1]) - prefill_cost(be3, 32, 108, 32)) < 2e-9);
  }
}

TEST_CASE("no shared prefix: the trace has no cached tokens and no reasoning") {
  sim_backend be{sim_config{}};
  const run_result r = run(scheduler_config{}, lone_requests(0), be);
  for (const request& q : r.requests) {
    CHECK(!q.tl.cached_prompt_tokens());
    CHECK(!q.tl.reported_reasoning_tokens());
    for (const auto& c : q.tl.store().chunks()) CHECK(c.kind == tokchron::chunk_kind::text);
  }
}

// Every step: the pool's used blocks are the running requests' own blocks plus the cache's, each
// counted once; every shared entry of a block table is the cache's block at that index; no own
// block is in two tables or in the cache; the cache's references are the requests using it.
struct shared_kv_checker {
  std::uint64_t steps = 0, violations = 0, shared_seen = 0;
  void operator()(const step_plan&, const step_result&, const scheduler& s) {
    ++steps;
    auto fail = [&](bool bad) { violations += bad ? 1 : 0; };
    std::set<std::uint32_t> own;
    std::uint64_t used = s.prefix_cache_blocks();
    std::uint32_t refs = 0;
    std::vector<std::uint32_t> cache;
    for (const request* r : s.running_requests()) {
      fail(r->shared_blocks > r->blocks.size());
      if (r->shared_blocks > 0) {
        ++refs;
        ++shared_seen;
        fail(r->shared_blocks > s.prefix_cache_blocks());
        if (cache.empty()) cache.assign(r->blocks.begin(), r->blocks.begin() + r->shared_blocks);
        for (std::uint32_t i = 0; i < r->shared_blocks && i < cache.size(); ++i)
          fail(r->blocks[i] != cache[i]);
      }
      for (std::size_t i = r->shared_blocks; i < r->blocks.size(); ++i)
        fail(!own.insert(r->blocks[i]).second);
      used += r->blocks.size() - r->shared_blocks;
    }
    for (const std::uint32_t b : cache) fail(own.count(b) != 0);
    fail(refs != s.prefix_cache_refs());
    fail(used != s.kv().used());
  }
};

TEST_CASE("KV accounting stays exact with shared prefix blocks, through preemption and eviction") {
  workload w;
  w.users = 24;
  w.think = distribution::parse("exp:0.5", quantity::seconds);
  w.prompt = distribution::parse("uniform:20,200", quantity::prompt_length);
  w.output = distribution::parse("uniform:20,200", quantity::output_length);
  w.duration_s = 60;
  w.shared_prefix = 200;
  for (const kv_policy kv : {kv_policy::max_utilization, kv_policy::guaranteed_no_evict}) {
    const std::string policy_name(to_string(kv));
    CAPTURE(policy_name);
    scheduler_config cfg;
    cfg.kv = kv;
    fake_backend be(120);  // 1920 tokens: a few requests at once, preemptions under load
    shared_kv_checker check;
    const run_result r = run(cfg, w, be, std::ref(check));
    CHECK(check.violations == 0);
    CHECK(check.shared_seen > 0);
    CHECK(r.sched.prefix_hits > 0);
    if (kv == kv_policy::max_utilization) CHECK(r.sched.preemptions > 0);
    std::uint64_t reused = 0;
    for (const request& q : r.requests) {
      CHECK(q.tl.misuse_count() == 0);
      CHECK(q.shared_blocks == 0);  // every finished request dropped its reference
      if (q.tl.cached_prompt_tokens()) reused += *q.tl.cached_prompt_tokens();
    }
    CHECK(reused > 0);
    CHECK(reused % 16 == 0);
  }
}

TEST_CASE("an unreferenced cached prefix is evicted before anyone is preempted") {
  // A pool of 30 blocks; the prefix takes 12 (192 tokens). Two long requests back to back:
  // the second needs more blocks than the cache leaves free while nothing references it.
  workload w = lone_requests(192);
  w.prompt = distribution::parse("fixed:1", quantity::prompt_length);
  w.output = distribution::parse("fixed:250", quantity::output_length);
  fake_backend be(30);
  scheduler_config cfg;
  cfg.prefix_caching = true;
  shared_kv_checker check;
  // The first request (193 + 250 tokens = 28 blocks) computes and caches the prefix; the cache
  // keeps 12 blocks, so the second (reusing them) fits: 28 blocks in all.
  const run_result r = run(cfg, w, be, std::ref(check));
  CHECK(check.violations == 0);
  CHECK(r.sched.preemptions == 0);
  REQUIRE(r.requests.size() >= 2);
  CHECK(r.requests[1].tl.cached_prompt_tokens() == 192u);

  SUBCASE("a request that does not share it gets the blocks back") {
    workload other = w;
    other.shared_prefix = 0;
    other.prompt = distribution::parse("fixed:193", quantity::prompt_length);
    other.output = distribution::parse("fixed:250", quantity::output_length);
    // Two kinds of request in one run: a source handing over a prefixed one, then a plain one
    // of the same length that needs all 28 blocks with the cache's 12 held.
    struct two final : request_source {
      explicit two(const clock_type& c) : clock(c) {}
      const clock_type& clock;
      std::deque<request> reqs;
      int made = 0;
      time_point end() const noexcept override { return time_point(std::chrono::seconds(100)); }
      std::optional<time_point> next_arrival() const override {
        if (made >= 2) return std::nullopt;
        return time_point(std::chrono::seconds(made * 50));
      }
      void release(time_point now, std::vector<request*>& out) override {
        while (made < 2 && time_point(std::chrono::seconds(made * 50)) <= now) {
          request& q = reqs.emplace_back(clock);
          q.id = static_cast<std::uint64_t>(made);
          q.arrival = time_point(std::chrono::seconds(made * 50));
          q.prompt_tokens = 193;
          q.prefix_tokens = made == 0 ? 192 : 0;
          q.output_tokens = 250;
          q.tl.arrive(q.arrival);
          q.tl.send(q.arrival);
          q.tl.set_prompt_tokens(q.prompt_tokens);
          out.push_back(&q);
          ++made;
        }
      }
      void on_finish(const request&, time_point) override {}
      std::deque<request> take_requests() override { return std::move(reqs); }
    };
    clock_type clock;
    two src(clock);
    fake_backend be2(30);
    shared_kv_checker check2;
    const run_result r2 = run(cfg, src, clock, be2, std::ref(check2));
    CHECK(check2.violations == 0);
    CHECK(r2.sched.prefix_evictions == 1);
    CHECK(r2.sched.preemptions == 0);
    for (const request& q : r2.requests) CHECK(q.tl.reason() == tokchron::finish_reason::length);
  }
}

TEST_CASE("reasoning answers: the first tokens are reasoning chunks, the usage counts them") {
  sim_backend be{sim_config{}};
  workload w = lone_requests(0);
  w.output = distribution::parse("fixed:40", quantity::output_length);
  w.reasoning_fraction = 0.25;  // 10 reasoning tokens, then 30 answer tokens
  const run_result r = run(scheduler_config{}, w, be);
  std::size_t checked = 0;
  for (const request& q : r.requests) {
    if (q.tl.reason() != tokchron::finish_reason::length) continue;
    ++checked;
    CHECK(q.reasoning_tokens == 10);
    CHECK(q.tl.reported_reasoning_tokens() == 10u);
    std::uint32_t thinking = 0, answer = 0;
    bool answer_started = false;
    for (const auto& c : q.tl.store().chunks()) {
      if (c.kind == tokchron::chunk_kind::reasoning) {
        CHECK(!answer_started);  // reasoning comes first
        thinking += c.tokens;
      } else {
        CHECK(c.kind == tokchron::chunk_kind::text);
        answer_started = true;
        answer += c.tokens;
      }
    }
    CHECK(thinking == 10);
    CHECK(answer == 30);
  }
  CHECK(checked > 0);

  SUBCASE("all reasoning, and a fraction that rounds") {
    workload all = w;
    all.reasoning_fraction = 1;
    sim_backend be2{sim_config{}};
    for (const request& q : run(scheduler_config{}, all, be2).requests)
      if (q.tl.reason() == tokchron::finish_reason::length) {
        CHECK(q.tl.reported_reasoning_tokens() == 40u);
        for (const auto& c : q.tl.store().chunks())
          CHECK(c.kind == tokchron::chunk_kind::reasoning);
      }
    workload third = w;
    third.reasoning_fraction = 1.0 / 3;  // 13.33 -> 13
    sim_backend be3{sim_config{}};
    for (const request& q : run(scheduler_config{}, third, be3).requests)
      CHECK(q.reasoning_tokens == 13);
  }
}

TEST_CASE("the workload refuses a bad reasoning fraction or shared prefix") {
  workload w;
  w.reasoning_fraction = 1.5;
  CHECK_THROWS_AS(w.validate(), std::invalid_argument);
  w.reasoning_fraction = -0.1;
  CHECK_THROWS_AS(w.validate(), std::invalid_argument);
  w.reasoning_fraction = 0.5;
  w.shared_prefix = max_shared_prefix + 1;
  CHECK_THROWS_AS(w.validate(), std::invalid_argument);
}
