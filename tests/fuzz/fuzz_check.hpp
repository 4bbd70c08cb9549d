// SPDX-License-Identifier: MIT
// What every tokchron fuzz target shares: a property check that stops the run with a message
// (libFuzzer then saves the input as a crash), and the replay driver's entry point.
#ifndef TOKCHRON_TESTS_FUZZ_FUZZ_CHECK_HPP
#define TOKCHRON_TESTS_FUZZ_FUZZ_CHECK_HPP

#include <cstdio>
#include <cstdlib>

/// Aborts with the failed property and its location: a fuzz finding.
#define TOKCHRON_FUZZ_CHECK(cond)                                                           \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "tokchron fuzz: property failed: %s (%s:%d)\n", #cond, __FILE__, \
                   __LINE__);                                                               \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)

#endif  // TOKCHRON_TESTS_FUZZ_FUZZ_CHECK_HPP
