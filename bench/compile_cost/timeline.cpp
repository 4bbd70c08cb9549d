// SPDX-License-Identifier: MIT
// Compile-cost probe (bench/compile_cost/measure.py): the timeline part of record.cpp alone,
// request_timeline.hpp and canonical.hpp without the live metrics, to show what each part costs.
#include <cstdint>

#include "tokchron/metrics/canonical.hpp"
#include "tokchron/timeline/request_timeline.hpp"

namespace engine {
void on_accept(tokchron::request_timeline& t) { t.arrive(); }
void on_enqueue(tokchron::request_timeline& t) { t.queued(); }
void on_schedule(tokchron::request_timeline& t) { t.scheduled(); }
void on_preempt(tokchron::request_timeline& t) { t.preempted(); }
void on_delta(tokchron::request_timeline& t, std::uint32_t tokens) { t.chunk(tokens); }
void on_finish(tokchron::request_timeline& t, bool failed) {
  t.finish(failed ? tokchron::finish_reason::error : tokchron::finish_reason::stop);
}
}  // namespace engine
