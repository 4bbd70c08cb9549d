// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_RECORD_INSTANTIATE_HPP
#define TOKCHRON_RECORD_INSTANTIATE_HPP

/// \file
/// The explicit instantiations that `tokchron/record.hpp` declares `extern` when
/// `TOKCHRON_SEPARATE_INSTANTIATION` is defined: include this header in exactly ONE `.cpp` file
/// of the program (with or without the macro), e.g. a `tokchron_instances.cpp` holding only
///
/// \code
///   #include <tokchron/record_instantiate.hpp>
/// \endcode
///
/// Two such files in one program instantiate the same definitions twice (ill-formed; GCC and
/// Clang happen to merge them); none leaves the hot files' calls undefined at link time.

#include "tokchron/live/detail/state.hpp"
#include "tokchron/record.hpp"

TOKCHRON_BEGIN_NAMESPACE
// The same list as record.hpp's extern declarations.
// (Hidden from Doxygen, which cannot match explicit instantiations to members.)
/// \cond
template class full_store<>::bind<default_clock>;
template class basic_request_timeline<default_clock, full_store<>>;
template class basic_request_timeline<default_clock, streaming_store<>>;
template class basic_live_metrics<default_clock>;
template struct detail::live_core<>;
template class detail::live_writer<>;
template request_metrics canonical_metrics(const request_timeline&) noexcept;
template request_metrics canonical_metrics(const streaming_request_timeline<>&) noexcept;
/// \endcond
TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_RECORD_INSTANTIATE_HPP
