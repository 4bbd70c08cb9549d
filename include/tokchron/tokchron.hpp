// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOKCHRON_HPP
#define TOKCHRON_TOKCHRON_HPP

/// \file
/// The umbrella header: every standard-library-only public header of tokchron. Adaptor headers
/// that need a third-party library (Boost, prometheus-cpp) are not included; include them
/// yourself. Every header also compiles on its own.

#include "tokchron/clock.hpp"
#include "tokchron/collect/collector.hpp"
#include "tokchron/config.hpp"
#include "tokchron/distributions.hpp"
#include "tokchron/export/conversions.hpp"
#include "tokchron/export/csv.hpp"
#include "tokchron/export/prometheus.hpp"
#include "tokchron/export/promql.hpp"
#include "tokchron/export/serving_metrics.hpp"
#include "tokchron/export/summary_gauges.hpp"
#include "tokchron/exposition/buckets.hpp"
#include "tokchron/exposition/snapshot_data.hpp"
#include "tokchron/io/trace.hpp"
#include "tokchron/live/options.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/live/recorder.hpp"
#include "tokchron/live/scrape.hpp"
#include "tokchron/metrics/builtin_profiles.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/metrics/distribution.hpp"
#include "tokchron/metrics/fluidity.hpp"
#include "tokchron/metrics/metric_table.hpp"
#include "tokchron/metrics/profile.hpp"
#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/quantile/estimator.hpp"
#include "tokchron/quantile/exact.hpp"
#include "tokchron/quantile/log_histogram.hpp"
#include "tokchron/quantile/windowed.hpp"
#include "tokchron/record.hpp"
#include "tokchron/sla/capacity.hpp"
#include "tokchron/sla/consistency.hpp"
#include "tokchron/sla/evaluator.hpp"
#include "tokchron/sla/goodput.hpp"
#include "tokchron/sla/monitor.hpp"
#include "tokchron/sla/objective.hpp"
#include "tokchron/sla/verdict.hpp"
#include "tokchron/timeline/event.hpp"
#include "tokchron/timeline/replay.hpp"
#include "tokchron/timeline/request_timeline.hpp"
#include "tokchron/timeline/store.hpp"
#include "tokchron/version.hpp"
// tokchron:umbrella-end (headers added by later components go above this line)

#endif  // TOKCHRON_TOKCHRON_HPP
