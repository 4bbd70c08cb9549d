// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_NUMBER_TEXT_HPP
#define TOKCHRON_TOOLS_EXECUTOR_NUMBER_TEXT_HPP

/// \file
/// How batching-executor's text reports write a number.

#include <cstdio>
#include <string>

namespace batching {

/// `v` written by the printf conversion `f` (one double: "%.3f", "%g"), at most 63 characters.
inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_NUMBER_TEXT_HPP
