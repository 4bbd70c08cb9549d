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
/// Or link the `tokchron::record` CMake target, which compiles this file and sets the macro.
/// Two such files in one program instantiate the same definitions twice (ill-formed; here the
/// sentinel symbol is then defined twice, a link error); none leaves the hot files' calls
/// undefined at link time, naming the sentinel
/// `separate_instantiation_needs_link_tokchron_record_or_record_instantiate_hpp_in_one_cpp`.

#include "tokchron/live/detail/state.hpp"
#include "tokchron/record.hpp"

TOKCHRON_BEGIN_NAMESPACE
// record.hpp's one list, defined here.
/// \cond
#define TOKCHRON_RECORD_DEFINE(...) template __VA_ARGS__;
TOKCHRON_RECORD_INSTANCES(TOKCHRON_RECORD_DEFINE)
#undef TOKCHRON_RECORD_DEFINE
namespace detail {
extern const char
    separate_instantiation_needs_link_tokchron_record_or_record_instantiate_hpp_in_one_cpp[];
// Defined in the header on purpose: it is included in exactly one file, and a second one is
// the link error that says so.
// NOLINTBEGIN(misc-definitions-in-headers)
const char
    separate_instantiation_needs_link_tokchron_record_or_record_instantiate_hpp_in_one_cpp[] =
        "tokchron: separate instantiation";
// NOLINTEND(misc-definitions-in-headers)
}  // namespace detail
/// \endcond
TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_RECORD_INSTANTIATE_HPP
