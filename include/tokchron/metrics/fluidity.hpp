// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_METRICS_FLUIDITY_HPP
#define TOKCHRON_METRICS_FLUIDITY_HPP

/// \file
/// Etalon's fluidity-index (arXiv 2407.07000) per request and the fluid token generation rate.
///
/// Every output token has a deadline: `D_p` after arrival for the first token, `D_d` after the
/// previous token for each later one. Slack carries over: a token whose gap is at most its
/// deadline plus the slack meets it and adds (deadline - gap) to the slack (which may shrink it).
/// A token that misses counts `1 + floor((gap - slack - D_p) / D_d)` missed deadlines if it is
/// the first token, `floor((gap - slack) / D_d)` otherwise; those are added to both the missed
/// and the total count, and the slack resets to 0. A met token adds 1 to the total.
/// fluidity-index = 1 - missed / total. Tokens of one chunk share its time: the first of them
/// takes the gap, the others a gap of 0.
///
/// The fluid token generation rate is the highest rate R (tokens/s, D_d = 1/R) at which at least
/// 99% of requests keep a fluidity-index >= 0.9 (both settable). Etalon's defaults: D_d = 30 ms,
/// D_p = predicted prefill time + 0.3 s.

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "tokchron/config.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// Per-token deadlines, in seconds.
struct fluidity_deadlines {
  double first_token_s = 0.3;  ///< D_p: the first token's deadline after arrival
  double per_token_s = 0.030;  ///< D_d: each later token's deadline after the previous token
};

/// Missed and total deadline counts of one request.
struct fluidity_result {
  std::uint64_t missed = 0;
  std::uint64_t total = 0;
  /// 1 - missed / total (1 for a request with no deadlines).
  [[nodiscard]] double index() const noexcept {
    return total == 0 ? 1.0 : 1.0 - static_cast<double>(missed) / static_cast<double>(total);
  }
};

/// Counts deadlines token by token. O(1) per token, no allocation; single writer.
class fluidity_counter {
 public:
  /// Deadlines must be positive and finite (checked by the caller; see `fluidity`).
  explicit fluidity_counter(const fluidity_deadlines& d) noexcept : d_(d) {}

  /// The next token arrived `gap_s` seconds after the previous token (after arrival for the
  /// first). A negative or NaN gap is treated as 0.
  void token(double gap_s) noexcept {
    if (!(gap_s > 0)) gap_s = 0;
    const double deadline = first_ ? d_.first_token_s : d_.per_token_s;
    if (gap_s <= deadline + slack_) {
      slack_ += deadline - gap_s;
      ++r_.total;
    } else {
      const double over =
          first_ ? 1.0 + std::floor((gap_s - slack_ - d_.first_token_s) / d_.per_token_s)
                 : std::floor((gap_s - slack_) / d_.per_token_s);
      const std::uint64_t misses = over < 1      ? 1
                                   : over > 1e18 ? std::uint64_t{1000000000000000000}
                                                 : static_cast<std::uint64_t>(over);
      r_.missed += misses;
      r_.total += misses;
      slack_ = 0;
    }
    first_ = false;
  }
  /// `count` tokens arriving together after `gap_s` (a chunk): one gap, then gaps of 0.
  void tokens(std::uint64_t count, double gap_s) noexcept {
    if (count == 0) return;
    token(gap_s);
    for (std::uint64_t i = 1; i < count; ++i) token(0);
  }

  [[nodiscard]] const fluidity_result& result() const noexcept { return r_; }
  [[nodiscard]] double slack() const noexcept { return slack_; }

 private:
  fluidity_deadlines d_;
  fluidity_result r_;
  double slack_ = 0;
  bool first_ = true;
};

namespace detail {
[[nodiscard]] inline bool valid_deadlines(const fluidity_deadlines& d) noexcept {
  return d.first_token_s > 0 && std::isfinite(d.first_token_s) && d.per_token_s > 0 &&
         std::isfinite(d.per_token_s);
}
inline void check_deadlines(const fluidity_deadlines& d) {
  if (!valid_deadlines(d))
    TOKCHRON_THROW(std::invalid_argument,
                   "tokchron: fluidity deadlines must be positive and finite seconds");
}

/// Token chunks of a timeline as (tokens, gap in seconds) pairs; false when undefined.
template <class Timeline, class F>
bool for_each_token_chunk_gap(const Timeline& tl, F&& f) {
  static_assert(Timeline::store_type::keeps_chunks,
                "fluidity needs a full_store (every chunk's time)");
  const auto a = tl.arrival();
  if (!a || !tl.first_token_time()) return false;
  auto prev = *a;
  for (const auto& c : tl.store().chunks()) {
    if (c.tokens == 0) continue;
    f(c.tokens, std::chrono::duration<double>(c.time - prev).count());
    prev = c.time;
  }
  return true;
}
}  // namespace detail

/// The fluidity counts of one request: empty when it has no arrival or no token. Needs a store
/// that keeps chunks. Throws std::invalid_argument for non-positive deadlines. O(N) in tokens.
template <class Timeline>
[[nodiscard]] std::optional<fluidity_result> fluidity(const Timeline& tl,
                                                      const fluidity_deadlines& d) {
  detail::check_deadlines(d);
  fluidity_counter c(d);
  if (!detail::for_each_token_chunk_gap(tl, [&](std::uint32_t k, double gap) { c.tokens(k, gap); }))
    return std::nullopt;
  return c.result();
}

/// The fluidity-index of one request (1 - missed/total); empty when undefined.
template <class Timeline>
[[nodiscard]] std::optional<double> fluidity_index(const Timeline& tl,
                                                   const fluidity_deadlines& d) {
  const auto r = fluidity(tl, d);
  if (!r) return std::nullopt;
  return r->index();
}

/// What "fluid" means for `fluid_token_rate`.
struct fluid_rate_options {
  double request_share = 0.99;  ///< share of requests that must stay fluid
  double min_index = 0.9;       ///< the fluidity-index they must keep
  double max_rate = 1e9;        ///< search ceiling in tokens/s (returned when never violated)
};

/// The fluid token generation rate of a set of requests: the highest rate R in tokens/s such
/// that at least `request_share` of the requests with a token keep fluidity-index >=
/// `min_index` when D_d = 1/R and D_p = `first_token_deadline` (seconds, or a callable giving it
/// per timeline). Empty when no request has a token or no positive rate is fluid (the first
/// tokens alone miss too often). Found by bisection on log R to a relative 1e-9 (the index does
/// not increase with R). O(total tokens x 64) time, O(token chunks) memory.
template <class Range, class FirstDeadline>
[[nodiscard]] std::optional<double> fluid_token_rate(const Range& timelines,
                                                     const FirstDeadline& first_token_deadline,
                                                     const fluid_rate_options& opt = {}) {
  if (!(opt.request_share > 0 && opt.request_share <= 1 && opt.min_index >= 0 &&
        opt.min_index <= 1 && opt.max_rate > 0))
    TOKCHRON_THROW(std::invalid_argument, "tokchron: bad fluid_rate_options");
  struct request {
    std::size_t begin, end;
    double first_deadline;
  };
  std::vector<std::pair<std::uint32_t, double>> chunks;
  std::vector<request> reqs;
  for (const auto& tl : timelines) {
    double dp = 0;
    if constexpr (std::is_invocable_v<const FirstDeadline&, decltype(tl)>)
      dp = static_cast<double>(first_token_deadline(tl));
    else
      dp = static_cast<double>(first_token_deadline);
    if (!(dp > 0 && std::isfinite(dp)))
      TOKCHRON_THROW(std::invalid_argument,
                     "tokchron: the first-token deadline must be positive and finite");
    const std::size_t b = chunks.size();
    if (detail::for_each_token_chunk_gap(
            tl, [&](std::uint32_t k, double gap) { chunks.emplace_back(k, gap); }))
      reqs.push_back(request{b, chunks.size(), dp});
    else
      chunks.resize(b);
  }
  if (reqs.empty()) return std::nullopt;
  const double need = opt.request_share * static_cast<double>(reqs.size()) * (1 - 1e-12);
  auto fluid_at = [&](double rate) {
    std::size_t ok = 0;
    for (const auto& r : reqs) {
      fluidity_counter c(fluidity_deadlines{r.first_deadline, 1.0 / rate});
      for (std::size_t i = r.begin; i < r.end; ++i) c.tokens(chunks[i].first, chunks[i].second);
      if (c.result().index() >= opt.min_index) ++ok;
    }
    return static_cast<double>(ok) >= need;
  };
  if (fluid_at(opt.max_rate)) return opt.max_rate;
  double lo = 1.0, hi = opt.max_rate;
  while (!fluid_at(lo)) {
    hi = lo;
    lo /= 16;
    if (lo < 1e-9) return std::nullopt;
  }
  while (hi / lo > 1 + 1e-9) {
    const double mid = std::sqrt(lo * hi);
    if (fluid_at(mid))
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_METRICS_FLUIDITY_HPP
