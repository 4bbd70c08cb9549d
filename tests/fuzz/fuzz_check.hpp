// SPDX-License-Identifier: MIT
// What every tokchron fuzz target shares: a property check that stops the run with a message
// (libFuzzer then saves the input as a crash), and the random cuts of a stream into reads.
#ifndef TOKCHRON_TESTS_FUZZ_FUZZ_CHECK_HPP
#define TOKCHRON_TESTS_FUZZ_FUZZ_CHECK_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

/// Aborts with the failed property and its location: a fuzz finding.
#define TOKCHRON_FUZZ_CHECK(cond)                                                           \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "tokchron fuzz: property failed: %s (%s:%d)\n", #cond, __FILE__, \
                   __LINE__);                                                               \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)

namespace tokchron_fuzz {

/// Cuts `size` bytes into reads of 1 to `largest` bytes (xorshift32 from the 4 bytes at `seed`):
/// the lengths, in order. The targets that decode a stream feed it so, and compare with one read.
inline std::vector<std::size_t> random_cuts(std::size_t size, std::size_t largest,
                                            const std::uint8_t* seed) {
  std::uint32_t x = (std::uint32_t{seed[0]} << 24 | std::uint32_t{seed[1]} << 16 |
                     std::uint32_t{seed[2]} << 8 | seed[3]) |
                    1u;
  std::vector<std::size_t> cuts;
  for (std::size_t left = size; left > 0;) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    const std::size_t n = std::min<std::size_t>(left, 1 + x % largest);
    cuts.push_back(n);
    left -= n;
  }
  return cuts;
}

}  // namespace tokchron_fuzz

#endif  // TOKCHRON_TESTS_FUZZ_FUZZ_CHECK_HPP
