// SPDX-License-Identifier: MIT
// Fuzz target: the estimator deserialiser, log_histogram::deserialize.
// The first byte picks a mode: even, the rest is handed over as it is (checksum and all); odd,
// the rest gets a correct CRC-32 written into its last 4 bytes first, so the fuzzer reaches the
// field validation behind the checksum instead of stopping at it.
// Properties: deserialize never crashes, never reads outside the bytes (ASan) and never throws;
// a refusal names an offset inside the bytes; an accepted histogram is internally consistent
// (counts add up, min <= every answer <= max, rank 0 / n - 1 answer min / max), serialises back
// to bytes that decode to an equal histogram, and merges with itself losslessly.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <vector>

#include "fuzz_check.hpp"
#include "tokchron/quantile/log_histogram.hpp"

namespace {
std::uint64_t bucket_total(const tokchron::log_histogram::bucket_range& r) {
  std::uint64_t n = 0;
  for (const auto& b : r) n += b.count;
  return n;
}

void check_histogram(const tokchron::log_histogram& h) {
  const std::uint64_t in_buckets =
      h.zero_count() + bucket_total(h.positive_buckets()) + bucket_total(h.negative_buckets());
  TOKCHRON_FUZZ_CHECK(in_buckets == h.count());
  TOKCHRON_FUZZ_CHECK(h.empty() == (h.count() == 0));
  TOKCHRON_FUZZ_CHECK(h.scale() >= tokchron::log_histogram::min_scale &&
                      h.scale() <= tokchron::log_histogram::max_scale);
  if (h.empty()) {
    TOKCHRON_FUZZ_CHECK(!h.min() && !h.max() && !h.quantile(0.5));
  } else {
    const double lo = *h.min(), hi = *h.max();
    TOKCHRON_FUZZ_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo <= hi);
    TOKCHRON_FUZZ_CHECK(*h.quantile(0.0) == lo);
    TOKCHRON_FUZZ_CHECK(*h.quantile(1.0) == hi);
    for (double q : {0.01, 0.25, 0.5, 0.9, 0.99, 0.999}) {
      for (auto m : {tokchron::quantile_method::linear, tokchron::quantile_method::lower,
                     tokchron::quantile_method::nearest_rank}) {
        const double v = *h.quantile(q, m);
        TOKCHRON_FUZZ_CHECK(v >= lo && v <= hi);
      }
    }
    TOKCHRON_FUZZ_CHECK(h.rank(hi) == h.count());
    const auto c = h.cdf(hi);
    TOKCHRON_FUZZ_CHECK(c && *c == 1.0);
  }
  // Round trip: the histogram's own bytes decode to an equal histogram.
  const std::vector<unsigned char> bytes = h.serialize();
  TOKCHRON_FUZZ_CHECK(bytes.size() == h.serialized_size());
  const auto again = tokchron::log_histogram::deserialize(bytes.data(), bytes.size());
  TOKCHRON_FUZZ_CHECK(again.ok());
  TOKCHRON_FUZZ_CHECK(*again.histogram == h);
  // Merging a histogram with itself doubles every count; where that would pass 2^64 the merge
  // must refuse (throw, leaving the target as it was) rather than wrap.
  tokchron::log_histogram twice = h;
  if (h.count() < (std::uint64_t{1} << 62) && h.rejected() < (std::uint64_t{1} << 62)) {
    twice.merge(h);
    TOKCHRON_FUZZ_CHECK(twice.count() == 2 * h.count());
    TOKCHRON_FUZZ_CHECK(twice.rejected() == 2 * h.rejected());
    TOKCHRON_FUZZ_CHECK(twice.min() == h.min() && twice.max() == h.max());
  } else {
    try {
      twice.merge(h);
      TOKCHRON_FUZZ_CHECK(twice.count() >= h.count());
    } catch (const std::exception&) {
      TOKCHRON_FUZZ_CHECK(twice == h);
    }
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    const auto d = tokchron::log_histogram::deserialize(data, 0);
    TOKCHRON_FUZZ_CHECK(!d.ok() && !d.histogram);
    return 0;
  }
  std::vector<unsigned char> bytes(data + 1, data + size);
  if ((data[0] & 1u) != 0 && bytes.size() >= 4) {
    const std::uint32_t crc = tokchron::detail::crc32(bytes.data(), bytes.size() - 4);
    for (unsigned i = 0; i < 4; ++i)
      bytes[bytes.size() - 4 + i] = static_cast<unsigned char>(crc >> (8 * i));
  }
  const auto d = tokchron::log_histogram::deserialize(bytes.data(), bytes.size());
  if (!d.ok()) {
    TOKCHRON_FUZZ_CHECK(!d.histogram);
    TOKCHRON_FUZZ_CHECK(d.offset <= bytes.size());
    TOKCHRON_FUZZ_CHECK(d.field != nullptr);
    TOKCHRON_FUZZ_CHECK(!d.message().empty());
    return 0;
  }
  TOKCHRON_FUZZ_CHECK(d.histogram.has_value());
  check_histogram(*d.histogram);
  return 0;
}
