// SPDX-License-Identifier: MIT
// Memory bounded by the input's size, not by its numbers (docs/bad-input.md, row M1): one
// 37-byte trace line declaring 2^32 - 1 tokens in one chunk, summarised under every profile,
// must not store one ITL sample per token. The process measures its own heap
// (tests/heap_meter.hpp replaces operator new and delete). Built as
// tokchron_bad_input_memory_tests (needs nlohmann-json).
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "tokchron/io/trace.hpp"
#include "tokchron/io/trace_json_reader.hpp"
#include "tokchron/metrics/builtin_profiles.hpp"
#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/sla/evaluator.hpp"

#include "../heap_meter.hpp"

namespace {
tokchron::trace_timeline timeline_of(const char* line) {
  const tokchron::trace_line_result r = tokchron::parse_trace_line(line);
  REQUIRE(r.record);
  return tokchron::to_timeline(*r.record);
}
constexpr double mb = 1024.0 * 1024.0;
}  // namespace

TEST_CASE("bad input M1: a 37-byte line of 2^32 - 1 tokens is summarised in bounded memory") {
  constexpr std::uint64_t most = 4294967295u;
  std::vector<tokchron::trace_timeline> tls;
  tls.push_back(timeline_of(R"({"send":1,"chunks":[[2,4294967295]]})"));
  // and a gap before a huge chunk: 2^32 - 1 per-token samples of 1 s / (2^32 - 1)
  tls.push_back(timeline_of(R"({"send":1,"chunks":[[2,1],[3,4294967295]]})"));
  std::vector<const tokchron::profile*> profiles(tokchron::all_profiles().begin(),
                                                 tokchron::all_profiles().end());
  const heap_meter meter;
  const std::vector<tokchron::run_summary> sums = tokchron::summarize(tls, profiles);
  const double used = static_cast<double>(meter.peak()) / mb;
  MESSAGE("peak heap while summarising under ", profiles.size(), " profiles: ", used, " MB");
  CHECK(used < 50.0);
  REQUIRE(sums.size() == profiles.size());
  const tokchron::run_summary& canonical = sums[0];
  REQUIRE(canonical.profile == "canonical");
  // canonical per-token ITL: request 1 gives 2^32 - 2 zeros (the first chunk's other tokens),
  // request 2 gives 2^32 - 1 samples of 1/(2^32 - 1) s after its first token
  const double each = 1.0 / static_cast<double>(most);
  CHECK(canonical.itl.count == (most - 1) + most);
  CHECK(*canonical.itl.min == 0.0);
  CHECK(*canonical.itl.max == each);
  CHECK(*canonical.itl.median == each);  // the zeros are one fewer than the others
  CHECK(*canonical.itl.mean ==
        doctest::Approx(each * static_cast<double>(most) / static_cast<double>(2 * most - 1))
            .epsilon(1e-12));
  CHECK(canonical.output_tokens == most + (most + 1));
  CHECK(*canonical.tpot.max == doctest::Approx(1.0 / static_cast<double>(most)).epsilon(1e-12));
  const tokchron::run_summary* native = nullptr;
  for (const auto& s : sums)
    if (s.profile == "sglang_native") native = &s;
  REQUIRE(native);
  CHECK(native->itl.count == most);  // split per token; the first chunk's extra tokens give none
  CHECK(*native->itl.min == each);
  CHECK(*native->itl.max == each);
}

TEST_CASE("bad input M1: the SLO distributions of such a line are bounded too") {
  constexpr std::uint64_t most = 4294967295u;
  const tokchron::trace_timeline tl = timeline_of(R"({"send":1,"chunks":[[2,1],[3,4294967295]]})");
  const heap_meter meter;
  tokchron::slo_distributions<> d;  // exact_quantiles: per-token ITL as one run
  CHECK(d.add(tl));
  const double used = static_cast<double>(meter.peak()) / mb;
  MESSAGE("peak heap for the SLO distributions: ", used, " MB");
  CHECK(used < 50.0);
  const auto& itl = d[tokchron::slo_metric::itl];
  CHECK(itl.count() == most);
  CHECK(*itl.quantile(0.99) == 1.0 / static_cast<double>(most));
  const tokchron::sla_verdict v = d.evaluate(tokchron::sla::parse("p99(itl) < 1ms"));
  REQUIRE(v.verdicts.size() == 1);
  CHECK(v.verdicts[0].passed());
}

TEST_CASE("multi_profile_summarizer: after an add that ran out of memory, no summaries") {
  std::vector<tokchron::trace_timeline> tls;
  for (int i = 0; i < 4; ++i)
    tls.push_back(timeline_of(R"({"send":1,"chunks":[[2,1],[2.5,3],[3,2]],"prompt_tokens":5})"));
  const std::vector<const tokchron::profile*> ps{&tokchron::profiles::vllm,
                                                 &tokchron::profiles::canonical};
  // Out of memory at each allocation an add makes in turn (every profile's), until one add
  // completes without reaching the failing allocation.
  bool failed_once = false;
  for (long k = 0;; ++k) {
    tokchron::multi_profile_summarizer<tokchron::trace_timeline> m(ps);
    m.add(tls[0]);
    allocations_before_failure = k;
    bool threw = false;
    try {
      m.add(tls[1]);
    } catch (const std::bad_alloc&) {
      threw = true;
    }
    allocations_before_failure = -1;
    if (!threw) {
      m.add(tls[2]);
      CHECK(m.take_summaries().at(1).requests == 3);
      break;
    }
    failed_once = true;
    CAPTURE(k);
    m.add(tls[2]);  // the profiles may hold different requests now
    CHECK_THROWS_AS((void)m.take_summaries(), std::logic_error);
  }
  CHECK(failed_once);
}
