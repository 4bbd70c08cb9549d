// SPDX-License-Identifier: MIT
// Built with -fno-exceptions by CI (.ci/stages/30-sanitizers.sh): the recording and estimator
// headers must compile and work without exceptions (servers built that way use them too).
#include <chrono>
#include <cstdio>
#include <limits>
#include <thread>

#include "tokchron/clock.hpp"
#include "tokchron/collect/collector.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/quantile/estimator.hpp"
#include "tokchron/quantile/exact.hpp"
#include "tokchron/quantile/log_histogram.hpp"
#include "tokchron/quantile/windowed.hpp"
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
  const bool basics = tokchron::ttft(tl) == 100ms && e.count() == 2 && *e.quantile(0.5) == 0.010;
  // The collector and the default estimator: two writer threads, one interval snapshot.
  tokchron::collector c;
  std::thread t([&c] {
    auto w = c.make_writer();
    for (int i = 1; i <= 1000; ++i) w.add(i * 1e-3);
  });
  {
    auto w = c.make_writer();
    for (int i = 1; i <= 1000; ++i) w.add(i * 1e-3);
    w.add(std::numeric_limits<double>::quiet_NaN());  // refused and counted, no exception
  }
  t.join();
  const tokchron::log_histogram snap = c.snapshot();
  tokchron::windowed<tokchron::log_histogram, manual_clock> win(std::chrono::seconds(60), 6);
  win.add(0.5);
  const bool collected =
      snap.count() == 2000 && snap.rejected() == 1 && *snap.max() == 1.0 && win.count() == 1;
  const bool ok = basics && collected;
  std::printf("no-exceptions build: %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
