// CUDA kernels for im2col and col2im (core/ops/conv.h), F.unfold and F.fold of a batch of
// images, every floating dtype.
//
// - im2col: one thread per element of the (N, C * kh * kw, L) result, reading its input pixel
//   or writing 0 in the padding; neighbouring threads write neighbouring positions l.
// - col2im: a gather, one thread per pixel (n, c, ih, iw) of the (N, C, H, W) result. The taps
//   (i, j) that can reach the pixel are visited in the CPU kernel's order (i, then j); each
//   reaches it from at most one position (oh, ow), found by solving
//   oh * sh = ih + ph - i * dh (no integer solution in range: no contribution). The sum runs in
//   opmath (float for 16-bit) and rounds once, so the result is the CPU's, bit for bit, and no
//   two threads write one pixel (no atomics, deterministic).

#include <cstdint>

#include "core/ops/conv.h"
#include "kernels/cuda/common.cuh"
#include "kernels/math/convert.h"

namespace ember::kernels::cuda {

namespace {

constexpr int kThreads = 256;

// A Window2d as a kernel parameter (the struct is plain, so it travels as is).
using Win = Window2d;

// x (N, C, H, W) -> y (N, C * kh * kw, L); n_out elements.
template <class T>
__global__ void im2col_kernel(const T* x, T* y, int64_t n_out, Win g) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n_out) return;
  const int64_t L = g.out_h * g.out_w, kk = g.kh * g.kw;
  const int64_t l = e % L, row = e / L;  // row = (n * C + c) * kk + (i * kw + j)
  const int64_t plane = row / kk, ij = row % kk;
  const int64_t ih = (l / g.out_w) * g.sh - g.ph + (ij / g.kw) * g.dh;
  const int64_t iw = (l % g.out_w) * g.sw - g.pw + (ij % g.kw) * g.dw;
  const bool inside = ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w;
  y[e] = inside ? x[(plane * g.in_h + ih) * g.in_w + iw] : T(0);
}

// x (N, C * kh * kw, L) -> y (N, C, H, W); n_out elements.
template <class T>
__global__ void col2im_kernel(const T* x, T* y, int64_t n_out, Win g) {
  using acc_t = opmath_t<T>;
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n_out) return;
  const int64_t HW = g.in_h * g.in_w, L = g.out_h * g.out_w, kk = g.kh * g.kw;
  const int64_t plane = e / HW, ih = e % HW / g.in_w, iw = e % g.in_w;
  const T* col = x + plane * kk * L;  // (kh * kw, L) of plane (n, c)
  acc_t sum = acc_t(0);
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t th = ih + g.ph - i * g.dh;  // = oh * sh
    if (th < 0 || th % g.sh != 0 || th / g.sh >= g.out_h) continue;
    const int64_t oh = th / g.sh;
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t tw = iw + g.pw - j * g.dw;  // = ow * sw
      if (tw < 0 || tw % g.sw != 0 || tw / g.sw >= g.out_w) continue;
      sum += static_cast<acc_t>(col[(i * g.kw + j) * L + oh * g.out_w + tw / g.sw]);
    }
  }
  y[e] = math::convert<T>(sum);
}

void im2col_cuda(const Tensor& input, const Tensor& out, const Window2d& g) {
  DeviceGuard guard(input.device());
  const Stream stream = current_stream(input.device());
  const int64_t n = out.numel();
  EMBER_DISPATCH_FLOATING(input.dtype(), "im2col", [&] {
    launch_kernel("im2col_kernel", &im2col_kernel<scalar_t>, dim3(blocks_for(n, kThreads)),
                  dim3(kThreads), 0, stream, input.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
                  n, g);
  });
}

void col2im_cuda(const Tensor& input, const Tensor& out, const Window2d& g) {
  DeviceGuard guard(input.device());
  const Stream stream = current_stream(input.device());
  const int64_t n = out.numel();
  EMBER_DISPATCH_FLOATING(input.dtype(), "col2im", [&] {
    launch_kernel("col2im_kernel", &col2im_kernel<scalar_t>, dim3(blocks_for(n, kThreads)),
                  dim3(kThreads), 0, stream, input.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
                  n, g);
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(im2col_stub, DeviceType::CUDA, im2col_cuda);
EMBER_REGISTER_KERNEL(col2im_stub, DeviceType::CUDA, col2im_cuda);

}  // namespace ember::kernels::cuda
