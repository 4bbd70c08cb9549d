// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_TESTS_FAKE_BACKEND_HPP
#define TOKCHRON_TOOLS_EXECUTOR_TESTS_FAKE_BACKEND_HPP

// A virtual-time backend with a trivial cost (base + per token) and a chosen KV pool size, for
// scheduler tests that need exact, hand-checkable times.
#include <set>

#include "backend.hpp"

namespace batching::testing {

class fake_backend final : public backend {
 public:
  explicit fake_backend(std::uint32_t blocks, duration base = std::chrono::milliseconds(10),
                        duration per_token = duration(0))
      : blocks_(blocks), base_(base), per_token_(per_token) {}
  [[nodiscard]] std::string name() const override { return "fake"; }
  [[nodiscard]] bool virtual_time() const noexcept override { return true; }
  [[nodiscard]] std::uint32_t kv_blocks(std::uint32_t) const override { return blocks_; }
  step_result step(const batch& b) override {
    step_result r;
    r.elapsed = base_ + per_token_ * b.num_tokens();
    for (const auto& s : b.seqs) {
      r.outputs.push_back({s.samples ? 1u : 0u, false, -1});
      live.insert(s.seq_id);
    }
    ++steps;
    return r;
  }
  void release(std::uint64_t id) noexcept override {
    live.erase(id);
    ++releases;
  }
  std::set<std::uint64_t> live;  // sequences with KV state the backend was told about
  std::uint64_t steps = 0, releases = 0;

 private:
  std::uint32_t blocks_;
  duration base_, per_token_;
};

}  // namespace batching::testing

#endif  // TOKCHRON_TOOLS_EXECUTOR_TESTS_FAKE_BACKEND_HPP
