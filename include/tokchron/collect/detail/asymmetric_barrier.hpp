// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_COLLECT_DETAIL_ASYMMETRIC_BARRIER_HPP
#define TOKCHRON_COLLECT_DETAIL_ASYMMETRIC_BARRIER_HPP

/// \file
/// Internals of `collect/`: an asymmetric memory barrier. The frequent side (a writer recording
/// a sample) pays only a compiler barrier; the rare side (a snapshot) pays a heavy barrier that
/// makes every thread of the process execute a full memory fence: Linux's `membarrier(2)` with
/// MEMBARRIER_CMD_PRIVATE_EXPEDITED (kernel 4.14+, about 1 us a call). Not part of the API.
///
/// Where the heavy barrier is unavailable (another OS, an old kernel, a seccomp filter that
/// refuses the call) or under ThreadSanitizer (which does not model membarrier), `available()`
/// is false and the collector uses sequentially consistent operations on both sides instead.

#include <atomic>

#include "tokchron/config.hpp"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TOKCHRON_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) && !defined(TOKCHRON_TSAN)
#define TOKCHRON_TSAN 1
#endif

#if defined(__linux__) && defined(__has_include) && !defined(TOKCHRON_TSAN) && \
    !defined(TOKCHRON_NO_MEMBARRIER)
#if __has_include(<linux/membarrier.h>) && __has_include(<sys/syscall.h>)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__NR_membarrier)
#define TOKCHRON_HAS_MEMBARRIER 1
#endif
#endif
#endif
#ifndef TOKCHRON_HAS_MEMBARRIER
#define TOKCHRON_HAS_MEMBARRIER 0
#endif

TOKCHRON_BEGIN_NAMESPACE
namespace detail {

/// The process-wide asymmetric barrier. Thread safety: every function may be called from any
/// thread.
struct asymmetric_barrier {
  /// Whether the heavy barrier works in this process: registers for it on the first call
  /// (thread-safe, once) and remembers the answer.
  [[nodiscard]] static bool available() noexcept {
    static const bool ok = register_once();
    return ok;
  }

  /// The frequent side: orders nothing at run time, only stops the compiler from moving memory
  /// accesses across it. Correct only when `heavy()` is used on the other side.
  static void light() noexcept { std::atomic_signal_fence(std::memory_order_seq_cst); }

  /// The rare side: returns after every running thread of the process has executed a full
  /// memory barrier (and threads not running will execute one before they next run). Only
  /// valid when `available()` returned true; it cannot fail then (the kernel refuses only
  /// processes that did not register; registration is inherited across fork(), and after
  /// exec() the statics that remember it start afresh).
  static void heavy() noexcept {
#if TOKCHRON_HAS_MEMBARRIER
    std::atomic_thread_fence(std::memory_order_seq_cst);
    (void)::syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
  }

 private:
  static bool register_once() noexcept {
#if TOKCHRON_HAS_MEMBARRIER
    const long cmds = ::syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds < 0 || (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
    if (::syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0)
      return false;
    // A first call proves it works here (some sandboxes accept registration and refuse the use).
    return ::syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
    return false;
#endif
  }
};

}  // namespace detail
TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_COLLECT_DETAIL_ASYMMETRIC_BARRIER_HPP
