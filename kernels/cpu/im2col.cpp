// CPU kernels for im2col and col2im (core/ops/conv.h), the unfold / fold of a batch of images.
//
// Every tensor arrives contiguous and batched, the geometry checked (Window2d). Work is split
// over the thread pool by image planes (n, c); each task writes its own planes of the output.

#include <algorithm>
#include <vector>

#include "core/ops/conv.h"
#include "core/parallel.h"
#include "kernels/cpu/conv_utils.h"

namespace ember::kernels::cpu {

namespace {

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

}  // namespace

EMBER_REGISTER_KERNEL(im2col_stub, DeviceType::CPU, im2col_kernel);
EMBER_REGISTER_KERNEL(col2im_stub, DeviceType::CPU, col2im_kernel);

}  // namespace ember::kernels::cpu
