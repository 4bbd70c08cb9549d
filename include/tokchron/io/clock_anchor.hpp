// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_IO_CLOCK_ANCHOR_HPP
#define TOKCHRON_IO_CLOCK_ANCHOR_HPP

/// \file
/// Clock anchors: a (monotonic, wall) pair read back to back, which a trace carries next to its
/// monotonic times so that traces written on different hosts, or by processes whose monotonic
/// times start at different zeros, can be put on one timeline (docs/library/trace-format.md, "Clock
/// anchors"). Standard library only.
///
/// An anchor is read as three reads: monotonic m1, wall w, monotonic m2. The anchor's monotonic
/// time is the midpoint of m1 and m2 and its wall time is w; since w was read somewhere between
/// m1 and m2, pairing it with the midpoint is wrong by at most half the gap m2 - m1. Two
/// anchors relate two monotonic clocks through the wall clock, so a time moved from one clock to
/// the other is wrong by at most the sum of the two half-gaps, plus whatever the two hosts' wall
/// clocks disagree by (zero on one host: both anchors read the same wall clock; across hosts
/// the NTP or PTP offset, which no trace can see). On Linux CLOCK_MONOTONIC and CLOCK_REALTIME
/// are slewed alike by NTP, so the pair stays valid until the wall clock is stepped.

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "tokchron/clock.hpp"
#include "tokchron/config.hpp"
#include "tokchron/io/trace.hpp"

TOKCHRON_BEGIN_NAMESPACE

/// One clock anchor: a monotonic time on a trace's clock (seconds since its zero) and the wall
/// clock (Unix nanoseconds) read at it, within `gap_ns / 2`.
struct clock_anchor {
  double mono = 0;            ///< seconds on the trace's clock
  std::uint64_t wall_ns = 0;  ///< Unix time in nanoseconds
  std::uint64_t gap_ns = 0;   ///< the gap between the two monotonic reads around the wall read
  /// The anchor's uncertainty: half the gap, in seconds.
  [[nodiscard]] double error() const noexcept { return 0.5e-9 * static_cast<double>(gap_ns); }
  friend bool operator==(const clock_anchor& a, const clock_anchor& b) noexcept {
    return a.mono == b.mono && a.wall_ns == b.wall_ns && a.gap_ns == b.gap_ns;
  }
};

/// Reads an anchor of `Clock` (times in seconds since `zero`, as the trace's records are written)
/// against `Wall`: `tries` (at least 1) read triples, keeping the one with the smallest gap.
template <class Clock = std::chrono::steady_clock, class Wall = std::chrono::system_clock>
[[nodiscard]] clock_anchor read_clock_anchor(typename Clock::time_point zero, int tries = 5) {
  clock_anchor best;
  bool have = false;
  for (int i = 0; i < (tries < 1 ? 1 : tries); ++i) {
    const auto m1 = Clock::now();
    const auto w = Wall::now();
    const auto m2 = Clock::now();
    const auto gap = std::chrono::duration_cast<std::chrono::nanoseconds>(m2 - m1).count();
    const auto wall =
        std::chrono::duration_cast<std::chrono::nanoseconds>(w.time_since_epoch()).count();
    if (gap < 0 || wall <= 0) continue;
    const auto g = static_cast<std::uint64_t>(gap);
    if (have && g >= best.gap_ns) continue;
    best.mono = to_seconds(m1 - zero) + 0.5 * to_seconds(m2 - m1);
    best.wall_ns = static_cast<std::uint64_t>(wall);
    best.gap_ns = g;
    have = true;
  }
  return best;
}

/// The anchor of `r`, when it has one (`validate` checks that it has all three fields or none).
[[nodiscard]] inline std::optional<clock_anchor> clock_anchor_of(const trace_record& r) noexcept {
  if (!r.clock_mono || !r.clock_wall_ns || !r.clock_gap_ns) return std::nullopt;
  return clock_anchor{*r.clock_mono, *r.clock_wall_ns, *r.clock_gap_ns};
}

/// Writes `a` into `r`'s anchor fields.
inline void set_clock_anchor(trace_record& r, const clock_anchor& a) noexcept {
  r.clock_mono = a.mono;
  r.clock_wall_ns = a.wall_ns;
  r.clock_gap_ns = a.gap_ns;
}
/// Writes `a` into every record of `rs` (a tool's trace carries its host's anchor on every line).
inline void set_clock_anchor(std::vector<trace_record>& rs, const clock_anchor& a) noexcept {
  for (trace_record& r : rs) set_clock_anchor(r, a);
}

/// The seconds to add to a time on `from`'s clock to put it on `to`'s clock:
/// (to.mono - from.mono) + (from.wall - to.wall). Wrong by at most `from.error() + to.error()`
/// plus the two wall clocks' disagreement. The wall times are subtracted as integers, so the
/// result keeps nanoseconds whatever the epoch.
[[nodiscard]] inline double clock_shift(const clock_anchor& from, const clock_anchor& to) noexcept {
  const auto dw = static_cast<std::int64_t>(from.wall_ns - to.wall_ns);  // two's complement
  return (to.mono - from.mono) + 1e-9 * static_cast<double>(dw);
}

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_IO_CLOCK_ANCHOR_HPP
