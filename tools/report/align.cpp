// SPDX-License-Identifier: MIT
#include "report/align.hpp"

#include <algorithm>
#include <sstream>

#include "report/options.hpp"

namespace tokchron_report {

double clock_alignment::error() const noexcept {
  if (hosts.size() < 2) return 0;
  double a = 0, b = 0;  // the two largest
  for (const host_clock& h : hosts) {
    const double e = h.error();
    if (e > a) {
      b = a;
      a = e;
    } else if (e > b) {
      b = e;
    }
  }
  return a + b;
}

std::string clock_alignment::to_string() const {
  std::ostringstream os;
  os.precision(12);
  os << "clock alignment: " << hosts.size() << " hosts put on the clock of " << reference_file
     << " by their wall-clock anchors\n";
  for (const host_clock& h : hosts) {
    os << "  " << h.file << ": shift " << std::showpos << h.shift_min << std::noshowpos << " s";
    if (h.shift_max != h.shift_min)
      os << " to " << std::showpos << h.shift_max << std::noshowpos << " s";
    os << ", error <= " << h.error() * 1e6 << " us (" << h.lines << " lines)\n";
  }
  os << "  two hosts' times agree within " << error() * 1e6
     << " us plus their wall clocks' disagreement (0 on one host; the NTP/PTP offset across "
        "hosts)\n";
  return os.str();
}

void aligner::begin_file(const std::string& file) {
  file_ = file;
  state_ = state::unknown;
}

void aligner::mixed() const {
  const std::string bare = a_.unanchored_files.empty() ? file_ : a_.unanchored_files.front();
  const std::string anchored = a_.hosts.empty() ? file_ : a_.hosts.front().file;
  throw input_error("cannot put " + bare + " and " + anchored + " on one timeline: " + bare +
                    " has no clock anchor (clock_mono, clock_wall_ns, clock_gap_ns); nothing "
                    "was reported");
}

std::optional<tc::trace_issue> aligner::place(tc::trace_record& r) {
  const auto anchor = tc::clock_anchor_of(r);
  if (state_ == state::unknown) {
    state_ = anchor ? state::anchored : state::unanchored;
    if (anchor) {
      if (!a_.unanchored_files.empty()) mixed();
      if (!a_.reference) {
        a_.reference = anchor;
        a_.reference_file = file_;
      }
      a_.hosts.push_back(host_clock{file_, 0, 0, 0, 0});
    } else {
      a_.unanchored_files.push_back(file_);
      if (!a_.hosts.empty()) mixed();
    }
  }
  if (state_ == state::unanchored) {
    if (anchor)
      return tc::trace_issue{"clock_mono", "is set, but the file's first line has no clock anchor"};
    return std::nullopt;
  }
  if (!anchor)
    return tc::trace_issue{"clock_mono", "is missing: the file's first line has a clock anchor"};
  const double shift = tc::clock_shift(*anchor, *a_.reference);
  host_clock& h = a_.hosts.back();
  h.shift_min = h.lines == 0 ? shift : std::min(h.shift_min, shift);
  h.shift_max = h.lines == 0 ? shift : std::max(h.shift_max, shift);
  h.max_gap_ns = std::max(h.max_gap_ns, anchor->gap_ns);
  ++h.lines;
  if (shift != 0) {
    tc::shift_times(r, shift);
    if (auto issue = tc::validate(r)) {
      issue->message += " after the clock shift of " + std::to_string(shift) + " s";
      return issue;
    }
  }
  return std::nullopt;
}

void aligner::finish() const {
  if (!a_.hosts.empty() && !a_.unanchored_files.empty()) mixed();
}

}  // namespace tokchron_report
