// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_METRICS_METRIC_ID_HPP
#define TOKCHRON_METRICS_METRIC_ID_HPP

/// \file
/// `metric_id` alone, for the headers that name a metric without its table (metrics/canonical.hpp,
/// on the recording header's parse path): the table, its names and units are in
/// metrics/metric_table.hpp, which includes this header.

#include <cstdint>

#include "tokchron/config.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// Every metric tokchron computes per request (ITL: per output-token gap). The order is the
/// order of `metric_table`, of CSV columns and of exported families.
enum class metric_id : std::uint8_t {
  ttft,                  ///< time to first token from arrival, s
  ttft_from_send,        ///< time to first token from the actual send, s
  ttft_from_scheduled,   ///< time to first token from the first scheduling, s
  tpot,                  ///< time per output token after the first, s
  itl,                   ///< inter-token latency, one sample per output token after the first, s
  e2e,                   ///< end-to-end latency, s
  queue_time,            ///< time from arrival (or queueing) to the first scheduling, s
  prefill_time,          ///< time from the first scheduling to the first token, s
  decode_time,           ///< time from the first to the last token, s
  normalized_latency,    ///< e2e / output tokens, s per token
  output_rate,           ///< per-request output rate N / e2e, tokens per second
  fluidity,              ///< Etalon fluidity-index per request, in [0, 1]
  ttfa,                  ///< time to first answer token (first non-reasoning token) from arrival, s
  reasoning_time,        ///< first reasoning token to first answer token, s
  ttst,                  ///< time to second token: its chunk - the first token chunk, s
  icl,                   ///< inter-chunk latency, one sample per gap between token chunks, s
  prefill_tps,           ///< prompt tokens / ttft per request, tokens per second
  uncached_prefill_tps,  ///< (prompt - cached prompt tokens) / ttft, tokens per second
  spec_acceptance,       ///< speculative tokens accepted / drafted per request, in [0, 1]
};

/// The metrics a request has one value of, as X(name, canonical), in `metric_id` order: the
/// metric fields of `request_metrics` (metrics/canonical.hpp) and its one `metric_id` switch are
/// generated from this list. `canonical` is 1 where `canonical_metrics` computes the metric; 0
/// for `itl`, which has one value per request only under a profile's per-request ITL grain
/// (canonically it is pooled, one sample per output token). `icl` and `fluidity` are not here:
/// many samples per request, or deadlines.
// clang-format off
#define TOKCHRON_PER_REQUEST_METRICS(X) \
  X(ttft, 1) \
  X(ttft_from_send, 1) \
  X(ttft_from_scheduled, 1) \
  X(tpot, 1) \
  X(itl, 0) \
  X(e2e, 1) \
  X(queue_time, 1) \
  X(prefill_time, 1) \
  X(decode_time, 1) \
  X(normalized_latency, 1) \
  X(output_rate, 1) \
  X(ttfa, 1) \
  X(reasoning_time, 1) \
  X(ttst, 1) \
  X(prefill_tps, 1) \
  X(uncached_prefill_tps, 1) \
  X(spec_acceptance, 1)
// clang-format on

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_METRICS_METRIC_ID_HPP
