// CPU kernel for conv2d's backward (conv2d_backward_fn in core/ops/conv.h).
//
// Every tensor arrives contiguous and batched, the geometry checked (Window2d). The batch is
// split into one range of images per thread, each accumulating its own weight gradient; the
// products run through kernels/cpu/gemm.h, and for float32 with stride 1 through the padded grid
// of Note [Implicit im2col] (kernels/cpu/conv_utils.h).

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/ops/conv.h"
#include "core/parallel.h"
#include "kernels/cpu/conv_utils.h"
#include "kernels/cpu/gemm.h"

namespace ember::kernels::cpu {

namespace {

// Whether the weight gradient of one group is better computed transposed, as
// (K, O / groups) = cols @ gy^T rather than (O / groups, K) = gy @ cols^T: the orientation whose
// C fills more of the micro-kernel's register tiles (12 rows by 32 columns), e.g. K = 9 rows
// for a one-channel 3x3 kernel instead of 9 of 32 columns.
bool weight_grad_transposed(int64_t Og, int64_t K) {
  auto fill = [](int64_t rows, int64_t cols) {
    const int64_t tile_rows = (rows + 11) / 12 * 12, tile_cols = (cols + 31) / 32 * 32;
    const double r = static_cast<double>(rows) / static_cast<double>(tile_rows);
    const double c = static_cast<double>(cols) / static_cast<double>(tile_cols);
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
  const bool w_finite =
      implicit && need_x && std::all_of(w, w + O * K, [](T v) { return std::isfinite(v); });

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
          out[(grp * Og + o) * K + k] =
              sum_at(grp * Og * K + (transposed ? k * Og + o : o * K + k));
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

}  // namespace

EMBER_REGISTER_KERNEL(conv2d_backward_stub, DeviceType::CPU, conv2d_backward_kernel);

}  // namespace ember::kernels::cpu
