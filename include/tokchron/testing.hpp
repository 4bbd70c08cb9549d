// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TESTING_HPP
#define TOKCHRON_TESTING_HPP

/// \file
/// Helpers for unit-testing a server's own latency accounting against tokchron's definitions.
///
/// \code
///   using namespace std::chrono_literals;
///   auto tl =
///       tokchron::testing::script().arrive(0ms).first_token(120ms).tokens(10,
///       20ms).finish().timeline();
///   // tl is a manual-clock timeline: TTFT 120 ms, 11 tokens, TPOT 20 ms, E2E 320 ms
///   tokchron::request_metrics mine;  // fill with what your server computed, in seconds
///   mine.ttft = 0.120;
///   mine.tpot = 0.020;
///   auto diff = tokchron::testing::compare("req-7", mine, tl);
///   assert(diff.ok());  // otherwise diff.message() names each metric that disagrees
///   // in a doctest or Catch2 test, with testing/doctest.hpp or testing/catch2.hpp included,
///   // the failure prints diff.message() in full:
///   // CHECK(diff == tokchron::testing::no_difference);
/// \endcode
///
/// `timeline/replay.hpp` (included here) feeds a scripted timeline's events into a server's own
/// accounting: `tokchron::replay(tl, callbacks)`.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokchron/clock.hpp"
#include "tokchron/config.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/metrics/metric_table.hpp"
#include "tokchron/timeline/replay.hpp"
#include "tokchron/timeline/request_timeline.hpp"

TOKCHRON_BEGIN_NAMESPACE
namespace testing {

/// The timeline type `script` builds: manual clock, every chunk kept.
using scripted_timeline = basic_request_timeline<manual_clock>;

/// Builds a timeline in one expression. Absolute times are offsets from the manual clock's zero;
/// the repeating steps (`tokens`, `chunks`) continue from the latest event. The first recording
/// status other than `ok` is kept in `status()` so a misused script is visible.
class script {
 public:
  using duration = manual_clock::duration;

  script() : tl_(clock_) {}

  script& arrive(duration at) { return record(tl_.arrive(manual_clock::at(at)), at); }
  script& send(duration at) { return record(tl_.send(manual_clock::at(at)), at); }
  script& queued(duration at) { return record(tl_.queued(manual_clock::at(at)), at); }
  script& scheduled(duration at) { return record(tl_.scheduled(manual_clock::at(at)), at); }
  script& preempted(duration at) { return record(tl_.preempted(manual_clock::at(at)), at); }
  /// A chunk of `tokens` tokens at `at`.
  script& chunk(duration at, std::uint32_t tokens, chunk_kind kind = chunk_kind::text) {
    return record(tl_.chunk(manual_clock::at(at), tokens, kind), at);
  }
  /// A one-token chunk at `at`.
  script& first_token(duration at) { return chunk(at, 1); }
  /// `count` one-token chunks, each `every` after the previous event.
  script& tokens(std::uint32_t count, duration every) { return chunks(count, 1, every); }
  /// `count` chunks of `per_chunk` tokens, each `every` after the previous event.
  script& chunks(std::uint32_t count, std::uint32_t per_chunk, duration every) {
    for (std::uint32_t i = 0; i < count; ++i) chunk(last_ + every, per_chunk);
    return *this;
  }
  /// Finishes at the latest event's time.
  script& finish(finish_reason r = finish_reason::stop) { return finish(last_, r); }
  script& finish(duration at, finish_reason r = finish_reason::stop) {
    return record(tl_.finish(manual_clock::at(at), r), at);
  }
  script& prompt_tokens(std::uint64_t n) {
    tl_.set_prompt_tokens(n);
    return *this;
  }

  /// The first status other than `ok`, or `ok`.
  [[nodiscard]] record_status status() const noexcept { return status_; }
  /// The timeline built so far (copy it out of a temporary script: `.timeline()` at the end).
  [[nodiscard]] const scripted_timeline& timeline() const noexcept { return tl_; }

 private:
  script& record(record_status s, duration at) {
    if (s == record_status::ok) {
      if (at > last_) last_ = at;
    } else if (status_ == record_status::ok) {
      status_ = s;
    }
    return *this;
  }

  manual_clock clock_;
  scripted_timeline tl_;
  duration last_ = duration::zero();
  record_status status_ = record_status::ok;
};

/// One metric on which a server's number and tokchron's disagree.
struct mismatch {
  std::string metric;
  std::optional<double> theirs, ours;
  /// The unit of both values: "s", "tok/s", "tokens", or empty for a ratio.
  std::string_view unit;
};

/// What `operator==` compares a `comparison` with, so that a test framework's assertion prints
/// the whole difference: `CHECK(compare(mine, tl) == tokchron::testing::no_difference)`.
struct no_difference_t {
  explicit constexpr no_difference_t(int /*unused*/) noexcept {}
};
inline constexpr no_difference_t no_difference{0};

/// The result of `compare`: empty when everything agreed.
struct comparison {
  std::vector<mismatch> mismatches;
  /// The request the timeline is of, when the caller named it (printed by `message`).
  std::string request_id;
  /// The tolerances the values were compared with.
  double rel_tol = 0, abs_tol = 0;

  [[nodiscard]] bool ok() const noexcept { return mismatches.empty(); }
  /// One line per mismatch: "tpot: yours 0.021, tokchron 0.02" (9 significant digits).
  [[nodiscard]] std::string to_string() const {
    std::string out;
    for (const auto& m : mismatches) {
      out += m.metric;
      out += ": yours ";
      append_value(out, m.theirs, {});
      out += ", tokchron ";
      append_value(out, m.ours, {});
      out += '\n';
    }
    return out;
  }
  /// The whole difference as an assertion should print it: the request id, each metric with
  /// both values, their difference and the unit, and the tolerance, one per line:
  ///
  ///     request r7: 1 metric differs from tokchron
  ///       tpot: yours 0.0290909091 s, tokchron 0.02 s, yours - tokchron = 0.00909090909 s
  ///       tolerance: 1e-09 relative + 1e-12 absolute
  ///
  /// or "request r7: agrees with tokchron" (without "request ...: " when no id was given).
  [[nodiscard]] std::string message() const {
    std::string out;
    if (!request_id.empty()) {
      out += "request ";
      out += request_id;
      out += ": ";
    }
    if (ok()) return out + "agrees with tokchron";
    out += std::to_string(mismatches.size());
    out += mismatches.size() == 1 ? " metric differs" : " metrics differ";
    out += " from tokchron";
    for (const auto& m : mismatches) {
      out += "\n  ";
      out += m.metric;
      out += ": yours ";
      append_value(out, m.theirs, m.unit);
      out += ", tokchron ";
      append_value(out, m.ours, m.unit);
      if (m.theirs && m.ours) {
        out += ", yours - tokchron = ";
        append_value(out, *m.theirs - *m.ours, m.unit);
      }
    }
    out += "\n  tolerance: ";
    append_number(out, rel_tol);
    out += " relative + ";
    append_number(out, abs_tol);
    out += " absolute";
    return out;
  }

  friend bool operator==(const comparison& c, no_difference_t) noexcept { return c.ok(); }
  friend bool operator!=(const comparison& c, no_difference_t) noexcept { return !c.ok(); }

 private:
  static void append_number(std::string& out, double v) {
    char buf[32];
    const int n = std::snprintf(buf, sizeof buf, "%.9g", v);
    if (n > 0) out.append(buf, static_cast<std::size_t>(n));
  }
  static void append_value(std::string& out, const std::optional<double>& v,
                           std::string_view unit) {
    if (!v) {
      out += "undefined";
      return;
    }
    append_number(out, *v);
    if (!unit.empty()) {
      out += ' ';
      out += unit;
    }
  }
};

/// Compares every field the caller set in `theirs` (seconds; tokens/s for output_rate) with
/// tokchron's canonical value for `tl`. Values agree when |a - b| <= rel_tol * max(|a|, |b|) +
/// abs_tol. A field tokchron leaves undefined (TPOT for one token) must be left unset too.
/// `output_tokens` is compared when the caller set it (non-zero).
template <class Timeline>
[[nodiscard]] comparison compare(const request_metrics& theirs, const Timeline& tl,
                                 double rel_tol = 1e-9, double abs_tol = 1e-12) {
  const request_metrics ours = canonical_metrics(tl);
  comparison out;
  out.rel_tol = rel_tol;
  out.abs_tol = abs_tol;
  for (const auto& d : metric_table) {
    const auto field = request_metrics::field(d.id);
    if (!field) continue;
    const std::optional<double>& a = theirs.*field;
    const std::optional<double>& b = ours.*field;
    if (!a) continue;  // not claimed
    const bool agree =
        b && std::fabs(*a - *b) <= rel_tol * std::fmax(std::fabs(*a), std::fabs(*b)) + abs_tol;
    if (!agree)
      out.mismatches.push_back(mismatch{std::string(d.name), a, b, spelling(d.unit).symbol});
  }
  if (theirs.output_tokens != 0 && theirs.output_tokens != ours.output_tokens)
    out.mismatches.push_back(mismatch{"output_tokens", static_cast<double>(theirs.output_tokens),
                                      static_cast<double>(ours.output_tokens), "tokens"});
  return out;
}

/// `compare` for the request named `request_id`, which `comparison::message` (and so a test
/// framework's failure message) prints.
template <class Timeline>
[[nodiscard]] comparison compare(std::string request_id, const request_metrics& theirs,
                                 const Timeline& tl, double rel_tol = 1e-9,
                                 double abs_tol = 1e-12) {
  comparison out = compare(theirs, tl, rel_tol, abs_tol);
  out.request_id = std::move(request_id);
  return out;
}

}  // namespace testing
TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_TESTING_HPP
