// Vectorised float32 <-> float16 / bfloat16 runs (kernels/cpu/convert16.h).
//
// Note [Exact bits from F16C]
// F16C rounds like core/half.h (to nearest even, in hardware, whatever MXCSR says when the
// immediate names the mode) and handles subnormals exactly, but it keeps a NaN's payload where
// ember's scalar conversion gives one canonical NaN:
// - float -> half: vcvtps2ph turns a NaN into sign | 0x7e00 | payload >> 13; ember gives
//   sign | 0x7e00. Lanes whose half is a NaN (|h| > 0x7c00) are replaced.
// - half -> float: vcvtph2ps quiets a signalling NaN (sets the float's bit 22); ember keeps the
//   payload as it is (sign | 0x7f800000 | mant << 13). Lanes with exponent 31 (inf and NaN) take
//   that integer form, which for inf is what the hardware gives anyway.
// The AVX2 functions call nothing but intrinsics and the portable loops (compiled for the
// baseline), so no inline function compiled for AVX2 can be merged into baseline code (the same
// rule as kernels/cpu/gemm.cpp's micro-kernels). tests/test_tensor.cpp compares every lane with
// the scalar conversions.

#include "kernels/cpu/convert16.h"

#include <immintrin.h>

namespace ember::kernels::cpu {

namespace {

// ---- portable loops: the scalar conversions, which the compiler vectorises for SSE2 ----------

__attribute__((noinline)) void f32_to_f16_portable(const float* in, Half* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = Half(in[i]);
}
__attribute__((noinline)) void f16_to_f32_portable(const Half* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
}
__attribute__((noinline)) void f32_to_bf16_portable(const float* in, BFloat16* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = BFloat16(in[i]);
}
__attribute__((noinline)) void bf16_to_f32_portable(const BFloat16* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

// ---- AVX2 + F16C ------------------------------------------------------------------------------

#define EMBER_TARGET_F16C __attribute__((target("avx2,f16c")))

EMBER_TARGET_F16C void f32_to_f16_avx2(const float* in, Half* out, int64_t n) {
  const __m128i abs_mask = _mm_set1_epi16(0x7fff), sign_mask = _mm_set1_epi16(-0x8000);
  const __m128i inf = _mm_set1_epi16(0x7c00), quiet_nan = _mm_set1_epi16(0x7e00);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(in + i);
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    // NaN lanes: |h| > 0x7c00 (a signed 16-bit compare, |h| <= 0x7fff) -> sign | 0x7e00.
    const __m128i is_nan = _mm_cmpgt_epi16(_mm_and_si128(h, abs_mask), inf);
    const __m128i canonical = _mm_or_si128(_mm_and_si128(h, sign_mask), quiet_nan);
    h = _mm_blendv_epi8(h, canonical, is_nan);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  if (i < n) f32_to_f16_portable(in + i, out + i, n - i);
}

EMBER_TARGET_F16C void f16_to_f32_avx2(const Half* in, float* out, int64_t n) {
  const __m256i exp_mask = _mm256_set1_epi32(0x7c00), mant_mask = _mm256_set1_epi32(0x3ff);
  const __m256i sign_mask = _mm256_set1_epi32(0x8000), float_inf = _mm256_set1_epi32(0x7f800000);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    const __m256i f = _mm256_castps_si256(_mm256_cvtph_ps(h));
    // Exponent 31 (inf, NaN): sign << 16 | 0x7f800000 | mant << 13, payload as it is.
    const __m256i w = _mm256_cvtepu16_epi32(h);
    const __m256i e = _mm256_and_si256(w, exp_mask);
    const __m256i special = _mm256_cmpeq_epi32(e, exp_mask);
    const __m256i kept = _mm256_or_si256(
        _mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(w, sign_mask), 16), float_inf),
        _mm256_slli_epi32(_mm256_and_si256(w, mant_mask), 13));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_blendv_epi8(f, kept, special));
  }
  if (i < n) f16_to_f32_portable(in + i, out + i, n - i);
}

// (u + 0x7fff + lsb) >> 16 with lsb = bit 16 of u; a NaN gives (u >> 16) | 0x40. 8 lanes.
EMBER_TARGET_F16C inline __m256i bf16_round8(__m256i u) {
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i abs = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  // Signed compare: both sides are below 2^31.
  const __m256i is_nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  return _mm256_blendv_epi8(rounded, quiet, is_nan);
}

EMBER_TARGET_F16C void f32_to_bf16_avx2(const float* in, BFloat16* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i lo = bf16_round8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i)));
    const __m256i hi =
        bf16_round8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i + 8)));
    // packus works within 128-bit halves: [lo0-3 hi0-3 | lo4-7 hi4-7]; reorder the quarters.
    // Every lane is <= 0xffff, so the unsigned saturation never clips.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), packed);
  }
  if (i < n) f32_to_bf16_portable(in + i, out + i, n - i);
}

EMBER_TARGET_F16C void bf16_to_f32_avx2(const BFloat16* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
  }
  if (i < n) bf16_to_f32_portable(in + i, out + i, n - i);
}

#undef EMBER_TARGET_F16C

struct ConvertTable {
  void (*f32_to_f16)(const float*, Half*, int64_t);
  void (*f16_to_f32)(const Half*, float*, int64_t);
  void (*f32_to_bf16)(const float*, BFloat16*, int64_t);
  void (*bf16_to_f32)(const BFloat16*, float*, int64_t);
};

const ConvertTable& table() {
  static const ConvertTable avx2{f32_to_f16_avx2, f16_to_f32_avx2, f32_to_bf16_avx2,
                                 bf16_to_f32_avx2};
  static const ConvertTable portable{f32_to_f16_portable, f16_to_f32_portable, f32_to_bf16_portable,
                                     bf16_to_f32_portable};
  return use_avx2() ? avx2 : portable;
}

}  // namespace

void convert_run(const float* in, Half* out, int64_t n) { table().f32_to_f16(in, out, n); }
void convert_run(const Half* in, float* out, int64_t n) { table().f16_to_f32(in, out, n); }
void convert_run(const float* in, BFloat16* out, int64_t n) { table().f32_to_bf16(in, out, n); }
void convert_run(const BFloat16* in, float* out, int64_t n) { table().bf16_to_f32(in, out, n); }

}  // namespace ember::kernels::cpu
