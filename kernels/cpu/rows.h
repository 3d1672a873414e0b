#pragma once
// The pieces of the CPU row kernels (softmax, log_softmax, cross-entropy, layer_norm): a float32
// exp made of arithmetic the compiler vectorises, where a call to libm's expf keeps every loop
// scalar; folds of a row into lanes; and a walk over a row in blocks, converted to float for the
// 16-bit types.
//
// Note [A vectorisable exp]
// exp(x) = 2^n * exp(r), with n = round(x / ln 2) and r = x - n ln 2, so |r| <= ln(2) / 2:
// - n is rounded by the "magic number" trick: adding 1.5 * 2^23 to x / ln 2 leaves the rounded
//   integer in the low mantissa bits (no float -> int conversion, which is undefined for NaN);
// - r is computed in two steps (Cody and Waite): ln 2 = C1 + C2 with C1 = 0.693359375 holding
//   only 9 significant bits, so n * C1 is exact for |n| <= 2^15 and x - n * C1 loses nothing;
// - exp(r) is its Taylor polynomial of degree 7 (the next term is below 6e-9 relative on
//   |r| <= 0.347, a tenth of float32's half-ulp), evaluated by Horner's rule;
// - 2^n is two exact power-of-two factors 2^(n/2) and 2^(n - n/2), built from their exponent
//   bits, so that every n from -150 to 128 is reached without a special case: a result in the
//   subnormal range is rounded once (by the last multiplication), and x >= 89 overflows to inf.
// x is clamped to [-104, 89] first (exp(-104) rounds to 0); -inf gives 0, +inf gives inf, and a
// NaN stays NaN through every step (the clamps compare false and return it).
//
// Measured over every 7th float32 in [-110, 90] (640 million values), against exp in double:
// at most 1.21 ulp (libm's expf: 0.5). Only +, *, comparisons and integer shifts are used and
// nothing is contracted into a multiply-add (ember builds without FMA in these loops, isa.h), so
// the baseline (SSE2), AVX2 and AVX-512 copies of a loop return the same bits. Its two clamps and
// bit casts vectorise: a plain loop of exp_float over an array runs 8 lanes at a time in an AVX2
// copy. A double exp stays std::exp: no float64 loop here is hot enough to need its own.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/dtype.h"
#include "kernels/cpu/convert16.h"
#include "kernels/math/convert.h"

// For the row helpers below: inlined into every caller, so that a caller compiled for AVX2 or
// AVX-512 (kernels/cpu/isa.h) gets them compiled for it too.
#define EMBER_CPU_INLINE inline __attribute__((always_inline))

namespace ember::kernels::cpu {

// Note [Rows in lanes]
// The passes over a row of softmax, log_softmax and cross-entropy (its max, then the sum of
// exp(x - max)), and layer_norm's sums, fold element i into lane i % kRowLanes, and the lanes
// into one value at the end in a fixed order: independent lanes let a loop run as vector
// instructions where a single running max or sum would chain one element after another. The
// sums are kept in double (a row of 10^6 probabilities loses nothing). Contiguous rows go through
// blocks of kRowBlock elements, each pass a plain loop the compiler vectorises: a float16 /
// bfloat16 block is converted to float first (convert16.h), and the exps of a block are written to
// a buffer (or, for a float softmax, to the output) before they are summed. Strided and float64
// rows run the same folds one element at a time (row_max, row_sum_exp). The lanes and their order
// depend only on the row's length, so every copy, layout and thread count gives the same bits for
// the same values.
constexpr int kRowLanes = 16;
constexpr int64_t kRowBlock = 256;  // a multiple of kRowLanes

EMBER_CPU_INLINE float exp_float(float x) {
  x = x < -104.0f ? -104.0f : x;
  x = x > 89.0f ? 89.0f : x;
  const float magic = 12582912.0f;  // 1.5 * 2^23
  const float k = x * 1.44269504088896341f + magic;
  const float nf = k - magic;
  uint32_t mb;
  std::memcpy(&mb, &magic, sizeof mb);
  uint32_t kb;
  std::memcpy(&kb, &k, sizeof kb);
  const uint32_t n = kb - mb;  // round(x / ln 2), two's complement
  const float r = (x - nf * 0.693359375f) - nf * -2.12194440e-4f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // n / 2 rounded down, as an arithmetic shift of the two's complement bits would give it
  // (written without shifting a negative number, which is implementation-defined before C++20).
  const uint32_t sign = n >> 31;
  const uint32_t n1 = (n >> 1) | (sign << 31), n2 = n - n1;
  const uint32_t b1 = (n1 + 127u) << 23, b2 = (n2 + 127u) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, sizeof s1);
  std::memcpy(&s2, &b2, sizeof s2);
  return p * s1 * s2;
}

// exp in the accumulation type A of a kernel: exp_float for float (and the 16-bit floats, whose
// A is float), std::exp for double.
template <class A>
EMBER_CPU_INLINE A exp_of(A x) {
  if constexpr (std::is_same_v<A, float>) {
    return exp_float(x);
  } else {
    return std::exp(x);
  }
}

// Folds the lanes of a row's sum in their fixed order.
EMBER_CPU_INLINE double sum_lanes(const double* lanes) {
  double s = 0;
  for (int l = 0; l < kRowLanes; ++l) s += lanes[l];
  return s;
}
template <class A>
EMBER_CPU_INLINE A max_lanes(const A* lanes) {
  A m = lanes[0];
  for (int l = 1; l < kRowLanes; ++l) m = lanes[l] > m ? lanes[l] : m;
  return m;
}

// ---- one element at a time: any stride, any floating T -------------------------------------

// The largest of x[i * sx], i < n, in the accumulation type; NaNs are skipped (a NaN in the row
// reaches the output through the sum of exps instead). -inf for an empty row.
template <class T, class A = opmath_t<T>>
EMBER_CPU_INLINE A row_max(const T* x, int64_t sx, int64_t n) {
  A lanes[kRowLanes];
  for (int l = 0; l < kRowLanes; ++l) lanes[l] = -std::numeric_limits<A>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const A v = math::convert<A>(x[i * sx]);
    A& lane = lanes[i % kRowLanes];
    lane = v > lane ? v : lane;
  }
  return max_lanes(lanes);
}

// The sum over i < n of exp(x[i * sx] - m), in double.
template <class T, class A = opmath_t<T>>
EMBER_CPU_INLINE double row_sum_exp(const T* x, int64_t sx, A m, int64_t n) {
  double lanes[kRowLanes] = {};
  for (int64_t i = 0; i < n; ++i)
    lanes[i % kRowLanes] += static_cast<double>(exp_of(math::convert<A>(x[i * sx]) - m));
  return sum_lanes(lanes);
}

// ---- contiguous float blocks: plain loops the compiler vectorises ------------------------------
// Each folds a block that starts at a lane boundary (a multiple of kRowLanes into the row).

EMBER_CPU_INLINE void max_fold(const float* x, int64_t n, float* lanes) {
  int64_t i = 0;
  for (; i + kRowLanes <= n; i += kRowLanes)
    for (int l = 0; l < kRowLanes; ++l) lanes[l] = x[i + l] > lanes[l] ? x[i + l] : lanes[l];
  for (int l = 0; i + l < n; ++l) lanes[l] = x[i + l] > lanes[l] ? x[i + l] : lanes[l];
}

template <class E>
EMBER_CPU_INLINE void sum_fold(const E* e, int64_t n, double* lanes) {
  int64_t i = 0;
  for (; i + kRowLanes <= n; i += kRowLanes)
    for (int l = 0; l < kRowLanes; ++l) lanes[l] += static_cast<double>(e[i + l]);
  for (int l = 0; i + l < n; ++l) lanes[l] += static_cast<double>(e[i + l]);
}

// y[i] = exp(x[i] - m) * scale (a scale of 1 multiplies exactly).
EMBER_CPU_INLINE void exp_scale_run(const float* x, float m, float scale, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = exp_float(x[i] - m) * scale;
}

// ---- contiguous rows of any floating T ------------------------------------------------------

// The element type of a row's blocks: float for float32 and the 16-bit floats, double for
// float64.
template <class T>
using block_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Calls f(block, offset, len) over the contiguous row x[0, n) in blocks of kRowBlock, in order,
// the block holding x[offset, offset + len) as block_t<T>: a part of the row itself for float32
// and float64, a converted copy for the 16-bit types. f is a lambda marked EMBER_INLINE_LAMBDA.
template <class T, class F>
EMBER_CPU_INLINE void for_blocks(const T* x, int64_t n, const F& f) {
  float buf[kRowBlock];
  for (int64_t o = 0; o < n; o += kRowBlock) {
    const int64_t len = std::min(kRowBlock, n - o);
    if constexpr (std::is_same_v<T, block_t<T>>) {
      f(x + o, o, len);
    } else {
      convert_run(x + o, buf, len);
      f(static_cast<const float*>(buf), o, len);
    }
  }
}

// The same over two rows of T in step: f(x block, y block, offset, len).
template <class T, class F>
EMBER_CPU_INLINE void for_blocks2(const T* x, const T* y, int64_t n, const F& f) {
  float bx[kRowBlock], by[kRowBlock];
  for (int64_t o = 0; o < n; o += kRowBlock) {
    const int64_t len = std::min(kRowBlock, n - o);
    if constexpr (std::is_same_v<T, block_t<T>>) {
      f(x + o, y + o, o, len);
    } else {
      convert_run(x + o, bx, len);
      convert_run(y + o, by, len);
      f(static_cast<const float*>(bx), static_cast<const float*>(by), o, len);
    }
  }
}

// A block of kRowBlock values of E, written out as T at y (converted for the 16-bit types):
// calls f(out) to fill out[0, len), then stores it.
template <class T, class F>
EMBER_CPU_INLINE void write_block(T* y, int64_t len, const F& f) {
  if constexpr (std::is_same_v<T, block_t<T>>) {
    f(y);
  } else {
    float out[kRowBlock];
    f(static_cast<float*>(out));
    convert_run(static_cast<const float*>(out), y, len);
  }
}

// row_max of a contiguous row.
template <class T, class A = opmath_t<T>>
EMBER_CPU_INLINE A contiguous_row_max(const T* x, int64_t n) {
  if constexpr (std::is_same_v<A, float>) {
    float lanes[kRowLanes];
    for (int l = 0; l < kRowLanes; ++l) lanes[l] = -std::numeric_limits<float>::infinity();
    for_blocks(x, n, [&](const float* b, int64_t, int64_t len) EMBER_INLINE_LAMBDA {
      max_fold(b, len, lanes);
    });
    return max_lanes(lanes);
  } else {
    return row_max(x, 1, n);
  }
}

// row_sum_exp of a contiguous row. keep (where A is float): keep[i] = exp(x[i] - m) too.
template <class T, class A = opmath_t<T>>
EMBER_CPU_INLINE double contiguous_row_sum_exp(const T* x, A m, int64_t n, A* keep = nullptr) {
  if constexpr (std::is_same_v<A, float>) {
    double lanes[kRowLanes] = {};
    float e[kRowBlock];
    for_blocks(x, n, [&](const float* b, int64_t o, int64_t len) EMBER_INLINE_LAMBDA {
      float* out = e;
      if (keep != nullptr) out = keep + o;
      exp_scale_run(b, m, 1.0f, out, len);
      sum_fold(out, len, lanes);
    });
    return sum_lanes(lanes);
  } else {
    return row_sum_exp(x, 1, m, n);
  }
}

// y[i] = exp(x[i] - m) * scale for a contiguous row, rounded once to T.
template <class T, class A = opmath_t<T>>
EMBER_CPU_INLINE void contiguous_exp_scale(const T* x, A m, A scale, T* y, int64_t n) {
  if constexpr (std::is_same_v<A, float>) {
    for_blocks(x, n, [&](const float* b, int64_t o, int64_t len) EMBER_INLINE_LAMBDA {
      write_block(y + o, len,
                  [&](float* out) EMBER_INLINE_LAMBDA { exp_scale_run(b, m, scale, out, len); });
    });
  } else {
    for (int64_t i = 0; i < n; ++i)
      y[i] = math::convert<T>(exp_of(math::convert<A>(x[i]) - m) * scale);
  }
}

}  // namespace ember::kernels::cpu
