// CPU kernels for the convolution and pooling building blocks (core/ops/conv.h).
//
// Every tensor arrives contiguous and batched, the geometry checked (Window2d). Work is split
// over the thread pool by image planes (n, c) -- or, for conv2d, by (image, group) pairs and,
// when those are fewer than the threads, by ranges of output positions too. Each task writes
// its own part of the output, so nothing is shared between threads. conv2d is im2col + one
// single-threaded GEMM per task (kernels/cpu/gemm.h: ember's packed AVX-512/AVX2 kernel for
// float32, which runs on the calling thread inside a pool task). conv2d's backward splits the
// batch into one range of images per thread, each accumulating its own weight gradient.

#include "core/ops/conv.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "kernels/cpu/gemm.h"

namespace ember::kernels::cpu {

namespace {

// Planes per parallel_for task, so that a task has about kGrainSize elements of work.
int64_t plane_grain(int64_t work_per_plane) {
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

// input: (N, C, H, W) -> out: (N, C * kh * kw, L)
template <class T>
void im2col_typed(const Tensor& input, const Tensor& out, const Window2d& g) {
  const T* x = input.data_ptr<T>();
  T* y = out.data_ptr<T>();
  const int64_t planes = input.size(0) * input.size(1);  // (n, c) pairs
  const int64_t hw = g.in_h * g.in_w, rows = g.kh * g.kw, L = g.out_h * g.out_w;
  parallel_for(0, planes, plane_grain(rows * L), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) im2col_block(x + p * hw, 1, g, 0, L, y + p * rows * L, L);
  });
}

void im2col_kernel(const Tensor& input, const Tensor& out, const Window2d& g) {
  EMBER_DISPATCH_FLOATING(input.dtype(), "im2col", [&] { im2col_typed<scalar_t>(input, out, g); });
}

// input: (N, C * kh * kw, L) -> out: (N, C, H, W). Each (n, c) plane sums its kh * kw rows into
// a float accumulator (the input dtype for float64), then rounds once.
template <class T>
void col2im_typed(const Tensor& input, const Tensor& out, const Window2d& g) {
  using acc_t = opmath_t<T>;
  const T* x = input.data_ptr<T>();
  T* y = out.data_ptr<T>();
  const int64_t planes = out.size(0) * out.size(1);
  const int64_t H = g.in_h, W = g.in_w, rows = g.kh * g.kw, L = g.out_h * g.out_w;
  parallel_for(0, planes, plane_grain(rows * L), [&](int64_t p0, int64_t p1) {
    std::vector<acc_t> acc(static_cast<size_t>(H * W));
    for (int64_t p = p0; p < p1; ++p) {
      std::fill(acc.begin(), acc.end(), acc_t(0));
      const T* col = x + p * rows * L;  // (kh * kw, L) of plane p
      for (int64_t i = 0; i < g.kh; ++i) {
        for (int64_t j = 0; j < g.kw; ++j) {
          const T* row = col + (i * g.kw + j) * L;
          for (int64_t oh = 0; oh < g.out_h; ++oh) {
            const int64_t ih = oh * g.sh - g.ph + i * g.dh;
            if (ih < 0 || ih >= H) continue;
            for (int64_t ow = 0; ow < g.out_w; ++ow) {
              const int64_t iw = ow * g.sw - g.pw + j * g.dw;
              if (iw >= 0 && iw < W) acc[ih * W + iw] += static_cast<acc_t>(row[oh * g.out_w + ow]);
            }
          }
        }
      }
      T* plane = y + p * H * W;
      for (int64_t e = 0; e < H * W; ++e) plane[e] = static_cast<T>(acc[e]);
    }
  });
}

void col2im_kernel(const Tensor& input, const Tensor& out, const Window2d& g) {
  EMBER_DISPATCH_FLOATING(input.dtype(), "col2im", [&] { col2im_typed<scalar_t>(input, out, g); });
}

// Output positions per task below which a GEMM is not worth splitting further.
constexpr int64_t kMinColumnsPerTask = 64;
// Below this many output positions per image, conv2d batches images into one GEMM.
constexpr int64_t kBatchedColumns = 512;

// rows (rows, cols) with row stride rs, plus bias[r] on row r.
template <class T>
void add_bias(T* y, int64_t rs, const T* bias, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    T* row = y + r * rs;
    for (int64_t c = 0; c < cols; ++c) row[c] += bias[r];
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
Grid implicit_grid(const Window2d& g) {
  const int64_t Hq = g.in_h + 2 * g.ph, Wq = g.in_w + 2 * g.pw;
  return {Hq, Wq, Hq * Wq, g.out_h * Wq};
}
bool implicit_applies(const Window2d& g) { return g.sh == 1 && g.sw == 1; }

// Copies `channels` planes (H, W) of x into P (channels, Hq, Wq) with zero borders, plus Wq
// zeros after the last plane (the extra grid columns of the last taps read up to there).
// Returns whether every value copied is finite.
bool fill_padded(const float* x, int64_t channels, const Window2d& g, const Grid& q, float* P) {
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
void implicit_lines(const float* P, int64_t channels, const Window2d& g, const Grid& q,
                    std::vector<const float*>& lines) {
  lines.resize(static_cast<size_t>(channels * g.kh * g.kw));
  size_t r = 0;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) lines[r++] = P + c * q.plane + i * g.dh * q.Wq + j * g.dw;
}

// out[n, g's outputs] for one image and group through Note [Implicit im2col]: y (Og, L) rows
// of the output, w (Og, K) the group's weights, b its bias or null.
void conv2d_implicit(const float* x, int64_t Cg, const float* w, int64_t Og, const float* b,
                     const Window2d& g, float* y, std::vector<float>& P, std::vector<float>& grid,
                     std::vector<const float*>& lines) {
  const Grid q = implicit_grid(g);
  const int64_t K = Cg * g.kh * g.kw;
  P.resize(static_cast<size_t>(Cg * q.plane + q.Wq));
  grid.resize(static_cast<size_t>(Og * q.cols));
  fill_padded(x, Cg, g, q, P.data());
  implicit_lines(P.data(), Cg, g, q, lines);
  GemmOperand wa{w, K, 1, {}};
  GemmOperand cols{nullptr, 0, 0, GemmLines{lines.data(), true, 0}};
  gemm(Og, q.cols, K, 1.0f, wa, cols, 0.0f, grid.data(), q.cols, 1);
  for (int64_t o = 0; o < Og; ++o) {
    const float bo = b != nullptr ? b[o] : 0.0f;
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      const float* src = grid.data() + o * q.cols + oh * q.Wq;
      float* dst = y + (o * g.out_h + oh) * g.out_w;
      for (int64_t ow = 0; ow < g.out_w; ++ow) dst[ow] = src[ow] + bo;
    }
  }
}

// input: (N, C, H, W), weight: (O, C / groups, kh, kw), bias: (O) or undefined,
// out: (N, O, out_h, out_w). For image n and group g, with K = C / groups * kh * kw and
// L = out_h * out_w:
//   cols (K, L)          = im2col(input[n, g's channels])
//   out[n, g's outputs]  = weight[g's outputs] (O / groups, K)  @  cols  (+ bias)
// A 1x1 kernel with stride 1 and no padding reads the input plane directly as cols.
template <class T>
void conv2d_typed(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                  const Window2d& g, int64_t groups) {
  const T* x = input.data_ptr<T>();
  const T* w = weight.data_ptr<T>();
  const T* b = bias.defined() ? bias.data_ptr<T>() : nullptr;
  T* y = out.data_ptr<T>();
  const int64_t N = input.size(0), C = input.size(1), O = weight.size(0);
  const int64_t Cg = C / groups, Og = O / groups, K = Cg * g.kh * g.kw;
  const int64_t HW = g.in_h * g.in_w, L = g.out_h * g.out_w;
  const bool pointwise = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;

  // Small images make skinny GEMMs (L columns): then one task convolves `ipt` images at once,
  // their im2col matrices side by side (K, ipt * L), into a scratch (Og, ipt * L) that is
  // copied out per image. Large images instead split into ranges of output positions when
  // the (image, group) pairs alone cannot keep every thread busy.
  const int64_t pairs = N * groups;
  int64_t ipt = 1, chunks = 1;
  if (L < kBatchedColumns) {
    ipt = std::min<int64_t>(N, kBatchedColumns / std::max<int64_t>(1, L));
    // Keep at least one task per thread.
    while (ipt > 1 && ((N + ipt - 1) / ipt) * groups < num_threads()) --ipt;
  } else if (pairs < num_threads()) {
    const int64_t wanted = (num_threads() + pairs - 1) / pairs;
    chunks = std::max<int64_t>(1, std::min(wanted, L / kMinColumnsPerTask));
  }
  if constexpr (std::is_same_v<T, float>) {
    // float32, stride 1, every thread busy with whole images: Note [Implicit im2col].
    if (implicit_applies(g) && !pointwise && pairs >= num_threads()) {
      parallel_for(0, pairs, 1, [&](int64_t t0, int64_t t1) {
        std::vector<float> P, grid;
        std::vector<const float*> lines;
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t n = t / groups, grp = t % groups;
          conv2d_implicit(x + (n * C + grp * Cg) * HW, Cg, w + grp * Og * K, Og,
                          b != nullptr ? b + grp * Og : nullptr, g, y + (n * O + grp * Og) * L, P,
                          grid, lines);
        }
      });
      return;
    }
  }
  const int64_t chunk_cols = (L + chunks - 1) / chunks;
  const int64_t blocks = (N + ipt - 1) / ipt;

  parallel_for(0, blocks * groups * chunks, 1, [&](int64_t t0, int64_t t1) {
    std::vector<T> cols, scratch;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t blk = t / chunks / groups, grp = t / chunks % groups;
      const int64_t n0 = blk * ipt, n1 = std::min(N, n0 + ipt), imgs = n1 - n0;
      const int64_t l0 = t % chunks * chunk_cols, l1 = std::min(L, l0 + chunk_cols);
      if (l0 >= l1) continue;
      const int64_t ncols = l1 - l0;
      const T* wg = w + grp * Og * K;  // (Og, K), row-major
      if (imgs == 1) {
        const T* xg = x + (n0 * C + grp * Cg) * HW;  // (Cg, H, W)
        T* yg = y + (n0 * O + grp * Og) * L + l0;    // (Og, ncols) with row stride L
        const T* cols_ptr = xg + l0;                 // pointwise: the input plane is cols
        int64_t cols_rs = HW;
        if (!pointwise) {
          cols.resize(static_cast<size_t>(K * ncols));
          im2col_block(xg, Cg, g, l0, ncols, cols.data(), ncols);
          cols_ptr = cols.data();
          cols_rs = ncols;
        }
        // Inside a pool task gemm runs on this thread (kernels/cpu/gemm.h).
        gemm(Og, ncols, K, T(1), wg, K, 1, cols_ptr, cols_rs, 1, T(0), yg, L, 1);
        if (b != nullptr) add_bias(yg, L, b + grp * Og, Og, ncols);
        continue;
      }
      const int64_t width = imgs * L;
      cols.resize(static_cast<size_t>(K * width));
      scratch.resize(static_cast<size_t>(Og * width));
      for (int64_t i = 0; i < imgs; ++i)
        im2col_block(x + ((n0 + i) * C + grp * Cg) * HW, Cg, g, 0, L, cols.data() + i * L, width);
      gemm(Og, width, K, T(1), wg, K, 1, cols.data(), width, 1, T(0), scratch.data(), width, 1);
      for (int64_t i = 0; i < imgs; ++i) {
        T* yg = y + ((n0 + i) * O + grp * Og) * L;
        for (int64_t o = 0; o < Og; ++o)
          std::copy_n(scratch.data() + o * width + i * L, L, yg + o * L);
        if (b != nullptr) add_bias(yg, L, b + grp * Og, Og, L);
      }
    }
  });
}

void conv2d_kernel(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                   const Window2d& g, int64_t groups) {
  switch (input.dtype()) {
    case kFloat32:
      return conv2d_typed<float>(input, weight, bias, out, g, groups);
    case kFloat64:
      return conv2d_typed<double>(input, weight, bias, out, g, groups);
    default:
      EMBER_ERROR("conv2d: the CPU kernel takes float32 or float64, got ",
                  dtype_name(input.dtype()));
  }
}

// Whether the weight gradient of one group is better computed transposed, as
// (K, O / groups) = cols @ gy^T rather than (O / groups, K) = gy @ cols^T: the orientation whose
// C fills more of the micro-kernel's register tiles (12 rows by 32 columns), e.g. K = 9 rows
// for a one-channel 3x3 kernel instead of 9 of 32 columns.
bool weight_grad_transposed(int64_t Og, int64_t K) {
  auto fill = [](int64_t rows, int64_t cols) {
    const double r = static_cast<double>(rows) / static_cast<double>((rows + 11) / 12 * 12);
    const double c = static_cast<double>(cols) / static_cast<double>((cols + 31) / 32 * 32);
    return r * c;
  };
  return fill(K, Og) > fill(Og, K);
}

// The gradients of conv2d (conv2d_backward_fn in core/ops/conv.h). With K = C / groups * kh * kw,
// L = out_h * out_w and, for image n and group g, cols = im2col(input[n, g's channels]) (K, L)
// and gy = grad_out[n, g's outputs] (O / groups, L):
//   grad_weight[g's outputs] (O / groups, K)  +=  gy @ cols^T    (or its transpose, see
//                                                                 weight_grad_transposed)
//   grad_input[n, g's channels]  =  col2im(weight[g's outputs]^T (K, O / groups) @ gy)
//   grad_bias[o]                +=  sum over l of grad_out[n, o, l]
// float32 with stride 1 reads cols through Note [Implicit im2col] for the weight gradient.
// The images are split into at most num_threads() contiguous ranges, one task each; a task
// accumulates its weight and bias gradients in its own buffer, and the buffers are summed in
// range order at the end (the result does not depend on the scheduling). grad_input is written
// per image. The GEMMs read transposed operands through their strides (no copy).
template <class T>
void conv2d_backward_typed(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                           const Tensor& grad_input, const Tensor& grad_weight,
                           const Tensor& grad_bias, const Window2d& g, int64_t groups) {
  const bool need_x = grad_input.defined(), need_w = grad_weight.defined();
  const bool need_b = grad_bias.defined();
  const T* gy = grad_out.data_ptr<T>();
  const T* x = need_w ? input.data_ptr<T>() : nullptr;
  const T* w = need_x ? weight.data_ptr<T>() : nullptr;
  T* gx = need_x ? grad_input.data_ptr<T>() : nullptr;
  const int64_t N = grad_out.size(0), O = grad_out.size(1), Og = O / groups;
  const int64_t Cg = weight.size(1), C = Cg * groups, K = Cg * g.kh * g.kw;
  const int64_t HW = g.in_h * g.in_w, L = g.out_h * g.out_w;
  const bool pointwise = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
  const bool transposed = weight_grad_transposed(Og, K);
  const bool implicit = std::is_same_v<T, float> && implicit_applies(g) && !pointwise;
  const Grid q = implicit_grid(g);
  // The input gradient on the grid adds w^T @ 0 for the extra columns: 0 only for a finite w.
  const bool w_finite = implicit && need_x &&
                        std::all_of(w, w + O * K, [](T v) { return std::isfinite(v); });

  // Per task: the weight gradient, per group (O / groups, K) or transposed (K, O / groups),
  // then the bias gradient (O).
  const int64_t tasks = std::max<int64_t>(1, std::min<int64_t>(N, num_threads()));
  const int64_t per_task = (N + tasks - 1) / tasks;
  const int64_t acc_size = (need_w ? O * K : 0) + (need_b ? O : 0);
  std::vector<T> acc(static_cast<size_t>(tasks * acc_size), T(0));

  auto run_task = [&](int64_t task) {
    const int64_t n0 = task * per_task, n1 = std::min(N, n0 + per_task);
    T* dw = acc.data() + task * acc_size;  // groups blocks of Og * K
    T* db = dw + (need_w ? O * K : 0);     // (O)
    std::vector<T> cols, dcols;
    std::vector<float> P, grid, dP;  // Note [Implicit im2col]
    std::vector<const float*> lines;
    if (need_x && !pointwise) dcols.resize(static_cast<size_t>(K * L));
    for (int64_t n = n0; n < n1; ++n) {
      if (need_x) std::fill(gx + n * C * HW, gx + (n + 1) * C * HW, T(0));
      for (int64_t grp = 0; grp < groups; ++grp) {
        const T* gyg = gy + (n * O + grp * Og) * L;  // (Og, L)
        if constexpr (std::is_same_v<T, float>) {
          if (implicit) {
            // gy spread onto the grid of Note [Implicit im2col], zeros in the extra columns.
            grid.resize(static_cast<size_t>(Og * q.cols));
            for (int64_t o = 0; o < Og; ++o)
              for (int64_t oh = 0; oh < g.out_h; ++oh) {
                const float* src = gyg + (o * g.out_h + oh) * g.out_w;
                float* dst = grid.data() + o * q.cols + oh * q.Wq;
                for (int64_t ow = 0; ow < g.out_w; ++ow) dst[ow] = src[ow];
                for (int64_t ow = g.out_w; ow < q.Wq; ++ow) dst[ow] = 0.0f;
              }
          }
        }
        if (need_w) {
          T* dwg = dw + grp * Og * K;
          const T* xg = x + (n * C + grp * Cg) * HW;  // (Cg, H, W); pointwise: cols itself
          bool done = false;
          if constexpr (std::is_same_v<T, float>) {
            if (implicit) P.resize(static_cast<size_t>(Cg * q.plane + q.Wq));
            if (implicit && fill_padded(xg, Cg, g, q, P.data())) {
              implicit_lines(P.data(), Cg, g, q, lines);
              if (transposed) {
                // (K, Og) += cols (K, cols) @ grid^T
                gemm(K, Og, q.cols, 1.0f, GemmOperand{nullptr, 0, 0, {lines.data(), true, 0}},
                     GemmOperand{grid.data(), 1, q.cols, {}}, 1.0f, dwg, Og, 1);
              } else {
                // (Og, K) += grid (Og, cols) @ cols^T: cols^T's columns are the lines.
                gemm(Og, K, q.cols, 1.0f, GemmOperand{grid.data(), q.cols, 1, {}},
                     GemmOperand{nullptr, 0, 0, {lines.data(), false, 0}}, 1.0f, dwg, K, 1);
              }
              done = true;
            }
          }
          if (!done) {
            const T* cols_ptr = xg;
            if (!pointwise) {
              cols.resize(static_cast<size_t>(K * L));
              im2col_block(xg, Cg, g, 0, L, cols.data(), L);
              cols_ptr = cols.data();
            }
            if (transposed) {
              // (K, L) @ (L, Og): gy^T is gy read with swapped strides.
              gemm(K, Og, L, T(1), cols_ptr, L, 1, gyg, 1, L, T(1), dwg, Og, 1);
            } else {
              // (Og, L) @ (L, K): cols^T is cols read with swapped strides.
              gemm(Og, K, L, T(1), gyg, L, 1, cols_ptr, 1, L, T(1), dwg, K, 1);
            }
          }
        }
        if (need_x) {
          const T* wg = w + grp * Og * K;         // (Og, K); its transpose by strides
          T* gxg = gx + (n * C + grp * Cg) * HW;  // (Cg, H, W)
          if (pointwise) {
            gemm(K, L, Og, T(1), wg, 1, K, gyg, L, 1, T(0), gxg, L, 1);
          } else if (implicit && w_finite) {
            if constexpr (std::is_same_v<T, float>) {
              // On the grid: dcols (K, cols) = w^T @ grid, whose extra columns are w^T @ 0 = 0;
              // then col2im is one contiguous add per im2col row into the padded gradient
              // dP (Cg, Hq, Wq), whose interior is the input gradient.
              dcols.resize(static_cast<size_t>(K * q.cols));
              gemm(K, q.cols, Og, 1.0f, wg, 1, K, grid.data(), q.cols, 1, 0.0f, dcols.data(),
                   q.cols, 1);
              dP.assign(static_cast<size_t>(Cg * q.plane + q.Wq), 0.0f);
              implicit_lines(dP.data(), Cg, g, q, lines);
              for (int64_t k = 0; k < K; ++k) {
                float* dst = const_cast<float*>(lines[static_cast<size_t>(k)]);
                const float* src = dcols.data() + k * q.cols;
                for (int64_t e = 0; e < q.cols; ++e) dst[e] += src[e];
              }
              for (int64_t c = 0; c < Cg; ++c)
                for (int64_t h = 0; h < g.in_h; ++h) {
                  const float* src = dP.data() + c * q.plane + (g.ph + h) * q.Wq + g.pw;
                  float* dst = gxg + (c * g.in_h + h) * g.in_w;
                  for (int64_t e = 0; e < g.in_w; ++e) dst[e] = src[e];
                }
            }
          } else {
            gemm(K, L, Og, T(1), wg, 1, K, gyg, L, 1, T(0), dcols.data(), L, 1);
            col2im_block(dcols.data(), L, Cg, g, gxg);
          }
        }
      }
      if (need_b) {
        // Eight partial sums per row, so that the loop vectorizes.
        for (int64_t o = 0; o < O; ++o) {
          const T* row = gy + (n * O + o) * L;
          T part[8] = {};
          int64_t l = 0;
          for (; l + 8 <= L; l += 8)
            for (int k = 0; k < 8; ++k) part[k] += row[l + k];
          T s = 0;
          for (; l < L; ++l) s += row[l];
          for (int k = 0; k < 8; ++k) s += part[k];
          db[o] += s;
        }
      }
    }
  };
  if (tasks == 1) {
    run_task(0);  // on the calling thread, so that gemm may split itself over the pool
  } else {
    parallel_for(0, tasks, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) run_task(t);
    });
  }

  // Sum the tasks' buffers in task order; a transposed weight gradient is transposed back.
  auto sum_at = [&](int64_t e) {
    T s = acc[static_cast<size_t>(e)];
    for (int64_t t = 1; t < tasks; ++t) s += acc[static_cast<size_t>(t * acc_size + e)];
    return s;
  };
  if (need_w) {
    T* out = grad_weight.data_ptr<T>();
    for (int64_t grp = 0; grp < groups; ++grp)
      for (int64_t o = 0; o < Og; ++o)
        for (int64_t k = 0; k < K; ++k)
          out[(grp * Og + o) * K + k] = sum_at(grp * Og * K + (transposed ? k * Og + o : o * K + k));
  }
  if (need_b) {
    T* out = grad_bias.data_ptr<T>();
    for (int64_t o = 0; o < O; ++o) out[o] = sum_at((need_w ? O * K : 0) + o);
  }
}

void conv2d_backward_kernel(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                            const Tensor& grad_input, const Tensor& grad_weight,
                            const Tensor& grad_bias, const Window2d& g, int64_t groups) {
  switch (grad_out.dtype()) {
    case kFloat32:
      return conv2d_backward_typed<float>(grad_out, input, weight, grad_input, grad_weight,
                                          grad_bias, g, groups);
    case kFloat64:
      return conv2d_backward_typed<double>(grad_out, input, weight, grad_input, grad_weight,
                                           grad_bias, g, groups);
    default:
      EMBER_ERROR("conv2d_backward: the CPU kernel takes float32 or float64, got ",
                  dtype_name(grad_out.dtype()));
  }
}

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
inline void max_pool_2x2_row(const T* r0, const T* r1, int64_t out_w, int64_t base, int64_t W,
                             T* y, int64_t* idx) {
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
                                                                 int64_t W, float* y,
                                                                 int64_t* idx) {
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
    __mmask16 take = _mm512_cmp_ps_mask(b, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q);
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
void max_pool_2x2_row_f32(const float* r0, const float* r1, int64_t out_w, int64_t base,
                          int64_t W, float* y, int64_t* idx) {
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
              " lies outside its plane of ", HW, " elements (input shape ", grad_input.sizes(), ")");
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

EMBER_REGISTER_KERNEL(im2col_stub, DeviceType::CPU, im2col_kernel);
EMBER_REGISTER_KERNEL(col2im_stub, DeviceType::CPU, col2im_kernel);
EMBER_REGISTER_KERNEL(conv2d_stub, DeviceType::CPU, conv2d_kernel);
EMBER_REGISTER_KERNEL(conv2d_backward_stub, DeviceType::CPU, conv2d_backward_kernel);
EMBER_REGISTER_KERNEL(max_pool2d_stub, DeviceType::CPU, max_pool2d_kernel);
EMBER_REGISTER_KERNEL(max_pool2d_backward_stub, DeviceType::CPU, max_pool2d_backward_kernel);
EMBER_REGISTER_KERNEL(avg_pool2d_stub, DeviceType::CPU, avg_pool2d_kernel);

}  // namespace ember::kernels::cpu
