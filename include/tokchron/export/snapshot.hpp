// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXPORT_SNAPSHOT_HPP
#define TOKCHRON_EXPORT_SNAPSHOT_HPP

/// \file
/// Everything about snapshots, in one include: the plain data every exporter reads
/// (exposition/snapshot_data.hpp), classic-histogram bucket boundaries (exposition/buckets.hpp),
/// conversions from estimators (export/conversions.hpp), PromQL's `histogram_quantile`
/// (export/promql.hpp) and run-summary / SLA-verdict gauges (export/summary_gauges.hpp).

#include "tokchron/export/conversions.hpp"
#include "tokchron/export/promql.hpp"
#include "tokchron/export/summary_gauges.hpp"
#include "tokchron/exposition/buckets.hpp"
#include "tokchron/exposition/snapshot_data.hpp"

#endif  // TOKCHRON_EXPORT_SNAPSHOT_HPP
