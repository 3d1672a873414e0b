#pragma once
// What cuda_fp16.h and cuda_bf16.h leave out when the host compiler includes them (no
// __CUDACC__), for sim builds: their arithmetic (__hadd, __hmul, __hdiv, comparisons, the half2
// forms, most conversions) works on the host, but the fused multiply-adds, the math functions
// and some rounding conversions are device-only. The list was taken against CUDA 13.0's headers
// by compiling and linking every function they declare with g++ (tests/sim/
// test_sim_intrinsics.cpp calls each one supplied here). Everything is in the global namespace
// with nvcc's names and overloads, for __half, __half2, __nv_bfloat16 and __nv_bfloat162.
//
// Precision: each function computes in float (double for the FMAs) and rounds once to the
// 16-bit type, to nearest even. GPUs evaluate hexp, hsin, ... approximately; compare with
// tolerances (Note [What the simulated intrinsics model] in intrinsics.h). The FMAs are exactly
// rounded unless the addend's exponent is more than ~30 binades from the product's.

// The qualifiers before any CUDA header (qualifiers.h says why).
// clang-format off
#include "kernels/cuda/sim/qualifiers.h"
// clang-format on

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "kernels/cuda/sim/intrinsics.h"

namespace ember::sim::detail {

inline float to_float(__half h) { return __half2float(h); }
inline float to_float(__nv_bfloat16 h) { return __bfloat162float(h); }
template <class H>
H from_float(float f);
template <>
inline __half from_float<__half>(float f) {
  return __float2half_rn(f);
}
template <>
inline __nv_bfloat16 from_float<__nv_bfloat16>(float f) {
  return __float2bfloat16_rn(f);
}
template <class H>
H from_double(double d);
template <>
inline __half from_double<__half>(double d) {
  return __double2half(d);
}
template <>
inline __nv_bfloat16 from_double<__nv_bfloat16>(double d) {
  return __double2bfloat16(d);
}
inline __half2 pair(__half lo, __half hi) { return __halves2half2(lo, hi); }
inline __nv_bfloat162 pair(__nv_bfloat16 lo, __nv_bfloat16 hi) {
  return __halves2bfloat162(lo, hi);
}

template <class H>
inline H fma16(H a, H b, H c) {
  // The product of two 16-bit values is exact in double; one rounding for the sum follows.
  const double r = static_cast<double>(to_float(a)) * to_float(b) + to_float(c);
  return from_double<H>(r);
}
template <class H>
inline H fma16_sat(H a, H b, H c) {
  const float r = to_float(fma16(a, b, c));
  return from_float<H>(r >= 1.0f ? 1.0f : (r > 0.0f ? r : 0.0f));  // NaN -> 0
}
template <class H>
inline H fma16_relu(H a, H b, H c) {
  const H r = fma16(a, b, c);
  const float f = to_float(r);
  return std::isnan(f) || f >= 0.0f ? r : from_float<H>(0.0f);
}

}  // namespace ember::sim::detail

// CUDA's own names (reserved in C++): the simulator supplies them for the host compiler.
// NOLINTBEGIN(bugprone-reserved-identifier)
// CUDA's signatures take __half2 and __nv_bfloat162 by value (4 bytes, passed in a register);
// the functions below keep them so overloads and function pointers match nvcc's.
// NOLINTBEGIN(performance-unnecessary-value-param)

// ---- fused multiply-add ------------------------------------------------------------------------
#define EMBER_SIM_HALF_FMA(H, H2)                                                            \
  inline H __hfma(H a, H b, H c) { return ember::sim::detail::fma16(a, b, c); }              \
  inline H __hfma_sat(H a, H b, H c) { return ember::sim::detail::fma16_sat(a, b, c); }      \
  inline H __hfma_relu(H a, H b, H c) { return ember::sim::detail::fma16_relu(a, b, c); }    \
  inline H2 __hfma2(H2 a, H2 b, H2 c) {                                                      \
    return ember::sim::detail::pair(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y));           \
  }                                                                                          \
  inline H2 __hfma2_sat(H2 a, H2 b, H2 c) {                                                  \
    return ember::sim::detail::pair(__hfma_sat(a.x, b.x, c.x), __hfma_sat(a.y, b.y, c.y));   \
  }                                                                                          \
  inline H2 __hfma2_relu(H2 a, H2 b, H2 c) {                                                 \
    return ember::sim::detail::pair(__hfma_relu(a.x, b.x, c.x), __hfma_relu(a.y, b.y, c.y)); \
  }                                                                                          \
  /* Complex multiply-add, (re, im) in (x, y): a * b + c. */                                 \
  inline H2 __hcmadd(H2 a, H2 b, H2 c) {                                                     \
    using ember::sim::detail::to_float;                                                      \
    const double re = static_cast<double>(to_float(a.x)) * to_float(b.x) -                   \
                      static_cast<double>(to_float(a.y)) * to_float(b.y) + to_float(c.x);    \
    const double im = static_cast<double>(to_float(a.x)) * to_float(b.y) +                   \
                      static_cast<double>(to_float(a.y)) * to_float(b.x) + to_float(c.y);    \
    return ember::sim::detail::pair(ember::sim::detail::from_double<H>(re),                  \
                                    ember::sim::detail::from_double<H>(im));                 \
  }
EMBER_SIM_HALF_FMA(__half, __half2)
EMBER_SIM_HALF_FMA(__nv_bfloat16, __nv_bfloat162)
#undef EMBER_SIM_HALF_FMA

// ---- math functions: hexp(__half), h2exp(__half2), and the bfloat16 overloads ----------------
#define EMBER_SIM_HALF_MATH_ONE(H, H2, name, name2, f_of_x) \
  inline H name(H a) {                                      \
    const float x = ember::sim::detail::to_float(a);        \
    return ember::sim::detail::from_float<H>(f_of_x);       \
  }                                                         \
  inline H2 name2(H2 a) { return ember::sim::detail::pair(name(a.x), name(a.y)); }
#define EMBER_SIM_HALF_MATH(name, name2, f_of_x)                \
  EMBER_SIM_HALF_MATH_ONE(__half, __half2, name, name2, f_of_x) \
  EMBER_SIM_HALF_MATH_ONE(__nv_bfloat16, __nv_bfloat162, name, name2, f_of_x)
EMBER_SIM_HALF_MATH(hexp, h2exp, std::exp(x))
EMBER_SIM_HALF_MATH(hexp2, h2exp2, std::exp2(x))
EMBER_SIM_HALF_MATH(hexp10, h2exp10, std::pow(10.0f, x))
EMBER_SIM_HALF_MATH(hlog, h2log, std::log(x))
EMBER_SIM_HALF_MATH(hlog2, h2log2, std::log2(x))
EMBER_SIM_HALF_MATH(hlog10, h2log10, std::log10(x))
EMBER_SIM_HALF_MATH(hsqrt, h2sqrt, std::sqrt(x))
EMBER_SIM_HALF_MATH(hrsqrt, h2rsqrt, 1.0f / std::sqrt(x))
EMBER_SIM_HALF_MATH(hrcp, h2rcp, 1.0f / x)
EMBER_SIM_HALF_MATH(hsin, h2sin, std::sin(x))
EMBER_SIM_HALF_MATH(hcos, h2cos, std::cos(x))
EMBER_SIM_HALF_MATH(htanh, h2tanh, std::tanh(x))
EMBER_SIM_HALF_MATH(hfloor, h2floor, std::floor(x))
EMBER_SIM_HALF_MATH(hceil, h2ceil, std::ceil(x))
EMBER_SIM_HALF_MATH(htrunc, h2trunc, std::trunc(x))
EMBER_SIM_HALF_MATH(hrint, h2rint, std::nearbyint(x))
#undef EMBER_SIM_HALF_MATH
#undef EMBER_SIM_HALF_MATH_ONE
// NOLINTEND(performance-unnecessary-value-param)

// ---- 16-bit float to integer: rounded as named, saturating, NaN -> 0 -------------------------
// (the _rz forms exist on the host already). The 16-bit value converts exactly to float first.
#define EMBER_SIM_HALF_TO_INT_ONE(H, name, I, round)                                   \
  inline I name(H h) {                                                                 \
    return ember::sim::detail::saturate_to<I>(round(ember::sim::detail::to_float(h))); \
  }
#define EMBER_SIM_HALF_TO_INT(H, prefix, I)                    \
  EMBER_SIM_HALF_TO_INT_ONE(H, prefix##_rn, I, std::nearbyint) \
  EMBER_SIM_HALF_TO_INT_ONE(H, prefix##_ru, I, std::ceil)      \
  EMBER_SIM_HALF_TO_INT_ONE(H, prefix##_rd, I, std::floor)
EMBER_SIM_HALF_TO_INT(__half, __half2int, int)
EMBER_SIM_HALF_TO_INT(__half, __half2uint, unsigned)
EMBER_SIM_HALF_TO_INT(__half, __half2short, short)
EMBER_SIM_HALF_TO_INT(__half, __half2ushort, unsigned short)
EMBER_SIM_HALF_TO_INT(__half, __half2ll, long long)
EMBER_SIM_HALF_TO_INT(__half, __half2ull, unsigned long long)
EMBER_SIM_HALF_TO_INT(__nv_bfloat16, __bfloat162int, int)
EMBER_SIM_HALF_TO_INT(__nv_bfloat16, __bfloat162uint, unsigned)
EMBER_SIM_HALF_TO_INT(__nv_bfloat16, __bfloat162short, short)
EMBER_SIM_HALF_TO_INT(__nv_bfloat16, __bfloat162ushort, unsigned short)
EMBER_SIM_HALF_TO_INT(__nv_bfloat16, __bfloat162ll, long long)
EMBER_SIM_HALF_TO_INT(__nv_bfloat16, __bfloat162ull, unsigned long long)
#undef EMBER_SIM_HALF_TO_INT
#undef EMBER_SIM_HALF_TO_INT_ONE

// ---- integer to bfloat16 with a directed rounding (the _rn forms exist on the host) ----------
// Directed roundings compose: rounding down to float and then down to bfloat16 is rounding down
// to bfloat16, as bfloat16's values are a subset of float's.
#define EMBER_SIM_INT_TO_BF16(name, I, to_float)                                        \
  inline __nv_bfloat16 name##_rz(I x) { return __float2bfloat16_rz(to_float##_rz(x)); } \
  inline __nv_bfloat16 name##_ru(I x) { return __float2bfloat16_ru(to_float##_ru(x)); } \
  inline __nv_bfloat16 name##_rd(I x) { return __float2bfloat16_rd(to_float##_rd(x)); }
EMBER_SIM_INT_TO_BF16(__int2bfloat16, int, __int2float)
EMBER_SIM_INT_TO_BF16(__uint2bfloat16, unsigned, __uint2float)
EMBER_SIM_INT_TO_BF16(__short2bfloat16, short, __int2float)
EMBER_SIM_INT_TO_BF16(__ushort2bfloat16, unsigned short, __uint2float)
EMBER_SIM_INT_TO_BF16(__ll2bfloat16, long long, __ll2float)
EMBER_SIM_INT_TO_BF16(__ull2bfloat16, unsigned long long, __ull2float)
#undef EMBER_SIM_INT_TO_BF16
// NOLINTEND(bugprone-reserved-identifier)
