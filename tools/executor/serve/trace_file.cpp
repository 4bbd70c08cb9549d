// SPDX-License-Identifier: MIT
#include "trace_file.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

#include "tokchron/io/trace_json_writer.hpp"

namespace batching::serve {

trace_file::trace_file(const std::string& path)
    : path_(path), anchor_(tokchron::read_clock_anchor(std::chrono::steady_clock::time_point{})) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error("serve: cannot write the trace to '" + path +
                             "': " + std::strerror(errno));
}

trace_file::~trace_file() {
  if (fd_ >= 0) ::close(fd_);
}

// The first failure: said on stderr at once (the run goes on; serve exits 1 at the end).
void trace_file::fail(std::string why, std::size_t records) noexcept {
  lost_ += records;
  error_ = std::move(why);
  std::fprintf(stderr, "batching-executor serve: --trace-out: %s; no more requests are traced\n",
               error_.c_str());
}

void trace_file::write(std::vector<tokchron::trace_record>& records) noexcept {
  const std::lock_guard<std::mutex> lock(mu_);
  if (!error_.empty()) {
    lost_ += records.size();
    return;
  }
  std::uint64_t cut = 0;
  try {
    buf_.clear();
    for (tokchron::trace_record& r : records) {
      tokchron::set_clock_anchor(r, anchor_);
      buf_ += tokchron::to_json_line(r);
      buf_ += '\n';
      if (r.reason == tokchron::finish_reason::aborted) ++cut;
    }
  } catch (const std::exception& e) {
    fail(std::string("a trace record could not be written: ") + e.what(), records.size());
    return;
  }
  // One write of whole lines (a regular file takes it whole unless it fails); a short write is
  // continued, and a failure leaves at most that one batch's last line cut.
  const char* p = buf_.data();
  std::size_t left = buf_.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fail("writing '" + path_ + "' failed: " + std::strerror(n < 0 ? errno : EIO), records.size());
      return;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  lines_ += records.size();
  aborted_ += cut;
}

std::uint64_t trace_file::lines() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return lines_;
}
std::uint64_t trace_file::aborted() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}
std::uint64_t trace_file::lost() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return lost_;
}
std::string trace_file::error() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

}  // namespace batching::serve
