// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_BACKENDS_MODEL_TOKEN_BOOK_HPP
#define TOKCHRON_TOOLS_EXECUTOR_BACKENDS_MODEL_TOKEN_BOOK_HPP

/// \file
/// The token ids behind the scheduler's token counts, for the real-compute backends (cpu, cuda):
/// each sequence's prompt (the deterministic `prompt_token`s of its id) plus what it sampled.
/// `prepare` turns an executor batch into a forward batch; `commit` appends the sampled tokens.
/// A released sequence's tokens are parked (the last `max_parked`), so a recompute after a
/// preemption refeeds the tokens it really produced. Single-threaded.

#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend.hpp"
#include "model/forward.hpp"
#include "model/model.hpp"

namespace batching::compute {

class token_book {
 public:
  static constexpr std::size_t max_parked = 4096;

  token_book(std::uint64_t seed, std::uint32_t vocab) : seed_(seed), vocab_(vocab) {}

  /// Fills `out` (cleared) with `b`'s sequences. Throws `std::runtime_error` when a sequence
  /// needs tokens it does not have (a decode of a sequence that never sampled, say).
  /// The token pointers stay valid until `commit`.
  void prepare(const batch& b, forward_batch& out) {
    out.seqs.clear();
    out.block_size = b.block_size;
    current_.clear();
    for (const sequence_work& s : b.seqs) {
      auto& h = history(s);
      const std::uint32_t n = s.new_tokens();
      if (h.size() < std::size_t(s.past_tokens) + n)
        throw std::runtime_error("sequence " + std::to_string(s.seq_id) + " needs " +
                                 std::to_string(s.past_tokens + n) + " tokens, has " +
                                 std::to_string(h.size()));
      forward_seq f;
      f.tokens = h.data() + s.past_tokens;
      f.past = s.past_tokens;
      f.n_new = n;
      f.blocks = s.blocks;
      f.num_blocks = s.num_blocks;
      f.sample = s.samples;
      out.seqs.push_back(f);
      current_.push_back(&h);
    }
  }

  /// Appends `next[i]` to every sampling sequence of the batch last `prepare`d, and fills the
  /// outputs (one per sequence).
  void commit(const batch& b, const std::vector<std::int32_t>& next,
              std::vector<sequence_output>& outputs) {
    outputs.assign(b.seqs.size(), sequence_output{});
    for (std::size_t i = 0; i < b.seqs.size(); ++i) {
      const sequence_work& s = b.seqs[i];
      if (!s.samples) continue;
      auto& h = *current_[i];
      h.resize(std::size_t(s.past_tokens) + s.new_tokens());  // a resample replaces the rest
      h.push_back(next[i]);
      outputs[i] = {1u, false, next[i]};
    }
    current_.clear();
  }

  /// Parks the sequence's tokens (its KV is gone). noexcept: on allocation failure the tokens
  /// are dropped, and a later recompute of it reports them missing.
  void release(std::uint64_t seq_id) noexcept {
    auto it = live_.find(seq_id);
    if (it == live_.end()) return;
    try {
      parked_[seq_id] = std::move(it->second);
      parked_order_.push_back(seq_id);
      while (parked_order_.size() > max_parked) {
        parked_.erase(parked_order_.front());
        parked_order_.pop_front();
      }
    } catch (...) {
    }
    live_.erase(it);
  }

  /// The tokens (prompt + sampled) of a live sequence; empty when unknown.
  [[nodiscard]] std::vector<std::int32_t> tokens(std::uint64_t seq_id) const {
    auto it = live_.find(seq_id);
    return it == live_.end() ? std::vector<std::int32_t>{} : it->second;
  }

 private:
  std::vector<std::int32_t>& history(const sequence_work& s) {
    if (auto it = live_.find(s.seq_id); it != live_.end()) return it->second;
    auto& h = live_[s.seq_id];
    if (auto p = parked_.find(s.seq_id); p != parked_.end()) {
      h = std::move(p->second);
      parked_.erase(p);
    } else {
      h.resize(s.prompt_tokens);
      for (std::uint32_t i = 0; i < s.prompt_tokens; ++i)
        h[i] = prompt_token(seed_, s.seq_id, i, vocab_);
    }
    return h;
  }

  std::uint64_t seed_;
  std::uint32_t vocab_;
  std::unordered_map<std::uint64_t, std::vector<std::int32_t>> live_, parked_;
  std::deque<std::uint64_t> parked_order_;
  std::vector<std::vector<std::int32_t>*> current_;
};

}  // namespace batching::compute

#endif  // TOKCHRON_TOOLS_EXECUTOR_BACKENDS_MODEL_TOKEN_BOOK_HPP
