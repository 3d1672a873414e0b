// CPU kernel for conv2d's forward (core/ops/conv.h).
//
// Every tensor arrives contiguous and batched, the geometry checked (Window2d). Work is split
// over the thread pool by (image, group) pairs and, when those are fewer than the threads, by
// ranges of output positions too. Each task writes its own part of the output, so nothing is
// shared between threads. conv2d is im2col + one single-threaded GEMM per task
// (kernels/cpu/gemm.h: ember's packed AVX-512/AVX2 kernel for float32, which runs on the calling
// thread inside a pool task), or for float32 with stride 1 the GEMM reads the padded image
// directly (Note [Implicit im2col] in kernels/cpu/conv_utils.h).

#include <algorithm>
#include <type_traits>
#include <vector>

#include "core/ops/conv.h"
#include "core/parallel.h"
#include "kernels/cpu/conv_utils.h"
#include "kernels/cpu/gemm.h"

namespace ember::kernels::cpu {

namespace {

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

}  // namespace

EMBER_REGISTER_KERNEL(conv2d_stub, DeviceType::CPU, conv2d_kernel);

}  // namespace ember::kernels::cpu
