// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_SLA_VERDICT_HPP
#define TOKCHRON_SLA_VERDICT_HPP

/// \file
/// Verdicts: whether an objective holds (pass, fail, or insufficient data to say), with the
/// measured value, the margin, confidence bounds and how many more samples a pass would need.

#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tokchron/config.hpp"
#include "tokchron/sla/objective.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// The outcome of judging one objective.
enum class verdict_status : std::uint8_t {
  pass,               ///< the objective holds with the requested confidence
  fail,               ///< the objective is missed with the requested confidence
  insufficient_data,  ///< the data cannot decide either way (too few samples, none, no bound)
};

/// "pass", "fail" or "insufficient_data".
[[nodiscard]] constexpr std::string_view to_string(verdict_status s) noexcept {
  switch (s) {
    case verdict_status::pass: return "pass";
    case verdict_status::fail: return "fail";
    case verdict_status::insufficient_data: return "insufficient_data";
  }
  return "unknown";
}

/// The judgement of one objective on one distribution.
///
/// `lower` and `upper` are one-sided confidence bounds for the statistic, each holding with
/// probability at least `confidence` (so [lower, upper] covers it with at least 2c - 1); an
/// unbounded side is -inf / +inf. A pass means the bound on the objective's side satisfies the
/// threshold (`upper < threshold` for `<`), so a false pass has probability at most 1 - c; a fail
/// means the other bound misses it. `margin` is signed headroom in the metric's unit: threshold -
/// measured for `<`/`<=`, measured - threshold for `>`/`>=` (negative: missed by that much).
struct verdict {
  objective target;
  verdict_status status = verdict_status::insufficient_data;
  std::optional<double> measured;  ///< the point estimate of the statistic
  std::optional<double> margin;    ///< signed headroom, see above
  double lower = -std::numeric_limits<double>::infinity();
  double upper = std::numeric_limits<double>::infinity();
  double confidence = 0.95;  ///< one-sided confidence of each bound
  std::uint64_t samples = 0;
  /// Percentiles: samples that on their own miss the threshold (for `<`: samples >= threshold).
  std::optional<std::uint64_t> misses;
  /// Early stopping (percentiles, undecided only): more samples a pass needs if the observed
  /// miss rate continues; empty when that rate is too high for any number of samples to pass.
  std::optional<std::uint64_t> more_samples_needed;
  /// Early stopping: more samples a pass needs if none of them misses (the least possible).
  std::optional<std::uint64_t> more_samples_if_no_misses;
  /// Why the verdict is undecided (or a caveat for decided ones); static text, may be empty.
  std::string_view reason;

  [[nodiscard]] bool passed() const noexcept { return status == verdict_status::pass; }
  [[nodiscard]] bool failed() const noexcept { return status == verdict_status::fail; }
  [[nodiscard]] bool decided() const noexcept {
    return status != verdict_status::insufficient_data;
  }

  /// One line: "p95(ttft) < 1.5s: pass, measured 1.21s, bounds [1.1s, 1.34s] at 95%, margin
  /// 290ms, n=1000".
  [[nodiscard]] std::string to_string() const {
    std::ostringstream os;
    os << target.to_string() << ": " << tokchron::to_string(status);
    if (measured) os << ", measured " << target.format_value(*measured);
    os << ", bounds [" << target.format_value(lower) << ", " << target.format_value(upper)
       << "] at " << detail::shortest_number(confidence * 100) << "%";
    if (margin) os << ", margin " << target.format_value(*margin);
    os << ", n=" << samples;
    if (misses) os << ", misses " << *misses;
    if (!reason.empty()) os << " (" << reason << ")";
    if (status == verdict_status::insufficient_data && more_samples_if_no_misses) {
      os << "; a pass needs " << *more_samples_if_no_misses << " more samples with no misses";
      if (more_samples_needed)
        os << ", " << *more_samples_needed << " at the observed miss rate";
      else if (misses)
        os << ", none suffice at the observed miss rate";
    }
    return os.str();
  }
};

/// The judgement of a whole SLA: one verdict per objective.
struct sla_verdict {
  std::vector<verdict> verdicts;

  /// fail if any objective fails; otherwise insufficient_data if any is undecided (or there are
  /// no objectives); otherwise pass.
  [[nodiscard]] verdict_status overall() const noexcept {
    if (verdicts.empty()) return verdict_status::insufficient_data;
    bool undecided = false;
    for (const auto& v : verdicts) {
      if (v.status == verdict_status::fail) return verdict_status::fail;
      if (v.status == verdict_status::insufficient_data) undecided = true;
    }
    return undecided ? verdict_status::insufficient_data : verdict_status::pass;
  }
  [[nodiscard]] bool passed() const noexcept { return overall() == verdict_status::pass; }
  /// The process exit status tokchron-report uses: 0 pass, 3 fail, 4 undecided.
  [[nodiscard]] int exit_code() const noexcept {
    switch (overall()) {
      case verdict_status::pass: return 0;
      case verdict_status::fail: return 3;
      case verdict_status::insufficient_data: return 4;
    }
    return 4;
  }
  /// One line per verdict.
  [[nodiscard]] std::string to_string() const {
    std::string s;
    for (const auto& v : verdicts) {
      s += v.to_string();
      s += '\n';
    }
    return s;
  }
};

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_SLA_VERDICT_HPP
