// SPDX-License-Identifier: MIT
// Fuzz target: the SLO parsers (sla/objective.hpp parse_objective, parse_sla; sla/goodput.hpp
// parse_request_slo; metrics/run_summary.hpp parse_percentiles).
// Properties: the noexcept parsers never crash; an error names a part inside the text with a
// message; the throwing forms throw std::invalid_argument exactly when the value forms report an
// error; every parsed objective prints (`to_string`) as text that parses back to an equal one.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "tokchron/metrics/run_summary.hpp"
#include "tokchron/sla/goodput.hpp"
#include "tokchron/sla/objective.hpp"

namespace {
void check_error(const tokchron::parse_error& e, std::string_view text) {
  TOKCHRON_FUZZ_CHECK(!e.message.empty());
  TOKCHRON_FUZZ_CHECK(e.offset <= text.size());
  TOKCHRON_FUZZ_CHECK(e.length <= text.size() - e.offset);
}

void check_objective(const tokchron::objective& o) {
  TOKCHRON_FUZZ_CHECK(std::isfinite(o.threshold) && o.threshold >= 0);
  TOKCHRON_FUZZ_CHECK(o.statistic != tokchron::slo_statistic::percentile ||
                      (o.percentile >= 0 && o.percentile <= 100));
  TOKCHRON_FUZZ_CHECK(!o.holds(std::nan("")));
  const std::string printed = o.to_string();
  const auto again = tokchron::parse_objective(printed);
  TOKCHRON_FUZZ_CHECK(static_cast<bool>(again));
  TOKCHRON_FUZZ_CHECK(again.value == o);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  const tokchron::objective_parse_result one = tokchron::parse_objective(text);
  if (one) {
    check_objective(one.value);
  } else {
    check_error(one.error, text);
  }
  bool threw = false;
  try {
    (void)tokchron::objective::parse(text);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  TOKCHRON_FUZZ_CHECK(threw == !one);

  const tokchron::sla_parse_result all = tokchron::parse_sla(text);
  if (all) {
    TOKCHRON_FUZZ_CHECK(!all.value.objectives.empty());
    for (const auto& o : all.value.objectives) check_objective(o);
  } else {
    check_error(all.error, text);
  }

  const tokchron::request_slo_parse_result req = tokchron::parse_request_slo(text);
  if (req) {
    const auto& v = req.value;
    // Every limit the text set, on any limitable metric of the table, is finite and >= 0, and
    // the text the limits print parses back to the same limits.
    const auto again = tokchron::parse_request_slo(v.to_string());
    TOKCHRON_FUZZ_CHECK(static_cast<bool>(again));
    bool any = false;
    for (std::size_t i = 0; i < tokchron::metric_count; ++i) {
      const auto m = static_cast<tokchron::metric_id>(i);
      const std::optional<double>& limit = v.limit(m);
      TOKCHRON_FUZZ_CHECK(!limit || tokchron::request_slo::limitable(m));
      TOKCHRON_FUZZ_CHECK(!limit || (std::isfinite(*limit) && *limit >= 0));
      TOKCHRON_FUZZ_CHECK(again.value.limit(m) == limit);
      any = any || limit.has_value();
    }
    TOKCHRON_FUZZ_CHECK(any);
  } else {
    check_error(req.error, text);
  }

  try {
    const std::vector<double> ps = tokchron::parse_percentiles(text);
    TOKCHRON_FUZZ_CHECK(!ps.empty());
    for (double p : ps) TOKCHRON_FUZZ_CHECK(p >= 0 && p <= 100);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
