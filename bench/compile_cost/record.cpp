// SPDX-License-Identifier: MIT
// Compile-cost probe (bench/compile_cost/measure.py): a server's hot file, recording each
// request with tokchron/record.hpp into its own timeline and into the live metrics. Compiled
// with -DTOKCHRON_COMPILE_COST_UMBRELLA it includes the umbrella header instead, for the
// umbrella's figures.
#ifdef TOKCHRON_COMPILE_COST_UMBRELLA
#include "tokchron/tokchron.hpp"
#else
#include "tokchron/record.hpp"
#endif

#include <cstdint>

// Each function is what one place in a serving engine calls (docs/library/server-integration.md):
// the request's timeline and the server's live metrics, once per event.
namespace engine {
struct request_state {
  tokchron::request_timeline timeline;
  tokchron::live_request live;
};

void on_accept(tokchron::live_metrics& m, request_state& r) {
  r.timeline.arrive();
  m.arrive(r.live);
}
void on_enqueue(tokchron::live_metrics& m, request_state& r) {
  r.timeline.queued();
  m.queued(r.live);
}
void on_schedule(tokchron::live_metrics& m, request_state& r) {
  r.timeline.scheduled();
  m.scheduled(r.live);
}
void on_preempt(tokchron::live_metrics& m, request_state& r) {
  r.timeline.preempted();
  m.preempted(r.live);
}
void on_delta(tokchron::live_metrics& m, request_state& r, std::uint32_t tokens) {
  r.timeline.chunk(tokens);
  m.chunk(r.live, tokens);
}
void on_finish(tokchron::live_metrics& m, request_state& r, bool failed) {
  const auto reason = failed ? tokchron::finish_reason::error : tokchron::finish_reason::stop;
  r.timeline.finish(reason);
  m.finish(r.live, reason);
}
}  // namespace engine
