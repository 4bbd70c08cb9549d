// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_QUANTILE_ESTIMATOR_HPP
#define TOKCHRON_QUANTILE_ESTIMATOR_HPP

/// \file
/// The one contract every quantile estimator meets, so SLA evaluators and exporters are generic
/// over it and swapping an estimator is a one-type change.
///
/// An estimator `E` (single writer; see each type for its thread safety) provides:
///
/// | expression            | type                         | meaning |
/// |-----------------------|------------------------------|------------------------------------------|
/// | `E::value_type`       | arithmetic                   | what is recorded (seconds, usually) |
/// | `e.add(x)`            | `bool`, noexcept             | records x; false if x was rejected | |
/// `e.count()`           | `std::uint64_t`              | samples recorded | | `e.rejected()` |
/// `std::uint64_t`              | samples refused (NaN, infinity, ...)     | | `e.empty()` | `bool`
/// | `count() == 0`                           | | `e.sum()`             | `double` | exact sum of
/// recorded samples            | | `e.mean()`            | `std::optional<double>`      | empty
/// when `count() == 0`                | | `e.min()`, `e.max()`  | `std::optional<value_type>`  |
/// exact extremes                           | | `e.quantile(q)`       | `std::optional<value_type>`
/// | q in [0, 1]; empty when no samples       | | `e.relative_error()`  | `double` | guaranteed
/// relative value error of       | |                       |                              |
/// `quantile` (0: exact; infinity: none)    |
///
/// Mergeable estimators also provide `e.merge(const E&)` (see `is_mergeable_estimator_v`).

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "tokchron/config.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// How a sample quantile is read off sorted samples x[0..n-1], as the public tools do it.
enum class quantile_method : std::uint8_t {
  /// numpy's default (Hyndman-Fan type 7): h = q (n - 1), interpolate between x[floor h] and
  /// x[floor h + 1]. vLLM, SGLang, GenAI-Perf, AIPerf, llmperf (pandas) use it.
  linear,
  /// x[min(floor(n q), n - 1)]: trtllm-bench (`sorted[int(n*p)]`), MLPerf loadgen, TGI.
  lower,
  /// x[max(ceil(n q) - 1, 0)]: the nearest-rank definition, gptManagerBenchmark.
  nearest_rank,
};

/// The method's name as profiles and reports spell it.
[[nodiscard]] constexpr std::string_view to_string(quantile_method m) noexcept {
  switch (m) {
    case quantile_method::linear: return "linear";
    case quantile_method::lower: return "lower";
    case quantile_method::nearest_rank: return "nearest_rank";
  }
  return "unknown";
}

namespace detail {
/// Throws std::bad_alloc (without exceptions: prints and aborts), for code that finds itself
/// out of memory without an allocation that threw.
[[noreturn]] inline void throw_bad_alloc() {
#if TOKCHRON_HAS_EXCEPTIONS
  throw std::bad_alloc();
#else
  std::fprintf(stderr, "tokchron: out of memory\n");
  std::abort();
#endif
}

template <class E, class = void>
struct is_estimator_impl : std::false_type {};
template <class E>
struct is_estimator_impl<
    E,
    std::void_t<
        typename E::value_type,
        decltype(std::declval<E&>().add(std::declval<typename E::value_type>())),
        decltype(std::declval<const E&>().count()), decltype(std::declval<const E&>().rejected()),
        decltype(std::declval<const E&>().empty()), decltype(std::declval<const E&>().sum()),
        decltype(std::declval<const E&>().mean()), decltype(std::declval<const E&>().min()),
        decltype(std::declval<const E&>().max()), decltype(std::declval<const E&>().quantile(0.5)),
        decltype(std::declval<const E&>().relative_error())>>
    : std::bool_constant<
          std::is_same_v<decltype(std::declval<E&>().add(std::declval<typename E::value_type>())),
                         bool>&& noexcept(std::declval<E&>()
                                              .add(std::declval<typename E::value_type>())) &&
          std::is_convertible_v<decltype(std::declval<const E&>().count()), std::uint64_t> &&
          std::is_same_v<decltype(std::declval<const E&>().quantile(0.5)),
                         std::optional<typename E::value_type>> &&
          std::is_same_v<decltype(std::declval<const E&>().min()),
                         std::optional<typename E::value_type>> &&
          std::is_same_v<decltype(std::declval<const E&>().mean()), std::optional<double>>> {};

/// An estimator's min or max: `value` once `count` samples were accepted, empty before (the
/// contract above: an empty estimator has no min, max or mean).
[[nodiscard]] constexpr std::optional<double> when_sampled(std::uint64_t count,
                                                           double value) noexcept {
  if (count == 0) return std::nullopt;
  return value;
}

template <class E, class = void>
struct is_mergeable_impl : std::false_type {};
template <class E>
struct is_mergeable_impl<E,
                         std::void_t<decltype(std::declval<E&>().merge(std::declval<const E&>()))>>
    : std::true_type {};
}  // namespace detail

/// True when `E` meets the estimator contract above.
template <class E>
inline constexpr bool is_quantile_estimator_v = detail::is_estimator_impl<E>::value;

/// True when `E` meets the contract and can merge another `E` into itself.
template <class E>
inline constexpr bool is_mergeable_estimator_v =
    is_quantile_estimator_v<E>&& detail::is_mergeable_impl<E>::value;

#if TOKCHRON_HAS_CONCEPTS
/// The estimator contract as a C++20 concept.
template <class E>
concept quantile_estimator = is_quantile_estimator_v<E>;
/// A quantile estimator that can merge another of its type.
template <class E>
concept mergeable_estimator = is_mergeable_estimator_v<E>;
#endif

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_QUANTILE_ESTIMATOR_HPP
