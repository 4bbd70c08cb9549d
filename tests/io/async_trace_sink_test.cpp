// SPDX-License-Identifier: MIT
// async_trace_sink: write never waits; every record offered is written or counted as dropped;
// every line carries benchmark_start 0 and the clock anchor read at construction.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tokchron/export/prometheus.hpp"
#include "tokchron/io/trace_json_reader.hpp"
#include "tokchron/live/async_trace_sink.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/live/request_recorder.hpp"
#include "tokchron/live/scrape.hpp"

#if defined(__linux__)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace {
namespace tc = tokchron;
using namespace std::chrono_literals;

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("tokchron_async_sink_") +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "_" +
           name))
      .string();
}

std::vector<tc::trace_record> read_all(const std::string& path, std::size_t* bad = nullptr) {
  std::ifstream in(path);
  std::vector<tc::trace_record> out;
  std::size_t errors = 0;
  tc::read_trace(
      in, [&](tc::trace_record&& r) { out.push_back(std::move(r)); },
      [&](const tc::trace_error&) { ++errors; });
  if (bad) *bad = errors;
  return out;
}

// One finished request through a recorder into `sink`.
void one_request(tc::live_metrics& m, tc::trace_sink& sink, const std::string& id,
                 std::chrono::steady_clock::time_point t0) {
  tc::request_recorder rec(m, &sink);
  rec.arrive(t0, {tc::live_series{}, 12}, id);
  rec.scheduled(t0 + 1ms);
  rec.chunk(t0 + 2ms, 1);
  rec.chunk(t0 + 3ms, 2);
  rec.finish(t0 + 4ms, tc::finish_reason::length);
}
}  // namespace

TEST_CASE("async_trace_sink: requests from many threads, every one written once, anchored") {
  const std::string path = temp_path("many.jsonl");
  const auto zero = std::chrono::steady_clock::now();
  tc::live_metrics m(tc::tokchron_live_options());
  constexpr int threads = 4, per_thread = 500;
  std::uint64_t offered = 0;
  {
    tc::async_trace_sink sink(path, zero, 1u << 14);  // room for all: nothing dropped
    CHECK(sink.capacity() == (1u << 14));
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        for (int i = 0; i < per_thread; ++i)
          one_request(m, sink, "host" + std::to_string(t) + "-" + std::to_string(i), zero);
      });
    for (auto& t : ts) t.join();
    offered = threads * per_thread;
    CHECK(sink.close());
    CHECK(sink.written() == offered);
    CHECK(sink.dropped() == 0);
    CHECK(sink.failed() == 0);
    tc::metrics_snapshot s = tc::scrape(m);
    sink.add_families(s);
    const std::string text = tc::to_prometheus(s);
    CHECK(text.find("tokchron_trace_records_total{outcome=\"written\"} 2000") != std::string::npos);
    CHECK(text.find("tokchron_trace_records_total{outcome=\"dropped\"} 0") != std::string::npos);
  }
  std::size_t bad = 0;
  const auto rs = read_all(path, &bad);
  CHECK(bad == 0);
  REQUIRE(rs.size() == offered);
  std::set<std::string> ids;
  for (const auto& r : rs) {
    ids.insert(r.id);
    CHECK(r.benchmark_start == 0.0);
    REQUIRE(tc::clock_anchor_of(r));
    CHECK(r.chunks.size() == 2);
    CHECK(r.arrival);
  }
  CHECK(ids.size() == offered);
  CHECK(ids.count("host3-499") == 1);
  std::remove(path.c_str());
}

#if defined(__linux__)
TEST_CASE("async_trace_sink: a stalled file drops records, counted, and never blocks write") {
  // A FIFO whose reader does not read: the writer thread blocks once the pipe is full, the
  // queue fills, and every further record is dropped at once.
  const std::string path = temp_path("stall.fifo");
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  const int reader = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);  // lets the sink open it
  REQUIRE(reader >= 0);
  const auto zero = std::chrono::steady_clock::now();
  tc::live_metrics m(tc::tokchron_live_options());
  constexpr int offered = 4000;  // far more lines than a 64 KiB pipe and 4 queue cells hold
  tc::async_trace_sink sink(path, zero, 4);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < offered; ++i) one_request(m, sink, std::to_string(i), zero);
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(sink.dropped() > 0);
  // Drain the pipe while the sink closes, then every record is accounted for.
  std::thread drain([&] {
    const int flags = ::fcntl(reader, F_GETFL);
    ::fcntl(reader, F_SETFL, flags & ~O_NONBLOCK);
    char buf[4096];
    while (::read(reader, buf, sizeof buf) > 0) {
    }
  });
  sink.close();
  drain.join();
  ::close(reader);
  CHECK(sink.written() + sink.dropped() == static_cast<std::uint64_t>(offered));
  CHECK(sink.failed() == 0);
  CAPTURE(std::chrono::duration<double>(took).count());
  std::remove(path.c_str());
}
#endif
