// SPDX-License-Identifier: MIT
// Fuzz target: tokchron-bench's SSE decoder (tools/bench/sse.hpp `sse_decoder`), the bytes of a
// streamed response body as a hostile server may send them.
// Input: byte 0 picks the endpoint (bit 0: chat) and the largest piece (1 + byte 0 / 2 bytes);
// bytes 1-4 seed the cuts; the rest is the stream.
// Properties: decoding never crashes and is the same however the bytes are cut into reads (the
// same events, kinds, usage counts, end and failure reason as in one read); chunk times never
// decrease and are each the time of the read that completed the event; a failure has a kind and
// a reason of the decoder's own forms; at `[DONE]` the timeline finishes as the server's finish
// reason says (succeeded unless that reason is a failure, `server_failure`); no recording
// call is refused; the decoder holds at most 2 x max_sse_line bytes; and the request's trace
// record is valid (what tokchron-report reads back).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "sse.hpp"
#include "tokchron/io/trace.hpp"

namespace tb = tokchron_bench;
namespace tc = tokchron;

namespace {

struct outcome {
  std::vector<tc::chunk_kind> kinds;
  std::vector<std::uint32_t> tokens;
  std::optional<std::uint64_t> prompt, completion, cached, reasoning;
  std::string error, server_failure;
  tb::failure_kind failure = tb::failure_kind::none;
  bool done = false;
  std::uint64_t events = 0;
  bool operator==(const outcome& o) const {
    return kinds == o.kinds && tokens == o.tokens && prompt == o.prompt &&
           completion == o.completion && cached == o.cached && reasoning == o.reasoning &&
           error == o.error && server_failure == o.server_failure && failure == o.failure &&
           done == o.done && events == o.events;
  }
};

bool starts(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }

// Decodes `stream` in the pieces `cuts` gives (their lengths), piece k read at t0 + k us.
outcome decode(std::string_view stream, tb::endpoint_kind e, const std::vector<std::size_t>& cuts) {
  const auto t0 = tb::clock::time_point(std::chrono::seconds(100));
  tb::timeline tl;
  TOKCHRON_FUZZ_CHECK(tl.arrive(t0) == tc::record_status::ok);
  TOKCHRON_FUZZ_CHECK(tl.send(t0) == tc::record_status::ok);
  tb::sse_decoder d(e, tl);
  std::size_t at = 0, k = 0;
  tb::clock::time_point last = t0;
  for (const std::size_t n : cuts) {
    last = t0 + std::chrono::microseconds(k++);
    const bool ok = d.feed(stream.substr(at, n), last);
    TOKCHRON_FUZZ_CHECK(ok == !d.failed());
    TOKCHRON_FUZZ_CHECK(d.buffered() <= 2 * tb::max_sse_line);
    at += n;
    if (!ok) break;
  }
  outcome o;
  tb::clock::time_point previous = t0;
  for (const auto& c : tl.store().chunks()) {
    o.kinds.push_back(c.kind);
    o.tokens.push_back(c.tokens);
    TOKCHRON_FUZZ_CHECK(c.time >= previous && c.time <= last);
    previous = c.time;
  }
  o.prompt = tl.prompt_tokens();
  o.completion = tl.reported_output_tokens();
  o.cached = tl.cached_prompt_tokens();
  o.reasoning = tl.reported_reasoning_tokens();
  o.error = d.error();
  o.server_failure = d.server_failure();
  o.failure = d.failure();
  o.done = d.done();
  o.events = d.events();
  TOKCHRON_FUZZ_CHECK(tl.misuse_count() == 0);
  if (d.failed()) {
    TOKCHRON_FUZZ_CHECK(o.failure != tb::failure_kind::none);
    TOKCHRON_FUZZ_CHECK(std::string_view(tb::failure_name(o.failure)) != "unknown");
    TOKCHRON_FUZZ_CHECK(starts(o.error, "SSE line ") || starts(o.error, "SSE event ") ||
                        starts(o.error, "server error in the stream: ") ||
                        starts(o.error, "more than "));
  } else {
    TOKCHRON_FUZZ_CHECK(o.failure == tb::failure_kind::none);
  }
  if (!o.server_failure.empty()) TOKCHRON_FUZZ_CHECK(starts(o.server_failure, "SSE event "));
  if (o.done) {
    TOKCHRON_FUZZ_CHECK(!tl.finished());
    TOKCHRON_FUZZ_CHECK(d.finish_timeline() == tc::record_status::ok);
    TOKCHRON_FUZZ_CHECK(tl.succeeded() == o.server_failure.empty());
    TOKCHRON_FUZZ_CHECK(!o.kinds.empty() && o.kinds.back() == tc::chunk_kind::done);
  } else {
    TOKCHRON_FUZZ_CHECK(!tl.finished());
    const auto why = d.failed() ? tc::finish_reason::error : tc::finish_reason::timed_out;
    TOKCHRON_FUZZ_CHECK(tl.finish(last, why) == tc::record_status::ok);
  }
  // What the client writes to its trace reads back as valid.
  const tc::trace_record r = tc::to_trace_record(tl, t0, "fuzz", o.error);
  TOKCHRON_FUZZ_CHECK(!tc::validate(r));
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 5) return 0;
  const auto e = (data[0] & 1) != 0 ? tb::endpoint_kind::chat : tb::endpoint_kind::completions;
  const std::size_t largest = 1 + data[0] / 2;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 5, size - 5);
  const std::vector<std::size_t> cuts =
      tokchron_fuzz::random_cuts(stream.size(), largest, data + 1);
  const outcome split = decode(stream, e, cuts);
  const outcome whole = decode(stream, e, {stream.size()});
  TOKCHRON_FUZZ_CHECK(split == whole);
  return 0;
}
