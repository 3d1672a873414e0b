#pragma once
// Half (IEEE binary16) and BFloat16 value types.
//
// Both store 16 bits and compute in float: arithmetic converts to float, operates, and rounds
// back. Float -> 16-bit conversion rounds to nearest, ties to even, and keeps NaN a NaN
// (Note [Round to nearest even] below). These are plain bit manipulations so that the CPU and
// CUDA backends (EMBER_HOST_DEVICE) produce identical bits.

#include <cstdint>
#include <cstring>
#include <iosfwd>
#include <limits>

#include "core/macros.h"

namespace ember {

namespace detail {

EMBER_HOST_DEVICE inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

EMBER_HOST_DEVICE inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// Note [Round to nearest even]
// To drop the low k bits of a mantissa with round-to-nearest-even we add (2^(k-1) - 1) plus the
// lowest kept bit, then truncate. Ties (exactly half way) then round up only when the kept
// value is odd, which makes it even.

EMBER_HOST_DEVICE inline uint16_t float_to_bf16_bits(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN
  uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return static_cast<uint16_t>(u >> 16);
}

EMBER_HOST_DEVICE inline float bf16_bits_to_float(uint16_t b) {
  return bits_float(static_cast<uint32_t>(b) << 16);
}

EMBER_HOST_DEVICE inline uint16_t float_to_half_bits(float f) {
  uint32_t u = float_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (a < 0x38800000u) {
    // Result is subnormal (or zero) in half: value = m * 2^-24 with m an integer < 1024.
    // Shift the full 24-bit float mantissa into place, rounding to nearest even.
    if (a < 0x33000000u)
      return static_cast<uint16_t>(sign);  // below half of the smallest subnormal
    // value = mant * 2^(exp - 150) with the implicit bit in mant; in units of 2^-24 that is
    // mant * 2^(exp - 126), so (126 - exp) low bits are dropped (14..24 of them here).
    int exp = static_cast<int>(a >> 23);
    uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    int shift = 126 - exp;
    uint32_t dropped = mant & ((1u << shift) - 1u);
    uint32_t kept = mant >> shift;
    uint32_t half_way = 1u << (shift - 1);
    if (dropped > half_way || (dropped == half_way && (kept & 1u))) ++kept;
    return static_cast<uint16_t>(sign | kept);
  }
  // Normal: rebias the exponent (127 -> 15) and round the mantissa from 23 to 10 bits.
  uint32_t lsb = (a >> 13) & 1u;
  a += 0xfffu + lsb;
  a -= (127u - 15u) << 23;
  return static_cast<uint16_t>(sign | (a >> 13));
}

EMBER_HOST_DEVICE inline float half_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return bits_float(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    // Subnormal: mant * 2^-24, exact in float.
    float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return (sign ? -v : v);
  }
  return bits_float(sign | ((exp + 127u - 15u) << 23) | (mant << 13));
}

}  // namespace detail

struct Half {
  uint16_t x = 0;
  Half() = default;
  struct from_bits_t {};
  EMBER_HOST_DEVICE constexpr Half(uint16_t bits, from_bits_t) : x(bits) {}
  EMBER_HOST_DEVICE Half(float f) : x(detail::float_to_half_bits(f)) {}
  EMBER_HOST_DEVICE Half(double d) : Half(static_cast<float>(d)) {}
  EMBER_HOST_DEVICE Half(int v) : Half(static_cast<float>(v)) {}
  EMBER_HOST_DEVICE Half(int64_t v) : Half(static_cast<float>(v)) {}
  EMBER_HOST_DEVICE operator float() const { return detail::half_bits_to_float(x); }
  static constexpr Half from_bits(uint16_t b) { return Half(b, from_bits_t{}); }
};

struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  struct from_bits_t {};
  EMBER_HOST_DEVICE constexpr BFloat16(uint16_t bits, from_bits_t) : x(bits) {}
  EMBER_HOST_DEVICE BFloat16(float f) : x(detail::float_to_bf16_bits(f)) {}
  EMBER_HOST_DEVICE BFloat16(double d) : BFloat16(static_cast<float>(d)) {}
  EMBER_HOST_DEVICE BFloat16(int v) : BFloat16(static_cast<float>(v)) {}
  EMBER_HOST_DEVICE BFloat16(int64_t v) : BFloat16(static_cast<float>(v)) {}
  EMBER_HOST_DEVICE operator float() const { return detail::bf16_bits_to_float(x); }
  static constexpr BFloat16 from_bits(uint16_t b) { return BFloat16(b, from_bits_t{}); }
};

std::ostream& operator<<(std::ostream& os, Half h);
std::ostream& operator<<(std::ostream& os, BFloat16 h);

// Arithmetic goes through float; the result rounds back to the 16-bit type.
#define EMBER_HALF_BINARY_OPS(T)                                                      \
  EMBER_HOST_DEVICE inline T operator+(T a, T b) { return T(float(a) + float(b)); }   \
  EMBER_HOST_DEVICE inline T operator-(T a, T b) { return T(float(a) - float(b)); }   \
  EMBER_HOST_DEVICE inline T operator*(T a, T b) { return T(float(a) * float(b)); }   \
  EMBER_HOST_DEVICE inline T operator/(T a, T b) { return T(float(a) / float(b)); }   \
  EMBER_HOST_DEVICE inline T operator-(T a) { return T(-float(a)); }                  \
  EMBER_HOST_DEVICE inline T& operator+=(T& a, T b) { return a = a + b; }             \
  EMBER_HOST_DEVICE inline T& operator-=(T& a, T b) { return a = a - b; }             \
  EMBER_HOST_DEVICE inline T& operator*=(T& a, T b) { return a = a * b; }             \
  EMBER_HOST_DEVICE inline T& operator/=(T& a, T b) { return a = a / b; }             \
  EMBER_HOST_DEVICE inline bool operator<(T a, T b) { return float(a) < float(b); }   \
  EMBER_HOST_DEVICE inline bool operator>(T a, T b) { return float(a) > float(b); }   \
  EMBER_HOST_DEVICE inline bool operator<=(T a, T b) { return float(a) <= float(b); } \
  EMBER_HOST_DEVICE inline bool operator>=(T a, T b) { return float(a) >= float(b); } \
  EMBER_HOST_DEVICE inline bool operator==(T a, T b) { return float(a) == float(b); } \
  EMBER_HOST_DEVICE inline bool operator!=(T a, T b) { return float(a) != float(b); }

EMBER_HALF_BINARY_OPS(Half)
EMBER_HALF_BINARY_OPS(BFloat16)
#undef EMBER_HALF_BINARY_OPS

}  // namespace ember

namespace std {
template <>
class numeric_limits<ember::Half> {
 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr ember::Half lowest() { return ember::Half::from_bits(0xfbffu); }
  static constexpr ember::Half min() { return ember::Half::from_bits(0x0400u); }
  static constexpr ember::Half max() { return ember::Half::from_bits(0x7bffu); }
  static constexpr ember::Half epsilon() { return ember::Half::from_bits(0x1400u); }
  static constexpr ember::Half infinity() { return ember::Half::from_bits(0x7c00u); }
  static constexpr ember::Half quiet_NaN() { return ember::Half::from_bits(0x7e00u); }
};
template <>
class numeric_limits<ember::BFloat16> {
 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr ember::BFloat16 lowest() { return ember::BFloat16::from_bits(0xff7fu); }
  static constexpr ember::BFloat16 min() { return ember::BFloat16::from_bits(0x0080u); }
  static constexpr ember::BFloat16 max() { return ember::BFloat16::from_bits(0x7f7fu); }
  static constexpr ember::BFloat16 epsilon() { return ember::BFloat16::from_bits(0x3c00u); }
  static constexpr ember::BFloat16 infinity() { return ember::BFloat16::from_bits(0x7f80u); }
  static constexpr ember::BFloat16 quiet_NaN() { return ember::BFloat16::from_bits(0x7fc0u); }
};
}  // namespace std
