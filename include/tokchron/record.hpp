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
/// store or allocator) are compiled where they are used, as without the macro. Without
/// `record_instantiate.hpp` in the program, the link fails with undefined `tokchron::` members: an
/// explicit instantiation must exist exactly once.
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

#ifdef TOKCHRON_SEPARATE_INSTANTIATION
TOKCHRON_BEGIN_NAMESPACE
// Defined by record_instantiate.hpp; keep the two lists the same.
// (Hidden from Doxygen, which cannot match explicit instantiations to members.)
/// \cond
extern template class full_store<>::bind<default_clock>;
extern template class basic_request_timeline<default_clock, full_store<>>;
extern template class basic_request_timeline<default_clock, streaming_store<>>;
extern template class basic_live_metrics<default_clock>;
extern template struct detail::live_core<>;
extern template class detail::live_writer<>;
extern template request_metrics canonical_metrics(const request_timeline&) noexcept;
extern template request_metrics canonical_metrics(const streaming_request_timeline<>&) noexcept;
/// \endcond
TOKCHRON_END_NAMESPACE
#endif

#endif  // TOKCHRON_RECORD_HPP
