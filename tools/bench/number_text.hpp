// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_BENCH_NUMBER_TEXT_HPP
#define TOKCHRON_BENCH_NUMBER_TEXT_HPP

/// \file
/// How tokchron-bench's text reports write a number.

#include <iomanip>
#include <sstream>
#include <string>

namespace tokchron_bench {

/// `v` in fixed notation with `digits` decimals ("12.50" for fixed(12.5, 2)).
inline std::string fixed(double v, int digits) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << v;
  return o.str();
}

}  // namespace tokchron_bench

#endif  // TOKCHRON_BENCH_NUMBER_TEXT_HPP
