// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_CORE_KV_CACHE_HPP
#define TOKCHRON_TOOLS_EXECUTOR_CORE_KV_CACHE_HPP

/// \file
/// Paged KV-cache block accounting with automatic prefix caching, as vLLM v1's `BlockPool` and
/// `KVCacheManager` do it (vllm-project/vllm: vllm/v1/core/block_pool.py at c59cb79,
/// vllm/v1/core/kv_cache_manager.py at 003df29):
/// - a fixed pool of blocks of `block_size` tokens, handed out to sequences as block tables;
/// - a full block of a prompt is named by a chain hash, its parent block's hash and its own
///   tokens (`block_hasher`; vLLM hashes the parent hash with the block's token ids when the
///   request is created), so a hash names the whole prefix up to
///   the end of its block;
/// - a block is cached (its hash recorded) once it is scheduled to be computed (vLLM's
///   `allocate_slots` caches up to the tokens it schedules); a request admitted later takes the
///   longest run of its leading block hashes that the cache holds (`cached_prefix`, vLLM's
///   `find_longest_cache_hit`), referenced, not copied (`share`, vLLM's `touch`);
/// - each block counts the tables that reference it; a cached block no table references joins
///   the back of a least-recently-used queue, a table's blocks in reverse order, so that its
///   tail is evicted first (vLLM's `free`); it is free, and cached until it is taken;
/// - allocation takes, in this order, the uncached free blocks (the last freed first, so that
///   a run without a prefix cache reuses warm blocks), the blocks never handed out (lowest id
///   first), then the front of the LRU queue, whose hash is then forgotten: an eviction (vLLM's
///   `get_new_blocks` and `_maybe_evict_cached_block`; vLLM keeps every free block in its one
///   queue, so it may evict a cached block while an uncached one is free). So only unreferenced
///   blocks are evicted, and only when no other block is free: the scheduler preempts no one
///   while a cached block is free.
/// A block already cached under the hash of a block computed again (two requests computing the
/// same prefix at once) keeps the hash; the second copy stays uncached (vLLM keeps both copies
/// under one hash and hands out the first).
///
/// O(1) per block (a hash lookup per cached block); memory grows with the blocks handed out, not
/// with `num_blocks`. Single-threaded.

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace batching {

/// The hashes of a token sequence's full blocks of `block_size` tokens: block i's hash mixes
/// block i-1's hash (a fixed seed for the first) with the keys of its tokens, so two sequences'
/// block i hashes are equal exactly when (up to 64-bit collisions) their first (i + 1) x
/// `block_size` token keys are. A token's key is whatever names it (serve: a hash of the word,
/// or the token id); a partial last block gets no hash.
class block_hasher {
 public:
  /// Appends to `out`; at most `max_blocks` hashes.
  block_hasher(std::uint32_t block_size, std::vector<std::uint64_t>& out,
               std::size_t max_blocks = static_cast<std::size_t>(-1))
      : block_size_(block_size), max_(max_blocks), out_(&out) {
    if (block_size == 0) throw std::invalid_argument("kv cache: block_size must be > 0");
  }
  /// The next token's key.
  void add(std::uint64_t key) {
    state_ = round(state_, key);
    if (++in_block_ < block_size_) return;
    in_block_ = 0;
    state_ = finish(state_);  // the block's hash, and the next block's parent
    if (out_->size() < max_) out_->push_back(state_);
  }
  /// The key of token `i` of the shared system prompt that `--shared-prefix` declares (no text
  /// of its own: every request's first tokens are the same tokens).
  [[nodiscard]] static std::uint64_t shared_prefix_key(std::uint64_t i) noexcept {
    return finish(i ^ 0x2545F4914F6CDD1DULL);
  }
  /// The key of a token given as a token id (apart from any word's key).
  [[nodiscard]] static std::uint64_t token_id_key(std::uint64_t id) noexcept {
    return finish(id ^ 0x9E6C63D0676A9A99ULL);
  }
  /// A 64-bit finaliser (splitmix64's): every input bit flips each output bit with
  /// probability about 1/2.
  [[nodiscard]] static std::uint64_t finish(std::uint64_t x) noexcept {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
  }

 private:
  // One multiply-rotate round per token (xxHash64's): order matters, so a block's hash names
  // its tokens in order.
  [[nodiscard]] static std::uint64_t round(std::uint64_t acc, std::uint64_t key) noexcept {
    acc += key * 0xC2B2AE3D27D4EB4FULL;
    acc = (acc << 31) | (acc >> 33);
    return acc * 0x9E3779B185EBCA87ULL;
  }
  std::uint32_t block_size_, in_block_ = 0;
  std::size_t max_;
  std::uint64_t state_ = 0x27D4EB2F165667C5ULL;  // the first block's parent
  std::vector<std::uint64_t>* out_;
};

/// A pool of `num_blocks` KV blocks with a prefix cache (see the file's comment).
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
  /// Grows `table` to at least `blocks` blocks with new blocks (each referenced once), evicting
  /// the cached blocks it takes from the free queue; false (and `table` unchanged) when the pool
  /// has too few free blocks.
  [[nodiscard]] bool grow(std::vector<std::uint32_t>& table, std::uint32_t blocks) {
    if (table.size() >= blocks) return true;
    const std::size_t need = blocks - table.size();
    if (need > free()) return false;
    // `release` must not allocate: room for every block ever handed out.
    const std::size_t fresh =
        need > spare_.size() ? std::min<std::size_t>(need - spare_.size(), total_ - fresh_) : 0;
    if (meta_.capacity() < fresh_ + fresh)
      meta_.reserve(std::max<std::size_t>(fresh_ + fresh, 2 * meta_.capacity()));
    if (spare_.capacity() < meta_.capacity()) spare_.reserve(meta_.capacity());
    for (std::size_t i = 0; i < need; ++i) {
      std::uint32_t b;
      if (!spare_.empty()) {
        b = spare_.back();
        spare_.pop_back();
      } else if (fresh_ < total_) {
        b = fresh_++;
        meta_.emplace_back();
      } else {
        b = head_;
        unlink(b);
        by_hash_.erase(meta_[b].hash);
        meta_[b].cached = false;
        ++evictions_;
      }
      meta_[b].refs = 1;
      table.push_back(b);
    }
    return true;
  }
  /// Drops `table`'s references (blocks this pool handed out) and clears it; a block no table
  /// references any more is free (see the file's comment for the order).
  void release(std::vector<std::uint32_t>& table) noexcept {
    for (auto it = table.rbegin(); it != table.rend(); ++it) {
      block& m = meta_[*it];
      if (m.refs == 0 || --m.refs > 0) continue;
      if (m.cached)
        link_back(*it);
      else
        spare_.push_back(*it);
    }
    table.clear();
  }

  // --- the prefix cache ------------------------------------------------------------------
  /// How many of `hashes`' leading blocks the cache holds (at most `max_blocks`).
  [[nodiscard]] std::uint32_t cached_prefix(const std::vector<std::uint64_t>& hashes,
                                            std::uint32_t max_blocks) const {
    std::uint32_t k = 0;
    while (k < max_blocks && k < hashes.size() && by_hash_.count(hashes[k])) ++k;
    return k;
  }
  /// How many of the first `k` blocks of `hashes` (all cached) no table references: taking
  /// them costs as many free blocks.
  [[nodiscard]] std::uint32_t idle_in_prefix(const std::vector<std::uint64_t>& hashes,
                                             std::uint32_t k) const {
    std::uint32_t idle = 0;
    for (std::uint32_t i = 0; i < k; ++i) idle += meta_[by_hash_.at(hashes[i])].refs == 0 ? 1 : 0;
    return idle;
  }
  /// Appends the cached blocks of `hashes`' first `k` (all cached) to `table`, referenced.
  void share(std::vector<std::uint32_t>& table, const std::vector<std::uint64_t>& hashes,
             std::uint32_t k) {
    table.reserve(table.size() + k);
    for (std::uint32_t i = 0; i < k; ++i) {
      const std::uint32_t b = by_hash_.at(hashes[i]);
      if (meta_[b].refs++ == 0) unlink(b);
      table.push_back(b);
    }
  }
  /// Records that block `b` (referenced) holds the tokens named by `hash`; a no-op when the
  /// cache already holds a block of that hash.
  void cache(std::uint32_t b, std::uint64_t hash) {
    block& m = meta_[b];
    if (m.cached || !by_hash_.emplace(hash, b).second) return;
    m.cached = true;
    m.hash = hash;
  }

  [[nodiscard]] std::uint32_t block_size() const noexcept { return block_size_; }
  [[nodiscard]] std::uint32_t total() const noexcept { return total_; }
  /// Blocks no table references (cached ones included: they are evicted when taken).
  [[nodiscard]] std::uint32_t free() const noexcept {
    return total_ - fresh_ + static_cast<std::uint32_t>(spare_.size()) + queued_;
  }
  [[nodiscard]] std::uint32_t used() const noexcept { return total_ - free(); }
  /// Blocks the prefix cache holds, referenced or not.
  [[nodiscard]] std::uint32_t cached() const noexcept {
    return static_cast<std::uint32_t>(by_hash_.size());
  }
  /// Cached blocks evicted so far.
  [[nodiscard]] std::uint64_t evictions() const noexcept { return evictions_; }
  /// The tables referencing block `b` (0 for a block never handed out).
  [[nodiscard]] std::uint32_t refs(std::uint32_t b) const noexcept {
    return b < meta_.size() ? meta_[b].refs : 0;
  }
  /// Whether block `b` is cached, and under which hash.
  [[nodiscard]] bool cached_as(std::uint32_t b, std::uint64_t& hash) const noexcept {
    if (b >= meta_.size() || !meta_[b].cached) return false;
    hash = meta_[b].hash;
    return true;
  }

 private:
  static constexpr std::uint32_t none = 0xFFFFFFFFu;
  struct block {
    std::uint64_t hash = 0;
    std::uint32_t refs = 0;
    std::uint32_t prev = none, next = none;  // the LRU queue's neighbours
    bool cached = false;
  };
  void unlink(std::uint32_t b) noexcept {
    block& m = meta_[b];
    (m.prev == none ? head_ : meta_[m.prev].next) = m.next;
    (m.next == none ? tail_ : meta_[m.next].prev) = m.prev;
    m.prev = m.next = none;
    --queued_;
  }
  void link_back(std::uint32_t b) noexcept {
    block& m = meta_[b];
    m.prev = tail_;
    m.next = none;
    (tail_ == none ? head_ : meta_[tail_].next) = b;
    tail_ = b;
    ++queued_;
  }

  std::uint32_t block_size_, total_;
  std::uint32_t fresh_ = 0;           // blocks [fresh_, total_) were never handed out
  std::vector<block> meta_;           // one per block handed out, by id
  std::vector<std::uint32_t> spare_;  // free and uncached; the last one goes first
  std::uint32_t head_ = none, tail_ = none, queued_ = 0;  // free and cached: the LRU queue
  std::unordered_map<std::uint64_t, std::uint32_t> by_hash_;
  std::uint64_t evictions_ = 0;
};

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_CORE_KV_CACHE_HPP
