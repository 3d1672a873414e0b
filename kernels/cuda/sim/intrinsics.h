#pragma once
// The CUDA device intrinsics and math functions a kernel calls that the host compiler lacks,
// for sim builds (EMBER_CUDA=sim): a `.cu` file compiled by g++ sees the CUDA headers' host
// parts (vector types, __half, __nv_bfloat16) but none of the device-only functions of
// crt/math_functions.h and crt/device_functions.h. This header supplies them as plain inline
// host functions in the global namespace, with the names and overloads nvcc gives them, so the
// same kernel source compiles with both compilers. The half/bf16 functions cuda_fp16.h and
// cuda_bf16.h leave out on the host are in half_intrinsics.h (included at the end).
//
// Note [What the simulated intrinsics model]
// - Results are the IEEE results of the host's libm. The approximate "fast" intrinsics
//   (__expf, __sinf, __fdividef, ...) are *more* accurate here than on a GPU, and nothing is
//   flushed to zero: kernels must compare with tolerances, never bit for bit against a GPU.
// - The _rn/_rz/_ru/_rd variants are rounded as named (the rounding mode is switched around the
//   one operation, Note [Directed rounding]); the plain operators assume the default
//   round-to-nearest mode.
// - __fadd_rn, __fmul_rn & co. are never contracted into an FMA, as on a GPU (the value passes
//   through an optimisation barrier).
// - Float-to-integer conversions saturate to the destination range and turn NaN into 0, as
//   PTX's cvt does.
// - __ldg and the cache-hinted loads/stores (__ldcg, __stcs, ...) are plain loads and stores.
// Not supplied: clock()/clock64(), __nanosleep, __trap (the simulator's runtime owns those, if
// anything), __fns, the SIMD video intrinsics (__vadd2, ...), the int __hadd (average) whose
// name clashes with the half __hadd.

// The qualifiers before any CUDA header (qualifiers.h says why).
// clang-format off
#include "kernels/cuda/sim/qualifiers.h"
// clang-format on

#include <vector_types.h>

#include <cfenv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace ember::sim::detail {

template <class To, class From>
inline To bit_cast(From from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs types of the same size");
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

// An optimisation barrier: the compiler must materialise `x` and cannot fuse the operation
// that produced it with the one that consumes it (no a * b + c contraction across it).
template <class T>
inline T opaque(T x) {
#if defined(__x86_64__)
  asm("" : "+x"(x));
  return x;
#else
  volatile T v = x;
  return v;
#endif
}

// Note [Directed rounding]
// The _rz/_ru/_rd intrinsics evaluate their one operation with the host's rounding mode set
// accordingly (fesetround) and restore the mode after. The operands are read through a volatile
// after the switch and the result stored to one before the restore, so the compiler can neither
// fold the operation at compile time nor move it out of the switched region.
template <class F>
inline auto with_rounding(int mode, F op) {
  const int old = std::fegetround();
  std::fesetround(mode);
  volatile auto result = op();
  std::fesetround(old);
  const auto value = result;  // the volatile's value, as a plain (non-volatile) one
  return value;
}

template <class T>
inline T vol(T x) {
  volatile T v = x;
  return v;
}

// Float to integer with CUDA's saturation (NaN -> 0); `rounded` is already integral.
template <class I, class F>
inline I saturate_to(F rounded) {
  if (std::isnan(rounded)) return 0;
  if (rounded <= static_cast<F>(std::numeric_limits<I>::min()))
    return std::numeric_limits<I>::min();
  // 2^(digits) is exactly representable; anything at or above it saturates.
  if (rounded >= std::ldexp(F(1), std::numeric_limits<I>::digits))
    return std::numeric_limits<I>::max();
  return static_cast<I>(rounded);
}

// The inverse error function by Newton's method on std::erf in long double, from Giles'
// single-precision approximation ("Approximating the erfinv function", 2010).
inline long double erfinv_ld(long double y) {
  if (std::isnan(y) || y < -1 || y > 1) return std::numeric_limits<long double>::quiet_NaN();
  if (y == 1) return std::numeric_limits<long double>::infinity();
  if (y == -1) return -std::numeric_limits<long double>::infinity();
  long double w = -std::log((1.0L - y) * (1.0L + y));
  long double x;
  if (w < 5) {
    w -= 2.5L;
    long double p = 2.81022636e-08L;
    p = 3.43273939e-07L + p * w;
    p = -3.5233877e-06L + p * w;
    p = -4.39150654e-06L + p * w;
    p = 0.00021858087L + p * w;
    p = -0.00125372503L + p * w;
    p = -0.00417768164L + p * w;
    p = 0.246640727L + p * w;
    p = 1.50140941L + p * w;
    x = p * y;
  } else {
    w = std::sqrt(w) - 3;
    long double p = -0.000200214257L;
    p = 0.000100950558L + p * w;
    p = 0.00134934322L + p * w;
    p = -0.00367342844L + p * w;
    p = 0.00573950773L + p * w;
    p = -0.0076224613L + p * w;
    p = 0.00943887047L + p * w;
    p = 1.00167406L + p * w;
    p = 2.83297682L + p * w;
    x = p * y;
  }
  const long double two_over_sqrt_pi = 1.128379167095512573896158903121545172L;
  for (int i = 0; i < 3; ++i) {
    const long double err = std::erf(x) - y;
    x -= err / (two_over_sqrt_pi * std::exp(-x * x));
  }
  return x;
}

// erfcinv(y) = erfinv(1 - y), by Newton on erfc directly so that small y keeps its precision.
inline long double erfcinv_ld(long double y) {
  if (std::isnan(y) || y < 0 || y > 2) return std::numeric_limits<long double>::quiet_NaN();
  if (y == 0) return std::numeric_limits<long double>::infinity();
  if (y == 2) return -std::numeric_limits<long double>::infinity();
  if (y > 0.0625L && y < 1.9375L) return erfinv_ld(1 - y);
  // Tails: start from the asymptotic x ~ sqrt(-log(y)) and refine on erfc.
  const bool upper = y < 1;
  const long double t = upper ? y : 2 - y;
  long double x = std::sqrt(-std::log(t * std::sqrt(-std::log(t))));
  const long double two_over_sqrt_pi = 1.128379167095512573896158903121545172L;
  for (int i = 0; i < 60; ++i) {
    const long double err = std::erfc(x) - t;
    const long double step = err / (two_over_sqrt_pi * std::exp(-x * x));
    x += step;
    if (std::fabs(step) <= 1e-18L * std::fabs(x)) break;
  }
  return upper ? x : -x;
}

}  // namespace ember::sim::detail

// CUDA's own names (reserved in C++): the simulator supplies them for the host compiler.
// NOLINTBEGIN(bugprone-reserved-identifier)

// ---- bit reinterpretation
// ------------------------------------------------------------------------
inline int __float_as_int(float x) { return ember::sim::detail::bit_cast<int>(x); }
inline unsigned __float_as_uint(float x) { return ember::sim::detail::bit_cast<unsigned>(x); }
inline float __int_as_float(int x) { return ember::sim::detail::bit_cast<float>(x); }
inline float __uint_as_float(unsigned x) { return ember::sim::detail::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) {
  return ember::sim::detail::bit_cast<long long>(x);
}
inline double __longlong_as_double(long long x) { return ember::sim::detail::bit_cast<double>(x); }
inline int __double2hiint(double x) {
  return static_cast<int>(static_cast<unsigned long long>(__double_as_longlong(x)) >> 32);
}
inline int __double2loint(double x) {
  return static_cast<int>(static_cast<unsigned>(__double_as_longlong(x)));
}
inline double __hiloint2double(int hi, int lo) {
  const unsigned long long bits =
      (static_cast<unsigned long long>(static_cast<unsigned>(hi)) << 32) |
      static_cast<unsigned>(lo);
  return __longlong_as_double(static_cast<long long>(bits));
}

// ---- integer intrinsics
// --------------------------------------------------------------------------
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) {
  return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x));
}
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
  return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x) {
  return (static_cast<unsigned long long>(__brev(static_cast<unsigned>(x))) << 32) |
         __brev(static_cast<unsigned>(x >> 32));
}
inline unsigned __umulhi(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32);
}
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
inline long long __mul64hi(long long a, long long b) {
  return static_cast<long long>((static_cast<__int128>(a) * b) >> 64);
}
// The product of the low 24 bits of each operand (sign-extended for __mul24), low 32 bits.
inline int __mul24(int a, int b) {
  const long long a24 = static_cast<long long>(static_cast<unsigned>(a) << 8) << 32 >> 40;
  const long long b24 = static_cast<long long>(static_cast<unsigned>(b) << 8) << 32 >> 40;
  return static_cast<int>(static_cast<unsigned>(static_cast<unsigned long long>(a24 * b24)));
}
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xFFFFFFu) * (b & 0xFFFFFFu); }
inline unsigned __sad(int x, int y, unsigned z) {
  const long long d = static_cast<long long>(x) - y;
  return static_cast<unsigned>(d < 0 ? -d : d) + z;
}
inline unsigned __usad(unsigned x, unsigned y, unsigned z) { return (x > y ? x - y : y - x) + z; }
inline int __rhadd(int a, int b) {
  return static_cast<int>((static_cast<long long>(a) + b + 1) >> 1);
}
inline unsigned __uhadd(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) + b) >> 1);
}
inline unsigned __urhadd(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) + b + 1) >> 1);
}
// Byte n of the result is byte (s >> 4n) & 7 of the 8-byte value {y, x} (x the low half).
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long bytes = (static_cast<unsigned long long>(y) << 32) | x;
  unsigned result = 0;
  for (int n = 0; n < 4; ++n) {
    const unsigned selector = (s >> (4 * n)) & 7u;
    result |= static_cast<unsigned>((bytes >> (8 * selector)) & 0xFFu) << (8 * n);
  }
  return result;
}
// Funnel shifts of the 64-bit {hi, lo}; the plain forms take the shift mod 32, the c forms clamp
// it to 32.
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>((v << (shift & 31u)) >> 32);
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>((v << (shift < 32u ? shift : 32u)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>(v >> (shift & 31u));
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>(v >> (shift < 32u ? shift : 32u));
}
// Four-way byte / two-way halfword dot products with a 32-bit accumulator.
inline int __dp4a(int a, int b, int c) {
  int sum = c;
  for (int i = 0; i < 4; ++i)
    sum += static_cast<signed char>(a >> (8 * i)) * static_cast<signed char>(b >> (8 * i));
  return sum;
}
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
  unsigned sum = c;
  for (int i = 0; i < 4; ++i) sum += ((a >> (8 * i)) & 0xFFu) * ((b >> (8 * i)) & 0xFFu);
  return sum;
}

// ---- min / max, as nvcc declares them for device code
// -------------------------------------------- In host code `min` and `max` are std's templates; a
// kernel calls them unqualified with mixed int/unsigned or float/double operands, which nvcc
// resolves through these overloads.
inline int min(int a, int b) { return a < b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned min(int a, unsigned b) { return min(static_cast<unsigned>(a), b); }
inline unsigned min(unsigned a, int b) { return min(a, static_cast<unsigned>(b)); }
inline long min(long a, long b) { return a < b ? a : b; }
inline unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double min(float a, double b) { return std::fmin(static_cast<double>(a), b); }
inline double min(double a, float b) { return std::fmin(a, static_cast<double>(b)); }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline unsigned max(int a, unsigned b) { return max(static_cast<unsigned>(a), b); }
inline unsigned max(unsigned a, int b) { return max(a, static_cast<unsigned>(b)); }
inline long max(long a, long b) { return a > b ? a : b; }
inline unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }
inline double max(float a, double b) { return std::fmax(static_cast<double>(a), b); }
inline double max(double a, float b) { return std::fmax(a, static_cast<double>(b)); }
inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) {
  return a < b ? a : b;
}
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) {
  return a > b ? a : b;
}

// ---- single-precision math nvcc has and the host lacks
// -------------------------------------------
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float rcbrtf(float x) { return static_cast<float>(1.0 / std::cbrt(static_cast<double>(x))); }
inline double rcbrt(double x) {
  return static_cast<double>(1.0L / std::cbrt(static_cast<long double>(x)));
}
// sin(pi x) and cos(pi x), with the argument reduced exactly (x mod 2) before multiplying by pi.
inline double sinpi(double x) {
  if (!std::isfinite(x)) return std::numeric_limits<double>::quiet_NaN();
  const long double r = std::fmod(static_cast<long double>(x), 2.0L);
  if (r == std::trunc(r)) return std::copysign(0.0, x);  // sin(k pi) is an exact zero
  return static_cast<double>(std::sin(r * 3.141592653589793238462643383279502884L));
}
inline double cospi(double x) {
  if (!std::isfinite(x)) return std::numeric_limits<double>::quiet_NaN();
  const long double r = std::fmod(std::fabs(static_cast<long double>(x)), 2.0L);
  if (r == 0.5L || r == 1.5L) return 0.0;
  return static_cast<double>(std::cos(r * 3.141592653589793238462643383279502884L));
}
inline float sinpif(float x) { return static_cast<float>(sinpi(x)); }
inline float cospif(float x) { return static_cast<float>(cospi(x)); }
inline void sincospi(double x, double* s, double* c) {
  *s = sinpi(x);
  *c = cospi(x);
}
inline void sincospif(float x, float* s, float* c) {
  *s = sinpif(x);
  *c = cospif(x);
}
inline float erfinvf(float y) { return static_cast<float>(ember::sim::detail::erfinv_ld(y)); }
inline double erfinv(double y) { return static_cast<double>(ember::sim::detail::erfinv_ld(y)); }
inline float erfcinvf(float y) { return static_cast<float>(ember::sim::detail::erfcinv_ld(y)); }
inline double erfcinv(double y) { return static_cast<double>(ember::sim::detail::erfcinv_ld(y)); }
// The standard normal CDF and its inverse.
inline double normcdf(double x) { return 0.5 * std::erfc(-x * 0.70710678118654752440); }
inline float normcdff(float x) { return static_cast<float>(normcdf(x)); }
inline double normcdfinv(double p) {
  return static_cast<double>(-1.414213562373095048801688724209698079L *
                             ember::sim::detail::erfcinv_ld(2.0L * p));
}
inline float normcdfinvf(float p) { return static_cast<float>(normcdfinv(p)); }
inline float fdividef(float x, float y) { return x / y; }
// Clamp to [0, 1]; NaN becomes 0.
inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }

// The "fast" intrinsics, here with libm's accuracy (Note [What the simulated intrinsics model]).
inline float __expf(float x) { return std::exp(x); }
inline float __exp10f(float x) { return std::pow(10.0f, x); }
inline float __logf(float x) { return std::log(x); }
inline float __log2f(float x) { return std::log2(x); }
inline float __log10f(float x) { return std::log10(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline void __sincosf(float x, float* s, float* c) {
  *s = std::sin(x);
  *c = std::cos(x);
}
inline float __powf(float x, float y) { return std::pow(x, y); }
inline float __fdividef(float x, float y) { return x / y; }

// ---- correctly rounded arithmetic with a named rounding mode
// ------------------------------------- Each family: _rn (to nearest even), _rz (toward zero), _ru
// (up), _rd (down); Note [Directed rounding].
#define EMBER_SIM_ROUNDED_FAMILY(name, T, params, expr)                                   \
  inline T name##_rn params { return ember::sim::detail::opaque<T>(expr); }               \
  inline T name##_rz params {                                                             \
    return ember::sim::detail::with_rounding(FE_TOWARDZERO, [&]() -> T { return expr; }); \
  }                                                                                       \
  inline T name##_ru params {                                                             \
    return ember::sim::detail::with_rounding(FE_UPWARD, [&]() -> T { return expr; });     \
  }                                                                                       \
  inline T name##_rd params {                                                             \
    return ember::sim::detail::with_rounding(FE_DOWNWARD, [&]() -> T { return expr; });   \
  }
#define EMBER_SIM_V(x) ember::sim::detail::vol(x)
EMBER_SIM_ROUNDED_FAMILY(__fadd, float, (float a, float b), EMBER_SIM_V(a) + EMBER_SIM_V(b))
EMBER_SIM_ROUNDED_FAMILY(__fsub, float, (float a, float b), EMBER_SIM_V(a) - EMBER_SIM_V(b))
EMBER_SIM_ROUNDED_FAMILY(__fmul, float, (float a, float b), EMBER_SIM_V(a) * EMBER_SIM_V(b))
EMBER_SIM_ROUNDED_FAMILY(__fdiv, float, (float a, float b), EMBER_SIM_V(a) / EMBER_SIM_V(b))
EMBER_SIM_ROUNDED_FAMILY(__frcp, float, (float a), 1.0f / EMBER_SIM_V(a))
EMBER_SIM_ROUNDED_FAMILY(__fsqrt, float, (float a), std::sqrt(EMBER_SIM_V(a)))
EMBER_SIM_ROUNDED_FAMILY(__fmaf, float, (float a, float b, float c),
                         std::fma(EMBER_SIM_V(a), EMBER_SIM_V(b), EMBER_SIM_V(c)))
EMBER_SIM_ROUNDED_FAMILY(__dadd, double, (double a, double b), EMBER_SIM_V(a) + EMBER_SIM_V(b))
EMBER_SIM_ROUNDED_FAMILY(__dsub, double, (double a, double b), EMBER_SIM_V(a) - EMBER_SIM_V(b))
EMBER_SIM_ROUNDED_FAMILY(__dmul, double, (double a, double b), EMBER_SIM_V(a) * EMBER_SIM_V(b))
EMBER_SIM_ROUNDED_FAMILY(__ddiv, double, (double a, double b), EMBER_SIM_V(a) / EMBER_SIM_V(b))
EMBER_SIM_ROUNDED_FAMILY(__drcp, double, (double a), 1.0 / EMBER_SIM_V(a))
EMBER_SIM_ROUNDED_FAMILY(__dsqrt, double, (double a), std::sqrt(EMBER_SIM_V(a)))
EMBER_SIM_ROUNDED_FAMILY(__fma, double, (double a, double b, double c),
                         std::fma(EMBER_SIM_V(a), EMBER_SIM_V(b), EMBER_SIM_V(c)))
// Conversions to float with a rounding mode.
EMBER_SIM_ROUNDED_FAMILY(__double2float, float, (double x), static_cast<float>(EMBER_SIM_V(x)))
EMBER_SIM_ROUNDED_FAMILY(__int2float, float, (int x), static_cast<float>(EMBER_SIM_V(x)))
EMBER_SIM_ROUNDED_FAMILY(__uint2float, float, (unsigned x), static_cast<float>(EMBER_SIM_V(x)))
EMBER_SIM_ROUNDED_FAMILY(__ll2float, float, (long long x), static_cast<float>(EMBER_SIM_V(x)))
EMBER_SIM_ROUNDED_FAMILY(__ull2float, float, (unsigned long long x),
                         static_cast<float>(EMBER_SIM_V(x)))
EMBER_SIM_ROUNDED_FAMILY(__ll2double, double, (long long x), static_cast<double>(EMBER_SIM_V(x)))
EMBER_SIM_ROUNDED_FAMILY(__ull2double, double, (unsigned long long x),
                         static_cast<double>(EMBER_SIM_V(x)))
#undef EMBER_SIM_V
#undef EMBER_SIM_ROUNDED_FAMILY
inline float __frsqrt_rn(float x) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(x)));
}
inline double __int2double_rn(int x) { return x; }
inline double __uint2double_rn(unsigned x) { return x; }

// ---- float/double to integer: rounded as named, saturating, NaN -> 0
// -----------------------------
#define EMBER_SIM_TO_INT(name, F, I)                                                        \
  inline I name##_rn(F x) { return ember::sim::detail::saturate_to<I>(std::nearbyint(x)); } \
  inline I name##_rz(F x) { return ember::sim::detail::saturate_to<I>(std::trunc(x)); }     \
  inline I name##_ru(F x) { return ember::sim::detail::saturate_to<I>(std::ceil(x)); }      \
  inline I name##_rd(F x) { return ember::sim::detail::saturate_to<I>(std::floor(x)); }
EMBER_SIM_TO_INT(__float2int, float, int)
EMBER_SIM_TO_INT(__float2uint, float, unsigned)
EMBER_SIM_TO_INT(__float2ll, float, long long)
EMBER_SIM_TO_INT(__float2ull, float, unsigned long long)
EMBER_SIM_TO_INT(__double2int, double, int)
EMBER_SIM_TO_INT(__double2uint, double, unsigned)
EMBER_SIM_TO_INT(__double2ll, double, long long)
EMBER_SIM_TO_INT(__double2ull, double, unsigned long long)
#undef EMBER_SIM_TO_INT

// ---- loads and stores through the (absent) caches ----------------------------------------------
// __ldg reads through the read-only data cache on a GPU; here every overload (scalars, vector
// types, __half, ...) is a plain load. The other cache hints likewise.
template <class T>
inline T __ldg(const T* p) {
  return *p;
}
template <class T>
inline T __ldcg(const T* p) {
  return *p;
}
template <class T>
inline T __ldca(const T* p) {
  return *p;
}
template <class T>
inline T __ldcs(const T* p) {
  return *p;
}
template <class T>
inline T __ldlu(const T* p) {
  return *p;
}
template <class T>
inline T __ldcv(const T* p) {
  return *p;
}
template <class T>
inline void __stwb(T* p, T value) {
  *p = value;
}
template <class T>
inline void __stcg(T* p, T value) {
  *p = value;
}
template <class T>
inline void __stcs(T* p, T value) {
  *p = value;
}
template <class T>
inline void __stwt(T* p, T value) {
  *p = value;
}
// NOLINTEND(bugprone-reserved-identifier)

// The half and bfloat16 gaps, which build on the conversions above.
#include "kernels/cuda/sim/half_intrinsics.h"
