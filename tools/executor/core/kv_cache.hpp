// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_CORE_KV_CACHE_HPP
#define TOKCHRON_TOOLS_EXECUTOR_CORE_KV_CACHE_HPP

/// \file
/// Paged KV-cache block accounting (vLLM's block manager): a fixed pool of blocks of
/// `block_size` tokens, handed out to sequences as block tables.

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace batching {

/// A pool of `num_blocks` KV blocks. Allocation takes from a stack of freed blocks, then from the
/// blocks never handed out, lowest id first, so block ids are deterministic for a given sequence
/// of calls. O(1) per block; memory grows with the blocks handed out, not with `num_blocks`.
/// Single-threaded.
class block_pool {
 public:
  /// Throws `std::invalid_argument` when `block_size` is 0.
  block_pool(std::uint32_t num_blocks, std::uint32_t block_size)
      : block_size_(block_size), total_(num_blocks) {
    if (block_size == 0) throw std::invalid_argument("kv cache: block_size must be > 0");
  }

  /// Blocks needed to hold `tokens` tokens.
  [[nodiscard]] std::uint32_t blocks_for(std::uint64_t tokens) const noexcept {
    return static_cast<std::uint32_t>((tokens + block_size_ - 1) / block_size_);
  }
  /// Grows `table` to at least `blocks` blocks; false (and `table` unchanged) when the pool has
  /// too few free blocks.
  [[nodiscard]] bool grow(std::vector<std::uint32_t>& table, std::uint32_t blocks) {
    if (table.size() >= blocks) return true;
    const std::size_t need = blocks - table.size();
    if (need > free()) return false;
    // `release` must not allocate: room for every block ever handed out.
    const std::size_t handed_out = fresh_ + (need > freed_.size() ? need - freed_.size() : 0);
    if (freed_.capacity() < handed_out) freed_.reserve(std::max(handed_out, 2 * freed_.capacity()));
    for (std::size_t i = 0; i < need; ++i) {
      if (freed_.empty()) {
        table.push_back(fresh_++);
      } else {
        table.push_back(freed_.back());
        freed_.pop_back();
      }
    }
    return true;
  }
  /// Returns every block of `table` (blocks this pool handed out) to the pool and clears it.
  void release(std::vector<std::uint32_t>& table) noexcept {
    for (auto it = table.rbegin(); it != table.rend(); ++it) freed_.push_back(*it);
    table.clear();
  }

  [[nodiscard]] std::uint32_t block_size() const noexcept { return block_size_; }
  [[nodiscard]] std::uint32_t total() const noexcept { return total_; }
  [[nodiscard]] std::uint32_t free() const noexcept {
    return total_ - fresh_ + static_cast<std::uint32_t>(freed_.size());
  }
  [[nodiscard]] std::uint32_t used() const noexcept { return total_ - free(); }

 private:
  std::uint32_t block_size_, total_;
  std::uint32_t fresh_ = 0;           // blocks [fresh_, total_) were never handed out
  std::vector<std::uint32_t> freed_;  // handed out and released; the last one goes first
};

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_CORE_KV_CACHE_HPP
