// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TESTS_HEAP_METER_HPP
#define TOKCHRON_TESTS_HEAP_METER_HPP

/// \file
/// A test process that measures its own heap: operator new and delete are replaced here, every
/// plain and nothrow form (on top of malloc, so ASan still sees every block), to track the bytes
/// live and their peak (`heap_meter`), and to fail one chosen allocation
/// (`allocations_before_failure`). Include it in exactly one source file of a test binary
/// (it defines the replacements); the count covers every thread of the process.

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {
std::atomic<std::size_t> live_bytes{0}, peak_bytes{0};
constexpr std::size_t header = alignof(std::max_align_t);
/// How many allocations succeed before one fails (as out of memory: std::bad_alloc, or null
/// from the nothrow forms); negative: none fails. Set it just before the code under test.
std::atomic<long> allocations_before_failure{-1};

void* counted_alloc(std::size_t n) {
  if (allocations_before_failure.load() >= 0 && allocations_before_failure.fetch_sub(1) == 0)
    return nullptr;
  void* p = std::malloc(n + header);
  if (!p) return nullptr;
  *static_cast<std::size_t*>(p) = n;
  const std::size_t now = live_bytes.fetch_add(n) + n;
  std::size_t peak = peak_bytes.load();
  while (now > peak && !peak_bytes.compare_exchange_weak(peak, now)) {
  }
  return static_cast<char*>(p) + header;
}
void counted_free(void* q) noexcept {
  if (!q) return;
  void* p = static_cast<char*>(q) - header;
  live_bytes.fetch_sub(*static_cast<std::size_t*>(p));
  std::free(p);
}

/// The peak of live heap bytes above the level when it was made.
struct heap_meter {
  std::size_t base = live_bytes.load();
  heap_meter() { peak_bytes.store(base); }
  [[nodiscard]] std::size_t peak() const { return peak_bytes.load() - base; }
};
}  // namespace

void* operator new(std::size_t n) {
  if (void* p = counted_alloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = counted_alloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }

#endif  // TOKCHRON_TESTS_HEAP_METER_HPP
