// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
// Memory per stream bounded whatever the server sends (docs/bad-input.md, row C12;
// docs/tools/tokchron-bench.md states the bound): the SSE decoder and the timeline it records
// into, fed a line that never ends, an event that never ends, a stream of events that never
// sends [DONE], and events of 1 MiB. The process measures its own heap (tests/heap_meter.hpp).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <type_traits>

#include "client.hpp"
#include "heap_meter.hpp"

namespace tb = tokchron_bench;

namespace {

using chunk_record = std::decay_t<decltype(tb::timeline().store().chunks())>::value_type;

// The bound docs/tools/tokchron-bench.md states for the decoder's part of a stream: its line
// and event buffers (each at most max_sse_line), the chunk records of a stream at the events'
// cap (half as many again while the vector grows), and one event's JSON document as it is
// parsed (a 1 MiB string: the event's text, the document's copy, and the parser's token).
constexpr std::size_t mib = std::size_t{1} << 20;
constexpr std::size_t buffers = 2 * tb::max_sse_line;
constexpr std::size_t chunks = tb::max_stream_events * sizeof(chunk_record) * 3 / 2;
constexpr std::size_t one_event = 4 * tb::max_sse_line;

// Feeds `block` again and again (at most `times`) into a fresh decoder until it fails; returns
// the heap's peak above what was live before, with the decoder's error.
std::size_t peak_of(const std::string& first, const std::string& block, std::size_t times,
                    std::string& error) {
  const heap_meter meter;
  {
    tb::timeline tl;
    const auto t = tb::clock::time_point(std::chrono::seconds(1));
    REQUIRE(tl.arrive(t) == tokchron::record_status::ok);
    tb::sse_decoder d(tb::endpoint_kind::completions, tl);
    bool ok = d.feed(first, t);
    for (std::size_t i = 0; ok && i < times; ++i) ok = d.feed(block, t);
    error = d.error();
  }
  return meter.peak();
}

}  // namespace

TEST_CASE("bad input C12: memory per stream stays under the stated bound") {
  std::string error;
  const std::string x(64 * 1024, 'x');
  SUBCASE("a line that never ends: 8 MiB") {
    const std::size_t peak = peak_of("data: ", x, 128, error);
    CHECK(error.find("is longer than 1048576 bytes") != std::string::npos);
    CHECK(peak <= buffers);
    MESSAGE("peak ", peak, " bytes");
  }
  SUBCASE("an event of data lines that never ends: 8 MiB") {
    const std::size_t peak = peak_of("", "data: " + x + "\n", 128, error);
    CHECK(error.find("SSE event 1 is longer than 1048576 bytes") == 0);
    CHECK(peak <= buffers);
    MESSAGE("peak ", peak, " bytes");
  }
  SUBCASE("events without [DONE], past the events' cap") {
    std::string block;
    for (int i = 0; i < 4096; ++i) block += "data: {\"choices\":[{\"text\":\"a\"}]}\n\n";
    const std::size_t peak = peak_of("", block, tb::max_stream_events / 4096 + 2, error);
    CHECK(error == "more than 1048576 SSE events without [DONE]");
    CHECK(peak <= buffers + chunks + mib);
    CHECK(peak >= tb::max_stream_events * sizeof(chunk_record));  // the records are kept
    MESSAGE("peak ", peak, " bytes");
  }
  SUBCASE("events of almost 1 MiB each") {
    const std::string big =
        "data: {\"choices\":[{\"text\":\"" + std::string(tb::max_sse_line - 40, 'a') + "\"}]}\n\n";
    const std::size_t peak = peak_of("", big, 8, error);
    CHECK(error.empty());
    CHECK(peak <= buffers + one_event);
    MESSAGE("peak ", peak, " bytes");
  }
  CHECK(buffers + chunks + one_event <= 32 * mib);  // the figure the docs give
}
