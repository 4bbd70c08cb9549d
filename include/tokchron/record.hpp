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

#endif  // TOKCHRON_RECORD_HPP
