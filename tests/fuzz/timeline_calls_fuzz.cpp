// SPDX-License-Identifier: MIT
// Fuzz target: request_timeline driven by random call sequences (timeline_calls.hpp decodes
// three bytes a call: which call, the time step or a jump to the edges of the time range and of
// int64, the token count or kind or finish reason).
// Properties: every refused call is counted once and changes nothing; whatever the calls, every
// canonical metric, every profile's per-request value and every pooled ITL sample is
// non-negative (docs/bad-input.md row T4).
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "fuzz_check.hpp"
#include "timeline_calls.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const tokchron_test::call_sequence_result r = tokchron_test::check_call_sequence(data, size);
  if (!r.failure.empty()) std::fprintf(stderr, "tokchron fuzz: %s\n", r.failure.c_str());
  TOKCHRON_FUZZ_CHECK(r.failure.empty());
  TOKCHRON_FUZZ_CHECK(r.refused <= r.calls);
  return 0;
}
