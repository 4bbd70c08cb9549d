// SPDX-License-Identifier: MIT
// Compile-cost probe (bench/compile_cost/measure.py): a server's hot file, recording each
// request with tokchron/record.hpp. Compiled with -DTOKCHRON_COMPILE_COST_UMBRELLA it includes
// the umbrella header instead, for the umbrella's figures.
#ifdef TOKCHRON_COMPILE_COST_UMBRELLA
#include "tokchron/tokchron.hpp"
#else
#include "tokchron/record.hpp"
#endif

#include <cstdint>
#include <optional>

// Each function is what one place in a serving engine calls (docs/server-integration.md).
namespace engine {
struct request_state {
  tokchron::request_timeline timeline;
};

void on_accept(request_state& r) { r.timeline.arrive(); }
void on_enqueue(request_state& r) { r.timeline.queued(); }
void on_schedule(request_state& r) { r.timeline.scheduled(); }
void on_preempt(request_state& r) { r.timeline.preempted(); }
void on_delta(request_state& r, std::uint32_t tokens) { r.timeline.chunk(tokens); }
void on_finish(request_state& r, bool failed) {
  r.timeline.finish(failed ? tokchron::finish_reason::error : tokchron::finish_reason::stop);
}
}  // namespace engine

int main() {
  engine::request_state r;
  engine::on_accept(r);
  engine::on_enqueue(r);
  engine::on_schedule(r);
  engine::on_delta(r, 1);
  engine::on_preempt(r);
  engine::on_schedule(r);
  engine::on_delta(r, 3);
  engine::on_finish(r, false);
  return r.timeline.misuse_count() == 0 ? 0 : 1;
}
