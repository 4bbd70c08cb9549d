// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_DETAIL_ATOMIC_HPP
#define TOKCHRON_DETAIL_ATOMIC_HPP

/// \file
/// Internals: `detail::atomic<T>`, the part of `std::atomic<T>` that tokchron's recording
/// headers use, for integers, pointers, `bool` and `double`. On GCC and Clang it is the
/// compiler's `__atomic` builtins, which `std::atomic` is built on (ThreadSanitizer sees them
/// alike); elsewhere it wraps `std::atomic`. The reason is compile cost: `<atomic>` is about a
/// tenth of what the recording header adds to a translation unit (docs/testing.md, "Which header
/// to include where"). Memory orders are `detail::mo_*`. Not part of the API.

#include "tokchron/config.hpp"

#if defined(__GNUC__) || defined(__clang__)
#define TOKCHRON_ATOMIC_BUILTINS 1
#else
#define TOKCHRON_ATOMIC_BUILTINS 0
#include <atomic>
#endif

TOKCHRON_BEGIN_NAMESPACE
namespace detail {

#if TOKCHRON_ATOMIC_BUILTINS
inline constexpr int mo_relaxed = __ATOMIC_RELAXED;
inline constexpr int mo_acquire = __ATOMIC_ACQUIRE;
inline constexpr int mo_release = __ATOMIC_RELEASE;
inline constexpr int mo_acq_rel = __ATOMIC_ACQ_REL;
inline constexpr int mo_seq_cst = __ATOMIC_SEQ_CST;

/// `std::atomic<T>`'s load, store, exchange, fetch_add/sub and compare_exchange, with an `int`
/// memory order (`mo_*`). The failure order of compare_exchange is derived as the standard's
/// single-order overload derives it.
template <class T>
class atomic {
 public:
  constexpr atomic() noexcept : v_() {}
  constexpr atomic(T v) noexcept : v_(v) {}  // NOLINT(google-explicit-constructor): as std::atomic
  atomic(const atomic&) = delete;
  atomic& operator=(const atomic&) = delete;

  [[nodiscard]] T load(int order = mo_seq_cst) const noexcept {
    T r;
    __atomic_load(&v_, &r, order);
    return r;
  }
  void store(T v, int order = mo_seq_cst) noexcept { __atomic_store(&v_, &v, order); }
  T exchange(T v, int order = mo_seq_cst) noexcept {
    T r;
    __atomic_exchange(&v_, &v, &r, order);
    return r;
  }
  T fetch_add(T d, int order = mo_seq_cst) noexcept { return __atomic_fetch_add(&v_, d, order); }
  T fetch_sub(T d, int order = mo_seq_cst) noexcept { return __atomic_fetch_sub(&v_, d, order); }
  bool compare_exchange_strong(T& expected, T desired, int order = mo_seq_cst) noexcept {
    return __atomic_compare_exchange(&v_, &expected, &desired, false, order, failure(order));
  }
  bool compare_exchange_weak(T& expected, T desired, int success, int fail) noexcept {
    return __atomic_compare_exchange(&v_, &expected, &desired, true, success, fail);
  }

 private:
  static constexpr int failure(int order) noexcept {
    return order == mo_acq_rel ? mo_acquire : order == mo_release ? mo_relaxed : order;
  }
  alignas(sizeof(T)) T v_;
};

/// `std::atomic_thread_fence` and `std::atomic_signal_fence`.
inline void thread_fence(int order) noexcept { __atomic_thread_fence(order); }
inline void signal_fence(int order) noexcept { __atomic_signal_fence(order); }
#else
inline constexpr int mo_relaxed = static_cast<int>(std::memory_order_relaxed);
inline constexpr int mo_acquire = static_cast<int>(std::memory_order_acquire);
inline constexpr int mo_release = static_cast<int>(std::memory_order_release);
inline constexpr int mo_acq_rel = static_cast<int>(std::memory_order_acq_rel);
inline constexpr int mo_seq_cst = static_cast<int>(std::memory_order_seq_cst);

template <class T>
class atomic {
 public:
  constexpr atomic() noexcept : v_() {}
  constexpr atomic(T v) noexcept : v_(v) {}  // NOLINT(google-explicit-constructor)
  atomic(const atomic&) = delete;
  atomic& operator=(const atomic&) = delete;
  [[nodiscard]] T load(int order = mo_seq_cst) const noexcept { return v_.load(mo(order)); }
  void store(T v, int order = mo_seq_cst) noexcept { v_.store(v, mo(order)); }
  T exchange(T v, int order = mo_seq_cst) noexcept { return v_.exchange(v, mo(order)); }
  T fetch_add(T d, int order = mo_seq_cst) noexcept { return v_.fetch_add(d, mo(order)); }
  T fetch_sub(T d, int order = mo_seq_cst) noexcept { return v_.fetch_sub(d, mo(order)); }
  bool compare_exchange_strong(T& expected, T desired, int order = mo_seq_cst) noexcept {
    return v_.compare_exchange_strong(expected, desired, mo(order));
  }
  bool compare_exchange_weak(T& expected, T desired, int success, int fail) noexcept {
    return v_.compare_exchange_weak(expected, desired, mo(success), mo(fail));
  }

 private:
  static constexpr std::memory_order mo(int order) noexcept {
    return static_cast<std::memory_order>(order);
  }
  std::atomic<T> v_;
};
inline void thread_fence(int order) noexcept {
  std::atomic_thread_fence(static_cast<std::memory_order>(order));
}
inline void signal_fence(int order) noexcept {
  std::atomic_signal_fence(static_cast<std::memory_order>(order));
}
#endif

}  // namespace detail
TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_DETAIL_ATOMIC_HPP
