// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_CORE_NAMES_HPP
#define TOKCHRON_TOOLS_EXECUTOR_CORE_NAMES_HPP

/// \file
/// Names of the executor's enumerations, both ways: one table per enum, so the parser, the
/// printer and the list of choices in an error message cannot disagree. Each enum's
/// `to_string` and `parse_*` (core/request_queue.hpp, core/scheduler.hpp) are written with these.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace batching {

/// The name of `e` in `names`, or "unknown".
template <class E, std::size_t N>
[[nodiscard]] std::string_view name_of(E e,
                                       const std::pair<std::string_view, E> (&names)[N]) noexcept {
  for (const auto& [name, value] : names)
    if (value == e) return name;
  return "unknown";
}

/// The value named `s` in `names`. Throws `std::invalid_argument` naming `what` and listing the
/// choices.
template <class E, std::size_t N>
[[nodiscard]] E parse_enum(std::string_view s, const char* what,
                           const std::pair<std::string_view, E> (&names)[N]) {
  std::string choices;
  for (const auto& [name, value] : names) {
    if (s == name) return value;
    choices += choices.empty() ? "" : ", ";
    choices += name;
  }
  throw std::invalid_argument(std::string(what) + ": unknown value '" + std::string(s) +
                              "' (choose " + choices + ")");
}

}  // namespace batching

#endif  // TOKCHRON_TOOLS_EXECUTOR_CORE_NAMES_HPP
