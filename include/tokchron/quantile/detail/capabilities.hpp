// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_QUANTILE_DETAIL_CAPABILITIES_HPP
#define TOKCHRON_QUANTILE_DETAIL_CAPABILITIES_HPP

/// \file
/// Optional capabilities of an estimator beyond the contract (quantile/estimator.hpp), detected
/// at compile time: the k-th sample, adding a run of equal samples, a quantile with a method, a
/// standard deviation, a rank. The SLA evaluator and the exporters use the better path when an
/// estimator offers one.

#include <cstdint>
#include <type_traits>
#include <utility>

#include "tokchron/config.hpp"
#include "tokchron/quantile/estimator.hpp"

TOKCHRON_BEGIN_NAMESPACE

namespace detail {
template <class E, class = void>
struct has_at_rank : std::false_type {};
template <class E>
struct has_at_rank<E, std::void_t<decltype(std::declval<const E&>().at_rank(std::uint64_t{0}))>>
    : std::true_type {};
template <class E, class = void>
struct has_add_count : std::false_type {};
template <class E>
struct has_add_count<E, std::void_t<decltype(std::declval<E&>().add(
                            std::declval<typename E::value_type>(), std::uint64_t{1}))>>
    : std::true_type {};
template <class E, class = void>
struct has_quantile_method : std::false_type {};
template <class E>
struct has_quantile_method<
    E, std::void_t<decltype(std::declval<const E&>().quantile(0.5, quantile_method::linear))>>
    : std::true_type {};
template <class E, class = void>
struct has_stddev : std::false_type {};
template <class E>
struct has_stddev<E, std::void_t<decltype(*std::declval<const E&>().stddev(1u))>> : std::true_type {
};
template <class E, class = void>
struct has_rank : std::false_type {};
template <class E>
struct has_rank<
    E, std::void_t<decltype(std::declval<const E&>().rank(std::declval<typename E::value_type>()))>>
    : std::true_type {};
}  // namespace detail

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_QUANTILE_DETAIL_CAPABILITIES_HPP
