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
///   auto diff = tokchron::testing::compare(mine, tl);
///   assert(diff.ok());  // otherwise diff.to_string() names each metric that disagrees
/// \endcode

#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tokchron/clock.hpp"
#include "tokchron/config.hpp"
#include "tokchron/metrics/canonical.hpp"
#include "tokchron/metrics/metric.hpp"
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
};

/// The result of `compare`: empty when everything agreed.
struct comparison {
  std::vector<mismatch> mismatches;
  [[nodiscard]] bool ok() const noexcept { return mismatches.empty(); }
  /// One line per mismatch: "tpot: yours 0.021 s, tokchron 0.02 s".
  [[nodiscard]] std::string to_string() const {
    std::ostringstream os;
    os.precision(9);
    for (const auto& m : mismatches) {
      os << m.metric << ": yours ";
      if (m.theirs)
        os << *m.theirs;
      else
        os << "undefined";
      os << ", tokchron ";
      if (m.ours)
        os << *m.ours;
      else
        os << "undefined";
      os << '\n';
    }
    return os.str();
  }
};

/// Compares every field the caller set in `theirs` (seconds; tokens/s for output_rate) with
/// tokchron's canonical value for `tl`. Values agree when |a - b| <= rel_tol * max(|a|, |b|) +
/// abs_tol. A field tokchron leaves undefined (TPOT for one token) must be left unset too.
template <class Timeline>
[[nodiscard]] comparison compare(const request_metrics& theirs, const Timeline& tl,
                                 double rel_tol = 1e-9, double abs_tol = 1e-12) {
  const request_metrics ours = canonical_metrics(tl);
  comparison out;
  for (const auto& d : metric_table) {
    const auto field = request_metrics::field(d.id);
    if (!field) continue;
    const std::optional<double>& a = theirs.*field;
    const std::optional<double>& b = ours.*field;
    if (!a) continue;  // not claimed
    const bool agree =
        b && std::fabs(*a - *b) <= rel_tol * std::fmax(std::fabs(*a), std::fabs(*b)) + abs_tol;
    if (!agree) out.mismatches.push_back(mismatch{std::string(d.name), a, b});
  }
  if (theirs.output_tokens != 0 && theirs.output_tokens != ours.output_tokens)
    out.mismatches.push_back(mismatch{"output_tokens", static_cast<double>(theirs.output_tokens),
                                      static_cast<double>(ours.output_tokens)});
  return out;
}

}  // namespace testing
TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_TESTING_HPP
