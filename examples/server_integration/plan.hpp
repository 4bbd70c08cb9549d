// SPDX-License-Identifier: MIT
// The fake engine's workload: what happens to each request, drawn up front from one seed, so a
// run with the same --seed and --requests has the same requests, the same outcomes and the same
// token counts (the times are real and vary from run to run).
#ifndef TOKCHRON_EXAMPLES_SERVER_INTEGRATION_PLAN_HPP
#define TOKCHRON_EXAMPLES_SERVER_INTEGRATION_PLAN_HPP

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace server_integration {

// Every way a request can end in this engine.
enum class fate : std::uint8_t {
  stop,             // the model stopped (EOS) before max_tokens
  length,           // max_tokens reached
  preempted,        // preempted once mid-stream, rescheduled, then completed (stop)
  aborted,          // the client went away mid-stream
  aborted_waiting,  // the client went away while the request waited in the queue
  failed,           // the worker failed the request (possibly during prefill)
  rejected,         // refused at admission: the prompt is longer than the context
};

inline const char* to_string(fate f) {
  switch (f) {
    case fate::stop: return "stop";
    case fate::length: return "length";
    case fate::preempted: return "preempted";
    case fate::aborted: return "aborted";
    case fate::aborted_waiting: return "aborted_waiting";
    case fate::failed: return "failed";
    case fate::rejected: return "rejected";
  }
  return "?";
}

struct request_plan {
  std::uint64_t id = 0;
  std::uint32_t prompt_tokens = 0;
  std::uint32_t max_tokens = 0;  // the request's output limit
  std::uint32_t target = 0;      // output tokens when the request completes (<= max_tokens)
  std::uint32_t event_at = 0;    // tokens before the preemption, abort or failure strikes
  fate end = fate::stop;
  std::uint64_t step_seed = 0;  // decides the chunk sizes (speculative decoding)
};

// The engine's context length: longer prompts are rejected.
inline constexpr std::uint32_t max_model_len = 4096;

// Draws `n` request plans from `seed`. The mix: 3 % rejected, 1 % aborted while waiting, 2 %
// failed, 4 % aborted mid-stream, 6 % preempted once, the rest completed by stop or length.
// One-token answers occur (max_tokens 1).
inline std::vector<request_plan> make_plans(std::uint64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::uint32_t> prompt(16, 2048), max_tokens(1, 256),
      too_long(max_model_len + 1, 2 * max_model_len);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<request_plan> plans(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    request_plan& p = plans[i];
    p.id = i;
    p.prompt_tokens = prompt(rng);
    p.max_tokens = u(rng) < 0.03 ? 1 : max_tokens(rng);
    p.step_seed = rng();
    const double f = u(rng);
    // Tokens produced before the fate: 0 .. max_tokens - 1 for the mid-stream fates.
    auto before = [&](std::uint32_t lo) {
      const std::uint32_t hi = p.max_tokens > lo ? p.max_tokens - 1 : lo;
      return std::uniform_int_distribution<std::uint32_t>(lo, hi)(rng);
    };
    // Completed requests stop (EOS) before max_tokens in 70 % of cases (when they can).
    p.target = u(rng) < 0.7 && p.max_tokens > 1 ? before(1) : p.max_tokens;
    if (f < 0.03) {
      p.end = fate::rejected;
      p.prompt_tokens = too_long(rng);
    } else if (f < 0.04) {
      p.end = fate::aborted_waiting;
    } else if (f < 0.06) {
      p.end = fate::failed;
      p.event_at = before(0);  // 0: fails during prefill, before any token
    } else if (f < 0.10 && p.max_tokens >= 2) {
      p.end = fate::aborted;
      p.event_at = before(1);
    } else if (f < 0.16 && p.target >= 2) {
      p.end = fate::preempted;  // preempted once, then runs to its target
      p.event_at = std::uniform_int_distribution<std::uint32_t>(1, p.target - 1)(rng);
    } else {
      p.end = p.target < p.max_tokens ? fate::stop : fate::length;
    }
  }
  return plans;
}

}  // namespace server_integration

#endif  // TOKCHRON_EXAMPLES_SERVER_INTEGRATION_PLAN_HPP
