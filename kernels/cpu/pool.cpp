// CPU kernels for the pooling building blocks (core/ops/conv.h): max_pool2d (with its indices),
// its backward, and avg_pool2d.
//
// Every tensor arrives contiguous and batched, the geometry checked (Window2d). Work is split
// over the thread pool by image planes (n, c); each task writes its own planes of the output.

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/ops/conv.h"
#include "core/parallel.h"
#include "kernels/cpu/conv_utils.h"

namespace ember::kernels::cpu {

namespace {

// input: (N, C, H, W) -> out, indices: (N, C, out_h, out_w). PyTorch's rule: the window starts
// at its first in-bounds tap, its maximum starts at -inf (index: that first tap), and a value
// replaces it when greater or NaN.
// take ? a : b through the bits, so that the compiler cannot turn it back into a branch.
template <class F>
F select_bits(bool take, F a, F b) {
  using U = std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>;
  static_assert(sizeof(F) == sizeof(U));
  U ua, ub;
  std::memcpy(&ua, &a, sizeof(F));
  std::memcpy(&ub, &b, sizeof(F));
  const U m = static_cast<U>(0) - static_cast<U>(take);
  const U r = (ua & m) | (ub & ~m);
  F out;
  std::memcpy(&out, &r, sizeof(F));
  return out;
}

// One output row of 2x2, stride 2 pooling: the windows over rows r0 and r1 (r1 = r0 + W),
// visited left, right, left below, right below; `base` is the flat index of r0[0] in its plane.
// Written as selects on independent lanes so that it vectorizes.
template <class T>
inline void max_pool_2x2_row(const T* r0, const T* r1, int64_t out_w, int64_t base, int64_t W, T* y,
                             int64_t* idx) {
  using acc_t = opmath_t<T>;
  for (int64_t ow = 0; ow < out_w; ++ow) {
    const acc_t a = static_cast<acc_t>(r0[2 * ow]), b = static_cast<acc_t>(r0[2 * ow + 1]);
    const acc_t c = static_cast<acc_t>(r1[2 * ow]), d = static_cast<acc_t>(r1[2 * ow + 1]);
    // Offsets within the window: 0, 1, W, W + 1. The first maximum wins; a NaN always wins.
    acc_t best = a;
    int64_t at = 0;
    const bool tb = (b > best) | (b != b);
    best = tb ? b : best;
    at = tb ? 1 : at;
    const bool tc = (c > best) | (c != c);
    best = tc ? c : best;
    at = tc ? W : at;
    const bool td = (d > best) | (d != d);
    best = td ? d : best;
    at = td ? W + 1 : at;
    y[ow] = static_cast<T>(best);
    idx[ow] = base + 2 * ow + at;
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define EMBER_HAVE_AVX512_POOL 1
// The float32 row with AVX-512, 16 windows a step and a masked last step, so that the short rows
// of small images (7 windows for 14 x 14) vectorize too: the two input rows are loaded 32 floats
// at a time and split into their even and odd columns. Needs W < 2^31 (offsets in 32 bits).
__attribute__((target("avx512f"))) void max_pool_2x2_row_avx512(const float* r0, const float* r1,
                                                                int64_t out_w, int64_t base,
                                                                int64_t W, float* y, int64_t* idx) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512i lane2 = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
  const __m512i off_b = _mm512_set1_epi32(1), off_c = _mm512_set1_epi32(static_cast<int>(W));
  const __m512i off_d = _mm512_set1_epi32(static_cast<int>(W + 1));
  for (int64_t ow = 0; ow < out_w; ow += 16) {
    const int64_t n = std::min<int64_t>(16, out_w - ow);  // windows in this step
    const __mmask16 m = static_cast<__mmask16>((1u << n) - 1);
    // 2n input floats per row: the first 16 under m_lo, the rest under m_hi.
    const __mmask16 m_lo = static_cast<__mmask16>(n >= 8 ? 0xFFFFu : (1u << (2 * n)) - 1);
    const __mmask16 m_hi = static_cast<__mmask16>(n > 8 ? (1u << (2 * n - 16)) - 1 : 0u);
    const __m512 t0 = _mm512_maskz_loadu_ps(m_lo, r0 + 2 * ow);
    const __m512 t1 = _mm512_maskz_loadu_ps(m_hi, r0 + 2 * ow + 16);
    const __m512 b0 = _mm512_maskz_loadu_ps(m_lo, r1 + 2 * ow);
    const __m512 b1 = _mm512_maskz_loadu_ps(m_hi, r1 + 2 * ow + 16);
    const __m512 a = _mm512_permutex2var_ps(t0, even, t1), b = _mm512_permutex2var_ps(t0, odd, t1);
    const __m512 c = _mm512_permutex2var_ps(b0, even, b1), d = _mm512_permutex2var_ps(b0, odd, b1);
    // The first maximum wins; a NaN always wins.
    __m512 best = a;
    __m512i at = _mm512_setzero_si512();
    __mmask16 take =
        _mm512_cmp_ps_mask(b, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q);
    best = _mm512_mask_mov_ps(best, take, b);
    at = _mm512_mask_mov_epi32(at, take, off_b);
    take = _mm512_cmp_ps_mask(c, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(c, c, _CMP_UNORD_Q);
    best = _mm512_mask_mov_ps(best, take, c);
    at = _mm512_mask_mov_epi32(at, take, off_c);
    take = _mm512_cmp_ps_mask(d, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(d, d, _CMP_UNORD_Q);
    best = _mm512_mask_mov_ps(best, take, d);
    at = _mm512_mask_mov_epi32(at, take, off_d);
    _mm512_mask_storeu_ps(y + ow, m, best);
    // idx = base + 2 * (ow + lane) + at, in two halves of 8 int64.
    const __m512i start = _mm512_add_epi64(_mm512_set1_epi64(base + 2 * ow), lane2);
    // (The maskz forms: GCC 12 warns about the undefined vectors of the plain ones.)
    const __m256i at_lo = _mm512_maskz_extracti64x4_epi64(0xFF, at, 0);
    const __m256i at_hi = _mm512_maskz_extracti64x4_epi64(0xFF, at, 1);
    const __m512i lo = _mm512_add_epi64(start, _mm512_maskz_cvtepi32_epi64(0xFF, at_lo));
    const __m512i hi = _mm512_add_epi64(_mm512_add_epi64(start, _mm512_set1_epi64(16)),
                                        _mm512_maskz_cvtepi32_epi64(0xFF, at_hi));
    _mm512_mask_storeu_epi64(idx + ow, static_cast<__mmask8>(m & 0xFF), lo);
    _mm512_mask_storeu_epi64(idx + ow + 8, static_cast<__mmask8>(m >> 8), hi);
  }
}

bool cpu_has_avx512f() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return has;
}
#endif

// The float32 row: AVX-512 where the CPU has it.
void max_pool_2x2_row_f32(const float* r0, const float* r1, int64_t out_w, int64_t base, int64_t W,
                          float* y, int64_t* idx) {
#ifdef EMBER_HAVE_AVX512_POOL
  if (cpu_has_avx512f() && W < (int64_t{1} << 30)) {
    max_pool_2x2_row_avx512(r0, r1, out_w, base, W, y, idx);
    return;
  }
#endif
  max_pool_2x2_row(r0, r1, out_w, base, W, y, idx);
}

template <class T>
void max_pool2d_typed(const Tensor& input, const Tensor& out, const Tensor& indices,
                      const Window2d& g) {
  using acc_t = opmath_t<T>;
  const T* x = input.data_ptr<T>();
  T* y = out.data_ptr<T>();
  int64_t* idx = indices.data_ptr<int64_t>();
  const int64_t planes = input.size(0) * input.size(1);
  const int64_t H = g.in_h, W = g.in_w, L = g.out_h * g.out_w;
  const Window2d win = g;  // a local copy: the stores below could alias a reference's fields
  if (win.kh == 2 && win.kw == 2 && win.sh == 2 && win.sw == 2 && win.ph == 0 && win.pw == 0 &&
      win.dh == 1 && win.dw == 1 && 2 * win.out_h <= H && 2 * win.out_w <= W) {
    // The common 2x2, stride 2 pooling: whole windows, a fixed visiting order (row 0 left,
    // right, row 1 left, right), so the general loop's bounds and index arithmetic vanish.
    parallel_for(0, planes, plane_grain(L * 4), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const T* plane = x + p * H * W;
        for (int64_t oh = 0; oh < win.out_h; ++oh) {
          const T* r0 = plane + 2 * oh * W;
          T* yr = y + p * L + oh * win.out_w;
          int64_t* ir = idx + p * L + oh * win.out_w;
          if constexpr (std::is_same_v<T, float>) {
            max_pool_2x2_row_f32(r0, r0 + W, win.out_w, 2 * oh * W, W, yr, ir);
          } else {
            max_pool_2x2_row(r0, r0 + W, win.out_w, 2 * oh * W, W, yr, ir);
          }
        }
      }
    });
    return;
  }
  parallel_for(0, planes, plane_grain(L * win.kh * win.kw), [&](int64_t p0, int64_t p1) {
    const int64_t kh = win.kh, kw = win.kw, sh = win.sh, sw = win.sw, ph = win.ph, pw = win.pw;
    const int64_t dh = win.dh, dw = win.dw, out_h = win.out_h, out_w = win.out_w;
    for (int64_t p = p0; p < p1; ++p) {
      const T* plane = x + p * H * W;
      T* yp = y + p * L;
      int64_t* ip = idx + p * L;
      for (int64_t oh = 0; oh < out_h; ++oh) {
        int64_t h0 = oh * sh - ph;
        const int64_t h1 = std::min(h0 + (kh - 1) * dh + 1, H);
        while (h0 < 0) h0 += dh;
        for (int64_t ow = 0; ow < out_w; ++ow) {
          int64_t w0 = ow * sw - pw;
          const int64_t w1 = std::min(w0 + (kw - 1) * dw + 1, W);
          while (w0 < 0) w0 += dw;
          int64_t best_index = h0 * W + w0;
          acc_t best = -std::numeric_limits<acc_t>::infinity();
          for (int64_t ih = h0; ih < h1; ih += dh) {
            const T* row = plane + ih * W;
            for (int64_t iw = w0; iw < w1; iw += dw) {
              // The first maximum wins; a NaN always wins (PyTorch's rule). Written as selects
              // rather than a branch: the comparison is unpredictable on real data.
              const acc_t v = static_cast<acc_t>(row[iw]);
              const bool take = (v > best) | (v != v);  // bitwise: no short-circuit branch
              best = select_bits(take, v, best);
              const int64_t m = -static_cast<int64_t>(take);
              best_index = ((ih * W + iw) & m) | (best_index & ~m);
            }
          }
          yp[oh * out_w + ow] = static_cast<T>(best);
          ip[oh * out_w + ow] = best_index;
        }
      }
    }
  });
}

void max_pool2d_kernel(const Tensor& input, const Tensor& out, const Tensor& indices,
                       const Window2d& g) {
  EMBER_DISPATCH_FLOATING(input.dtype(), "max_pool2d",
                          [&] { max_pool2d_typed<scalar_t>(input, out, indices, g); });
}

// grad_out, indices: (N, C, out_h, out_w) -> grad_input (N, C, H, W). One pass per plane: clear
// it, then add each output's gradient at its index, accumulating in opmath (float for 16-bit).
template <class T>
void max_pool2d_backward_typed(const Tensor& grad_out, const Tensor& indices,
                               const Tensor& grad_input) {
  using acc_t = opmath_t<T>;
  const T* gy = grad_out.data_ptr<T>();
  const int64_t* idx = indices.data_ptr<int64_t>();
  T* gx = grad_input.data_ptr<T>();
  const int64_t planes = grad_input.size(0) * grad_input.size(1);
  const int64_t HW = grad_input.size(2) * grad_input.size(3);
  const int64_t L = grad_out.size(2) * grad_out.size(3);
  std::atomic<int64_t> bad{-1};  // a flat output position whose index is out of its plane
  parallel_for(0, planes, plane_grain(L + HW), [&](int64_t p0, int64_t p1) {
    std::vector<acc_t> acc;
    if constexpr (!std::is_same_v<acc_t, T>) acc.resize(static_cast<size_t>(HW));
    for (int64_t p = p0; p < p1; ++p) {
      const T* g = gy + p * L;
      const int64_t* ip = idx + p * L;
      T* out = gx + p * HW;
      acc_t* sum = std::is_same_v<acc_t, T> ? reinterpret_cast<acc_t*>(out) : acc.data();
      std::fill(sum, sum + HW, acc_t(0));
      for (int64_t l = 0; l < L; ++l) {
        const int64_t at = ip[l];
        if (at < 0 || at >= HW) {
          bad.store(p * L + l);
          continue;
        }
        sum[at] += static_cast<acc_t>(g[l]);
      }
      if constexpr (!std::is_same_v<acc_t, T>)
        for (int64_t e = 0; e < HW; ++e) out[e] = static_cast<T>(sum[e]);
    }
  });
  const int64_t b = bad.load();
  EMBER_CHECK(b < 0, "max_pool2d_backward: index ", b < 0 ? 0 : idx[b], " at output position ", b,
              " lies outside its plane of ", HW, " elements (input shape ", grad_input.sizes(),
              ")");
}

void max_pool2d_backward_kernel(const Tensor& grad_out, const Tensor& indices,
                                const Tensor& grad_input) {
  EMBER_DISPATCH_FLOATING(grad_out.dtype(), "max_pool2d_backward", [&] {
    max_pool2d_backward_typed<scalar_t>(grad_out, indices, grad_input);
  });
}

// input: (N, C, H, W) -> out: (N, C, out_h, out_w). PyTorch's divisor: the window clipped to
// the padded input (count_include_pad) or to the input, unless overridden (divisor != 0).
template <class T>
void avg_pool2d_typed(const Tensor& input, const Tensor& out, const Window2d& g,
                      bool count_include_pad, int64_t divisor) {
  using acc_t = opmath_t<T>;
  const T* x = input.data_ptr<T>();
  T* y = out.data_ptr<T>();
  const int64_t planes = input.size(0) * input.size(1);
  const int64_t H = g.in_h, W = g.in_w, L = g.out_h * g.out_w;
  parallel_for(0, planes, plane_grain(L * g.kh * g.kw), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const T* plane = x + p * H * W;
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          // The window in padded coordinates, then clipped to the input.
          int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
          int64_t h1 = std::min(h0 + g.kh, H + g.ph), w1 = std::min(w0 + g.kw, W + g.pw);
          const int64_t padded_size = (h1 - h0) * (w1 - w0);
          h0 = std::max<int64_t>(h0, 0);
          w0 = std::max<int64_t>(w0, 0);
          h1 = std::min(h1, H);
          w1 = std::min(w1, W);
          acc_t sum = 0;
          for (int64_t ih = h0; ih < h1; ++ih)
            for (int64_t iw = w0; iw < w1; ++iw) sum += static_cast<acc_t>(plane[ih * W + iw]);
          const int64_t count = divisor != 0        ? divisor
                                : count_include_pad ? padded_size
                                                    : (h1 - h0) * (w1 - w0);
          y[p * L + oh * g.out_w + ow] =
              count != 0 ? static_cast<T>(sum / static_cast<acc_t>(count)) : T(0);
        }
      }
    }
  });
}

void avg_pool2d_kernel(const Tensor& input, const Tensor& out, const Window2d& g,
                       bool count_include_pad, int64_t divisor) {
  EMBER_DISPATCH_FLOATING(input.dtype(), "avg_pool2d", [&] {
    avg_pool2d_typed<scalar_t>(input, out, g, count_include_pad, divisor);
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(max_pool2d_stub, DeviceType::CPU, max_pool2d_kernel);
EMBER_REGISTER_KERNEL(max_pool2d_backward_stub, DeviceType::CPU, max_pool2d_backward_kernel);
EMBER_REGISTER_KERNEL(avg_pool2d_stub, DeviceType::CPU, avg_pool2d_kernel);

}  // namespace ember::kernels::cpu
