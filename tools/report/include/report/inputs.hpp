// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_TOOLS_REPORT_INPUTS_HPP
#define TOKCHRON_TOOLS_REPORT_INPUTS_HPP

/// \file
/// tokchron-report's inputs: tokchron JSONL traces and vLLM result files, streamed request by
/// request (optionally on a second thread), or loaded into memory.
///
/// Bad input, and what happens (the exit codes are those of options.hpp):
///  - a malformed trace line is skipped and counted; the first `kept_errors` are kept (file,
///    line, field, message) for the message, so memory does not grow with the garbage;
///  - a line longer than `max_line_bytes` stops the read with an input_error naming the file
///    and line (memory stays within the limit plus one read block); a vLLM result file is one
///    JSON document, so the limit bounds the whole file;
///  - the commands call `readable_inputs` before reading: a missing or unreadable file among
///    several is named on stderr, left out and counted in the output (`unreadable_files`), the
///    others are reported and the exit code is 1 (exit_unreadable_files); when no file can be
///    read it is an input_error naming it, and nothing is reported. A file that fails later (an
///    I/O error part-way) stops the read with an input_error.

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/align.hpp"
#include "report/options.hpp"
#include "tokchron/io/trace.hpp"
#include "tokchron/io/trace_json_reader.hpp"
#include "tokchron/io/vllm_result.hpp"

namespace tokchron_report {

/// Malformed lines kept for the message; the rest are only counted.
inline constexpr std::size_t kept_errors = 20;

/// What was read from the inputs, besides the requests themselves.
struct input_stats {
  std::vector<tc::trace_error> errors;   ///< the first `kept_errors` malformed lines (skipped)
  std::vector<std::string> error_files;  ///< the file of each kept error
  std::size_t malformed = 0;             ///< every malformed line (kept or not)
  std::size_t lines = 0;                 ///< lines read (vLLM file: requests)
  std::size_t requests = 0;              ///< requests handed on
  std::optional<double> duration;        ///< from a vLLM result file
  /// The earliest `benchmark_start` of the records that have one (seconds on the trace clock).
  std::optional<double> benchmark_start;
  bool vllm = false;
  /// The files' clocks: each anchored line moved onto the first anchored line's clock
  /// (align.hpp); `clocks.aligned()` when several hosts were put on one timeline.
  clock_alignment clocks;
};

/// How to read.
struct read_options {
  std::string kind = "auto";  ///< auto, trace or vllm
  std::size_t max_line_bytes = default_max_line_bytes;
  /// When set, called with each request's name just before the request is handed on: its
  /// trace id, else "FILE line N" (vLLM: "request N").
  std::function<void(const std::string&)> on_name;

  read_options() = default;
  read_options(std::string k) : kind(std::move(k)) {}  // NOLINT: a kind reads as options
  read_options(const char* k) : kind(k) {}             // NOLINT
};

/// The files of a command split by whether they can be opened for reading (`-` is stdin).
struct input_files {
  std::vector<std::string> readable;    ///< in the order given
  std::vector<std::string> unreadable;  ///< missing, unreadable or a directory
};
/// Checks every file before any is read: each that cannot be opened is named on `err` (when
/// several were given) and left out. Throws input_error when none can be read.
[[nodiscard]] input_files readable_inputs(const std::vector<std::string>& files, std::ostream& err);
/// Why `f` cannot be opened for reading, or empty when it can.
[[nodiscard]] std::optional<std::string> unreadable_reason(const std::string& f);

using timeline_sink = std::function<void(tc::trace_timeline&&)>;
using timeline_peek = std::function<void(const tc::trace_timeline&)>;

/// Streams every request of `files` (`-` is stdin; one run across files) to `on_timeline`,
/// without holding the files in memory. A trace's malformed lines are counted in the stats and
/// skipped. Lines with clock anchors are put on one timeline (align.hpp): a line that cannot be
/// placed is malformed, and anchored files mixed with unanchored ones are an input_error. `kind`
/// auto: a file whose first line has no `chunks` but which has `ttfts` and `itls` is a vLLM result.
/// Throws input_error when a file cannot be opened or read, a line is too long or a vLLM file is
/// invalid; usage_error for an unknown kind.
input_stats read_inputs(const std::vector<std::string>& files, const read_options& opt,
                        const timeline_sink& on_timeline);

/// As `read_inputs`, but the files are read and parsed on a second thread while
/// `on_timeline` runs on this one, in the same order; the timelines are handed over in batches
/// (at most a few thousand requests in flight). An exception from either side is rethrown here
/// once the reader has stopped, after the requests read before it were handed on, as
/// `read_inputs` would. Without a second thread it is `read_inputs`. `on_read`, when given,
/// runs on the reading thread for each request just before it is handed over.
input_stats read_inputs_pipelined(const std::vector<std::string>& files, const read_options& opt,
                                  const timeline_sink& on_timeline,
                                  const timeline_peek& on_read = {});

/// The requests of `files`, kept in memory, with their names (see `read_options::on_name`).
struct loaded_inputs : input_stats {
  std::vector<tc::trace_timeline> timelines;
  std::vector<std::string> names;  ///< one per timeline
};
[[nodiscard]] loaded_inputs load_inputs(const std::vector<std::string>& files,
                                        const read_options& opt = {});

}  // namespace tokchron_report

#endif  // TOKCHRON_TOOLS_REPORT_INPUTS_HPP
