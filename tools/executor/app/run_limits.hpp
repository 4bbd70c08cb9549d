// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_APP_RUN_LIMITS_HPP
#define TOKCHRON_TOOLS_EXECUTOR_APP_RUN_LIMITS_HPP

/// \file
/// What a configuration must satisfy before it runs, beyond each option's own range: something
/// to measure, requests the KV cache can hold, and memory for what the run keeps. Each refusal
/// says why, with the numbers.
///
/// Requests that can never fit are still rejected one by one when only some of a distribution's
/// draws are too long (the scheduler counts them: `scheduler_stats::rejected_too_long`, shown
/// as "rejected" in every report), as vLLM rejects a prompt longer than its context or cache.
/// Memory the checks cannot foresee (a closed loop's request count depends on the backend's
/// speed) is held by `workload::memory_limit` while the run goes.

#include "backend.hpp"
#include "cli.hpp"

namespace batching {

/// Throws `std::invalid_argument` when `c` cannot run on `be`:
/// - the warm-up is not shorter than the duration (no request would be measured);
/// - the smallest request (shortest prompt plus shortest output) needs more KV blocks than `be`
///   holds, or, without chunked prefill, the shortest prompt exceeds the token budget: every
///   request would be rejected;
/// - an open loop in which no request arrives between the warm-up and the duration (counted
///   exactly for the seed), or whose requests would keep more than `c.load.memory_limit`;
/// - a closed loop whose users, with one request each, would keep more than that limit.
void check_run(const run_config& c, const backend& be);

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_APP_RUN_LIMITS_HPP
