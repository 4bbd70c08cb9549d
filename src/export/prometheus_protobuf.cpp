// SPDX-License-Identifier: MIT
// tokchron::prometheus_protobuf: the encoder of export/prometheus_protobuf.hpp, over the
// messages protoc generates from proto/io/prometheus/client/metrics.proto.
#include "tokchron/export/prometheus_protobuf.hpp"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/prometheus/client/metrics.pb.h"

TOKCHRON_BEGIN_NAMESPACE

namespace {

namespace pb = io::prometheus::client;

[[noreturn]] void refuse(const std::string& what, const std::string& family) {
  throw std::invalid_argument("to_prometheus_protobuf: " + what + " (" + family + ")");
}

void add_labels(pb::Metric& m, const label_set& consts, const label_set& labels) {
  for (const auto* set : {&consts, &labels})
    for (const auto& l : *set) {
      auto* p = m.add_label();
      p->set_name(l.name);
      p->set_value(l.value);
    }
}

// One side of a native histogram: spans and count deltas from the dense counts whose first is
// OpenTelemetry bucket `offset`, holding (base^offset, base^(offset+1)]. Prometheus numbers a
// bucket by its upper edge (its bucket i holds (base^(i-1), base^i]: getBound in
// model/histogram/generic.go), so each index is the OpenTelemetry one plus 1. Runs of more than two
// empty buckets start a new span (an empty bucket inside a span costs one byte, a new span at least
// two); empty buckets at either end are dropped. Deltas continue across spans (each is the
// difference to the previous bucket written).
void add_side(std::int32_t otel_offset, const std::vector<std::uint64_t>& counts,
              google::protobuf::RepeatedPtrField<pb::BucketSpan>& spans,
              google::protobuf::RepeatedField<std::int64_t>& deltas, const std::string& family) {
  constexpr std::uint64_t max_count =
      static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  const std::int64_t offset = static_cast<std::int64_t>(otel_offset) + 1;
  std::int64_t previous = 0;
  std::int64_t next_index = 0;  // the index after the last span's end
  bool any = false;
  std::size_t i = 0;
  while (i < counts.size()) {
    if (counts[i] == 0) {
      ++i;
      continue;
    }
    // A span from i: extend while the next non-empty bucket is at most two empties away.
    std::size_t end = i + 1;  // one past the last non-empty bucket of the span
    for (std::size_t j = i + 1; j < counts.size() && j <= end + 2; ++j)
      if (counts[j] != 0) end = j + 1;
    const std::int64_t start = offset + static_cast<std::int64_t>(i);
    const std::int64_t gap = any ? start - next_index : start;
    if (gap < std::numeric_limits<std::int32_t>::min() ||
        gap > std::numeric_limits<std::int32_t>::max())
      refuse("a bucket index is out of range", family);
    pb::BucketSpan* span = spans.Add();
    span->set_offset(static_cast<std::int32_t>(gap));
    span->set_length(static_cast<std::uint32_t>(end - i));
    for (std::size_t k = i; k < end; ++k) {
      if (counts[k] > max_count) refuse("a bucket count is above 2^63 - 1", family);
      const auto c = static_cast<std::int64_t>(counts[k]);
      deltas.Add(c - previous);
      previous = c;
    }
    next_index = offset + static_cast<std::int64_t>(end);
    any = true;
    i = end;
  }
}

// The zero threshold to write. Prometheus 2.42 reads a protobuf histogram as native only when
// it has a bucket, a zero count or a zero threshold above 0 (isNativeHistogram in
// model/textparse/protobufparse.go; later versions also accept a no-op span), so an empty
// histogram with threshold 0 would be stored as classic until its first sample, and its first
// native sample would already hold the burst that rate() should see. A threshold of 0 becomes
// 2^-128 (client_golang's default, DefNativeHistogramZeroThreshold) when no bucket lies below
// it, which changes no count: the zero bucket still holds exactly the zeros.
double native_zero_threshold(const exponential_histogram_data& e) {
  constexpr double floor = 0x1p-128;
  if (e.zero_threshold != 0) return e.zero_threshold;
  const auto layout = log_histogram::with_scale(e.scale);
  for (const auto* side : {&e.positive_counts, &e.negative_counts}) {
    const auto offset = side == &e.positive_counts ? e.positive_offset : e.negative_offset;
    for (std::size_t k = 0; k < side->size(); ++k)
      if ((*side)[k] != 0) {
        if (layout.bucket_lower(offset + static_cast<std::int32_t>(k)) < floor) return 0;
        break;
      }
  }
  return floor;
}

void add_native(pb::Histogram& h, const exponential_histogram_data& e, const std::string& family) {
  if (e.scale < prometheus_native_min_schema || e.scale > prometheus_native_max_schema)
    refuse("native schema " + std::to_string(e.scale) + " is outside -4..8", family);
  if (!(e.zero_threshold >= 0) || !std::isfinite(e.zero_threshold))
    refuse("the zero threshold must be finite and >= 0", family);
  std::uint64_t total = e.zero_count;
  bool overflow = false;
  for (const auto* side : {&e.positive_counts, &e.negative_counts})
    for (const auto c : *side) {
      overflow = overflow || total + c < total;
      total += c;
    }
  if (overflow || total != e.count)
    refuse("the native buckets do not add up to the histogram's count", family);
  h.set_schema(e.scale);
  h.set_zero_threshold(native_zero_threshold(e));
  h.set_zero_count(e.zero_count);
  add_side(e.positive_offset, e.positive_counts, *h.mutable_positive_span(),
           *h.mutable_positive_delta(), family);
  add_side(e.negative_offset, e.negative_counts, *h.mutable_negative_span(),
           *h.mutable_negative_delta(), family);
}

}  // namespace

std::string to_prometheus_protobuf(const metrics_snapshot& s,
                                   const std::vector<native_histogram_point>& native,
                                   const prometheus_options& o) {
  prometheus_options checked = o;
  checked.openmetrics = false;
  for (std::size_t i = 0; i < s.families.size(); ++i) {
    detail::check_family(s.families[i], checked);
    for (std::size_t j = 0; j < i; ++j)
      if (s.families[j].name == s.families[i].name)
        refuse("duplicate metric family", s.families[i].name);
  }
  // Each native point names exactly one classic histogram point.
  std::vector<std::vector<const native_histogram_point*>> by_point(s.families.size());
  for (std::size_t f = 0; f < s.families.size(); ++f)
    by_point[f].assign(s.families[f].points.size(), nullptr);
  for (const auto& n : native) {
    bool found = false;
    for (std::size_t f = 0; f < s.families.size() && !found; ++f) {
      const auto& fam = s.families[f];
      if (fam.name != n.family) continue;
      if (fam.kind != metric_kind::histogram)
        refuse("a native point for a non-histogram", n.family);
      for (std::size_t p = 0; p < fam.points.size(); ++p) {
        if (fam.points[p].labels.size() != n.labels.size()) continue;
        bool same = true;
        for (std::size_t l = 0; l < n.labels.size() && same; ++l)
          same = fam.points[p].labels[l].name == n.labels[l].name &&
                 fam.points[p].labels[l].value == n.labels[l].value;
        if (!same) continue;
        if (by_point[f][p] != nullptr) refuse("two native points for one series", n.family);
        if (fam.points[p].histogram.count != n.data.count)
          refuse("the native count differs from the classic count", n.family);
        by_point[f][p] = &n;
        found = true;
        break;
      }
    }
    if (!found) refuse("a native point without a classic point of the same labels", n.family);
  }

  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  for (std::size_t f = 0; f < s.families.size(); ++f) {
    const auto& fam = s.families[f];
    pb::MetricFamily mf;
    const bool counter = fam.kind == metric_kind::counter;
    mf.set_name(counter && fam.total_suffix ? fam.name + "_total" : fam.name);
    mf.set_help(fam.help);
    if (!fam.unit.empty()) mf.set_unit(fam.unit);
    mf.set_type(counter ? pb::COUNTER : fam.kind == metric_kind::gauge ? pb::GAUGE : pb::HISTOGRAM);
    for (std::size_t p = 0; p < fam.points.size(); ++p) {
      const auto& point = fam.points[p];
      auto* m = mf.add_metric();
      add_labels(*m, o.const_labels, point.labels);
      if (counter) {
        m->mutable_counter()->set_value(point.value);
      } else if (fam.kind == metric_kind::gauge) {
        m->mutable_gauge()->set_value(point.value);
      } else {
        auto* h = m->mutable_histogram();
        h->set_sample_count(point.histogram.count);
        h->set_sample_sum(point.histogram.sum);
        for (const auto& b : point.histogram.buckets) {
          auto* pb_bucket = h->add_bucket();
          pb_bucket->set_cumulative_count(b.cumulative_count);
          pb_bucket->set_upper_bound(b.upper_bound);
        }
        auto* inf = h->add_bucket();
        inf->set_cumulative_count(point.histogram.count);
        inf->set_upper_bound(std::numeric_limits<double>::infinity());
        if (by_point[f][p] != nullptr) add_native(*h, by_point[f][p]->data, fam.name);
      }
    }
    if (!google::protobuf::util::SerializeDelimitedToZeroCopyStream(mf, &stream))
      refuse("protobuf could not serialise the family", fam.name);
  }
  return out;
}

TOKCHRON_END_NAMESPACE
