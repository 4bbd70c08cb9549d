// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_METRICS_DETAIL_SELECT_RANKS_HPP
#define TOKCHRON_METRICS_DETAIL_SELECT_RANKS_HPP

/// \file
/// Order statistics without sorting (`select_ranks`), for run summaries.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "tokchron/config.hpp"

TOKCHRON_BEGIN_NAMESPACE

namespace detail {
/// The key of a (non-NaN) double whose unsigned order is the numeric order, with -0 before +0.
[[nodiscard]] inline std::uint64_t order_key(double d) noexcept {
  std::uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return (u >> 63) ? ~u : (u | (std::uint64_t{1} << 63));
}

/// Order statistics without sorting: sets `values[i]` to the sample of 0-based rank `ranks[i]`
/// in ascending order of `data[0..n)` (NaN-free; `ranks` ascending, each < n), the order being
/// `order_key`'s. A radix selection, 16 key bits per level from the top: one counting pass over
/// the candidates, then only the buckets that hold a wanted rank are copied on, down to sets
/// small enough to sort. O(n) time for any input (at most four levels); extra memory is the
/// copied buckets, usually a few percent of n for latency samples, at most n per level.
/// Throws std::bad_alloc.
inline void select_ranks(const double* data, std::size_t n, const std::size_t* ranks,
                         double* values, std::size_t k, int shift = 48) {
  if (k == 0) return;
  if (shift < 0) {  // every key bit is shared: the candidates are one value
    std::fill(values, values + k, data[0]);
    return;
  }
  if (n <= 32768) {  // small: sort a copy
    std::vector<double> v(data, data + n);
    std::sort(v.begin(), v.end(), [](double a, double b) { return order_key(a) < order_key(b); });
    for (std::size_t i = 0; i < k; ++i) values[i] = v[ranks[i]];
    return;
  }
  constexpr std::size_t buckets = std::size_t{1} << 16;
  const auto digit = [shift](double d) {
    return static_cast<std::size_t>((order_key(d) >> shift) & (buckets - 1));
  };
  std::vector<std::size_t> count(buckets, 0);
  for (std::size_t i = 0; i < n; ++i) ++count[digit(data[i])];
  // The buckets holding wanted ranks, in order: bucket, its first rank, wanted ranks [r0, r1).
  struct wanted {
    std::size_t bucket, first, r0, r1;
  };
  std::vector<wanted> want;
  std::size_t b = 0, below = 0;
  for (std::size_t i = 0; i < k; ++i) {
    while (below + count[b] <= ranks[i]) below += count[b++];
    if (want.empty() || want.back().bucket != b) want.push_back(wanted{b, below, i, i});
    want.back().r1 = i + 1;
  }
  std::vector<std::size_t> local(k);  // the ranks within their bucket
  for (const wanted& w : want)
    for (std::size_t i = w.r0; i < w.r1; ++i) local[i] = ranks[i] - w.first;
  if (want.size() == 1 && count[want[0].bucket] == n) {  // one bucket holds every sample
    select_ranks(data, n, local.data(), values, k, shift - 16);
    return;
  }
  // Copy the wanted buckets, each contiguous, in one pass; then select within each.
  std::vector<std::size_t> slot(buckets, want.size()), end(want.size());
  std::size_t total = 0;
  for (std::size_t j = 0; j < want.size(); ++j) {
    slot[want[j].bucket] = j;
    end[j] = total;
    total += count[want[j].bucket];
  }
  const std::unique_ptr<double[]> cand(new double[total]);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = slot[digit(data[i])];
    if (j != want.size()) cand[end[j]++] = data[i];
  }
  std::vector<std::size_t>().swap(count);
  std::vector<std::size_t>().swap(slot);
  for (std::size_t j = 0; j < want.size(); ++j) {
    const std::size_t first = j == 0 ? 0 : end[j - 1];
    select_ranks(cand.get() + first, end[j] - first, local.data() + want[j].r0, values + want[j].r0,
                 want[j].r1 - want[j].r0, shift - 16);
  }
}
}  // namespace detail

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_METRICS_DETAIL_SELECT_RANKS_HPP
