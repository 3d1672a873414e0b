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
//
// Note [Branch-free 16-bit conversions]
// Casts run over whole tensors (mixed precision, DDP's fp16 hook, every float16 op computes in
// float), so each conversion computes every case -- normal, subnormal, overflow, NaN -- and picks
// one with selects instead of branching. A loop of them then compiles to SIMD code (the CPU
// kernels' plain loops vectorise; see bench/bench_dtype.cpp), and a warp never diverges on CUDA.
// Two of the cases borrow the float adder:
// - float -> half subnormal (|f| < 2^-14): in 0.5f + |f| the float's last mantissa bit is
//   2^-24, half's smallest subnormal, so the addition itself rounds |f| to a multiple of 2^-24
//   (to nearest even), and the sum's bits minus 0.5f's bits are the half's bits (up to 0x400,
//   the smallest normal, when it rounds up into the normal range);
// - half subnormal -> float: m * 2^-24 is 2^-14 * (1 + m/1024) - 2^-14, the first term built
//   from bits and the difference exact.
// Both need round-to-nearest (the default everywhere; never compile them with -ffast-math), and
// flushing float subnormals to zero changes nothing: the inputs that could be flushed round to a
// zero half anyway, and every other operand and result is a normal float. tests/test_tensor.cpp
// checks every half and millions of floats against the branching definitions.

EMBER_HOST_DEVICE inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t u = float_bits(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x0040u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

EMBER_HOST_DEVICE inline float bf16_bits_to_float(uint16_t b) {
  return bits_float(static_cast<uint32_t>(b) << 16);
}

EMBER_HOST_DEVICE inline uint16_t float_to_half_bits(float f) {
  const uint32_t u = float_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  // Normal half (2^-14 <= |f| < 65520): rebias the exponent (127 -> 15), round 23 -> 10 bits.
  // Outside that range the subtraction wraps around; the selects below discard it.
  const uint32_t normal = (a + 0xfffu + ((a >> 13) & 1u) - ((127u - 15u) << 23)) >> 13;
  // Subnormal half or zero (|f| < 2^-14): the float adder rounds (Note above).
  const uint32_t subnormal = float_bits(bits_float(a) + 0.5f) - 0x3f000000u;
  uint32_t r = a < 0x38800000u ? subnormal : normal;
  r = a >= 0x477ff000u ? 0x7c00u : r;  // 65520 and above round to inf (and inf stays inf)
  r = a > 0x7f800000u ? 0x7e00u : r;   // NaN: a quiet NaN
  return static_cast<uint16_t>(sign | r);
}

EMBER_HOST_DEVICE inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t bits = static_cast<uint32_t>(h & 0x7fffu) << 13;  // exponent and mantissa
  const uint32_t exp = bits & 0x0f800000u;
  const uint32_t normal = bits + ((127u - 15u) << 23);
  const uint32_t inf_nan = bits + ((255u - 31u) << 23);  // exponent 31 -> 255, payload kept
  // Zero or subnormal: m * 2^-24 = 2^-14 * (1 + m/1024) - 2^-14, exact (Note above).
  const uint32_t subnormal = float_bits(bits_float(bits + (113u << 23)) - bits_float(113u << 23));
  uint32_t r = exp == 0x0f800000u ? inf_nan : normal;
  r = exp == 0 ? subnormal : r;
  return bits_float(sign | r);
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
