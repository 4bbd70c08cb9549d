// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
// How exactly tokchron-bench times a stream. The scripted server (tools/bench/
// scripted_server.hpp) records the steady-clock time just before it writes each SSE event; the
// client records, for the read that brought its bytes, the kernel's receive stamp (the default)
// or the time just after the read. Same machine, same clock, so for each text chunk
// d = client time - emission is the client's timing error: with the read's time, the loopback's
// delivery, the client's wake-up and its queueing behind other streams; with the kernel's stamp
// (taken on loopback inside the server's write), the server's path from its clock read into the
// kernel, the stamp's conversion to the steady clock, and a read that brought several events
// (all get the stamp of the last). The error of a TTFT is d of the first text chunk; the error
// of an ITL is the difference of two consecutive d.
//
//   BM_stream_timing/N/T/B/K: N concurrent streams (closed loop, N users, one request each), T
//     client I/O threads, B = 1 busy polling, K = 1 the kernel's receive timestamps (the
//     default), K = 0 the read's time; counters p99_ttft_err_us, p99_itl_err_us (targets:
//     <= 50 us at N = 10, <= 200 us at N = 1000), the maxima, failed, kernel_timed, the
//     share of reads the kernel timed, and with K = 1 p99_wait_us, the P99 over requests of
//     the longest a read's bytes waited in the kernel (how far the client fell behind).
//   BM_send_lag/R/K/B: an open loop at R requests/s for 3 s, K = 1 with keep-alive, B = 1 busy
//     polling; counter
//     p99_send_lag_us, the P99 of actual send - intended send (target <= 1000 us at 500/s), and
//     p50_ttft_us, the median TTFT from the actual send of a 1-token answer the server writes at
//     once: the loopback round trip, with K = 0 also the TCP handshake.
//
// A failed request's reason is the benchmark's label. Run:
//   tokchron_timing_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "client.hpp"
#include "scripted_server.hpp"

namespace tb = tokchron_bench;
using namespace std::chrono_literals;

namespace {

// The P-th percentile (nearest rank) of `v` in microseconds; 0 when empty.
double percentile_us(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)] * 1e-3;
}

double ns(std::chrono::steady_clock::duration d) {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

tb::load_options options_for(const tb::scripted_server& srv) {
  tb::load_options lo;
  lo.tgt = tb::parse_target("http://127.0.0.1:" + std::to_string(srv.port()), "completions", "m");
  lo.work.prompt =
      tokchron_loadgen::distribution::fixed(1, tokchron_loadgen::quantity::prompt_length);
  lo.limits.idle = 30s;
  return lo;
}

void BM_stream_timing(benchmark::State& state) {
  const auto streams = static_cast<std::uint32_t>(state.range(0));
  const auto threads = static_cast<unsigned>(state.range(1));
  const bool busy_poll = state.range(2) != 0;
  const auto rx = state.range(3) != 0 ? tb::receive_time::kernel : tb::receive_time::read;
  constexpr std::uint32_t chunks = 20;
  // Streams start over 200 ms, then each writes a chunk every 20 ms: 1000 streams make 50000
  // writes/s, from one server thread.
  std::vector<double> ttft_err, itl_err, waits;
  std::uint64_t failed = 0, reads = 0, kernel_timed = 0;
  for (auto _ : state) {
    state.PauseTiming();
    tb::scripted_server srv({20ms, 20ms, chunks + 1});  // request ids start again at 0
    state.ResumeTiming();
    tb::load_options lo = options_for(srv);
    lo.work.mode = tokchron_loadgen::arrival_mode::closed;
    lo.work.users = streams;
    lo.work.max_requests = streams;
    lo.work.ramp_up_s = 0.2;
    lo.work.duration_s = 10;
    lo.work.output =
        tokchron_loadgen::distribution::fixed(chunks, tokchron_loadgen::quantity::output_length);
    lo.threads = threads;
    lo.busy_poll = busy_poll;
    lo.rx_time = rx;
    const tb::load_result r = tb::run_load(lo);
    state.PauseTiming();
    const auto sent = srv.emissions();
    for (const auto& o : r.requests) {
      reads += o.reads;
      kernel_timed += o.kernel_timed_reads;
      if (o.kernel_timed_reads > 0) waits.push_back(ns(o.longest_read_wait));
      const auto it = sent.find(std::to_string(o.id));
      if (!o.error.empty() || it == sent.end()) {
        ++failed;
        continue;
      }
      // Text chunks, client and server, in order.
      std::vector<std::chrono::steady_clock::time_point> read, wrote;
      for (const auto& c : o.tl.store().chunks())
        if (c.kind == tokchron::chunk_kind::text) read.push_back(c.time);
      for (const auto& e : it->second)
        if (e.kind == "text") wrote.push_back(e.time);
      if (read.size() != wrote.size() || read.empty()) {
        ++failed;
        continue;
      }
      ttft_err.push_back(std::abs(ns(read[0] - wrote[0])));
      for (std::size_t i = 1; i < read.size(); ++i)
        itl_err.push_back(std::abs(ns((read[i] - read[i - 1]) - (wrote[i] - wrote[i - 1]))));
    }
    state.ResumeTiming();
  }
  state.counters["p99_ttft_err_us"] = percentile_us(ttft_err, 99);
  state.counters["p99_itl_err_us"] = percentile_us(itl_err, 99);
  state.counters["p50_itl_err_us"] = percentile_us(itl_err, 50);
  state.counters["max_itl_err_us"] = percentile_us(itl_err, 100);
  state.counters["failed"] = static_cast<double>(failed);
  state.counters["p99_wait_us"] = percentile_us(waits, 99);
  state.counters["kernel_timed"] =
      reads ? static_cast<double>(kernel_timed) / static_cast<double>(reads) : 0.0;
  state.SetItemsProcessed(static_cast<std::int64_t>(itl_err.size() + ttft_err.size()));
}
BENCHMARK(BM_stream_timing)
    ->ArgNames({"streams", "threads", "busy_poll", "kernel_rx"})
    ->Args({10, 1, 0, 1})
    ->Args({10, 1, 0, 0})
    ->Args({10, 1, 1, 0})
    ->Args({100, 1, 0, 1})
    ->Args({100, 1, 0, 0})
    ->Args({1000, 1, 0, 1})
    ->Args({1000, 1, 0, 0})
    ->Args({1000, 1, 1, 0})
    ->Args({1000, 2, 0, 1})
    ->Args({1000, 2, 0, 0})
    ->Args({2000, 2, 0, 1})
    ->Args({2000, 2, 0, 0})
    ->Args({4000, 2, 0, 1})
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_send_lag(benchmark::State& state) {
  const double rate = static_cast<double>(state.range(0));
  const bool keep_alive = state.range(1) != 0;
  const bool busy_poll = state.range(2) != 0;
  std::vector<double> lag, ttft;
  std::uint64_t failed = 0;
  for (auto _ : state) {
    state.PauseTiming();
    tb::scripted_server srv({0ms, 0ms, 2});
    state.ResumeTiming();
    tb::load_options lo = options_for(srv);
    lo.work.mode = tokchron_loadgen::arrival_mode::open;
    lo.work.rate = rate;
    lo.work.duration_s = 3;
    lo.work.output =
        tokchron_loadgen::distribution::fixed(1, tokchron_loadgen::quantity::output_length);
    lo.keep_alive = keep_alive;
    lo.busy_poll = busy_poll;
    const tb::load_result r = tb::run_load(lo);
    state.PauseTiming();
    for (const auto& o : r.requests) {
      failed += !o.error.empty();
      if (!o.error.empty()) state.SetLabel("a failure: " + o.error);
      lag.push_back(ns(*o.tl.send_time() - *o.tl.arrival()));
      for (const auto& c : o.tl.store().chunks())
        if (c.kind == tokchron::chunk_kind::text) {
          ttft.push_back(ns(c.time - *o.tl.send_time()));
          break;
        }
    }
    state.ResumeTiming();
  }
  state.counters["p99_send_lag_us"] = percentile_us(lag, 99);
  state.counters["p50_send_lag_us"] = percentile_us(lag, 50);
  state.counters["max_send_lag_us"] = percentile_us(lag, 100);
  state.counters["p50_ttft_us"] = percentile_us(ttft, 50);
  state.counters["failed"] = static_cast<double>(failed);
  state.SetItemsProcessed(static_cast<std::int64_t>(lag.size()));
}
BENCHMARK(BM_send_lag)
    ->ArgNames({"rate", "keep_alive", "busy_poll"})
    ->Args({500, 0, 0})
    ->Args({500, 1, 0})
    ->Args({500, 1, 1})
    ->Args({2000, 0, 0})
    ->Args({2000, 1, 0})
    ->Args({2000, 1, 1})
    ->Args({5000, 1, 0})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
