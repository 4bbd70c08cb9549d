// SPDX-License-Identifier: MIT
#include "run_limits.hpp"

#include <cstdio>
#include <stdexcept>
#include <string>

#include "loadgen.hpp"

namespace batching {
namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string mib(std::uint64_t bytes) { return num(double(bytes) / double(1u << 20)) + " MiB"; }

[[noreturn]] void refuse(const std::string& why) { throw std::invalid_argument(why); }

}  // namespace

void check_run(const run_config& c, const backend& be) {
  const workload& w = c.load;
  if (!(c.warmup_s < w.duration_s))
    refuse("--warmup (" + num(c.warmup_s) + " s) must be shorter than --duration (" +
           num(w.duration_s) + " s): only requests arriving between the two are measured");

  // Every request rejected: the shortest one cannot fit.
  const std::uint32_t blocks = be.kv_blocks(c.sched.block_size);
  const double kv_tokens = double(blocks) * c.sched.block_size;
  const double prompt = w.prompt.min() + w.shared_prefix, output = w.output.min();
  const auto need =
      static_cast<std::uint64_t>((prompt + output + c.sched.block_size - 1) / c.sched.block_size);
  if (need > blocks)
    refuse("every request would be rejected: the shortest (" + num(prompt) + " prompt + " +
           num(output) + " output tokens) needs " + std::to_string(need) + " KV blocks of " +
           std::to_string(c.sched.block_size) + " tokens, and " + be.name() + " holds " +
           std::to_string(blocks) + " (" + num(kv_tokens) + " tokens)");
  if (!c.sched.chunked_prefill && prompt > c.sched.max_num_batched_tokens)
    refuse(
        "every request would be rejected: without chunked prefill a prompt must fit the "
        "token budget (--max-num-batched-tokens " +
        std::to_string(c.sched.max_num_batched_tokens) + "), and the shortest is " + num(prompt) +
        " tokens");

  if (!w.memory_limit) return;
  const std::uint64_t per_request = request_footprint(static_cast<std::uint32_t>(output));
  if (w.mode == arrival_mode::closed) {
    const std::uint64_t users = std::uint64_t(w.users) * (user_footprint() + per_request);
    if (users > w.memory_limit)
      refuse(std::to_string(w.users) + " users keep at least " + mib(users) +
             " (their state and a request each), more than the memory limit of " +
             mib(w.memory_limit) + " (--memory-limit)");
    return;
  }
  const std::uint64_t most = w.memory_limit / per_request;
  const arrival_count n = count_open_arrivals(w, c.warmup_s, most);
  const std::string load = "rate " + num(w.rate) + "/s, burstiness " + num(w.burstiness) +
                           ", seed " + std::to_string(w.seed);
  if (n.capped)
    refuse("the open loop (" + load + ") makes more than " + std::to_string(most) +
           " requests in " + num(w.duration_s) + " s, which would keep more than the memory " +
           "limit of " + mib(w.memory_limit) + " (--memory-limit)");
  if (n.from == 0)
    refuse("no request of the open loop (" + load + ") arrives between the warm-up (" +
           num(c.warmup_s) + " s) and the duration (" + num(w.duration_s) +
           " s): nothing would be measured");
}

}  // namespace batching
