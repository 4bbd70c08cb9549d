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
#include <map>
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

// Every step: each block's reference count is the number of running block tables holding it,
// and the pool's used blocks are the distinct blocks they hold (waiting and finished requests
// hold none); no table holds a block twice; a cached block at entry i of a table is cached under
// that request's block hash i; a block in two tables is a cached one.
struct shared_kv_checker {
  std::uint64_t steps = 0, violations = 0, shared_seen = 0;
  void operator()(const step_plan&, const step_result&, const scheduler& s) {
    ++steps;
    auto fail = [&](bool bad) { violations += bad ? 1 : 0; };
    std::map<std::uint32_t, std::uint32_t> holders;
    for (const request* r : s.running_requests()) {
      std::set<std::uint32_t> mine;
      fail(r->cached_blocks > r->blocks.size());
      for (std::size_t i = 0; i < r->blocks.size(); ++i) {
        const std::uint32_t b = r->blocks[i];
        fail(!mine.insert(b).second);
        ++holders[b];
        std::uint64_t h = 0;
        if (s.kv().cached_as(b, h)) fail(i >= r->block_hashes.size() || r->block_hashes[i] != h);
      }
    }
    for (const auto& [b, n] : holders) {
      fail(s.kv().refs(b) != n);
      std::uint64_t h = 0;
      if (n > 1) {
        ++shared_seen;
        fail(!s.kv().cached_as(b, h));
      }
    }
    fail(holders.size() != s.kv().used());
    fail(s.kv().used() > s.kv().total());
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
      CHECK(q.blocks.empty());  // every finished request dropped its references
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
    // The second needs 28 blocks: the 2 never handed out, the first's 16 uncached ones, then
    // 10 of the 12 cached prefix blocks, least recently freed first.
    CHECK(r2.sched.prefix_evictions == 10);
    CHECK(r2.sched.preemptions == 0);
    for (const request& q : r2.requests) CHECK(q.tl.reason() == tokchron::finish_reason::length);
  }
}

namespace {

// Requests given in full (arrival in seconds, prompt, output, block hashes), for the block
// cache's cases.
struct listed_request {
  double at_s;
  std::uint32_t prompt, output;
  std::vector<std::uint64_t> hashes;
};
struct listed_source final : request_source {
  listed_source(const clock_type& c, std::vector<listed_request> l)
      : clock(c), list(std::move(l)) {}
  const clock_type& clock;
  std::vector<listed_request> list;
  std::deque<request> reqs;
  std::size_t made = 0;
  static time_point at(double s) {
    return time_point(std::chrono::duration_cast<duration>(std::chrono::duration<double>(s)));
  }
  time_point end() const noexcept override { return time_point(std::chrono::seconds(1000)); }
  std::optional<time_point> next_arrival() const override {
    if (made >= list.size()) return std::nullopt;
    return at(list[made].at_s);
  }
  void release(time_point now, std::vector<request*>& out) override {
    while (made < list.size() && at(list[made].at_s) <= now) {
      const listed_request& l = list[made];
      request& q = reqs.emplace_back(clock);
      q.id = made;
      q.arrival = at(l.at_s);
      q.prompt_tokens = l.prompt;
      q.output_tokens = l.output;
      q.block_hashes = l.hashes;
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

}  // namespace

TEST_CASE("block prefix cache: each request reuses the longest cached run of its leading blocks") {
  // Blocks of 16 tokens; requests alone on the engine unless they arrive together.
  const std::vector<listed_request> list = {
      {0, 64, 4, {1, 2, 3, 4}},   // computes and caches 4 blocks
      {10, 50, 4, {1, 2, 9}},     // shares 2, then differs: 32 cached
      {20, 64, 4, {1, 2, 3, 4}},  // all 4 cached, but its last token is computed: 3 blocks
      {30, 40, 4, {5, 6}},        // nothing in common
      {40, 48, 4, {1, 2, 9}},     // the second's third block: 48 tokens, so only 2 of 3
      {50, 49, 4, {1, 2, 9}},     // 49 tokens: all 3
      {60, 40, 4, {7, 8}},        // two at once: the second finds the first's blocks, cached
      {60, 40, 4, {7, 8}},        // when they were scheduled (the same step)
      {70, 20, 4, {}},            // no hashes: nothing to reuse
  };
  const std::vector<std::uint32_t> want = {0, 32, 48, 0, 32, 48, 0, 32, 0};
  clock_type clock;
  listed_source src(clock, list);
  fake_backend be(1000);
  shared_kv_checker check;
  const run_result r = run(scheduler_config{}, src, clock, be, std::ref(check));
  CHECK(check.violations == 0);
  CHECK(check.shared_seen > 0);
  REQUIRE(r.requests.size() == list.size());
  std::uint64_t hit_tokens = 0;
  for (const request& q : r.requests) {
    CAPTURE(q.id);
    CHECK(q.tl.cached_prompt_tokens().value_or(0) == want[q.id]);
    CHECK(q.cached_tokens == want[q.id]);
    CHECK(q.tl.reason() == tokchron::finish_reason::length);
    hit_tokens += want[q.id];
  }
  CHECK(!r.requests[8].tl.cached_prompt_tokens());  // nothing it could reuse: not reported
  CHECK(r.sched.prefix_hit_tokens == hit_tokens);
  CHECK(r.sched.prefix_evictions == 0);

  SUBCASE("prefix caching off: nothing is reused") {
    scheduler_config off;
    off.prefix_caching = false;
    clock_type clock2;
    listed_source src2(clock2, list);
    fake_backend be2(1000);
    const run_result r2 = run(off, src2, clock2, be2);
    for (const request& q : r2.requests) CHECK(q.tl.cached_prompt_tokens().value_or(0) == 0u);
    CHECK(r2.sched.prefix_hits == 0);
  }
  SUBCASE("a small pool evicts the least recently freed cached blocks, never a used one") {
    // 10 blocks: the first request's 4 prompt blocks (+1 for its output) are cached when it
    // ends; the next ones need them back.
    clock_type clock3;
    listed_source src3(clock3, list);
    fake_backend be3(10);
    shared_kv_checker check3;
    const run_result r3 = run(scheduler_config{}, src3, clock3, be3, std::ref(check3));
    CHECK(check3.violations == 0);
    CHECK(r3.sched.preemptions == 0);
    CHECK(r3.sched.prefix_evictions > 0);
    for (const request& q : r3.requests) {
      CHECK(q.tl.reason() == tokchron::finish_reason::length);
      CHECK(q.tl.cached_prompt_tokens().value_or(0) <= want[q.id]);
    }
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
