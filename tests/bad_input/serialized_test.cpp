// SPDX-License-Identifier: MIT
// Truncated or corrupted serialised estimator bytes (docs/bad-input.md, rows
// B1-B4): log_histogram::deserialize never throws, never reads outside the bytes (ASan in CI),
// refuses with the error kind, byte offset and field, and whatever it accepts is consistent.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tokchron/quantile/log_histogram.hpp"

using tokchron::decode_error;
using tokchron::log_histogram;

namespace {
// A histogram beyond exact mode, with both signs and zeros: every section of the format.
log_histogram sample_histogram() {
  log_histogram h(0.01, 1e-9);
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> d(-3, 0.8);
  for (int i = 0; i < 500; ++i) h.add(i % 10 == 0 ? -d(rng) : d(rng));
  h.add(0.0);
  return h;
}

void fix_crc(std::vector<unsigned char>& b) {
  const std::uint32_t crc = tokchron::detail::crc32(b.data(), b.size() - 4);
  for (unsigned i = 0; i < 4; ++i) b[b.size() - 4 + i] = static_cast<unsigned char>(crc >> (8 * i));
}

std::uint64_t bucket_total(const log_histogram::bucket_range& r) {
  std::uint64_t n = 0;
  for (const auto& b : r) n += b.count;
  return n;
}
}  // namespace

TEST_CASE("bad input B1: every truncation is refused as truncated, at an offset inside") {
  const std::vector<unsigned char> full = sample_histogram().serialize();
  static_assert(noexcept(log_histogram::deserialize(full.data(), full.size())));
  CHECK(log_histogram::deserialize(nullptr, 0).error == decode_error::truncated);
  for (std::size_t n = 0; n < full.size(); ++n) {
    CAPTURE(n);
    // an exactly sized copy, so reading byte n is an ASan error
    const std::vector<unsigned char> cut(full.begin(),
                                         full.begin() + static_cast<std::ptrdiff_t>(n));
    const auto d = log_histogram::deserialize(cut.data(), cut.size());
    REQUIRE_FALSE(d.ok());
    CHECK_FALSE(d.histogram);
    CHECK(d.error == decode_error::truncated);
    CHECK(d.offset <= n);
    CHECK(std::strlen(d.field) > 0);
  }
  CHECK(log_histogram::deserialize(full.data(), full.size()).ok());
}

TEST_CASE("bad input B2: every single-bit corruption is detected") {
  const std::vector<unsigned char> full = sample_histogram().serialize();
  for (std::size_t byte = 0; byte < full.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<unsigned char> b = full;
      b[byte] = static_cast<unsigned char>(b[byte] ^ (1u << bit));
      const auto d = log_histogram::deserialize(b.data(), b.size());
      CAPTURE(byte);
      REQUIRE_FALSE(d.ok());  // CRC-32 detects every 1-bit error; earlier checks may fire first
      CHECK(d.offset <= b.size());
    }
  }
}

TEST_CASE("bad input B3: wrong magic, newer version and trailing bytes say so") {
  std::vector<unsigned char> b = sample_histogram().serialize();
  std::vector<unsigned char> magic = b;
  magic[0] = 'X';
  CHECK(log_histogram::deserialize(magic.data(), magic.size()).error == decode_error::bad_magic);
  std::vector<unsigned char> version = b;
  version[4] = static_cast<unsigned char>(log_histogram::format_version + 1);
  fix_crc(version);
  CHECK(log_histogram::deserialize(version.data(), version.size()).error ==
        decode_error::unsupported_version);
  std::vector<unsigned char> trailing = b;
  trailing.push_back(0);
  CHECK(log_histogram::deserialize(trailing.data(), trailing.size()).error ==
        decode_error::trailing_bytes);
  std::vector<unsigned char> crc = b;
  crc.back() = static_cast<unsigned char>(crc.back() ^ 0xFF);
  CHECK(log_histogram::deserialize(crc.data(), crc.size()).error ==
        decode_error::checksum_mismatch);
  const auto d = log_histogram::deserialize(magic.data(), magic.size());
  CHECK(d.message().find("bad_magic") != std::string::npos);
}

TEST_CASE("bad input B4: corrupted fields behind a valid checksum are refused or consistent") {
  // The checksum is recomputed after each corruption, so the field checks themselves are
  // exercised: every byte set to 0x00, 0xFF and 0x80, one at a time.
  const std::vector<unsigned char> full = sample_histogram().serialize();
  std::size_t refused = 0, accepted = 0;
  for (std::size_t byte = 0; byte + 4 < full.size(); ++byte) {
    for (const unsigned v8 : {0x00u, 0xFFu, 0x80u}) {
      const auto v = static_cast<unsigned char>(v8);
      if (full[byte] == v) continue;
      std::vector<unsigned char> b = full;
      b[byte] = v;
      fix_crc(b);
      const auto d = log_histogram::deserialize(b.data(), b.size());
      if (!d.ok()) {
        ++refused;
        REQUIRE(d.offset <= b.size());
        continue;
      }
      ++accepted;
      const log_histogram& h = *d.histogram;
      CAPTURE(byte);
      REQUIRE(h.zero_count() + bucket_total(h.positive_buckets()) +
                  bucket_total(h.negative_buckets()) ==
              h.count());
      if (!h.empty()) {
        REQUIRE(*h.min() <= *h.max());
        const double m = *h.quantile(0.5);
        REQUIRE((m >= *h.min() && m <= *h.max()));
      }
    }
  }
  MESSAGE("refused " << refused << ", accepted (consistent) " << accepted);
  CHECK(refused > 0);
}
