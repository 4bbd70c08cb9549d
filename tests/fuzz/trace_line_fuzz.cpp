// SPDX-License-Identifier: MIT
// Fuzz target: the JSON Lines trace reader (io/trace_json_reader.hpp parse_trace_line, read_trace)
// and what a read record feeds (io/trace.hpp to_timeline, metrics/canonical.hpp). Properties:
// reading never throws and never crashes, whatever the bytes; a bad line gives an error naming its
// line number, and is skipped without stopping the read; a record that was read is valid, replays
// into a timeline with no misuse, gives non-negative metrics, and writes back (to_json_line) as a
// line that reads back to an equal record.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "tokchron/io/trace.hpp"
#include "tokchron/io/trace_json_reader.hpp"
#include "tokchron/io/trace_json_writer.hpp"
#include "tokchron/metrics/builtin_profiles.hpp"
#include "tokchron/metrics/canonical.hpp"

namespace {
void check_nonnegative(const std::optional<double>& v) { TOKCHRON_FUZZ_CHECK(!v || *v >= 0); }

void check_record(const tokchron::trace_record& r) {
  TOKCHRON_FUZZ_CHECK(!tokchron::validate(r));
  const tokchron::trace_timeline tl = tokchron::to_timeline(r);
  TOKCHRON_FUZZ_CHECK(tl.misuse_count() == 0);
  TOKCHRON_FUZZ_CHECK(tl.finished());
  std::uint64_t tokens = 0;
  for (const auto& c : r.chunks) tokens += c.tokens;
  TOKCHRON_FUZZ_CHECK(tl.output_tokens() == tokens);
  const tokchron::request_metrics m = tokchron::canonical_metrics(tl);
  check_nonnegative(m.ttft);
  check_nonnegative(m.tpot);
  check_nonnegative(m.e2e);
  check_nonnegative(m.queue_time);
  check_nonnegative(m.prefill_time);
  check_nonnegative(m.decode_time);
  check_nonnegative(m.normalized_latency);
  check_nonnegative(m.output_rate);
  // every profile's values and pooled ITL samples (one call per run of equal samples: a chunk of
  // 2^32 - 1 tokens is one call, not 2^32 - 1)
  for (const tokchron::profile* p : tokchron::all_profiles()) {
    const tokchron::request_metrics pr = tokchron::evaluate(
        *p, tl, [](double g, std::uint64_t n) noexcept { TOKCHRON_FUZZ_CHECK(g >= 0 && n > 0); });
    for (std::size_t k = 0; k < tokchron::metric_count; ++k)  // every metric of the table
      check_nonnegative(pr.value(static_cast<tokchron::metric_id>(k)));
  }
  const std::string line = tokchron::to_json_line(r);
  TOKCHRON_FUZZ_CHECK(line.find('\n') == std::string::npos);
  const tokchron::trace_line_result again = tokchron::parse_trace_line(line, 7);
  TOKCHRON_FUZZ_CHECK(again.record.has_value() && !again.error);
  TOKCHRON_FUZZ_CHECK(*again.record == r);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // Line by line through the stream reader: every line is accounted for.
  std::istringstream in(text);
  std::size_t max_lines = 1;
  for (char c : text) max_lines += c == '\n' ? 1 : 0;
  std::size_t records = 0, errors = 0;
  const tokchron::trace_read_stats st = tokchron::read_trace(
      in,
      [&](tokchron::trace_record&& r) {
        ++records;
        check_record(r);
      },
      [&](const tokchron::trace_error& e) {
        ++errors;
        TOKCHRON_FUZZ_CHECK(e.line >= 1 && e.line <= max_lines);
        TOKCHRON_FUZZ_CHECK(!e.message.empty());
        TOKCHRON_FUZZ_CHECK(!e.to_string().empty());
      });
  TOKCHRON_FUZZ_CHECK(st.records == records && st.skipped == errors);
  TOKCHRON_FUZZ_CHECK(st.records + st.skipped <= st.lines);
  // The whole input as one line (what a caller splitting on its own would pass).
  const tokchron::trace_line_result one = tokchron::parse_trace_line(text, 3);
  TOKCHRON_FUZZ_CHECK(!(one.record && one.error));
  if (one.error) TOKCHRON_FUZZ_CHECK(one.error->line == 3);
  return 0;
}
