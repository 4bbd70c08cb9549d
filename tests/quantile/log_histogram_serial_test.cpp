// SPDX-License-Identifier: MIT
// log_histogram serialisation: the defined byte layout, round trips, every truncation length,
// random corruption, and fields that are wrong under a valid checksum.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tokchron/quantile/log_histogram.hpp"

using tokchron::decode_error;
using tokchron::log_histogram;
using bytes = std::vector<unsigned char>;

namespace {
log_histogram sample_histogram(int n, std::uint64_t seed) {
  log_histogram h(0.01, 1e-9);
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> d(std::log(0.05), 1.0);
  for (int i = 0; i < n; ++i) {
    const double x = d(rng);
    h.add(i % 17 == 0 ? -x : (i % 23 == 0 ? 0.0 : x));
  }
  h.add(std::nan(""));  // a rejected sample survives the round trip too
  return h;
}
// Rewrites the trailing CRC-32 so a deliberately wrong field reaches the field checks.
void reseal(bytes& b) {
  const std::uint32_t c = tokchron::detail::crc32(b.data(), b.size() - 4);
  for (int i = 0; i < 4; ++i)
    b[b.size() - 4 + static_cast<std::size_t>(i)] = static_cast<unsigned char>(c >> (8 * i));
}
void put_u64(bytes& b, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i)
    b[at + static_cast<std::size_t>(i)] = static_cast<unsigned char>(v >> (8 * i));
}
decode_error decode(const bytes& b) { return log_histogram::deserialize(b.data(), b.size()).error; }
}  // namespace

TEST_CASE("serialise: the little-endian layout is defined byte for byte") {
  log_histogram h = log_histogram::with_scale(0);
  h.add(3.0);
  const bytes b = h.serialize();
  REQUIRE(b.size() == h.serialized_size());
  const bytes head = {'T', 'K', 'L', 'H', 1, 0, 1, 0};  // magic, version 1, scale 0, exact, 0
  CHECK(bytes(b.begin(), b.begin() + 8) == head);
  CHECK(b[16] == 1);  // count = 1, little-endian u64
  for (int i = 17; i < 24; ++i) CHECK(b[static_cast<std::size_t>(i)] == 0);
  const bytes three = {0, 0, 0, 0, 0, 0, 0x08, 0x40};  // the exact sample 3.0
  CHECK(bytes(b.begin() + 64, b.begin() + 72) == three);
  // positive buckets: first index 1 (3 is in (2, 4]), n = 1, width 1, count 1
  const bytes pos = {1, 0, 0, 0, 1, 0, 0, 0, 1, 1};
  CHECK(bytes(b.begin() + 72, b.begin() + 82) == pos);
  CHECK(b.size() == 82 + 9 + 4);
}

TEST_CASE("serialise: round trips are identical, in every counter width") {
  std::vector<log_histogram> cases;
  cases.emplace_back();                                // empty
  cases.push_back(sample_histogram(5, 1));             // exact mode
  cases.push_back(sample_histogram(32, 2));            // the last exact count
  cases.push_back(sample_histogram(20000, 3));         // 1- and 2-byte counters
  cases.push_back(log_histogram::with_scale(-4));      // coarse, empty
  log_histogram wide = log_histogram::with_scale(12);  // fine scale, 4- then 8-byte counters
  for (int i = 0; i < 100; ++i) wide.add(1.0 + i * 1e-4);
  for (int i = 0; i < 33; ++i) {
    const log_histogram c = wide;
    wide.merge(c);
    if (i == 17 || i == 32) cases.push_back(wide);
  }
  CHECK(wide.count() == 100ull << 33);
  for (const log_histogram& h : cases) {
    const bytes b = h.serialize();
    const auto r = log_histogram::deserialize(b.data(), b.size());
    INFO(r.message());
    REQUIRE(r.ok());
    CHECK(*r.histogram == h);
    CHECK(r.histogram->serialize() == b);
    for (double q : {0.0, 0.5, 0.99, 1.0}) CHECK(r.histogram->quantile(q) == h.quantile(q));
  }
}

TEST_CASE("serialise: every truncation is rejected as truncated, naming the field") {
  for (const log_histogram& h : {sample_histogram(7, 4), sample_histogram(5000, 5)}) {
    const bytes b = h.serialize();
    for (std::size_t len = 0; len < b.size(); ++len) {
      const bytes cut(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(len));
      const auto r = log_histogram::deserialize(cut.data(), cut.size());
      INFO("length " << len << ": " << r.message());
      REQUIRE(!r.ok());
      CHECK(r.error == decode_error::truncated);
      CHECK(!r.histogram);
      CHECK(r.offset <= len);
      CHECK(std::string(r.field) != "");
    }
  }
  CHECK(log_histogram::deserialize(nullptr, 10).error == decode_error::truncated);
}

TEST_CASE("serialise: random corruption is always rejected, never read out of bounds") {
  std::mt19937_64 rng(6);
  for (const log_histogram& h : {sample_histogram(9, 7), sample_histogram(3000, 8)}) {
    const bytes good = h.serialize();
    for (int trial = 0; trial < 3000; ++trial) {
      bytes b = good;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f)
        b[rng() % b.size()] ^= static_cast<unsigned char>(1u << (rng() % 8));
      if (b == good) continue;
      // a copy of exactly the right size: ASan catches any read past it
      const auto r = log_histogram::deserialize(b.data(), b.size());
      REQUIRE(!r.ok());
    }
  }
}

TEST_CASE("serialise: wrong fields under a valid checksum are named") {
  const log_histogram h = sample_histogram(1000, 9);
  const bytes good = h.serialize();
  auto with = [&](auto edit) {
    bytes b = good;
    edit(b);
    reseal(b);
    return log_histogram::deserialize(b.data(), b.size());
  };
  CHECK(with([](bytes& b) { b[0] = 'X'; }).error == decode_error::bad_magic);
  CHECK(with([](bytes& b) { b[4] = 2; }).error == decode_error::unsupported_version);
  auto r = with([](bytes& b) { b[5] = 13; });
  CHECK(r.error == decode_error::invalid_field);
  CHECK(std::string(r.field) == "scale");
  CHECK(r.message() == "log_histogram: invalid_field at byte 5 (field 'scale')");
  CHECK(with([](bytes& b) { b[6] = 1; }).error == decode_error::inconsistent);  // exact flag
  CHECK(with([](bytes& b) { b[7] = 9; }).error == decode_error::invalid_field);
  CHECK(with([](bytes& b) { put_u64(b, 8, tokchron::detail::double_bits(-1.0)); }).error ==
        decode_error::invalid_field);
  r = with([](bytes& b) { b[16] ^= 1; });  // count no longer the sum of the buckets
  CHECK(r.error == decode_error::inconsistent);
  CHECK(std::string(r.field) == "count");
  r = with([](bytes& b) { put_u64(b, 40, tokchron::detail::double_bits(-1e-3)); });  // min
  CHECK(r.error == decode_error::inconsistent);
  CHECK(with([](bytes& b) { put_u64(b, 48, tokchron::detail::double_bits(1e300)); }).error ==
        decode_error::inconsistent);  // max outside the top bucket
  CHECK(with([](bytes& b) { put_u64(b, 32, tokchron::detail::double_bits(std::nan(""))); }).error ==
        decode_error::invalid_field);         // sum
  r = with([](bytes& b) { b[64 + 8] = 3; });  // positive counter width
  CHECK(r.error == decode_error::invalid_field);
  CHECK(std::string(r.field) == "positive.width");
  r = with([](bytes& b) {
    b[64 + 4] = 0xFF;
    b[64 + 5] = 0xFF;
    b[64 + 6] = 0xFF;
  });  // huge n
  CHECK(!r.ok());
  bytes longer = good;
  longer.push_back(0);
  CHECK(decode(longer) == decode_error::trailing_bytes);
  bytes flipped = good;
  flipped[20] ^= 0x10;
  CHECK(decode(flipped) == decode_error::checksum_mismatch);
  // exact samples that disagree with the buckets
  const log_histogram small = sample_histogram(3, 10);
  bytes s = small.serialize();
  put_u64(
      s, 64,
      tokchron::detail::double_bits(
          tokchron::detail::bits_double(s[64] | std::uint64_t{s[65]} << 8 |
                                        std::uint64_t{s[66]} << 16 | std::uint64_t{s[67]} << 24 |
                                        std::uint64_t{s[68]} << 32 | std::uint64_t{s[69]} << 40 |
                                        std::uint64_t{s[70]} << 48 | std::uint64_t{s[71]} << 56) *
          1.5));
  reseal(s);
  CHECK(!log_histogram::deserialize(s.data(), s.size()).ok());
}
