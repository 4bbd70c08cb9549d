// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_TOOLS_EXECUTOR_SERVE_TRACE_FILE_HPP
#define TOKCHRON_TOOLS_EXECUTOR_SERVE_TRACE_FILE_HPP

/// \file
/// `serve --trace-out FILE`: the trace written as requests finish, so that a crash (a signal
/// that kills the process, a power cut aside) loses only the requests still in flight. Each
/// engine step's finished records go to the file in one `write(2)` of whole lines, before their
/// clients are told; nothing is buffered in the process between steps, and memory does not grow
/// with the requests served.

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "tokchron/io/clock_anchor.hpp"
#include "tokchron/io/trace.hpp"

namespace batching::serve {

class trace_file {
 public:
  /// Creates (or empties) `path`; throws `std::runtime_error` naming it when it cannot. The
  /// host's clock anchor, read now, goes on every line.
  explicit trace_file(const std::string& path);
  ~trace_file();
  trace_file(const trace_file&) = delete;
  trace_file& operator=(const trace_file&) = delete;

  /// Appends `records` as whole lines. Never throws: after a failed write (a full disk, a
  /// record that cannot be written) nothing more is written, so the file stays whole lines, and
  /// `error` says why; later records are counted in `lost`.
  void write(std::vector<tokchron::trace_record>& records) noexcept;

  [[nodiscard]] std::uint64_t lines() const;    ///< records written
  [[nodiscard]] std::uint64_t aborted() const;  ///< of them, finished "aborted"
  [[nodiscard]] std::uint64_t lost() const;     ///< records not written after an error
  [[nodiscard]] std::string error() const;      ///< the first failure; empty: none

 private:
  void fail(std::string why, std::size_t records) noexcept;

  std::string path_;
  int fd_ = -1;
  tokchron::clock_anchor anchor_;
  mutable std::mutex mu_;
  std::string buf_;
  std::uint64_t lines_ = 0, aborted_ = 0, lost_ = 0;
  std::string error_;
};

}  // namespace batching::serve

#endif  // TOKCHRON_TOOLS_EXECUTOR_SERVE_TRACE_FILE_HPP
