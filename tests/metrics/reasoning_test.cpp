// SPDX-License-Identifier: MIT
// Reasoning, prompt caching and speculative decoding: hand-checked trace records through the
// timeline, the canonical metrics, the AIPerf profile (against an independent computation of
// AIPerf's formulas), the run summary and the SLO grammar.
//
// Times in the records are multiples of 10 ms, which trace_clock holds as exact integer
// nanoseconds, so every difference converts to the same double as its decimal literal: time
// expectations are exact. Rates divide once more (one rounding): Approx with epsilon 1e-12.
#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tokchron/io/trace.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/sla/objective.hpp"
#include "tokchron/timeline/replay.hpp"

namespace tc = tokchron;

namespace {
using K = tc::chunk_kind;
/// A record with its id, send time and chunks; the rest as trace_record's defaults.
tc::trace_record record(const char* id, double send, std::vector<tc::trace_chunk> chunks) {
  tc::trace_record r;
  r.id = id;
  r.send = send;
  r.chunks = std::move(chunks);
  return r;
}
/// Reasoning (4 tokens in 3 chunks) then the answer (4 tokens in 2 chunks), role, usage and
/// [DONE] chunks around them; 100 prompt tokens of which 40 cached; 20 drafted, 15 accepted.
tc::trace_record reasoning_then_answer() {
  tc::trace_record r = record("a", 0.0,
                              {{0.05, 0, K::empty},
                               {0.20, 1, K::reasoning},
                               {0.25, 2, K::reasoning},
                               {0.30, 1, K::reasoning},
                               {0.50, 1, K::text},
                               {0.55, 3, K::text},
                               {0.56, 0, K::usage},
                               {0.57, 0, K::done}});
  r.end = 0.58;
  r.prompt_tokens = 100;
  r.cached_prompt_tokens = 40;
  r.usage_output_tokens = 8;
  r.usage_reasoning_tokens = 4;
  r.spec_draft_tokens = 20;
  r.spec_accepted_tokens = 15;
  return r;
}
/// An answer with no reasoning: 2 tokens in the first chunk, then 1.
tc::trace_record answer_only() {
  tc::trace_record r = record("b", 1.0, {{1.10, 2, K::text}, {1.30, 1, K::text}});
  r.prompt_tokens = 10;
  r.cached_prompt_tokens = 0;
  return r;
}
/// Reasoning with no answer: the length limit ran out while thinking.
tc::trace_record reasoning_only() {
  tc::trace_record r = record("c", 2.0, {{2.40, 1, K::reasoning}, {2.60, 1, K::reasoning}});
  r.reason = tc::finish_reason::length;
  return r;
}
/// A failure mid-reasoning.
tc::trace_record failed_mid_reasoning() {
  tc::trace_record r = record("d", 3.0, {{3.50, 1, K::reasoning}, {3.60, 1, K::reasoning}});
  r.end = 3.70;
  r.ok = false;
  r.reason = tc::finish_reason::error;
  r.prompt_tokens = 50;
  return r;
}
/// A 1-token answer after 1 token of reasoning.
tc::trace_record one_token_answer() {
  tc::trace_record r = record("e", 4.0, {{4.20, 1, K::reasoning}, {4.30, 1, K::text}});
  r.prompt_tokens = 30;
  return r;
}
/// Two responses at the same instant (a zero gap).
tc::trace_record zero_gap() {
  tc::trace_record r =
      record("f", 5.0, {{5.10, 1, K::text}, {5.10, 1, K::text}, {5.20, 1, K::text}});
  r.prompt_tokens = 20;
  return r;
}

std::vector<double> canonical_icl(const tc::trace_timeline& tl) {
  std::vector<double> out;
  tc::for_each_itl_per_chunk(tl, [&](auto gap) { out.push_back(tc::to_seconds(gap)); });
  return out;
}
}  // namespace

TEST_CASE("reasoning: hand-checked canonical TTFT, TTFA, reasoning time, TTST, ICL, prefill") {
  SUBCASE("reasoning then answer") {
    const tc::trace_record rec = reasoning_then_answer();
    REQUIRE_FALSE(tc::validate(rec));
    const auto tl = tc::to_timeline(rec);
    const tc::request_metrics m = tc::canonical_metrics(tl);
    CHECK(*m.ttft == 0.20);  // the first token of any kind: reasoning
    CHECK(*m.ttfa == 0.50);
    CHECK(*m.reasoning_time == 0.30);
    CHECK(*m.ttst == 0.05);  // the second token is in the chunk at 0.25
    CHECK(canonical_icl(tl) == std::vector<double>{0.05, 0.05, 0.20, 0.05});
    CHECK(*m.prefill_tps == doctest::Approx(500.0).epsilon(1e-12));           // 100 / 0.2
    CHECK(*m.uncached_prefill_tps == doctest::Approx(300.0).epsilon(1e-12));  // 60 / 0.2
    CHECK(*m.spec_acceptance == 0.75);
    CHECK(m.output_tokens == 8);  // reasoning tokens are output tokens
    CHECK(m.reasoning_tokens == 4);
    CHECK(*m.cached_prompt_tokens == 40);
    CHECK(*tl.reported_reasoning_tokens() == 4);
    // TPOT spans reasoning and answer: (0.55 - 0.20) / 7.
    CHECK(*m.tpot == doctest::Approx(0.35 / 7).epsilon(1e-12));
  }
  SUBCASE("an answer with no reasoning: TTFA = TTFT, no reasoning time, TTST 0") {
    const auto tl = tc::to_timeline(answer_only());
    const tc::request_metrics m = tc::canonical_metrics(tl);
    CHECK(*m.ttft == doctest::Approx(0.10).epsilon(1e-12));
    CHECK(*m.ttfa == *m.ttft);
    CHECK_FALSE(m.reasoning_time);
    CHECK(*m.ttst == 0.0);  // the first chunk carried two tokens
    CHECK(canonical_icl(tl).size() == 1);
    CHECK(*m.prefill_tps == doctest::Approx(100.0).epsilon(1e-12));
    CHECK(*m.uncached_prefill_tps == *m.prefill_tps);  // zero cached
    CHECK_FALSE(m.spec_acceptance);
    CHECK(m.reasoning_tokens == 0);
  }
  SUBCASE("reasoning with no answer: TTFT only") {
    const auto tl = tc::to_timeline(reasoning_only());
    const tc::request_metrics m = tc::canonical_metrics(tl);
    CHECK(m.succeeded);
    CHECK(*m.ttft == doctest::Approx(0.40).epsilon(1e-12));
    CHECK_FALSE(m.ttfa);
    CHECK_FALSE(m.reasoning_time);
    CHECK(*m.ttst == doctest::Approx(0.20).epsilon(1e-12));
    CHECK_FALSE(m.prefill_tps);  // no prompt length
  }
  SUBCASE("a failure mid-reasoning: TTFT and E2E, no answer") {
    const auto tl = tc::to_timeline(failed_mid_reasoning());
    const tc::request_metrics m = tc::canonical_metrics(tl);
    CHECK_FALSE(m.succeeded);
    CHECK(*m.ttft == doctest::Approx(0.50).epsilon(1e-12));
    CHECK(*m.e2e == doctest::Approx(0.70).epsilon(1e-12));
    CHECK_FALSE(m.ttfa);
    CHECK_FALSE(m.reasoning_time);
    CHECK(*m.prefill_tps == doctest::Approx(100.0).epsilon(1e-12));
    CHECK_FALSE(m.uncached_prefill_tps);  // no cached count reported
  }
  SUBCASE("a 1-token answer") {
    const tc::request_metrics m = tc::canonical_metrics(tc::to_timeline(one_token_answer()));
    CHECK(*m.ttfa == doctest::Approx(0.30).epsilon(1e-12));
    CHECK(*m.reasoning_time == doctest::Approx(0.10).epsilon(1e-12));
    CHECK(*m.ttst == doctest::Approx(0.10).epsilon(1e-12));
  }
  SUBCASE("reasoning that starts after the answer gives no reasoning time") {
    tc::trace_record r = answer_only();
    r.chunks.push_back({1.40, 1, K::reasoning});
    const tc::request_metrics m = tc::canonical_metrics(tc::to_timeline(r));
    CHECK_FALSE(m.reasoning_time);
    CHECK(*m.ttfa == *m.ttft);
    CHECK(m.reasoning_tokens == 1);
  }
  SUBCASE("no usage, no prompt: the usage-based metrics are empty, not 0") {
    tc::trace_record r = reasoning_only();
    const auto tl = tc::to_timeline(r);
    CHECK_FALSE(tl.cached_prompt_tokens());
    CHECK_FALSE(tl.reported_reasoning_tokens());
    CHECK(tl.reasoning_tokens() == 2);
    const tc::request_metrics m = tc::canonical_metrics(tl);
    CHECK_FALSE(m.uncached_prefill_tps);
    CHECK_FALSE(m.spec_acceptance);
  }
}

TEST_CASE("reasoning: the streaming store gives the full store's TTFA, reasoning time, TTST") {
  for (const tc::trace_record& rec :
       {reasoning_then_answer(), answer_only(), reasoning_only(), failed_mid_reasoning()}) {
    const auto full = tc::to_timeline(rec);
    tc::basic_request_timeline<tc::trace_clock, tc::streaming_store<>> s;
    tc::replay(full, s);
    CHECK(tc::ttfa(s) == tc::ttfa(full));
    CHECK(tc::reasoning_time(s) == tc::reasoning_time(full));
    CHECK(tc::ttst(s) == tc::ttst(full));
    CHECK(s.reasoning_tokens() == full.reasoning_tokens());
  }
}

TEST_CASE("reasoning: set_speculative refuses accepted > drafted and counts the misuse") {
  tc::request_timeline tl;
  CHECK(tl.set_speculative(3, 4) == tc::record_status::invalid_count);
  CHECK(tl.misuse_count() == 1);
  CHECK(tl.last_misuse() == tc::record_status::invalid_count);
  CHECK_FALSE(tl.speculative_drafted_tokens());
  CHECK(tl.set_speculative(4, 4) == tc::record_status::ok);
  CHECK(*tl.speculative_accepted_tokens() == 4);
  CHECK(tl.misuse_count() == 1);
  CHECK(tc::to_string(tc::record_status::invalid_count) == "invalid_count");
  CHECK(tc::to_string(K::reasoning) == "reasoning");
  CHECK(*tc::parse_chunk_kind("reasoning") == K::reasoning);
}

TEST_CASE("reasoning: validate names the field of inconsistent counts") {
  auto field_of = [](const tc::trace_record& r) {
    const auto issue = tc::validate(r);
    return issue ? issue->field : std::string();
  };
  tc::trace_record r = reasoning_then_answer();
  r.cached_prompt_tokens = 101;
  CHECK(field_of(r) == "cached_prompt_tokens");
  r = reasoning_then_answer();
  r.usage_reasoning_tokens = 9;
  CHECK(field_of(r) == "usage_reasoning_tokens");
  r = reasoning_then_answer();
  r.spec_accepted_tokens = 21;
  CHECK(field_of(r) == "spec_accepted_tokens");
  r = reasoning_then_answer();
  r.spec_draft_tokens.reset();
  CHECK(field_of(r) == "spec_accepted_tokens");
  r = reasoning_then_answer();
  r.spec_accepted_tokens.reset();
  CHECK(field_of(r) == "spec_draft_tokens");
  // And a record survives record -> timeline -> record with every new field.
  r = reasoning_then_answer();
  const tc::trace_record back =
      tc::to_trace_record(tc::to_timeline(r), tc::trace_clock::time_point{}, r.id);
  CHECK(back == r);
}

namespace {
/// AIPerf's record metrics, written from its sources independently of the profile engine
/// (ai-dynamo/aiperf@db4f6397d11e aiperf/parsers/openai_parsers.py `_parse_chat_common`,
/// aiperf/metrics/types/ttft_metric.py, ttst_metric.py, inter_chunk_latency_metric.py,
/// prefill_throughput.py, reasoning_token_count.py; time_to_first_output_metric.py at
/// ai-dynamo/aiperf@6b702008c853). `responses` are the SSE messages whose delta has non-empty
/// content or reasoning; a failed record has none.
struct aiperf_record {
  std::optional<double> ttft, ttfo, ttst, prefill;
  std::vector<double> icl;
  std::optional<std::uint64_t> reasoning_tokens;
};
aiperf_record aiperf_by_hand(const tc::trace_record& r) {
  aiperf_record a;
  if (!r.ok) return a;  // error records: responses = [] and only error metrics
  std::vector<tc::trace_chunk> responses;
  std::uint64_t reasoning = 0;
  for (const auto& c : r.chunks) {
    if (c.kind == K::text || c.kind == K::reasoning) responses.push_back(c);
    if (c.kind == K::reasoning) reasoning += c.tokens;
  }
  const double start = r.send;  // request.start_perf_ns
  auto ns = [](double s) { return static_cast<std::int64_t>(s * 1e9 + (s >= 0 ? 0.5 : -0.5)); };
  auto sec = [](std::int64_t d) { return static_cast<double>(d) / 1e9; };
  if (!responses.empty()) a.ttft = sec(ns(responses[0].time) - ns(start));
  for (const auto& c : responses)
    if (c.kind == K::text) {
      a.ttfo = sec(ns(c.time) - ns(start));
      break;
    }
  if (responses.size() >= 2) a.ttst = sec(ns(responses[1].time) - ns(responses[0].time));
  bool positive = true;
  std::vector<double> icl;
  for (std::size_t i = 1; i < responses.size(); ++i) {
    const std::int64_t d = ns(responses[i].time) - ns(responses[i - 1].time);
    positive = positive && d > 0;
    icl.push_back(sec(d));
  }
  if (positive) a.icl = icl;  // ValueError: the record loses the metric
  if (a.ttft && r.prompt_tokens) a.prefill = static_cast<double>(*r.prompt_tokens) / *a.ttft;
  if (reasoning > 0) a.reasoning_tokens = reasoning;
  return a;
}

std::vector<tc::trace_record> all_records() {
  return {reasoning_then_answer(), answer_only(),      reasoning_only(),
          failed_mid_reasoning(),  one_token_answer(), zero_gap()};
}
}  // namespace

TEST_CASE("reasoning: the aiperf profile equals AIPerf's formulas computed by hand") {
  const tc::profile& p = tc::profiles::aiperf;
  for (const tc::trace_record& rec : all_records()) {
    CAPTURE(rec.id);
    const auto tl = tc::to_timeline(rec);
    const tc::request_metrics r = tc::evaluate(p, tl);
    const aiperf_record a = aiperf_by_hand(rec);
    if (!r.completed) {
      CHECK_FALSE(rec.ok);
      continue;
    }
    CHECK(r.ttft == a.ttft);
    CHECK(r.ttfa == a.ttfo);
    CHECK(r.ttst == a.ttst);
    CHECK_FALSE(r.reasoning_time);  // AIPerf reports none
    CHECK(r.reasoning_tokens == a.reasoning_tokens);
    REQUIRE(r.prefill_tps.has_value() == a.prefill.has_value());
    if (a.prefill) CHECK(*r.prefill_tps == doctest::Approx(*a.prefill).epsilon(1e-12));
    std::vector<double> icl;
    tc::for_each_icl(p, tl, [&](double g) { icl.push_back(g); });
    CHECK(icl == a.icl);
  }
  // Hand-checked values of the first record: AIPerf's TTFT is the first reasoning response.
  const tc::request_metrics r = tc::evaluate(p, tc::to_timeline(reasoning_then_answer()));
  CHECK(*r.ttft == 0.20);
  CHECK(*r.ttfa == 0.50);
  CHECK(*r.ttst == 0.05);
  CHECK(*r.e2e == 0.55);  // the last response, not the usage or [DONE] chunk
  CHECK(*r.tpot == doctest::Approx(0.35 / 7).epsilon(1e-12));  // (E2E - TTFT) / (OSL - 1)
  const tc::request_metrics z = tc::evaluate(p, tc::to_timeline(zero_gap()));
  CHECK(*z.ttst == 0.0);  // TTST allows equal timestamps; ICL does not
}

TEST_CASE("reasoning: the aiperf profile gives what AIPerf's own metric classes gave") {
  // AIPerf's TTFTMetric, TTSTMetric, InterChunkLatencyMetric, PrefillThroughputMetric
  // (ai-dynamo/aiperf@db4f6397d11e) and TimeToFirstOutputMetric (@6b702008c853), run on these
  // six records as chat chunks parsed by its `_parse_chat_common`, gave (ns; tokens/s; "-" no
  // value; "VE" ValueError, the record loses ICL; d failed, so it gets responses = []):
  //   a: ttft 200000000, ttst 50000000, icl [50000000, 50000000, 200000000, 50000000],
  //      ttfo 500000000, prefill 500.0
  //   b: ttft 100000000, ttst 200000000, icl [200000000], ttfo 100000000, prefill 100.0
  //   c: ttft 400000000, ttst 200000000, icl [200000000], ttfo -, prefill -
  //   d: all -
  //   e: ttft 200000000, ttst 100000000, icl [100000000], ttfo 300000000, prefill 150.0
  //   f: ttft 100000000, ttst 0, icl VE, ttfo 100000000, prefill 200.0
  struct want {
    double ttft, ttst;
    std::vector<double> icl;
    std::optional<double> ttfo, prefill;
  };
  const want w[] = {{0.2, 0.05, {0.05, 0.05, 0.2, 0.05}, 0.5, 500.0},
                    {0.1, 0.2, {0.2}, 0.1, 100.0},
                    {0.4, 0.2, {0.2}, std::nullopt, std::nullopt},
                    {0, 0, {}, std::nullopt, std::nullopt},
                    {0.2, 0.1, {0.1}, 0.3, 150.0},
                    {0.1, 0.0, {}, 0.1, 200.0}};
  const auto records = all_records();
  for (std::size_t i = 0; i < records.size(); ++i) {
    CAPTURE(records[i].id);
    const auto tl = tc::to_timeline(records[i]);
    const tc::request_metrics r = tc::evaluate(tc::profiles::aiperf, tl);
    std::vector<double> icl;
    tc::for_each_icl(tc::profiles::aiperf, tl, [&](double g) { icl.push_back(g); });
    if (!records[i].ok) {
      CHECK_FALSE(r.completed);
      CHECK(icl.empty());
      continue;
    }
    CHECK(*r.ttft == doctest::Approx(w[i].ttft).epsilon(1e-12));
    CHECK(*r.ttst == doctest::Approx(w[i].ttst).epsilon(1e-12));
    REQUIRE(icl.size() == w[i].icl.size());
    for (std::size_t k = 0; k < icl.size(); ++k)
      CHECK(icl[k] == doctest::Approx(w[i].icl[k]).epsilon(1e-12));
    REQUIRE(r.ttfa.has_value() == w[i].ttfo.has_value());
    if (w[i].ttfo) CHECK(*r.ttfa == doctest::Approx(*w[i].ttfo).epsilon(1e-12));
    REQUIRE(r.prefill_tps.has_value() == w[i].prefill.has_value());
    if (w[i].prefill) CHECK(*r.prefill_tps == doctest::Approx(*w[i].prefill).epsilon(1e-12));
  }
}

TEST_CASE("reasoning: run summaries keep the new metrics, per profile") {
  tc::summary_options o;
  o.keep_requests = true;
  tc::run_summarizer<tc::trace_timeline> aiperf(tc::profiles::aiperf, o);
  tc::run_summarizer<tc::trace_timeline> canonical(tc::profiles::canonical, o);
  tc::run_summarizer<tc::trace_timeline> vllm(tc::profiles::vllm, o);
  std::size_t icl_by_hand = 0, ttfo_by_hand = 0;
  for (const tc::trace_record& rec : all_records()) {
    const auto tl = tc::to_timeline(rec);
    aiperf.add(tl);
    canonical.add(tl);
    vllm.add(tl);
    const aiperf_record a = aiperf_by_hand(rec);
    icl_by_hand += a.icl.size();
    ttfo_by_hand += a.ttfo ? 1 : 0;
  }
  const tc::run_summary s = aiperf.summary();
  CHECK(s.completed == 5);
  CHECK(s.ttfa.count == ttfo_by_hand);  // a, b, e, f: c has no answer, d failed
  CHECK(s.icl.count == icl_by_hand);    // f's zero gap drops f's samples
  CHECK(s.ttst.count == 5);
  CHECK(s.reasoning_time.count == 0);
  CHECK(s.reasoning_tokens == 4 + 2 + 1);
  CHECK(s.reasoning_lengths.count == 3);
  CHECK(s.of(tc::metric_id::icl) == &s.icl);
  const tc::run_summary c = canonical.summary();
  CHECK(c.reasoning_time.count == 2);       // a and e
  CHECK(c.icl.count == 4 + 1 + 1 + 1 + 2);  // every gap of the completed requests
  CHECK(c.spec_acceptance.count == 1);
  CHECK(*c.spec_acceptance.mean == 0.75);
  CHECK(c.uncached_prefill_tps.count == 2);  // a and b report a cached count
  const tc::run_summary v = vllm.summary();  // vLLM reports none of them
  for (const tc::metric_id id : tc::run_summary::kept_when_measured) CHECK(v.of(id)->count == 0);
}

TEST_CASE("reasoning: the SLO grammar reads the new metrics by name and alias") {
  for (const char* text : {"p95(ttfa) < 2s", "p95(ttfo) < 2s", "p99(reasoning_time) < 30s",
                           "p90(ttst) < 100ms", "p99(icl) < 50ms", "p50(prefill_tps) > 1000",
                           "p50(uncached_prefill_tps) > 500", "mean(spec_acceptance) > 0.6"}) {
    CAPTURE(text);
    const auto r = tc::parse_objective(text);
    CHECK(static_cast<bool>(r));
  }
  CHECK(tc::parse_objective("p95(ttfo) < 2s").value.metric == tc::metric_id::ttfa);
  CHECK(tc::parse_objective("p99(inter_chunk_latency) < 1s").value.metric == tc::metric_id::icl);
}

TEST_CASE("reasoning: how the other profiles count reasoning chunks") {
  const auto tl = tc::to_timeline(reasoning_then_answer());
  // vLLM counts every chunk with a choices entry (vllm/benchmarks/lib/endpoint_request_func.py,
  // `if choices := data.get("choices")`): the role chunk, reasoning deltas, answer deltas.
  const tc::request_metrics v = tc::evaluate(tc::profiles::vllm, tl);
  CHECK(*v.ttft == 0.05);
  CHECK(*v.e2e == 0.55);
  // The tools that count non-empty content only see no reasoning chunk: their TTFT is the
  // first answer token.
  const tc::request_metrics g = tc::evaluate(tc::profiles::genai_perf, tl);
  CHECK(*g.ttft == 0.50);
  // The canonical profile reports every new metric, equal to the canonical functions.
  const tc::request_metrics c = tc::evaluate(tc::profiles::canonical, tl);
  const tc::request_metrics m = tc::canonical_metrics(tl);
  for (const tc::metric_id id : tc::run_summary::kept_when_measured) {
    if (id == tc::metric_id::icl) continue;  // pooled: for_each_icl
    CAPTURE(tc::to_string(id));
    REQUIRE(c.value(id));
    CHECK(*c.value(id) == doctest::Approx(*m.value(id)).epsilon(1e-12));
  }
  std::vector<double> icl;
  tc::for_each_icl(tc::profiles::canonical, tl, [&](double x) { icl.push_back(x); });
  CHECK(icl == canonical_icl(tl));
}
