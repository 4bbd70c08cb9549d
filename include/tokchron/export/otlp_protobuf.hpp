// SPDX-License-Identifier: MIT
// tokchron-requires: protobuf nlohmann-json
#ifndef TOKCHRON_EXPORT_OTLP_PROTOBUF_HPP
#define TOKCHRON_EXPORT_OTLP_PROTOBUF_HPP

/// \file
/// OTLP/HTTP protobuf (OpenTelemetry protocol, binary encoding) of `log_histogram`s as
/// ExponentialHistogram data points: the same ExportMetricsServiceRequest `otlp_metrics`
/// (export/otlp.hpp) writes as OTLP/JSON, for `POST /v1/metrics` with Content-Type
/// `application/x-protobuf`. An adaptor: the encoder is compiled in `tokchron::otlp_protobuf`
/// (built when CMake finds Debian's libprotobuf-dev and protobuf-compiler), whose messages come
/// from proto/opentelemetry/proto/ (OpenTelemetry's packages, message names and field numbers).
/// Not included by tokchron.hpp.
///
/// \code
///   #include <tokchron/export/otlp_protobuf.hpp>
///   const std::string body = tokchron::otlp_metrics_protobuf(
///       tokchron::otlp_histograms(metrics), {{"service.name", "my-server"}}, start_ns, now_ns);
///   // POST body to http://collector:4318/v1/metrics, Content-Type application/x-protobuf
/// \endcode

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/export/otlp.hpp"
#include "tokchron/exposition/snapshot_data.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// The HTTP Content-Type of `otlp_metrics_protobuf` output (OTLP/HTTP binary protobuf).
inline constexpr std::string_view otlp_protobuf_content_type = "application/x-protobuf";

/// The serialised ExportMetricsServiceRequest with exactly the fields `otlp_metrics` writes
/// (opentelemetry-proto field numbers): one resource (attributes `resource`), one scope
/// ("tokchron", its version), one ExponentialHistogram metric per entry of `histograms` with
/// one data point each: attributes, start and snapshot times, count, sum, min and max (present
/// only when there are samples: proto3 `optional`), scale, zero count and threshold, and the
/// positive and negative buckets (absent when empty), lossless. A field equal to proto3's
/// default (a scale or zero count of 0) is not on the wire and decodes to that default. Throws
/// std::runtime_error only if protobuf cannot serialise (a request over 2 GiB). Compiled in
/// tokchron::otlp_protobuf.
[[nodiscard]] std::string otlp_metrics_protobuf(
    const std::vector<otlp_histogram>& histograms, const label_set& resource,
    std::uint64_t start_ns, std::uint64_t time_ns,
    otlp_temporality temporality = otlp_temporality::cumulative);

/// The same with `otlp_metrics`' explicit-bucket Histogram metrics after the exponential ones
/// (one Metric per run of entries of one metric, `otlp_same_metric`; a data point per entry:
/// attributes, times, count, sum when there are samples, bucket counts, explicit bounds).
[[nodiscard]] std::string otlp_metrics_protobuf(
    const std::vector<otlp_histogram>& histograms,
    const std::vector<otlp_explicit_histogram>& explicit_histograms, const label_set& resource,
    std::uint64_t start_ns, std::uint64_t time_ns,
    otlp_temporality temporality = otlp_temporality::cumulative);

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_EXPORT_OTLP_PROTOBUF_HPP
