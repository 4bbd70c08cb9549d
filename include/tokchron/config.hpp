// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_CONFIG_HPP
#define TOKCHRON_CONFIG_HPP

#include <cstdio>
#include <cstdlib>

#include "tokchron/version.hpp"

/// Everything lives in tokchron::v1 (inline), so two copies of different major versions of this
/// header-only library can be linked into one binary without ODR clashes.
#define TOKCHRON_BEGIN_NAMESPACE \
  namespace tokchron {           \
  inline namespace v1 {
#define TOKCHRON_END_NAMESPACE \
  }                            \
  }

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND)
#define TOKCHRON_HAS_EXCEPTIONS 1
#else
#define TOKCHRON_HAS_EXCEPTIONS 0
#endif

#if TOKCHRON_HAS_EXCEPTIONS
/// Throws `type(message)`: used only for bad configuration, never on a recording path.
#define TOKCHRON_THROW(type, message) throw type(message)
#define TOKCHRON_TRY try
#define TOKCHRON_CATCH_ALL catch (...)
#else
namespace tokchron {
inline namespace v1 {
namespace detail {
inline const char* message_c_str(const char* m) noexcept { return m; }
template <class String>
const char* message_c_str(const String& m) noexcept {
  return m.c_str();
}
[[noreturn]] inline void fatal_error(const char* type, const char* message) noexcept {
  std::fprintf(stderr, "tokchron: %s: %s\n", type, message);
  std::abort();
}
}  // namespace detail
}  // namespace v1
}  // namespace tokchron

/// Without exceptions, bad configuration is fatal: the message (a C string or a std::string) is
/// printed and the program aborts.
#define TOKCHRON_THROW(type, message) \
  ::tokchron::detail::fatal_error(#type, ::tokchron::detail::message_c_str(message))
#define TOKCHRON_TRY if (true)
#define TOKCHRON_CATCH_ALL else
#endif

/// Internal invariant check, active unless NDEBUG is defined. Never used for input validation.
#ifdef NDEBUG
#define TOKCHRON_ASSERT(cond) ((void)0)
#else
#define TOKCHRON_ASSERT(cond)                                                                  \
  ((cond) ? (void)0                                                                            \
          : (std::fprintf(stderr, "tokchron: assertion failed: %s (%s:%d)\n", #cond, __FILE__, \
                          __LINE__),                                                           \
             std::abort()))
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TOKCHRON_LIKELY(x) __builtin_expect(!!(x), 1)
#define TOKCHRON_UNLIKELY(x) __builtin_expect(!!(x), 0)
// Keeps a rare path out of line so that the hot function around it stays small and inlines.
#define TOKCHRON_NOINLINE __attribute__((noinline))
// For the few hot-path functions whose fast path is a handful of instructions (a call costs
// as much as the work).
#define TOKCHRON_ALWAYS_INLINE inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define TOKCHRON_LIKELY(x) (x)
#define TOKCHRON_UNLIKELY(x) (x)
#define TOKCHRON_NOINLINE __declspec(noinline)
#define TOKCHRON_ALWAYS_INLINE __forceinline
#else
#define TOKCHRON_LIKELY(x) (x)
#define TOKCHRON_UNLIKELY(x) (x)
#define TOKCHRON_NOINLINE
#define TOKCHRON_ALWAYS_INLINE inline
#endif

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
#define TOKCHRON_HAS_CONCEPTS 1
#else
#define TOKCHRON_HAS_CONCEPTS 0
#endif

#endif  // TOKCHRON_CONFIG_HPP
