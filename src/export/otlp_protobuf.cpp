// SPDX-License-Identifier: MIT
// tokchron::otlp_protobuf: the encoder of export/otlp_protobuf.hpp, over the messages protoc
// generates from proto/opentelemetry/proto/.
#include "tokchron/export/otlp_protobuf.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "tokchron/version.hpp"

TOKCHRON_BEGIN_NAMESPACE

namespace {

namespace common = opentelemetry::proto::common::v1;
namespace metrics = opentelemetry::proto::metrics::v1;

template <class Repeated>
void add_attributes(Repeated& out, const label_set& labels) {
  for (const auto& l : labels) {
    common::KeyValue* kv = out.Add();
    kv->set_key(l.name);
    kv->mutable_value()->set_string_value(l.value);
  }
}

void set_buckets(metrics::ExponentialHistogramDataPoint::Buckets& b, std::int32_t offset,
                 const std::vector<std::uint64_t>& counts) {
  b.set_offset(offset);
  b.mutable_bucket_counts()->Reserve(static_cast<int>(counts.size()));
  for (const auto c : counts) b.add_bucket_counts(c);
}

}  // namespace

std::string otlp_metrics_protobuf(const std::vector<otlp_histogram>& histograms,
                                  const label_set& resource, std::uint64_t start_ns,
                                  std::uint64_t time_ns, otlp_temporality temporality) {
  return otlp_metrics_protobuf(histograms, {}, resource, start_ns, time_ns, temporality);
}

std::string otlp_metrics_protobuf(const std::vector<otlp_histogram>& histograms,
                                  const std::vector<otlp_explicit_histogram>& explicit_histograms,
                                  const label_set& resource, std::uint64_t start_ns,
                                  std::uint64_t time_ns, otlp_temporality temporality) {
  const auto temporality_enum = temporality == otlp_temporality::delta
                                    ? metrics::AGGREGATION_TEMPORALITY_DELTA
                                    : metrics::AGGREGATION_TEMPORALITY_CUMULATIVE;
  opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest request;
  metrics::ResourceMetrics* rm = request.add_resource_metrics();
  add_attributes(*rm->mutable_resource()->mutable_attributes(), resource);
  metrics::ScopeMetrics* sm = rm->add_scope_metrics();
  sm->mutable_scope()->set_name("tokchron");
  sm->mutable_scope()->set_version(TOKCHRON_VERSION_STRING);
  for (const auto& h : histograms) {
    metrics::Metric* m = sm->add_metrics();
    m->set_name(h.name);
    m->set_description(h.description);
    m->set_unit(h.unit);
    metrics::ExponentialHistogram* eh = m->mutable_exponential_histogram();
    eh->set_aggregation_temporality(temporality_enum);
    metrics::ExponentialHistogramDataPoint* p = eh->add_data_points();
    const exponential_histogram_data& e = h.data;
    add_attributes(*p->mutable_attributes(), h.attributes);
    p->set_start_time_unix_nano(start_ns);
    p->set_time_unix_nano(time_ns);
    p->set_count(e.count);
    if (e.count > 0) p->set_sum(e.sum);
    p->set_scale(e.scale);
    p->set_zero_count(e.zero_count);
    if (!e.positive_counts.empty())
      set_buckets(*p->mutable_positive(), e.positive_offset, e.positive_counts);
    if (!e.negative_counts.empty())
      set_buckets(*p->mutable_negative(), e.negative_offset, e.negative_counts);
    if (e.min) p->set_min(*e.min);
    if (e.max) p->set_max(*e.max);
    p->set_zero_threshold(e.zero_threshold);
  }
  metrics::Histogram* hist = nullptr;
  for (std::size_t i = 0; i < explicit_histograms.size(); ++i) {
    const otlp_explicit_histogram& h = explicit_histograms[i];
    if (i == 0 || !otlp_same_metric(explicit_histograms[i - 1], h)) {
      metrics::Metric* m = sm->add_metrics();
      m->set_name(h.name);
      m->set_description(h.description);
      m->set_unit(h.unit);
      hist = m->mutable_histogram();
      hist->set_aggregation_temporality(temporality_enum);
    }
    metrics::HistogramDataPoint* p = hist->add_data_points();
    add_attributes(*p->mutable_attributes(), h.attributes);
    for (const auto& [key, value] : h.int_attributes) {
      common::KeyValue* kv = p->mutable_attributes()->Add();
      kv->set_key(key);
      kv->mutable_value()->set_int_value(value);
    }
    p->set_start_time_unix_nano(start_ns);
    p->set_time_unix_nano(time_ns);
    p->set_count(h.count);
    if (h.count > 0) p->set_sum(h.sum);
    p->mutable_bucket_counts()->Reserve(static_cast<int>(h.counts.size()));
    for (const auto c : h.counts) p->add_bucket_counts(c);
    p->mutable_explicit_bounds()->Reserve(static_cast<int>(h.bounds.size()));
    for (const auto b : h.bounds) p->add_explicit_bounds(b);
  }
  std::string out;
  if (!request.SerializeToString(&out))
    throw std::runtime_error("otlp_metrics_protobuf: protobuf could not serialise the request");
  return out;
}

TOKCHRON_END_NAMESPACE
