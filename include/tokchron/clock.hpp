// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_CLOCK_HPP
#define TOKCHRON_CLOCK_HPP

/// \file
/// Clocks and the contract they meet.
///
/// A *clock* is any type `C` with `C::duration`, `C::time_point` (a `std::chrono::time_point`),
/// a `static constexpr bool is_steady`, and `now()` callable on an instance (`c.now()`), which
/// covers the standard clocks (static `now()`) and stateful ones such as `manual_clock`.
/// Recorders hold a copy of their clock; the standard clocks are empty, so that costs nothing.

#include <chrono>
#include <cstdint>
#include <limits>
#include <ratio>
#include <type_traits>
#include <utility>

#include "tokchron/config.hpp"
#include "tokchron/detail/atomic.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TOKCHRON_HAS_RDTSC 1
#else
#define TOKCHRON_HAS_RDTSC 0
#endif

TOKCHRON_BEGIN_NAMESPACE

#if TOKCHRON_HAS_RDTSC
namespace detail {
// NOLINTNEXTLINE(modernize-use-using): __extension__ needs the typedef form
__extension__ typedef __int128 int128_t;
}  // namespace detail
#endif

namespace detail {
template <class T>
struct is_time_point : std::false_type {};
template <class C, class D>
struct is_time_point<std::chrono::time_point<C, D>> : std::true_type {};

template <class C, class = void>
struct is_clock_impl : std::false_type {};
template <class C>
struct is_clock_impl<C,
                     std::void_t<typename C::duration, typename C::time_point,
                                 decltype(C::is_steady), decltype(std::declval<const C&>().now())>>
    : std::bool_constant<
          is_time_point<typename C::time_point>::value &&
          std::is_same_v<decltype(std::declval<const C&>().now()), typename C::time_point>> {};
}  // namespace detail

/// True when `C` meets the clock contract described at the top of this header.
template <class C>
inline constexpr bool is_clock_v = detail::is_clock_impl<C>::value;

#if TOKCHRON_HAS_CONCEPTS
/// The clock contract as a C++20 concept.
template <class C>
concept clock = is_clock_v<C>;
#endif

/// The default clock: monotonic, unaffected by wall-clock changes; about 19 ns a read (vDSO).
using default_clock = std::chrono::steady_clock;

/// Converts any duration to seconds as a double: the only unit tokchron reports in.
template <class Rep, class Period>
[[nodiscard]] constexpr double to_seconds(std::chrono::duration<Rep, Period> d) noexcept {
  return std::chrono::duration<double>(d).count();
}

/// The time range tokchron accepts, in ticks of a clock's duration: a time point `t` is in
/// range when |t.time_since_epoch().count()| < 2^62 (`time_range_ticks`). For nanosecond clocks
/// (steady_clock on Linux, manual_clock, tsc_clock, the trace clock) that is about +-146 years
/// around the clock's epoch (+-4.61e9 s). The difference of two in-range time points is below
/// 2^63 ticks in magnitude, so every difference tokchron computes fits the 64-bit tick count,
/// with room for rounding. Recording calls refuse times outside it (`time_out_of_range`),
/// trace validation names the field, and `windowed` refuses and counts such samples.
inline constexpr std::int64_t time_range_ticks = std::int64_t{1} << 62;

/// True when the tick count of `d` lies inside the time range (see `time_range_ticks`). NaN is
/// outside it.
template <class Rep, class Period>
[[nodiscard]] constexpr bool in_time_range(std::chrono::duration<Rep, Period> d) noexcept {
  const Rep c = d.count();
  if constexpr (std::is_floating_point_v<Rep>) {
    return c > -static_cast<Rep>(time_range_ticks) && c < static_cast<Rep>(time_range_ticks);
  } else if constexpr (std::is_signed_v<Rep>) {
    if constexpr (sizeof(Rep) < sizeof(std::int64_t)) return true;  // narrower than the range
    return c > -time_range_ticks && c < time_range_ticks;
  } else {
    return static_cast<std::uint64_t>(c) < static_cast<std::uint64_t>(time_range_ticks);
  }
}
/// True when `t` lies inside the time range: |ticks since its clock's epoch| < 2^62.
template <class Clock, class Duration>
[[nodiscard]] constexpr bool in_time_range(std::chrono::time_point<Clock, Duration> t) noexcept {
  return in_time_range(t.time_since_epoch());
}

namespace detail {
/// `seconds` as ticks of `D` (a double, not yet rounded).
template <class D>
[[nodiscard]] constexpr double seconds_to_ticks(double seconds) noexcept {
  return seconds * static_cast<double>(D::period::den) / static_cast<double>(D::period::num);
}
}  // namespace detail

/// True when `seconds` is finite and converts (`from_seconds<D>`) to a tick count of `D` inside
/// the time range: the check for times read from files and options.
template <class D>
[[nodiscard]] constexpr bool seconds_in_time_range(double seconds) noexcept {
  const double ticks = detail::seconds_to_ticks<D>(seconds);
  // The largest double below 2^62 is 2^62 - 512, so rounding to the nearest tick stays inside.
  return ticks > -static_cast<double>(time_range_ticks) &&
         ticks < static_cast<double>(time_range_ticks);
}

/// Converts seconds (a double) to the duration type `D`, rounding to the nearest tick. Never
/// undefined: NaN gives zero, and a value beyond what `D::rep` holds saturates to its lowest or
/// highest value (1e300 s gives `D::max()`). Check `seconds_in_time_range<D>` first to refuse
/// such input instead.
template <class D>
[[nodiscard]] constexpr D from_seconds(double s) noexcept {
  using rep = typename D::rep;
  const double ticks = detail::seconds_to_ticks<D>(s);
  if constexpr (std::is_floating_point_v<rep>) {
    return D(static_cast<rep>(ticks));
  } else {
    if (ticks != ticks) return D::zero();  // NaN
    const double r = ticks < 0 ? ticks - 0.5 : ticks + 0.5;
    // 2^digits: one past the largest value of rep, a double exactly (max() is 2^digits - 1,
    // which converts to 2^digits itself when it has more digits than a double, else exactly).
    constexpr double past_max = static_cast<double>(std::numeric_limits<rep>::max()) + 1.0;
    if (r >= past_max) return D(std::numeric_limits<rep>::max());
    if constexpr (std::is_signed_v<rep>) {
      if (r < -past_max) return D(std::numeric_limits<rep>::min());
    } else {
      if (r <= -1.0) return D(rep{0});
    }
    return D(static_cast<rep>(r));
  }
}

namespace detail {
/// `t` moved to the nearest time point inside the time range (for time points reconstructed
/// from rounded seconds, which may land a few ticks outside it).
template <class TP>
[[nodiscard]] constexpr TP clamp_to_time_range(TP t) noexcept {
  using rep = typename TP::duration::rep;
  if (in_time_range(t)) return t;
  const auto limit = static_cast<rep>(time_range_ticks - 1);
  return TP(typename TP::duration(t.time_since_epoch().count() < 0 ? -limit : limit));
}
}  // namespace detail

/// A clock whose time only moves when told to, for tests: no test sleeps.
///
/// Copies share one time source, so a recorder holding a copy sees every `advance`. The time
/// starts at zero nanoseconds. Thread safety: `now`, `set` and `advance` may be called from any
/// thread (the time is an atomic).
class manual_clock {
 public:
  using rep = std::int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<manual_clock, duration>;
  static constexpr bool is_steady = true;  // time only moves when the test moves it

  manual_clock() : state_(new state{}) {}
  manual_clock(const manual_clock& other) noexcept : state_(other.state_) {
    state_->refs.fetch_add(1, detail::mo_relaxed);
  }
  /// Shares `other`'s time source from now on.
  manual_clock& operator=(const manual_clock& other) noexcept {
    if (this == &other || state_ == other.state_) return *this;
    other.state_->refs.fetch_add(1, detail::mo_relaxed);
    release();
    state_ = other.state_;
    return *this;
  }
  ~manual_clock() { release(); }

  /// The current manual time.
  [[nodiscard]] time_point now() const noexcept {
    return time_point(duration(state_->now.load(detail::mo_relaxed)));
  }
  /// Sets the time to `since_zero` after the epoch (may move backwards: tests of misuse).
  void set(duration since_zero) const noexcept {
    state_->now.store(since_zero.count(), detail::mo_relaxed);
  }
  /// Moves the time forward by `d` and returns the new time.
  time_point advance(duration d) const noexcept {
    return time_point(duration(state_->now.fetch_add(d.count(), detail::mo_relaxed) + d.count()));
  }
  /// A time point `since_zero` after this clock's epoch.
  [[nodiscard]] static constexpr time_point at(duration since_zero) noexcept {
    return time_point(since_zero);
  }

 private:
  // A counted shared state rather than std::shared_ptr: <memory> would add about 9,000 lines to
  // every translation unit that records (see docs/testing.md, "Which header to include where").
  // There is no move: a moved-from clock still shares the time source, as a copy does.
  struct state {
    detail::atomic<rep> now{0};
    detail::atomic<std::uint64_t> refs{1};
  };
  void release() noexcept {
    if (state_->refs.fetch_sub(1, detail::mo_acq_rel) == 1) delete state_;
  }
  state* state_;
};

/// A clock on the CPU's time-stamp counter (rdtsc), in nanoseconds: about 9 ns a read against
/// 19 ns for `steady_clock` on a KVM guest with a TSC clocksource.
///
/// Calibrated once, on the first `now()` in the process, against `steady_clock` over about
/// 10 ms (that first call pays for it; call `tsc_clock::calibrate()` at start-up to move the cost).
/// Caveats: the TSC must be invariant (constant rate, not stopped in sleep states), which all
/// x86-64 CPUs of the last decade are; readings taken on different sockets may be skewed by
/// tens of nanoseconds; the calibration error (about 1e-4 relative) accumulates as drift against
/// `steady_clock` over long runs, so compare tsc times only with tsc times. rdtsc is not
/// serialising: a reading may move by a few nanoseconds relative to neighbouring instructions.
/// On other architectures it falls back to `steady_clock` (`uses_tsc` is false).
class tsc_clock {
 public:
  using rep = std::int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<tsc_clock, duration>;
  static constexpr bool is_steady = true;
  static constexpr bool uses_tsc = TOKCHRON_HAS_RDTSC != 0;

  /// Nanoseconds since an arbitrary origin fixed at calibration.
  [[nodiscard]] static time_point now() noexcept {
#if TOKCHRON_HAS_RDTSC
    const calibration& c = calibrate();
    const auto ticks = static_cast<std::int64_t>(__builtin_ia32_rdtsc() - c.base_ticks);
    // Q32 fixed-point multiply: ns = ticks * ns_per_tick; 128-bit product avoids overflow.
    const auto ns = static_cast<std::int64_t>(
        (static_cast<detail::int128_t>(ticks) * static_cast<detail::int128_t>(c.ns_per_tick_q32)) >>
        32);
    return time_point(duration(ns));
#else
    return time_point(
        std::chrono::duration_cast<duration>(std::chrono::steady_clock::now().time_since_epoch()));
#endif
  }

  /// Nanoseconds per TSC tick as measured at calibration (1.0 when the fallback is in use).
  [[nodiscard]] static double ns_per_tick() noexcept {
#if TOKCHRON_HAS_RDTSC
    return static_cast<double>(calibrate().ns_per_tick_q32) / 4294967296.0;
#else
    return 1.0;
#endif
  }

#if TOKCHRON_HAS_RDTSC
  struct calibration {
    std::uint64_t base_ticks;
    std::uint64_t ns_per_tick_q32;
  };
  /// Runs the one-time calibration (thread-safe, idempotent) and returns its result.
  static const calibration& calibrate() noexcept {
    static const calibration c = measure();
    return c;
  }

 private:
  /// A steady_clock reading and the TSC reading taken with it: the midpoint of two TSC reads
  /// around the steady read, the tightest of a few tries, so that a preemption between the two
  /// clocks' reads (a loaded machine) cannot pair times milliseconds apart.
  struct paired_reading {
    std::chrono::steady_clock::time_point steady;
    std::uint64_t ticks;
  };
  static paired_reading paired_read() noexcept {
    paired_reading best{};
    std::uint64_t best_width = ~std::uint64_t{0};
    for (int i = 0; i < 5; ++i) {
      const std::uint64_t before = __builtin_ia32_rdtsc();
      const auto steady = std::chrono::steady_clock::now();
      const std::uint64_t after = __builtin_ia32_rdtsc();
      const std::uint64_t width = after >= before ? after - before : ~std::uint64_t{0};
      if (width < best_width) {
        best_width = width;
        best = paired_reading{steady, before + width / 2};
      }
    }
    return best;
  }

  static calibration measure() noexcept {
    using sc = std::chrono::steady_clock;
    const paired_reading start = paired_read();
    while (sc::now() - start.steady < std::chrono::milliseconds(10)) {
    }
    const paired_reading end = paired_read();
    const double ns = static_cast<double>(
        std::chrono::duration_cast<duration>(end.steady - start.steady).count());
    const double ticks =
        end.ticks > start.ticks ? static_cast<double>(end.ticks - start.ticks) : 1.0;
    // The factor is positive and far from 0.5, where adding 0.5 and truncating rounds right.
    // NOLINTNEXTLINE(bugprone-incorrect-roundings)
    return calibration{start.ticks, static_cast<std::uint64_t>(ns / ticks * 4294967296.0 + 0.5)};
  }
#endif
};

/// An engine's own integer monotonic stamps as time points of `Clock`: for engines that stamp
/// their events with an integer count of `Period` (llama.cpp's `ggml_time_us()`: microseconds of
/// CLOCK_MONOTONIC) and hand those stamps to the recorder instead of reading a clock again.
///
/// `stamps_adaptor<>{}` takes the stamps to count from `Clock`'s own epoch, which holds where
/// both read the same clock (on Linux `std::chrono::steady_clock` reads CLOCK_MONOTONIC: libstdc++
/// and libc++). Otherwise `calibrate(engine_now)` measures the offset between the two clocks by
/// bracketing one read of the engine's clock with two reads of `Clock`, keeping the tightest of
/// `tries` brackets; `error()` bounds the offset's error (half the bracket plus one stamp unit).
/// `same_epoch(engine_now)` tells whether the epochs agree within that bound (a start-up check).
///
/// \code
///   const tokchron::stamps_adaptor<> us;  // ggml_time_us() is CLOCK_MONOTONIC microseconds
///   rec.scheduled(us(slot.stats.t_start));
/// \endcode
template <class Clock = std::chrono::steady_clock, class Period = std::micro>
class stamps_adaptor {
 public:
  using time_point = typename Clock::time_point;
  using duration = typename Clock::duration;
  using stamp_duration = std::chrono::duration<std::int64_t, Period>;

  /// Stamps counted from `Clock`'s epoch (offset 0, error 0).
  constexpr stamps_adaptor() noexcept = default;
  /// Stamps that read `offset` behind `Clock`: a stamp s is `Clock`'s epoch + s + offset.
  constexpr explicit stamps_adaptor(duration offset, duration error = duration::zero()) noexcept
      : offset_(offset), error_(error) {}

  /// The time point of stamp `s`.
  [[nodiscard]] constexpr time_point operator()(std::int64_t s) const noexcept {
    return time_point(std::chrono::duration_cast<duration>(stamp_duration(s)) + offset_);
  }
  /// The stamp of `t` (truncated to whole stamp units).
  [[nodiscard]] constexpr std::int64_t stamp(time_point t) const noexcept {
    return std::chrono::duration_cast<stamp_duration>(t.time_since_epoch() - offset_).count();
  }
  [[nodiscard]] constexpr duration offset() const noexcept { return offset_; }
  /// The bound on the offset's error (0 for the same-epoch adaptor).
  [[nodiscard]] constexpr duration error() const noexcept { return error_; }

  /// Measures the offset of the engine clock `engine_now` (a callable returning its current
  /// stamp) against `clock`: `tries` (at least 1) brackets, the tightest kept.
  template <class EngineNow>
  [[nodiscard]] static stamps_adaptor calibrate(EngineNow&& engine_now, int tries = 5,
                                                const Clock& clock = Clock{}) {
    duration best_offset{}, best_gap = duration::max();
    for (int i = 0; i < (tries < 1 ? 1 : tries); ++i) {
      const time_point a = clock.now();
      const auto s = static_cast<std::int64_t>(engine_now());
      const time_point b = clock.now();
      const duration gap = b - a;
      if (gap < duration::zero() || gap >= best_gap) continue;
      best_gap = gap;
      const duration mid = a.time_since_epoch() + gap / 2;
      best_offset = mid - std::chrono::duration_cast<duration>(stamp_duration(s));
    }
    if (best_gap == duration::max()) best_gap = duration::zero();
    const duration unit = std::chrono::duration_cast<duration>(stamp_duration(1));
    return stamps_adaptor(best_offset, best_gap / 2 + unit);
  }
  /// True when stamps counted from `Clock`'s epoch (this adaptor's offset 0) agree with
  /// `engine_now` within the measured bound: the same-epoch adaptor is right for this engine.
  template <class EngineNow>
  [[nodiscard]] static bool same_epoch(EngineNow&& engine_now, int tries = 5,
                                       const Clock& clock = Clock{}) {
    const stamps_adaptor c = calibrate(engine_now, tries, clock);
    const duration o = c.offset() < duration::zero() ? -c.offset() : c.offset();
    return o <= c.error();
  }

 private:
  duration offset_{};
  duration error_{};
};

static_assert(is_clock_v<std::chrono::steady_clock>);
static_assert(is_clock_v<manual_clock>);
static_assert(is_clock_v<tsc_clock>);

TOKCHRON_END_NAMESPACE

#endif  // TOKCHRON_CLOCK_HPP
