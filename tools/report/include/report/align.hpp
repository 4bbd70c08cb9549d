// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_REPORT_ALIGN_HPP
#define TOKCHRON_TOOLS_REPORT_ALIGN_HPP

/// \file
/// Putting traces from several hosts on one timeline (docs/tools/tokchron-report.md, "Several
/// hosts"). Each line of a trace written by tokchron-bench or `serve` carries its host's clock
/// anchor (io/clock_anchor.hpp). The first anchored line read is the reference; every anchored
/// line's times are moved onto the reference's clock with its own anchor (`tokchron::clock_shift`),
/// so a file whose lines share one anchor with the reference is left exactly as it is. Files
/// without anchors are read as today (one clock assumed) unless another file has anchors: then
/// they cannot be placed and the read stops (input_error). A line without an anchor in a file
/// whose first line has one is a malformed line (skipped, counted, named).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokchron/io/clock_anchor.hpp"
#include "tokchron/io/trace.hpp"

namespace tokchron_report {

namespace tc = tokchron;

/// One input file's clock: the shift its lines got onto the reference clock and how far it can
/// be trusted.
struct host_clock {
  std::string file;
  std::size_t lines = 0;         ///< anchored lines read
  double shift_min = 0;          ///< the smallest shift of its lines (seconds)
  double shift_max = 0;          ///< the largest (equal to shift_min when one anchor)
  std::uint64_t max_gap_ns = 0;  ///< the widest anchor read of its lines
  /// The host's error bound: half its widest anchor read (seconds).
  [[nodiscard]] double error() const noexcept { return 0.5e-9 * static_cast<double>(max_gap_ns); }
};

/// What the alignment did over every input.
struct clock_alignment {
  std::optional<tc::clock_anchor> reference;  ///< the first anchored line's anchor
  std::string reference_file;
  std::vector<host_clock> hosts;  ///< one per file with anchors, in reading order
  std::vector<std::string> unanchored_files;

  /// True when several files were put on one timeline (what the report then describes).
  [[nodiscard]] bool aligned() const noexcept { return hosts.size() > 1; }
  /// The bound on the difference of two aligned times from any two hosts: the sum of the two
  /// largest host errors (the reference's included), not counting the wall clocks' own
  /// disagreement. 0 with fewer than two hosts.
  [[nodiscard]] double error() const noexcept;
  /// "clock alignment: ..." lines for people.
  [[nodiscard]] std::string to_string() const;
};

/// Aligns the records of one read, file by file (`begin_file`, then `place` per record).
class aligner {
 public:
  void begin_file(const std::string& file);
  /// Moves `r` onto the reference clock. Returns the issue (field, message) when the line
  /// cannot be placed: no anchor in an anchored file, or a time out of range after the shift.
  /// Throws input_error when anchored and unanchored files are mixed.
  std::optional<tc::trace_issue> place(tc::trace_record& r);
  /// At the end of the read: throws input_error when anchored and unanchored files are mixed.
  void finish() const;
  [[nodiscard]] const clock_alignment& result() const noexcept { return a_; }

 private:
  clock_alignment a_;
  std::string file_;
  enum class state { unknown, anchored, unanchored } state_ = state::unknown;
  [[noreturn]] void mixed() const;
};

}  // namespace tokchron_report

#endif  // TOKCHRON_TOOLS_REPORT_ALIGN_HPP
