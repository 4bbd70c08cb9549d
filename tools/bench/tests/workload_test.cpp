// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
// tokchron-bench's workloads (workloads.hpp): traces read for replay (tokchron's, Mooncake's,
// BurstGPT's) and their malformed lines; a replay against the scripted server, its schedule
// and lengths exact; Mooncake's hash_ids blocks and synthetic prefix groups shared byte for byte
// and nothing else.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_cli.hpp"
#include "client.hpp"
#include "scripted_server.hpp"
#include "tokchron/io/trace_json_reader.hpp"
#include "workloads.hpp"

namespace tb = tokchron_bench;
namespace tc = tokchron;
using namespace std::chrono_literals;

namespace {

tb::replay_plan read(const std::string& text, std::optional<tb::replay_format> f = std::nullopt) {
  std::istringstream in(text);
  return tb::read_replay(in, "t", f);
}

// The error `read` gives for `text` (empty: none).
std::string error_of(const std::string& text, std::optional<tb::replay_format> f = std::nullopt) {
  try {
    (void)read(text, f);
  } catch (const tb::replay_error& e) {
    return e.what();
  }
  return {};
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> w;
  std::istringstream in(s);
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

std::size_t text_chunks(const std::vector<tb::emission>& e) {
  std::size_t n = 0;
  for (const auto& x : e) n += x.kind == "text";
  return n;
}

std::string url_of(const tb::scripted_server& srv) {
  return "http://127.0.0.1:" + std::to_string(srv.port());
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = std::string(TOKCHRON_BENCH_TEST_DIR) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("read_replay: Mooncake's JSON Lines (timestamp ms, input/output_length, hash_ids)") {
  // Lines as Mooncake's FAST25-release/traces/conversation_trace.jsonl writes them.
  const auto p = read(
      "{\"timestamp\": 3000, \"input_length\": 915, \"output_length\": 355, \"hash_ids\": [0, "
      "462]}\n"
      "\n"
      "{\"timestamp\": 0, \"input_length\": 6758, \"output_length\": 500, \"hash_ids\": [0, 1, 2, "
      "3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]}\n"
      "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 0}\n"
      "{\"timestamp\": 5999, \"input_length\": 1053, \"output_length\": 26}\n");
  CHECK(p.format == tb::replay_format::mooncake);
  CHECK(p.lines == 5);
  CHECK(p.no_output == 1);
  REQUIRE(p.requests.size() == 3);
  // In order of time; times since the earliest.
  CHECK(p.requests[0].line == 3);
  CHECK(p.requests[0].at_ns == 0);
  CHECK(p.requests[0].prompt_tokens == 6758);
  CHECK(p.requests[0].output_tokens == 500);
  CHECK(p.requests[0].block_count == 14);
  CHECK(p.requests[1].at_ns == 3000000000);
  CHECK(p.requests[1].block_count == 2);
  CHECK(p.blocks[p.requests[1].first_block + 1] == 462);
  CHECK(p.requests[2].at_ns == 5999000000);
  CHECK(p.requests[2].block_count == 0);
  CHECK(p.blocks.size() == 16);
}

TEST_CASE("read_replay: BurstGPT's CSV, columns by name; failures (0 response tokens) skipped") {
  const auto p = read(
      "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\r\n"
      "5,ChatGPT,472,18,490,Conversation log\r\n"
      "45,\"GPT-4\",1087,0,1087,API log\r\n"
      "7.5,GPT-4,0,30,30,\"Conversation, log\"\r\n");
  CHECK(p.format == tb::replay_format::burstgpt);
  CHECK(p.no_output == 1);
  REQUIRE(p.requests.size() == 2);
  CHECK(p.requests[0].at_ns == 0);
  CHECK(p.requests[0].prompt_tokens == 472);
  CHECK(p.requests[0].output_tokens == 18);
  CHECK(p.requests[1].at_ns == 2500000000);
  CHECK(p.requests[1].prompt_tokens == 1);  // a recorded 0 is sent as 1 word
  CHECK(p.requests[1].output_tokens == 30);
  // Columns found by their names, whatever their order.
  const auto q = read("Log Type,Response tokens,Timestamp,Request tokens\nAPI log,3,1.25,9\n");
  REQUIRE(q.requests.size() == 1);
  CHECK(q.requests[0].output_tokens == 3);
  CHECK(q.requests[0].prompt_tokens == 9);
}

TEST_CASE("read_replay: tokchron's trace: arrival (or send), prompt_tokens, output tokens") {
  const auto p = read(
      "{\"id\":\"a\",\"arrival\":12.5,\"send\":12.6,\"prompt_tokens\":300,\"chunks\":[[12.7,1],"
      "[12.8,2,\"reasoning\"],[12.9,0,\"usage\"]],\"usage_output_tokens\":7}\n"
      "{\"id\":\"b\",\"send\":12.0,\"prompt_tokens\":40,\"chunks\":[[12.1,1],[12.2,2],[12.3,0,"
      "\"empty\"]]}\n"
      "{\"id\":\"c\",\"send\":13.0,\"prompt_tokens\":40,\"chunks\":[],\"ok\":false}\n");
  CHECK(p.format == tb::replay_format::tokchron);
  CHECK(p.no_output == 1);
  REQUIRE(p.requests.size() == 2);
  CHECK(p.requests[0].line == 2);
  CHECK(p.requests[0].output_tokens == 3);  // its chunks' tokens, without usage
  CHECK(p.requests[1].at_ns == 500000000);
  CHECK(p.requests[1].output_tokens == 7);  // the server's usage count
  CHECK(p.requests[1].prompt_tokens == 300);
}

TEST_CASE("read_replay: a malformed line is refused, naming the line and the field") {
  const std::string ok = "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2}\n";
  const std::vector<std::pair<std::string, std::string>> cases{
      {ok + "{\"input_length\": 5, \"output_length\": 2}", "t: line 2: field timestamp: missing"},
      {ok + "{\"timestamp\": -1, \"input_length\": 5, \"output_length\": 2}",
       "t: line 2: field timestamp: must be a non-negative number"},
      {ok + "{\"timestamp\": \"0\", \"input_length\": 5, \"output_length\": 2}",
       "t: line 2: field timestamp: must be a number (milliseconds)"},
      {ok + "{\"timestamp\": 1e300, \"input_length\": 5, \"output_length\": 2}",
       "t: line 2: field timestamp: must be a non-negative number within 9e9 seconds"},
      {ok + "{\"timestamp\": 0, \"input_length\": 5.5, \"output_length\": 2}",
       "t: line 2: field input_length: must be a non-negative integer"},
      {ok + "{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 2}",
       "t: line 2: field input_length: must be at least 1"},
      {ok + "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 99999999999}",
       "t: line 2: field output_length: 99999999999 tokens, more than a replay sends (1048576)"},
      {ok + "{\"timestamp\": 0, \"input_length\": 513, \"output_length\": 2, \"hash_ids\": [1, 2, "
            "3]}",
       "t: line 2: field hash_ids: 3 blocks of 512 tokens, more than input_length 513 fills (2)"},
      {ok + "{\"timestamp\": 0, \"input_length\": 513, \"output_length\": 2, \"hash_ids\": [1, "
            "-2]}",
       "t: line 2: field hash_ids[1]: must be a non-negative integer"},
      {ok + "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2, \"hash_ids\": 7}",
       "t: line 2: field hash_ids: must be an array"},
      {ok + "{\"timestamp\": 0, \"input_length\": 5", "t: line 2: not a JSON object"},
      {"Timestamp,Request tokens\n1,2\n",
       "t: line 1: field Response tokens: missing from the "
       "CSV header"},
      {"Timestamp,Request tokens,Response tokens\n1,2\n", "t: line 2: 2 fields, the header has 3"},
      {"Timestamp,Request tokens,Response tokens\n1,2,x3\n",
       "t: line 2: field Response tokens: 'x3' is not a non-negative integer"},
      {"Timestamp,Request tokens,Response tokens\nnan,2,3\n",
       "t: line 2: field Timestamp: must be a non-negative number"},
      {"Timestamp,Request tokens,Response tokens\n1s,2,3\n",
       "t: line 2: field Timestamp: '1s' is not a number (seconds)"},
      {"Timestamp,Request tokens,Response tokens\n1,\"2,3\n",
       "t: line 2: a quoted CSV field does not end on its line"},
      {"{\"send\":1,\"chunks\":[[2,1]]}\n", "t: line 1: field prompt_tokens: missing"},
      {"{\"send\":1,\"prompt_tokens\":3,\"chunks\":[[0.5,1]]}\n", "t: line 1: field chunks"},
      {"time,prompt\n1,2\n", "t: line 1: not a trace --replay reads"},
      {"\n\n", "t: no request to replay (2 lines, 0 without output)"},
      {"{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 0}\n",
       "t: no request to replay (1 lines, 1 without output)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.first);
    const std::string e = error_of(c.first);
    CAPTURE(e);
    CHECK(e.rfind(c.second, 0) == 0);
  }
  // A named format reads the file as that format.
  CHECK(error_of(ok, tb::replay_format::burstgpt)
            .rfind("t: line 1: field Timestamp: missing from the CSV header", 0) == 0);
  CHECK(error_of(ok, tb::replay_format::tokchron).rfind("t: line 1: field send", 0) == 0);
}

TEST_CASE("append_words: n words; one key one text; keys differ within 16 words") {
  std::string a, b, c, d;
  tb::append_words(a, 7, 0, 600, false);
  tb::append_words(b, 7, 0, 600, false);
  tb::append_words(c, 8, 0, 600, false);
  tb::append_words(d, 7, 1, 20, true);
  CHECK(words(a).size() == 600);
  CHECK(a == b);
  CHECK(a.front() != ' ');
  CHECK(d.front() == ' ');
  CHECK(words(d).size() == 20);
  const auto wa = words(a), wc = words(c), wd = words(d);
  bool differ = false;
  for (std::size_t i = 0; i < 16; ++i) differ = differ || wa[i] != wc[i];
  CHECK(differ);
  for (std::size_t i = 16; i < 600; ++i) CHECK(wa[i] == "the");
  // The two alphabets share no word: a request's own words never continue a block.
  for (std::size_t i = 0; i < 16; ++i)
    CHECK(std::find(wa.begin(), wa.begin() + 16, wd[i]) == wa.begin() + 16);
}

TEST_CASE("synthetic prompts: exact lengths, their own words, no shared block of 16") {
  // Each prompt is its number's own key (alphabet 1) in its first 16 words.
  for (const std::uint32_t n : {1u, 15u, 16u, 17u, 600u}) {
    const std::string p = tb::synthetic_prompt(1, 3, n);
    CHECK(words(p).size() == n);
    CHECK(p.front() != ' ');
    CHECK(p.find("  ") == std::string::npos);
    CHECK(p == tb::synthetic_prompt(1, 3, n));
  }
  std::string own;
  tb::append_words(own, tb::own_key(1, 3), 1, 40, false);
  CHECK(tb::synthetic_prompt(1, 3, 40) == own);
  CHECK(tb::synthetic_prompt(2, 3, 40) != own);  // another --seed, other words
  CHECK(tb::prompt_seed(1, "") == 1);
  CHECK(tb::prompt_seed(1, "host1-") != tb::prompt_seed(1, "host2-"));
  // Keys differ, so two numbers' prompts differ within 16 words; the first words of 4096
  // consecutive numbers agree with the next one's in about 1 case in 16 (binomial, n = 4095,
  // p = 1/16: mean 256, standard deviation 15.5; the bound is 6 deviations).
  std::size_t same_first = 0;
  std::vector<std::string> previous = words(tb::synthetic_prompt(7, 0, 16));
  for (std::uint64_t i = 1; i < 4096; ++i) {
    const std::vector<std::string> w = words(tb::synthetic_prompt(7, i, 16));
    CAPTURE(i);
    CHECK(w != previous);
    same_first += w[0] == previous[0];
    previous = w;
  }
  CHECK(same_first >= 163);
  CHECK(same_first <= 349);
}

TEST_CASE("a synthetic run: each request's own prompt of its length, points share none") {
  tb::scripted_server srv({1ms, 1ms, 2});
  tb::load_options lo;
  lo.tgt = tb::parse_target(url_of(srv), "completions", "m");
  lo.work.mode = tokchron_loadgen::arrival_mode::closed;
  lo.work.users = 2;
  lo.work.max_requests = 6;
  lo.work.duration_s = 30;
  lo.work.seed = 5;
  lo.work.prompt =
      tokchron_loadgen::distribution::fixed(40, tokchron_loadgen::quantity::prompt_length);
  lo.work.output =
      tokchron_loadgen::distribution::fixed(2, tokchron_loadgen::quantity::output_length);
  // Two points of a sweep: the second's request numbers continue from the first's.
  const auto first = tb::run_load(lo);
  lo.first_request_id = 6;
  lo.work.prompt =
      tokchron_loadgen::distribution::fixed(23, tokchron_loadgen::quantity::prompt_length);
  const auto second = tb::run_load(lo);
  REQUIRE(first.requests.size() == 6);
  REQUIRE(second.requests.size() == 6);
  const auto prompts = srv.prompts();
  std::vector<std::vector<std::string>> w;
  for (const auto* r : {&first, &second})
    for (const auto& o : r->requests) {
      CHECK(o.error.empty());
      w.push_back(words(prompts.at(o.request_id)));
      CHECK(w.back().size() == (r == &first ? 40u : 23u));
      CHECK(w.back().size() == *o.tl.prompt_tokens());
    }
  // The first two requests' prompts differ in their first word (for seed 5); every pair
  // within its first 16 words, so no prefix cache block of 16 tokens is shared.
  CHECK(w[0][0] != w[1][0]);
  for (std::size_t i = 0; i < w.size(); ++i)
    for (std::size_t j = i + 1; j < w.size(); ++j) {
      CAPTURE(i);
      CAPTURE(j);
      CHECK(!std::equal(w[i].begin(), w[i].begin() + 16, w[j].begin()));
    }
}

TEST_CASE("a Mooncake replay: the recorded schedule, lengths and shared blocks, exactly") {
  tb::scripted_server srv({1ms, 1ms, 2});
  // Timestamps in ms; requests 0 and 2 share their first block, 1 and 2 none with 0 beyond it.
  auto plan = std::make_shared<const tb::replay_plan>(read(
      "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 3, \"hash_ids\": [0, 1, 2]}\n"
      "{\"timestamp\": 40, \"input_length\": 20, \"output_length\": 2}\n"
      "{\"timestamp\": 90, \"input_length\": 700, \"output_length\": 4, \"hash_ids\": [0, 5]}\n"
      "{\"timestamp\": 90, \"input_length\": 1100, \"output_length\": 1, \"hash_ids\": [0, 1, "
      "2]}\n"));
  for (const double speed : {1.0, 2.0}) {
    CAPTURE(speed);
    tb::load_options lo;
    lo.tgt = tb::parse_target(url_of(srv), "completions", "m");
    lo.first_request_id = speed == 1.0 ? 0 : 100;
    tb::replay_settings rs;
    rs.speed = speed;
    auto h = tb::replay_hooks(plan, rs);
    lo.schedule = h.schedule;
    lo.body = h.body;
    const auto r = tb::run_load(lo);
    REQUIRE(r.requests.size() == 4);
    const auto prompts = srv.prompts();
    const auto sent = srv.emissions();
    std::map<std::uint64_t, std::vector<std::string>> by_id;
    for (const auto& o : r.requests) {
      CAPTURE(o.request_id);
      CHECK(o.error.empty());
      const auto& q = plan->requests[o.id];
      // Intended at the recorded time divided by the speed, to the nanosecond.
      CHECK(*o.tl.arrival() - r.zero ==
            std::chrono::nanoseconds(std::llround(static_cast<double>(q.at_ns) / speed)));
      by_id[o.id] = words(prompts.at(o.request_id));
      CHECK(by_id[o.id].size() == q.prompt_tokens);
      CHECK(text_chunks(sent.at(o.request_id)) == q.output_tokens);
      CHECK(o.tl.prompt_tokens() == q.prompt_tokens);  // the server's usage count
    }
    const auto same = [&](std::uint64_t i, std::uint64_t j, std::size_t from, std::size_t to) {
      return std::equal(by_id[i].begin() + static_cast<std::ptrdiff_t>(from),
                        by_id[i].begin() + static_cast<std::ptrdiff_t>(to),
                        by_id[j].begin() + static_cast<std::ptrdiff_t>(from));
    };
    // Requests 0 and 2 (ids by time) share block 0 (512 words); their second blocks differ.
    CHECK(same(0, 2, 0, 512));
    CHECK(!same(0, 2, 512, 528));
    // Requests 0 and 3 have the same blocks: the same prompt, byte for byte.
    CHECK(prompts.at(std::to_string(lo.first_request_id + 0)) ==
          prompts.at(std::to_string(lo.first_request_id + 3)));
    // Request 1 has no blocks: its words are its own from the first.
    CHECK(!same(0, 1, 0, 16));
    // Reusable: 512 (request 2's block 0) + 1100 (request 3, all of it).
    CHECK(h.counts->prompts == 4);
    CHECK(h.counts->prompt_tokens == 1100 + 20 + 700 + 1100);
    CHECK(h.counts->reusable_tokens == 512 + 1100);
  }
  // Another seed: other words.
  tb::replay_settings rs;
  rs.seed = 2;
  std::string other = tb::replay_hooks(plan, rs).body(
      tb::parse_target(url_of(srv), "completions", "m"), tokchron_loadgen::arrival{});
  CHECK(other.find(srv.prompts().at("0").substr(0, 200)) == std::string::npos);
}

TEST_CASE("--replay: a limit, a window, the speed; bad combinations and files refused") {
  tb::scripted_server srv({1ms, 1ms, 2});
  const std::string trace =
      write_file("replay_burst.csv",
                 "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                 "100,ChatGPT,5,2,7,Conversation log\n"
                 "100.05,ChatGPT,9,3,12,Conversation log\n"
                 "100.1,GPT-4,3,0,3,API log\n"
                 "100.2,GPT-4,7,1,8,API log\n"
                 "100.3,GPT-4,4,2,6,API log\n");
  const std::string out_path = std::string(TOKCHRON_BENCH_TEST_DIR) + "/replay_out.jsonl";
  const auto run = [&](std::vector<std::string> extra, std::ostringstream& out,
                       std::ostringstream& err) {
    std::vector<std::string> args{"--url",      url_of(srv), "--replay",    trace,
                                  "--progress", "never",     "--format",    "csv",
                                  "--profile",  "canonical", "--trace-out", out_path};
    args.insert(args.end(), extra.begin(), extra.end());
    return tb::run_cli(args, out, err);
  };
  const auto arrivals = [&] {
    std::map<std::string, std::pair<double, std::uint64_t>> a;  // id: arrival, prompt
    std::ifstream f(out_path);
    for (std::string l; std::getline(f, l);) {
      const auto r = tc::parse_trace_line(l);
      REQUIRE(r.record);
      a[r.record->id] = {*r.record->arrival, r.record->prompt_tokens.value_or(0)};
    }
    return a;
  };
  {
    std::ostringstream out, err;
    CHECK(run({"--replay-speed", "2"}, out, err) == 0);
    CAPTURE(err.str());
    CHECK(err.str().find("replaying " + trace +
                         " (burstgpt): 4 requests over 0.3 s as recorded; 1 recorded without "
                         "output tokens are not sent") != std::string::npos);
    CHECK(err.str().find("tokchron-bench: prompts: 4 requests sent 25 prompt tokens") !=
          std::string::npos);
    const auto a = arrivals();
    REQUIRE(a.size() == 4);
    // Recorded gaps halved: 0, 0.025, 0.1, 0.15 s (the trace's times are since the run's zero).
    const std::vector<std::pair<double, std::uint64_t>> want{
        {0, 5}, {0.025, 9}, {0.1, 7}, {0.15, 4}};
    for (std::size_t i = 0; i < 4; ++i) {
      CAPTURE(i);
      CHECK(std::abs(a.at(std::to_string(i)).first - want[i].first) < 1e-9);  // to the ns
      CHECK(a.at(std::to_string(i)).second == want[i].second);
    }
  }
  {
    std::ostringstream out, err;
    CHECK(run({"--max-requests", "2"}, out, err) == 0);
    CHECK(arrivals().size() == 2);
  }
  {
    std::ostringstream out, err;
    CHECK(run({"--duration", "0.15", "--warmup", "0.01"}, out, err) == 0);
    const auto a = arrivals();  // sent at 0, 0.05, 0.2: the window keeps 0.05 (0 is warm-up)
    REQUIRE(a.size() == 1);
    CHECK(a.count("1") == 1);
  }
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused{
      {{"--replay", trace, "--rate", "3"}, "--rate does not go with --replay"},
      {{"--replay", trace, "--sweep", "seed=1,2"}, "--sweep does not go with --replay"},
      {{"--replay", trace, "--shared-prefix", "3"}, "--shared-prefix does not go with --replay"},
      {{"--replay-speed", "2"}, "--replay-format and --replay-speed go with --replay"},
      {{"--replay", trace, "--replay-speed", "0"}, "--replay-speed '0': must be a number in"},
      {{"--replay", trace, "--replay-format", "csv"}, "--replay-format 'csv': expected auto"},
      {{"--replay", trace, "--replay-format", "mooncake"},
       "--replay: " + trace + ": line 1: not a JSON object"},
      {{"--replay", trace + ".missing"}, "--replay: cannot read " + trace + ".missing"},
      {{"--prefix-groups", "3"}, "--prefix-groups needs --shared-prefix"},
      {{"--prefix-groups", "0", "--shared-prefix", "3"}, "--prefix-groups '0': must be"},
      {{"--shared-prefix", "2000000"}, "--shared-prefix: at most 1048576 tokens"},
  };
  for (const auto& c : refused) {
    std::ostringstream out, err;
    CAPTURE(c.second);
    CHECK(tb::run_cli(c.first, out, err) == 2);
    CAPTURE(err.str());
    CHECK(err.str().find("tokchron-bench: " + c.second) == 0);
  }
  std::remove(out_path.c_str());
}

TEST_CASE("sweep points and repeated runs: each run's prefixes and blocks are words of its own") {
  tb::scripted_server srv({1ms, 1ms, 2});
  const std::string trace = write_file("repeat_trace.jsonl",
                                       "{\"timestamp\": 0, \"input_length\": 40, "
                                       "\"output_length\": 2, \"hash_ids\": [7]}\n");
  const auto run = [&](std::vector<std::string> args) {
    std::ostringstream out, err;
    std::vector<std::string> all{"--url",    url_of(srv), "--progress", "never",
                                 "--format", "csv",       "--profile",  "canonical"};
    all.insert(all.end(), args.begin(), args.end());
    const int rc = tb::run_cli(all, out, err);
    CAPTURE(err.str());
    CHECK(rc == 0);
  };
  // One group's 20-word prefix, two requests a point, two points of one seed: within a point
  // both share it; the second point's prefix is another (a prefix cache warm from the first
  // point would serve none of it).
  run({"--users", "1", "--max-requests", "2", "--duration", "30", "--shared-prefix", "20",
       "--prompt-len", "fixed:16", "--output-len", "fixed:2", "--sweep", "users=1,1"});
  // A one-request trace of one 40-token block, replayed twice (--repeat): the block's words
  // differ.
  run({"--replay", trace, "--repeat", "2", "--id-prefix", "r-"});
  auto prompts = srv.prompts();
  REQUIRE(prompts.size() == 6);
  std::vector<std::vector<std::string>> w;
  for (const auto& [id, text] : prompts) w.push_back(words(text));  // by id: 0 ... 3, r-0, r-1
  const auto same = [&](std::size_t a, std::size_t b, std::size_t n) {
    return std::equal(w[a].begin(), w[a].begin() + static_cast<std::ptrdiff_t>(n), w[b].begin());
  };
  CHECK(same(0, 1, 20));   // point 1: one prefix
  CHECK(same(2, 3, 20));   // point 2: one prefix
  CHECK(!same(0, 2, 16));  // not point 1's
  CHECK(w[4].size() == 40);
  CHECK(!same(4, 5, 16));  // the replayed block, run 1 and run 2
}

TEST_CASE("--shared-prefix with --prefix-groups: each group's prefix, byte for byte, only it") {
  tb::scripted_server srv({1ms, 1ms, 2});
  tb::load_options lo;
  lo.tgt = tb::parse_target(url_of(srv), "chat", "m");
  lo.work.mode = tokchron_loadgen::arrival_mode::closed;
  lo.work.users = 2;
  lo.work.max_requests = 9;
  lo.work.duration_s = 30;
  lo.work.shared_prefix = 20;
  // Own parts of at least 16 words: their first 16 words hold the whole (mixed) key.
  lo.work.prompt = tokchron_loadgen::distribution::parse("uniform:16,30",
                                                         tokchron_loadgen::quantity::prompt_length);
  lo.work.output =
      tokchron_loadgen::distribution::fixed(2, tokchron_loadgen::quantity::output_length);
  auto h = tb::prefix_group_hooks(3, 1);
  lo.body = h.body;
  const auto r = tb::run_load(lo);
  REQUIRE(r.requests.size() == 9);
  const auto prompts = srv.prompts();
  std::map<std::uint64_t, std::vector<std::string>> w;
  std::uint64_t tokens = 0;
  for (const auto& o : r.requests) {
    CHECK(o.error.empty());
    w[o.id] = words(prompts.at(o.request_id));
    CHECK(w[o.id].size() == *o.tl.prompt_tokens());
    CHECK(w[o.id].size() > 20);
    tokens += w[o.id].size();
  }
  for (std::uint64_t i = 0; i < 9; ++i)
    for (std::uint64_t j = i + 1; j < 9; ++j) {
      CAPTURE(i);
      CAPTURE(j);
      const bool same_prefix = std::equal(w[i].begin(), w[i].begin() + 20, w[j].begin());
      CHECK(same_prefix == (i % 3 == j % 3));
      CHECK(!std::equal(w[i].begin() + 20, w[i].begin() + 36, w[j].begin() + 20));
    }
  CHECK(h.counts->prompts == 9);
  CHECK(h.counts->prompt_tokens == tokens);
  CHECK(h.counts->reusable_tokens == 6 * 20);
}
