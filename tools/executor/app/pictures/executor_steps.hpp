// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_APP_PICTURES_EXECUTOR_STEPS_HPP
#define TOKCHRON_TOOLS_EXECUTOR_APP_PICTURES_EXECUTOR_STEPS_HPP

/// \file
/// The executor's over-time record for the pictures: a `batching::step_observer` (the engine's
/// per-step hook) that appends each step's time span, batch size, queue length and KV use to an
/// `executor_series` (tools/plot's, through the tokchron_plot library).

#include <algorithm>

#include "engine.hpp"
#include "plot/plot.hpp"

namespace plot {

/// An observer for `batching::run` that records every step into `out` (which must outlive the
/// run): [plan start, start + elapsed) (at least 1 ns, as the engine advances its clock), the
/// batch's sequences, the requests left waiting after admission, and the KV blocks in use.
[[nodiscard]] inline batching::step_observer record_steps(executor_series& out) {
  return [&out](const batching::step_plan& plan, const batching::step_result& res,
                const batching::scheduler& s) {
    executor_step st;
    st.start = tokchron::to_seconds(plan.start.time_since_epoch());
    st.end = tokchron::to_seconds(
        (plan.start + std::max(res.elapsed, batching::duration(1))).time_since_epoch());
    st.batch = static_cast<std::uint32_t>(plan.work.seqs.size());
    st.waiting = static_cast<std::uint32_t>(s.waiting());
    st.kv_used = s.kv().used();
    st.kv_total = s.kv().total();
    out.steps.push_back(st);
  };
}

}  // namespace plot

#endif  // TOKCHRON_TOOLS_EXECUTOR_APP_PICTURES_EXECUTOR_STEPS_HPP
