// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_RECORD_HPP
#define TOKCHRON_RECORD_HPP

/// \file
/// The recording header, for a server's hot files: the request timeline (arrive, queued,
/// scheduled, preempted, chunk, finish), the clocks, tokchron's canonical per-request metrics,
/// and the live metrics' recording calls (live/recorder.hpp: `basic_live_metrics`, lock-free
/// from any thread; the scrape and the presets are in live/scrape.hpp and live/presets.hpp). It
/// reaches no stream, thread or locking header (`<iostream>`, `<sstream>`, `<fstream>`, `<thread>`,
/// `<mutex>` and the like): the standard headers it may reach are an allow-list held by CI
/// (bench/compile_cost/allowed_headers.txt), and its compile cost per translation unit is measured
/// against `<chrono>` + `<vector>` + `<string>` + `<optional>` alone (bench/compile_cost/,
/// docs/testing.md "Which header to include where").
///
/// Separate instantiation (opt-in, as fmt and spdlog offer for header-only use): a server that
/// defines `TOKCHRON_SEPARATE_INSTANTIATION` (e.g. `-DTOKCHRON_SEPARATE_INSTANTIATION` for its
/// whole build) and includes `tokchron/record_instantiate.hpp` in exactly one of its `.cpp` files
/// compiles the recording calls of the default types once, there: `request_timeline`,
/// `streaming_request_timeline<>`, `live_metrics`, and `canonical_metrics` of the two timelines.
/// Every other translation unit sees `extern template` declarations and calls those definitions
/// instead of compiling its own (docs/testing.md, "Which header to include where", has the
/// figures). There the live metrics' shared state is opaque (live/detail/core.hpp) and
/// `live_options` is declared, not defined: the file that constructs a `live_metrics` includes
/// `tokchron/live/presets.hpp` or `tokchron/live/options.hpp`. Other instantiations (another clock,
/// store or allocator) are compiled where they are used, as without the macro. Linking the
/// `tokchron::record` CMake target does both: it sets the macro for its users and compiles
/// `record_instantiate.hpp`. Without the instantiations in the program, the link fails naming
/// `separate_instantiation_needs_link_tokchron_record_or_record_instantiate_hpp_in_one_cpp`
/// (and the undefined `tokchron::` members): they must exist exactly once.
///
/// Everything else (quantile estimators, SLA evaluation, exporters, traces) is in the umbrella
/// header `tokchron/tokchron.hpp`, or its own header, for the files that report.
///
/// \code
///   #include <tokchron/record.hpp>
///   tokchron::request_timeline tl;
///   tl.arrive();                       // HTTP accept
///   tl.queued();                       // enqueue
///   tl.scheduled();                    // the scheduler picks it
///   tl.chunk(n);                       // each detokenized delta of n tokens
///   tl.finish(tokchron::finish_reason::stop);
///   tokchron::request_metrics m = tokchron::canonical_metrics(tl);  // seconds
/// \endcode

#include "tokchron/clock.hpp"
#include "tokchron/config.hpp"
#include "tokchron/live/recorder.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/timeline/event.hpp"
#include "tokchron/timeline/request_timeline.hpp"
#include "tokchron/timeline/store.hpp"

/// \cond
// The one list of explicit instantiations of separate mode: `X(declaration)` for each.
// record.hpp declares them `extern` below; record_instantiate.hpp defines them (and so does
// the tokchron::record library, which compiles record_instantiate.hpp).
// (Hidden from Doxygen, which cannot match explicit instantiations to members.)
#define TOKCHRON_RECORD_INSTANCES(X)                                     \
  X(class full_store<>::bind<default_clock>)                             \
  X(class basic_request_timeline<default_clock, full_store<>>)           \
  X(class basic_request_timeline<default_clock, streaming_store<>>)      \
  X(class basic_live_metrics<default_clock>)                             \
  X(struct detail::live_core<>)                                          \
  X(class detail::live_writer<>)                                         \
  X(request_metrics canonical_metrics(const request_timeline&) noexcept) \
  X(request_metrics canonical_metrics(const streaming_request_timeline<>&) noexcept)
/// \endcond

#ifdef TOKCHRON_SEPARATE_INSTANTIATION
TOKCHRON_BEGIN_NAMESPACE
/// \cond
#define TOKCHRON_RECORD_EXTERN(...) extern template __VA_ARGS__;
TOKCHRON_RECORD_INSTANCES(TOKCHRON_RECORD_EXTERN)
#undef TOKCHRON_RECORD_EXTERN
namespace detail {
// Defined with the instantiations. Every file compiled in separate mode refers to it, so a
// program without them fails to link naming this symbol, which says the fix.
extern const char
    separate_instantiation_needs_link_tokchron_record_or_record_instantiate_hpp_in_one_cpp[];
#if defined(__GNUC__)
#define TOKCHRON_RECORD_USED __attribute__((used))
#else
#define TOKCHRON_RECORD_USED
#endif
[[maybe_unused]] TOKCHRON_RECORD_USED static const char* const record_instances_sentinel_ =
    separate_instantiation_needs_link_tokchron_record_or_record_instantiate_hpp_in_one_cpp;
#undef TOKCHRON_RECORD_USED
}  // namespace detail
/// \endcond
TOKCHRON_END_NAMESPACE
#endif

#endif  // TOKCHRON_RECORD_HPP
