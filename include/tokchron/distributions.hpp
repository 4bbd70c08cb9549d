// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_DISTRIBUTIONS_HPP
#define TOKCHRON_DISTRIBUTIONS_HPP

/// \file
/// The one entry point for distributions of per-request metrics over many requests:
/// `distributions<Mode, Estimator>`, one model in three modes (docs/library/concurrency.md
/// says which to prefer when).
///
/// The model follows prometheus-cpp's registry -> family -> metric: a distributions object (the
/// registry) holds one family per `metric_id` of the metric table (metrics/metric_table.hpp), each
/// a distribution, plus the counters of the requests behind them. The modes differ only in who
/// writes and how it is read:
///
/// | mode | type | writers | read by |
/// |---|---|---|---|
/// | `single_writer` | `basic_distributions<E>` (collect/distributions.hpp) | one | the object itself, `merge` |
/// | `sharded` | `basic_collector<basic_distributions<E>>` (collect/collector.hpp) | many, a shard each | lossless interval `snapshot()`s, each a `basic_distributions<E>` |
/// | `labelled_live` | `live_metrics` (live/recorder.hpp) | any threads, per event | `scrape` at any time, per label set |
///
/// The single-writer exporters are that mode with a view on top: `serving_metrics` (names,
/// buckets and labels for the exposition, export/serving_metrics.hpp) and `slo_distributions`
/// (an SLA judged on it, sla/evaluator.hpp). The labelled-live mode keeps fixed-bucket
/// histograms per label set (a server's series), so its estimator is not a choice:
/// `distributions<labelled_live>` only.
///
/// \code
///   #include <tokchron/distributions.hpp>
///   tokchron::distributions<> one;                          // single writer, log_histogram
///   one.record(timeline);
///   tokchron::distributions<tokchron::sharded> many;        // many writer threads
///   auto w = many.make_writer();                            // once per thread
///   w.record(timeline);                                     // noexcept, never blocks
///   tokchron::basic_distributions<> interval = many.snapshot();
/// \endcode

#include <type_traits>

#include "tokchron/collect/collector.hpp"
#include "tokchron/collect/distributions.hpp"
#include "tokchron/config.hpp"
#include "tokchron/export/serving_metrics.hpp"
#include "tokchron/live/recorder.hpp"
#include "tokchron/quantile/log_histogram.hpp"
#include "tokchron/sla/evaluator.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// The labelled-live mode: a running server's `live_metrics`.
template <class Estimator>
struct distributions_mode<labelled_live, Estimator> {
  static_assert(std::is_same_v<Estimator, log_histogram>,
                "the labelled-live mode keeps fixed-bucket histograms per label set: "
                "use distributions<labelled_live> without an estimator");
  using type = basic_live_metrics<>;
};

/// Distributions of per-request metrics over many requests, in mode `Mode` (`single_writer`,
/// `sharded` or `labelled_live`) over estimator `Estimator`.
template <class Mode = single_writer, class Estimator = log_histogram>
using distributions = typename distributions_mode<Mode, Estimator>::type;

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_DISTRIBUTIONS_HPP
