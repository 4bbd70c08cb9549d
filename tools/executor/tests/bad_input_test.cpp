// SPDX-License-Identifier: MIT
// The executor's rows of the bad-input table (X1-X11), each test named by its row: a
// configuration that cannot run is refused saying why, requests that cannot fit are rejected and
// counted, memory is bounded by the run's real size, length traces take only integers, and no
// number from the input overflows the run's clock. The command-line side of each row is a ctest
// (batching_executor.X*, under a memory limit where the row promises a bound).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include "cli.hpp"
#include "engine.hpp"
#include "kv_cache.hpp"
#include "loadgen.hpp"
#include "run_limits.hpp"
#include "sim_backend.hpp"

using namespace batching;

namespace {

// The message `f` throws as E; empty when it throws nothing.
template <class E, class F>
std::string thrown(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return {};
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

run_config base() {
  run_config c;
  c.load.memory_limit = default_memory_limit;
  return c;
}

std::string refusal(const run_config& c) {
  const sim_backend be(c.sim);
  return thrown<std::invalid_argument>([&] { check_run(c, be); });
}

// A file in the build's working directory with `text`; removed at the end of the scope.
struct temp_file {
  std::string path;
  temp_file(const std::string& name, const std::string& text) : path(name) {
    std::ofstream(path, std::ios::binary) << text;
  }
  ~temp_file() { std::remove(path.c_str()); }
};

}  // namespace

TEST_CASE("X1: a warm-up not shorter than the duration is refused") {
  run_config c = base();
  c.warmup_s = 100;
  c.load.duration_s = 20;
  CHECK(refusal(c) ==
        "--warmup (100 s) must be shorter than --duration (20 s): only requests arriving between "
        "the two are measured");
  c.warmup_s = 20;
  CHECK(contains(refusal(c), "must be shorter"));
  c.warmup_s = 19.5;
  CHECK(refusal(c).empty());
}

TEST_CASE(
    "X2: a request the KV cache can never hold is refused up front, or rejected and counted") {
  run_config c = base();
  const sim_backend be(c.sim);
  const std::uint32_t blocks = be.kv_blocks(c.sched.block_size);
  const std::uint32_t kv_tokens = blocks * c.sched.block_size;
  SUBCASE("every request too long: refused, with the numbers") {
    c.load.prompt = distribution::parse("fixed:20000", quantity::prompt_length);
    const std::string why = refusal(c);
    CHECK(contains(why,
                   "every request would be rejected: the shortest (20000 prompt + 75 output "
                   "tokens) needs 1255 KV blocks of 16 tokens, and sim a10g llama2-7b holds " +
                       std::to_string(blocks)));
    // The largest that fits is accepted.
    c.load.prompt = distribution::fixed(kv_tokens - 75, quantity::prompt_length);
    CHECK(refusal(c).empty());
  }
  SUBCASE("without chunked prefill every prompt over the token budget: refused") {
    c.sched.chunked_prefill = false;
    c.sched.max_num_batched_tokens = 256;
    c.load.prompt = distribution::parse("uniform:300,400", quantity::prompt_length);
    CHECK(contains(refusal(c), "without chunked prefill a prompt must fit the token budget"));
  }
  SUBCASE("some too long: each rejected on arrival, counted, the others served") {
    c.load.prompt = distribution::parse("uniform:1,30000", quantity::prompt_length);
    c.load.duration_s = 60;
    REQUIRE(refusal(c).empty());
    sim_backend sim(c.sim);
    const run_result r = run(c.sched, c.load, sim);
    std::uint64_t too_long = 0, served = 0;
    for (const request& q : r.requests) {
      const bool fits = (std::uint64_t(q.prompt_tokens) + q.output_tokens + 15) / 16 <= blocks;
      if (!fits) {
        ++too_long;
        CHECK(q.tl.reason() == tokchron::finish_reason::rejected);
        CHECK(q.tl.output_tokens() == 0);
      } else if (q.tl.reason() != tokchron::finish_reason::aborted) {
        ++served;
        CHECK(q.tl.reason() == tokchron::finish_reason::length);
      }
    }
    CHECK(too_long > 10);
    CHECK(served > 10);
    CHECK(r.sched.rejected_too_long == too_long);
    CHECK(r.sched.rejected_timeout == 0);
  }
}

TEST_CASE("X3: an open loop is counted exactly before it runs; too many or no requests refused") {
  SUBCASE("the count is the load generator's own, for each seed and burstiness") {
    for (const double k : {0.05, 1.0, 4.0})
      for (const std::uint64_t seed : {1u, 7u}) {
        CAPTURE(k);
        CAPTURE(seed);
        workload w;
        w.mode = arrival_mode::open;
        w.rate = 3;
        w.burstiness = k;
        w.duration_s = 40;
        w.seed = seed;
        const arrival_count n = count_open_arrivals(w, 10, 1000000);
        clock_type clock;
        load_generator gen(w, clock);
        std::vector<request*> out;
        gen.release(time_point(std::chrono::hours(1)), out);
        std::uint64_t from = 0;
        for (const request* q : out) from += q->arrival >= time_point(std::chrono::seconds(10));
        CHECK_FALSE(n.capped);
        CHECK(n.total == out.size());
        CHECK(n.from == from);
        CHECK(n.total > 0);
        const arrival_count capped = count_open_arrivals(w, 10, 5);
        CHECK(capped.capped);
        CHECK(capped.total == 5);
      }
  }
  run_config c = base();
  c.load.mode = arrival_mode::open;
  SUBCASE("--rate 1e12: more than memory can hold") {
    c.load.rate = 1e12;
    const std::uint64_t most = default_memory_limit / request_footprint(75);
    CHECK(contains(refusal(c), "makes more than " + std::to_string(most) +
                                   " requests in 600 s, which would keep more than the memory "
                                   "limit of 2048 MiB"));
  }
  SUBCASE("--burstiness 1e-300: every gap 0, refused the same way") {
    c.load.burstiness = 1e-300;
    CHECK(contains(refusal(c), "makes more than"));
  }
  SUBCASE("--rate 1e-300: nothing arrives to be measured") {
    c.load.rate = 1e-300;
    CHECK(contains(refusal(c),
                   "no request of the open loop (rate 1e-300/s, burstiness 1, seed "
                   "1) arrives between the warm-up (0 s) and the duration (600 s)"));
    c.load.rate = 1e-300;
    c.load.burstiness = 1e-300;  // the gap's scale overflows to infinity: still no arrival
    CHECK(contains(refusal(c), "nothing would be measured"));
  }
  SUBCASE("arrivals only before the warm-up ends: nothing measured") {
    c.load.rate = 0.5;
    c.load.duration_s = 30;
    c.warmup_s = 29.999;
    c.load.max_requests = 2;  // the first two arrive in the first seconds for seed 1
    CHECK(contains(refusal(c), "nothing would be measured"));
  }
}

TEST_CASE("X4: closed-loop users whose state alone passes the memory limit are refused") {
  run_config c = base();
  c.load.users = 1000000;
  CHECK(contains(refusal(c), "1000000 users keep at least"));
  c.load.users = 50;
  CHECK(refusal(c).empty());
  // The load generator holds the same bound itself, before it allocates.
  workload w;
  w.users = 1000000;
  w.memory_limit = 64u << 20;
  clock_type clock;
  CHECK(contains(thrown<std::invalid_argument>([&] { load_generator g(w, clock); }),
                 "1000000 users keep"));
}

TEST_CASE("X5: a run whose requests pass the memory limit stops, its memory bounded by it") {
  // Almost every prompt too long, no think time: each user's rejected request is followed at once
  // by the next, so the requests pile up at one instant. The limit stops it.
  workload w;
  w.users = 50;
  w.prompt = distribution::parse("uniform:1,1000000000", quantity::prompt_length);
  w.memory_limit = 8u << 20;
  scheduler_config sc;
  sim_backend be(sim_config{});
  clock_type clock;
  load_generator gen(w, clock);
  const std::string why = thrown<std::runtime_error>([&] { (void)run(sc, gen, clock, be); });
  CHECK(contains(why, "of memory left to it by --memory-limit"));
  // It stopped at the limit, not before: the requests made, by their footprints (output at most
  // 225 tokens), reach it by less than one request.
  const std::uint64_t kept = run_footprint(w, gen.requests());
  CHECK(kept > w.memory_limit);
  CHECK(kept <= w.memory_limit + request_footprint(225));
  // A main-job-sized run stays far below the default limit.
  workload main_job;
  main_job.duration_s = 120;
  sim_backend sim(sim_config{});
  const run_result r = run(sc, main_job, sim);
  CHECK(run_footprint(main_job, r.requests) < default_memory_limit / 20);
}

TEST_CASE("X6: length traces take decimal integers only, naming the file, line and value") {
  const std::pair<const char*, const char*> bad[] = {{"-5", "'-5'"},
                                                     {"0.5", "'0.5'"},
                                                     {"1e-5", "'1e-5'"},
                                                     {"0x10", "'0x10'"},
                                                     {"+5", "'+5'"},
                                                     {"5x", "'5x'"},
                                                     {"inf", "'inf'"},
                                                     {"4294967296", "'4294967296'"},
                                                     {"1000000001", "'1000000001'"}};
  for (const auto& item : bad) {
    // Not a structured binding: a C++17 lambda (CAPTURE, the checks below) cannot capture one.
    const char* const value = item.first;
    const char* const shown = item.second;
    CAPTURE(value);
    const temp_file f("bx_lengths.txt", std::string("# lengths\n300\n") + value + "\n");
    for (const quantity q : {quantity::prompt_length, quantity::output_length}) {
      const std::string why =
          thrown<std::invalid_argument>([&] { (void)parse_trace_values(f.path, q); });
      CHECK(contains(why,
                     "bx_lengths.txt:3: field '(value)': a length must be a decimal integer "
                     "in [0, 1000000000] (value " +
                         std::string(shown) + ")"));
    }
  }
  const temp_file ok("bx_lengths_ok.txt", " 7 \n0\n1000000000\r\n");
  CHECK(parse_trace_values(ok.path, quantity::prompt_length) ==
        std::vector<double>{7, 1, 1000000000});  // 0 reads as 1 (a decode step)
  const temp_file json("bx_lengths.jsonl",
                       "{\"prompt_tokens\":4294967296,\"chunks\":[[1,4294967295],[2,5]]}\n");
  CHECK(contains(
      thrown<std::invalid_argument>(
          [&] { (void)parse_trace_values(json.path, quantity::prompt_length); }),
      "bx_lengths.jsonl:1: field 'prompt_tokens': not an integer in [0, 1000000000] (value "
      "4294967296)"));
  CHECK(contains(thrown<std::invalid_argument>(
                     [&] { (void)parse_trace_values(json.path, quantity::output_length); }),
                 "bx_lengths.jsonl:1: field 'chunks'"));
  // A field holding 1,000,000 nested arrays is named by its type (printing it would recurse
  // a million levels deep).
  const temp_file deep("bx_deep.jsonl", "{\"prompt_tokens\":" + std::string(1000000, '[') +
                                            std::string(1000000, ']') + "}\n");
  CHECK(contains(thrown<std::invalid_argument>(
                     [&] { (void)parse_trace_values(deep.path, quantity::prompt_length); }),
                 "bx_deep.jsonl:1: field 'prompt_tokens': not an integer in [0, 1000000000] "
                 "(value an array)"));
  const temp_file sum("bx_sum.jsonl", "{\"chunks\":[[1,600000000],[2,600000000]]}\n");
  CHECK(contains(thrown<std::invalid_argument>(
                     [&] { (void)parse_trace_values(sum.path, quantity::output_length); }),
                 "the tokens add up to more than 1000000000"));
  // Times: decimal numbers >= 0.
  const temp_file hex_time("bx_times.txt", "0x10\n");
  CHECK(contains(thrown<std::invalid_argument>(
                     [&] { (void)parse_trace_values(hex_time.path, quantity::seconds); }),
                 "bx_times.txt:1: field '(value)': not a decimal number (value '0x10')"));
  // Length specs are bounded too, and draws of unbounded kinds are cut at max_length.
  CHECK(contains(thrown<std::invalid_argument>([] {
                   (void)distribution::parse("fixed:5000000000", quantity::prompt_length);
                 }),
                 "at most 1000000000 tokens"));
  tokchron_loadgen::rng r(1);
  const distribution wide =
      distribution::parse("lognormal:999999999,1e12", quantity::output_length);
  for (int i = 0; i < 1000; ++i) CHECK(wide.sample_length(r) <= max_length);
}

TEST_CASE("X7: a trace line longer than 16 MiB is refused after reading 16 MiB") {
  const temp_file f("bx_long.txt",
                    "5\n" + std::string(tokchron_loadgen::max_trace_line + 1, '1') + "\n");
  CHECK(contains(thrown<std::invalid_argument>(
                     [&] { (void)parse_trace_values(f.path, quantity::prompt_length); }),
                 "bx_long.txt:2: field '(line)': longer than 16777216 bytes"));
  const temp_file fits("bx_fits.txt",
                       std::string(tokchron_loadgen::max_trace_line - 1, '0') + "7\n");
  CHECK(parse_trace_values(fits.path, quantity::prompt_length) == std::vector<double>{7});
  if (std::ifstream("/dev/zero"))
    CHECK(contains(thrown<std::invalid_argument>(
                       [] { (void)parse_trace_values("/dev/zero", quantity::prompt_length); }),
                   "/dev/zero:1: field '(line)': longer than"));
}

TEST_CASE("X8: think times and gaps past the clock's range end that user's or loop's arrivals") {
  scheduler_config sc;
  sim_backend be(sim_config{});
  workload w;
  w.users = 3;
  w.ramp_up_s = 1;  // first requests in [0, 1] s, then each user thinks 1e300 s
  w.think = distribution::parse("fixed:1e300", quantity::seconds);
  w.duration_s = 10;
  const run_result r = run(sc, w, be);
  REQUIRE(r.requests.size() == 3);
  for (const request& q : r.requests) CHECK(q.tl.reason() == tokchron::finish_reason::length);
  workload o;
  o.mode = arrival_mode::open;
  o.rate = 1e-300;  // the first gap is about 1e300 s
  CHECK(run(sc, o, be).requests.empty());
}

TEST_CASE("X9: numbers are decimal: hex, inf, nan, a sign or spaces are refused") {
  for (const char* bad : {"0x10", "inf", "nan", "+5", " 5", "5 ", "1e400", "", "5s", "--1"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_decimal(bad));
  }
  CHECK(parse_decimal("5") == 5.0);
  CHECK(parse_decimal("-1.5") == -1.5);
  CHECK(parse_decimal("2e3") == 2000.0);
  CHECK(contains(thrown<usage_error>([] {
                   (void)parse_command_line({"--rate", "0x10"});
                 }),
                 "--rate '0x10': not a number"));
  CHECK(contains(thrown<std::invalid_argument>(
                     [] { (void)distribution::parse("uniform:0x10,20", quantity::prompt_length); }),
                 "'0x10' is not a number"));
  CHECK(parse_memory_size("512MiB") == 512u << 20);
  CHECK(parse_memory_size("3") == 3);
  for (const char* bad : {"0", "-1MiB", "1e30", "2TiB", "MiB"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS((void)parse_memory_size(bad), std::invalid_argument);
  }
}

TEST_CASE("X10: a KV pool of 4e9 blocks allocates as blocks are used, with the same ids") {
  block_pool pool(4000000000u, 16);  // the free list of 4e9 ids would take 16 GB up front
  CHECK(pool.free() == 4000000000u);
  std::vector<std::uint32_t> a, b;
  REQUIRE(pool.grow(a, 3));
  CHECK(a == std::vector<std::uint32_t>{0, 1, 2});
  REQUIRE(pool.grow(b, 2));
  CHECK(b == std::vector<std::uint32_t>{3, 4});
  CHECK(pool.used() == 5);
  pool.release(a);
  CHECK(a.empty());
  REQUIRE(pool.grow(b, 6));  // freed blocks first, the last freed first
  CHECK(b == std::vector<std::uint32_t>{3, 4, 0, 1, 2, 5});
  block_pool small(2, 16);
  std::vector<std::uint32_t> c;
  CHECK_FALSE(small.grow(c, 3));
  CHECK(c.empty());
  CHECK(small.free() == 2);
}

TEST_CASE("X11: a sim step past the clock's range fails the run with a message") {
  sim_config cfg;
  cfg.t_fixed_s = 1e300;
  sim_backend be(cfg);
  batch b;
  sequence_work w;
  w.prefill_tokens = 4;
  w.samples = true;
  b.seqs.push_back(w);
  CHECK(contains(thrown<std::runtime_error>([&] { (void)be.step(b); }),
                 "sim: a step of 4 tokens would take"));
  CHECK_FALSE(be.predict_prefill(4));
  workload load;
  load.duration_s = 5;
  scheduler_config sc;
  CHECK(contains(thrown<std::runtime_error>([&] { (void)run(sc, load, be); }), "sim: a step"));
}

TEST_CASE("X13: a sim step shorter than 1 us is refused, so every run ends") {
  // issue 34: t_fixed 0 (or 1e-300) with an infinite bandwidth and throughput made every step
  // 0 ns: the virtual clock stood still and the run never ended.
  sim_config cfg;
  cfg.t_fixed_s = 0;
  cfg.t_seq_s = 0;
  cfg.t_request_s = 0;
  cfg.hw.bandwidth = 1e300;
  cfg.hw.flops = 1e300;
  CHECK(contains(thrown<std::invalid_argument>([&] { sim_backend be(cfg); }), "less than 1 us"));
  cfg.t_fixed_s = 1e-300;
  CHECK(contains(thrown<std::invalid_argument>([&] { sim_backend be(cfg); }), "less than 1 us"));
  cfg.t_fixed_s = 0.5e-6;  // jitter can shrink the roofline part only
  cfg.t_seq_s = 0.5e-6;
  CHECK_NOTHROW(sim_backend{cfg});
  cfg.t_fixed_s = cfg.t_seq_s = 0;
  cfg.hw.bandwidth = 1e12;  // a finite roofline at the lowest jitter factor decides
  cfg.hw.flops = 1e300;
  cfg.model.weight_bytes = 1e6;  // 1 us at full bandwidth, 0.1 us at jitter 0.29's lowest
  cfg.model.kv_bytes_per_token = 1;
  cfg.eta_bw = 1;
  cfg.jitter = 0.29;
  CHECK(contains(thrown<std::invalid_argument>([&] { sim_backend be(cfg); }), "less than 1 us"));
  cfg.jitter = 0;
  CHECK_NOTHROW(sim_backend{cfg});
}

TEST_CASE("X14: an option given twice is refused naming it and both values; lists merge") {
  // issue 34: a second value silently replaced the first (--percentiles, a --sweep axis twice).
  const auto refused = [](std::vector<std::string> args) {
    return thrown<usage_error>([&] { (void)parse_command_line(args); });
  };
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--rate", "1", "--rate", "2"},
           {"--percentiles", "50", "--percentiles=90"},
           {"--max_batch_size", "4", "--max-batch-size", "8"},  // both spellings are one option
           {"--format", "json", "--format", "table"},
           {"--memory-limit", "1GiB", "--memory-limit", "2GiB"},
           {"--prompt-len", "fixed:10", "--prompt-len", "fixed:20"}}) {
    const std::string m = refused(args);
    CHECK(contains(m, "is given twice ('" + args[1] + "', then '"));
  }
  CHECK(contains(refused({"--sweep", "rate=1,2", "--sweep", "rate=3"}),
                 "--sweep rate is given twice ('1,2', then '3')"));
  CHECK(contains(refused({"--sweep", "max_batch_size=1,2", "--sweep", "max-batch-size=3"}),
                 "--sweep max-batch-size is given twice"));
  CHECK(contains(refused({"--sim", "t_fixed=0.01", "--sim", "t_fixed=0.02"}),
                 "--sim t_fixed is given twice ('0.01', then '0.02')"));
  // lists: --slo, --sweep of different options, --sim of different keys
  const command_line cl = parse_command_line(
      {"--slo", "p95(ttft)<1s", "--slo", "p99(e2e)<9s", "--sweep", "rate=1,2", "--sweep",
       "max_batch_size=4,8", "--sim", "t_fixed=0.01", "--sim", "t_seq=0.0001"});
  CHECK(cl.slos.size() == 2);
  CHECK(cl.sweeps.size() == 2);
  CHECK(cl.base.sim.t_fixed_s == 0.01);
  CHECK(cl.base.sim.t_seq_s == 0.0001);
  // the shared rule itself, as serve, calibrate, published and tokchron-bench call it
  tokchron_cli::option_once once;
  CHECK_FALSE(note_option(once, "compute", "threads=2"));
  CHECK_FALSE(note_option(once, "compute", "seed=3"));
  CHECK(note_option(once, "compute", "threads=4").value_or("") ==
        "--compute threads is given twice ('2', then '4'); give it once");
  CHECK_FALSE(note_option(once, "slo", "a"));
  CHECK_FALSE(note_option(once, "slo", "a"));
  CHECK_FALSE(note_option(once, "think_time", "exp:1"));
  CHECK(note_option(once, "think-time", "exp:2").value_or("").find("--think-time is given twice") ==
        0);
}
