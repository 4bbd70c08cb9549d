// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXPOSITION_LABELS_HPP
#define TOKCHRON_EXPOSITION_LABELS_HPP

/// \file
/// A label, a label set and a family's kind: the part of exposition/snapshot_data.hpp that a
/// server preset's families name (live/options.hpp, which the recording header includes), in a
/// header of its own so that the recording header does not parse the snapshot types. Standard
/// library only.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokchron/config.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// One label: a name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with "__") and any UTF-8 value.
struct label {
  std::string name;
  std::string value;
  friend bool operator==(const label& a, const label& b) {
    return a.name == b.name && a.value == b.value;
  }
};
using label_set = std::vector<label>;

/// What a metric family is, as Prometheus and OpenTelemetry type it.
enum class metric_kind : std::uint8_t {
  counter,    ///< monotonic total; written with the `_total` suffix
  gauge,      ///< a value that goes up and down
  histogram,  ///< cumulative `le` buckets, `_sum` and `_count`
};

/// "counter", "gauge" or "histogram".
[[nodiscard]] constexpr std::string_view to_string(metric_kind k) noexcept {
  switch (k) {
    case metric_kind::counter: return "counter";
    case metric_kind::gauge: return "gauge";
    case metric_kind::histogram: return "histogram";
  }
  return "unknown";
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_EXPOSITION_LABELS_HPP
