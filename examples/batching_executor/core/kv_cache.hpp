// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXAMPLES_BATCHING_EXECUTOR_KV_CACHE_HPP
#define TOKCHRON_EXAMPLES_BATCHING_EXECUTOR_KV_CACHE_HPP

/// \file
/// Paged KV-cache block accounting (vLLM's block manager): a fixed pool of blocks of
/// `block_size` tokens, handed out to sequences as block tables.

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace batching {

/// A pool of `num_blocks` KV blocks. Allocation takes from a free stack, so block ids are
/// deterministic for a given sequence of calls. O(1) per block. Single-threaded.
class block_pool {
 public:
  /// Throws `std::invalid_argument` when `block_size` is 0.
  block_pool(std::uint32_t num_blocks, std::uint32_t block_size)
      : block_size_(block_size), total_(num_blocks) {
    if (block_size == 0) throw std::invalid_argument("kv cache: block_size must be > 0");
    free_.reserve(num_blocks);
    for (std::uint32_t i = num_blocks; i > 0; --i) free_.push_back(i - 1);
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
    if (need > free_.size()) return false;
    for (std::size_t i = 0; i < need; ++i) {
      table.push_back(free_.back());
      free_.pop_back();
    }
    return true;
  }
  /// Returns every block of `table` to the pool and clears it.
  void release(std::vector<std::uint32_t>& table) noexcept {
    for (auto it = table.rbegin(); it != table.rend(); ++it) free_.push_back(*it);
    table.clear();
  }

  [[nodiscard]] std::uint32_t block_size() const noexcept { return block_size_; }
  [[nodiscard]] std::uint32_t total() const noexcept { return total_; }
  [[nodiscard]] std::uint32_t free() const noexcept {
    return static_cast<std::uint32_t>(free_.size());
  }
  [[nodiscard]] std::uint32_t used() const noexcept { return total_ - free(); }

 private:
  std::uint32_t block_size_, total_;
  std::vector<std::uint32_t> free_;
};

}  // namespace batching

#endif  // TOKCHRON_EXAMPLES_BATCHING_EXECUTOR_KV_CACHE_HPP
