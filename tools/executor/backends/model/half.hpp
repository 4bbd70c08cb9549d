// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_TOOLS_EXECUTOR_BACKENDS_MODEL_HALF_HPP
#define TOKCHRON_TOOLS_EXECUTOR_BACKENDS_MODEL_HALF_HPP

/// \file
/// IEEE-754 binary16 (fp16) conversion on the host, bit-exact with the GPU's `__float2half_rn`
/// (round to nearest, ties to even; subnormals kept; overflow to infinity). Used to make the
/// model's fp32 weights exactly representable in fp16, so the cpu backend (fp32) and the cuda
/// backend (fp16 storage) hold the *same* weights, and to emulate the GPU's fp16 activations on
/// the CPU. Unit roundoff of fp16: u = 2^-11 (relative error of one rounding <= u).

#include <cstdint>
#include <cstring>

namespace batching::compute {

/// Unit roundoff of fp16 (2^-11): |round(x) - x| <= u |x| for x in the normal range.
inline constexpr double fp16_unit_roundoff = 1.0 / 2048.0;

/// Rounds `f` to the nearest fp16 (ties to even) and returns its bits. O(1), thread-safe.
[[nodiscard]] inline std::uint16_t float_to_half(float f) noexcept {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  std::uint32_t mant = x & 0x7fffffu;
  const int exp = static_cast<int>((x >> 23) & 0xffu);
  if (exp == 0xff) return static_cast<std::uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  const int e = exp - 127 + 15;
  if (e >= 0x1f) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (e <= 0) {  // fp16 subnormal (or zero): value = m * 2^-24
    if (e < -10) return sign;
    mant |= 0x800000u;
    const int shift = 14 - e;
    std::uint32_t m = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (m & 1u))) ++m;
    return static_cast<std::uint16_t>(sign | m);
  }
  std::uint32_t h = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  const std::uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry rounds into the exponent
  return static_cast<std::uint16_t>(sign | h);
}

/// The float value of fp16 bits `h` (exact). O(1), thread-safe.
[[nodiscard]] inline float half_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1fu;
  std::uint32_t m = h & 0x3ffu, x;
  if (e == 0) {
    if (m == 0) {
      x = sign;
    } else {  // subnormal: normalise
      std::uint32_t sh = 0;
      while (!(m & 0x400u)) {
        m <<= 1;
        ++sh;
      }
      x = sign | ((113u - sh) << 23) | ((m & 0x3ffu) << 13);
    }
  } else if (e == 0x1f) {
    x = sign | 0x7f800000u | (m << 13);
  } else {
    x = sign | ((e + 112u) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

/// `f` rounded to the nearest fp16 value, as a float.
[[nodiscard]] inline float round_to_half(float f) noexcept {
  return half_to_float(float_to_half(f));
}

}  // namespace batching::compute

#endif  // TOKCHRON_TOOLS_EXECUTOR_BACKENDS_MODEL_HALF_HPP
