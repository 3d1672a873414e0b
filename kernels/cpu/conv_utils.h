#pragma once
// Helpers shared by the CPU convolution and pooling kernels (im2col.cpp, conv2d.cpp,
// conv2d_backward.cpp, pool.cpp): the work split over image planes, the im2col / col2im of a
// block of channels, and the padded grid of Note [Implicit im2col]. Internal to kernels/cpu.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/ops/conv.h"
#include "core/parallel.h"

namespace ember::kernels::cpu {

// Planes per parallel_for task, so that a task has about kGrainSize elements of work.
inline int64_t plane_grain(int64_t work_per_plane) {
  return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, work_per_plane));
}

// The window positions ow in [lo, hi) of one output row whose tap j (of kernel column j) lands
// inside the input row: 0 <= ow * sw - pw + j * dw < W. Outside that range the tap reads padding.
struct TapRange {
  int64_t lo, hi;
};
inline TapRange tap_range(const Window2d& g, int64_t j) {
  const int64_t off = j * g.dw - g.pw;  // iw = ow * sw + off
  // lo = ceil(-off / sw) clamped to [0, out_w]; hi = ceil((W - off) / sw) clamped to [lo, out_w].
  auto ceil_div = [](int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); };
  const int64_t lo = std::clamp<int64_t>(ceil_div(-off, g.sw), 0, g.out_w);
  const int64_t hi = std::clamp<int64_t>(ceil_div(g.in_w - off, g.sw), lo, g.out_w);
  return {lo, hi};
}

// Writes window positions [l0, l0 + ncols) of the im2col matrix of `channels` planes.
//   x:   (channels, in_h, in_w)
//   col: (channels * kh * kw, ncols); row (c * kh + i) * kw + j, column l - l0 holds
//        x[c, oh * sh - ph + i * dh, ow * sw - pw + j * dw] for l = oh * out_w + ow, or 0 in
//        the padding.
// Each output row is split into its padded ends (zeros) and the middle, a contiguous copy for
// stride 1 or a strided gather: no bounds test per element.
template <class T>
void im2col_block(const T* x, int64_t channels, const Window2d& g, int64_t l0, int64_t ncols,
                  T* col, int64_t col_rs) {
  const int64_t H = g.in_h, W = g.in_w, sw = g.sw;
  for (int64_t c = 0; c < channels; ++c) {
    const T* plane = x + c * H * W;
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        T* dst = col + ((c * g.kh + i) * g.kw + j) * col_rs;
        const TapRange r = tap_range(g, j);
        const int64_t off = j * g.dw - g.pw;
        // One output row oh (or the part of it inside [l0, l0 + ncols)) at a time.
        for (int64_t l = l0; l < l0 + ncols;) {
          const int64_t oh = l / g.out_w, ow0 = l % g.out_w;
          const int64_t ow1 = std::min(g.out_w, ow0 + (l0 + ncols - l));
          T* d = dst + (l - l0);  // d[ow - ow0] is the column of position (oh, ow)
          const int64_t ih = oh * g.sh - g.ph + i * g.dh;
          if (ih < 0 || ih >= H) {
            std::fill(d, d + (ow1 - ow0), T(0));
          } else {
            const T* row = plane + ih * W;  // the tap of position ow is row[ow * sw + off]
            const int64_t lo = std::clamp(r.lo, ow0, ow1), hi = std::clamp(r.hi, lo, ow1);
            std::fill(d, d + (lo - ow0), T(0));
            if (hi == lo) {
              // the whole part lies in the padding
            } else if (sw == 1) {
              std::copy(row + lo + off, row + hi + off, d + (lo - ow0));
            } else {
              for (int64_t ow = lo; ow < hi; ++ow) d[ow - ow0] = row[ow * sw + off];
            }
            std::fill(d + (hi - ow0), d + (ow1 - ow0), T(0));
          }
          l += ow1 - ow0;
        }
      }
    }
  }
}

// The adjoint of im2col_block over a whole image: adds column l of row (c * kh + i) * kw + j of
// col (channels * kh * kw, out_h * out_w; row stride col_rs) onto
// x[c, oh * sh - ph + i * dh, ow * sw - pw + j * dw] (l = oh * out_w + ow), skipping the taps
// that fall in the padding. x: (channels, in_h, in_w), accumulated into (not cleared).
template <class T>
void col2im_block(const T* col, int64_t col_rs, int64_t channels, const Window2d& g, T* x) {
  const int64_t H = g.in_h, W = g.in_w, sw = g.sw;
  for (int64_t c = 0; c < channels; ++c) {
    T* plane = x + c * H * W;
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const T* src = col + ((c * g.kh + i) * g.kw + j) * col_rs;
        const TapRange r = tap_range(g, j);
        const int64_t off = j * g.dw - g.pw;
        if (r.hi == r.lo) continue;  // this tap lies in the padding for every position
        for (int64_t oh = 0; oh < g.out_h; ++oh) {
          const int64_t ih = oh * g.sh - g.ph + i * g.dh;
          if (ih < 0 || ih >= H) continue;
          T* row = plane + ih * W;  // the tap of position ow is row[ow * sw + off]
          const T* s = src + oh * g.out_w;
          if (sw == 1) {
            T* d = row + off + r.lo;  // in bounds: r.lo + off >= 0
            for (int64_t ow = 0; ow < r.hi - r.lo; ++ow) d[ow] += s[r.lo + ow];
          } else {
            for (int64_t ow = r.lo; ow < r.hi; ++ow) row[ow * sw + off] += s[ow];
          }
        }
      }
    }
  }
}

// Note [Implicit im2col]
// For stride 1, conv2d need not build the im2col matrix of a float32 image. The image's
// channels are copied once into a zero-padded buffer P (C, Hq, Wq), Hq = H + 2 ph and
// Wq = W + 2 pw, and the output is computed on a grid as wide as P's rows: grid column
// n = oh * Wq + ow for ow in [0, Wq), of which ow < out_w are real positions. Then row
// (c, i, j) of the im2col matrix, restricted to the grid, is the contiguous run
//   P[c] + i * dh * Wq + j * dw,   n = 0 .. out_h * Wq - 1,
// so the GEMM reads it through a line pointer (kernels/cpu/gemm.h GemmLines) and packs it
// straight from P, which stays in L1/L2. The Wq - out_w extra grid columns per row cost
// (Wq - out_w) / Wq of the product (2 of 16 for 14 x 14 images with padding 1) and are dropped
// when the output is copied out; the extra columns read real pixels of the next row, so they
// are never kept. The weight gradient uses the same grid with grad_out spread onto it and zeros
// in the extra columns: then the extra columns add 0 * pixel, which is 0 only for finite pixels,
// so an image with a non-finite value takes the explicit im2col path instead.

// The grid of Note [Implicit im2col] for a stride-1 window.
struct Grid {
  int64_t Hq, Wq, plane, cols;  // padded rows and columns, Hq * Wq, out_h * Wq grid columns
};
inline Grid implicit_grid(const Window2d& g) {
  const int64_t Hq = g.in_h + 2 * g.ph, Wq = g.in_w + 2 * g.pw;
  return {Hq, Wq, Hq * Wq, g.out_h * Wq};
}
inline bool implicit_applies(const Window2d& g) { return g.sh == 1 && g.sw == 1; }

// Copies `channels` planes (H, W) of x into P (channels, Hq, Wq) with zero borders, plus Wq
// zeros after the last plane (the extra grid columns of the last taps read up to there).
// Returns whether every value copied is finite.
inline bool fill_padded(const float* x, int64_t channels, const Window2d& g, const Grid& q,
                        float* P) {
  const int64_t H = g.in_h, W = g.in_w;
  bool finite = true;
  for (int64_t c = 0; c < channels; ++c) {
    float* pc = P + c * q.plane;
    std::fill(pc, pc + g.ph * q.Wq, 0.0f);
    for (int64_t h = 0; h < H; ++h) {
      float* row = pc + (g.ph + h) * q.Wq;
      const float* src = x + (c * H + h) * W;
      std::fill(row, row + g.pw, 0.0f);
      // A float is finite unless its exponent bits are all ones: OR together, per value, the
      // "all ones" test (integer operations, so the loop vectorizes).
      uint32_t non_finite = 0;
      for (int64_t w = 0; w < W; ++w) {
        const float v = src[w];
        uint32_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        non_finite |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
        row[g.pw + w] = v;
      }
      finite &= non_finite == 0;
      std::fill(row + g.pw + W, row + q.Wq, 0.0f);
    }
    std::fill(pc + (g.ph + H) * q.Wq, pc + q.plane, 0.0f);
  }
  std::fill(P + channels * q.plane, P + channels * q.plane + q.Wq, 0.0f);
  return finite;
}

// The line pointers of the implicit im2col rows (c, i, j) of P, in im2col row order.
inline void implicit_lines(const float* P, int64_t channels, const Window2d& g, const Grid& q,
                           std::vector<const float*>& lines) {
  lines.resize(static_cast<size_t>(channels * g.kh * g.kw));
  size_t r = 0;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) lines[r++] = P + c * q.plane + i * g.dh * q.Wq + j * g.dw;
}

}  // namespace ember::kernels::cpu
