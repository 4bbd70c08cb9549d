// SPDX-License-Identifier: MIT
// A consumer linking tokchron::record from an installed tokchron: the recording calls compiled
// once in the library (separate instantiation), a request recorded, its TTFT printed.
#include <chrono>
#include <cstdio>

#include <tokchron/live/presets.hpp>  // where the metrics object is built
#include <tokchron/record.hpp>

#ifndef TOKCHRON_SEPARATE_INSTANTIATION
#error "linking tokchron::record sets TOKCHRON_SEPARATE_INSTANTIATION"
#endif

int main() {
  using namespace std::chrono_literals;
  tokchron::live_metrics metrics(tokchron::tokchron_live_options());
  tokchron::live_request req;
  const auto t0 = std::chrono::steady_clock::now();
  tokchron::request_timeline tl;
  tl.arrive(t0);
  tl.chunk(t0 + 120ms, 1);
  tl.finish(t0 + 130ms);
  metrics.arrive(req, t0);
  metrics.chunk(req, t0 + 120ms, 1);
  metrics.finish(req, t0 + 130ms);
  const auto m = tokchron::canonical_metrics(tl);
  std::printf("tokchron::record TTFT %.3f s, misuse %llu\n", m.ttft.value_or(-1),
              static_cast<unsigned long long>(metrics.misuse()));
  return m.ttft && *m.ttft > 0.119 && *m.ttft < 0.121 && metrics.misuse() == 0 ? 0 : 1;
}
