// SPDX-License-Identifier: MIT
// Built with -fno-exceptions by CI (.ci/stages/30-sanitizers.sh): the recording and estimator
// headers must compile and work without exceptions (servers built that way use them too).
#include <chrono>
#include <cstdio>

#include "tokchron/clock.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/quantile/estimator.hpp"
#include "tokchron/quantile/exact.hpp"
#include "tokchron/timeline/request_timeline.hpp"
// tokchron:no-exceptions-headers (estimator and collector headers are added here as they land)

int main() {
  using namespace std::chrono_literals;
  using tokchron::manual_clock;
  tokchron::basic_request_timeline<manual_clock> tl;
  tl.arrive(manual_clock::at(0ms));
  tl.chunk(manual_clock::at(100ms), 1);
  tl.chunk(manual_clock::at(120ms), 2);
  tl.finish(manual_clock::at(120ms));
  tokchron::exact_quantiles<> e;
  tokchron::for_each_itl_per_token(tl, [&](auto g) { e.add(tokchron::to_seconds(g)); });
  const bool ok = tokchron::ttft(tl) == 100ms && e.count() == 2 && *e.quantile(0.5) == 0.010;
  std::printf("no-exceptions build: %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
