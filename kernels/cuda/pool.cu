// CUDA kernels for the pooling building blocks (core/ops/conv.h): max_pool2d (with its
// indices), its backward, and avg_pool2d, every floating dtype.
//
// - max_pool2d and avg_pool2d: one thread per output position, running the CPU kernel's loop
//   (kernels/cpu/pool.cpp) over its window: the same visiting order, the same rule (the first
//   maximum wins, a NaN always wins, padding is -inf), opmath accumulation, so the same bits.
//
// Note [Deterministic max_pool2d backward on CUDA]
// grad_input[p] of a plane sums grad_out[l] over the outputs l whose index is p. The stub gets
// only grad_out and the indices (not the window: max_pool2d_backward_fn), so a thread per input
// pixel cannot find its windows. Instead one warp owns one plane: it clears the plane, then walks
// the outputs in chunks of 32 (lane t holding output l0 + t) in order; within a chunk the lanes
// that hold the same index form a group, and every lane of a group adds the group's gradients
// in lane order onto the pixel's value read at the chunk's start, the lowest lane writing it
// back. So each pixel receives its gradients in increasing l, exactly the CPU's order: the
// result is the CPU's bit for bit, on every run, with no atomics. 16-bit gradients accumulate in
// a float32 scratch plane, rounded once at the end. An index outside its plane is recorded on
// the device and raised as the CPU's error after the kernel.

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/allocator.h"
#include "core/ops/conv.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/indexing.cuh"
#include "kernels/math/convert.h"

namespace ember::kernels::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = 4;  // max_pool2d_backward: one plane per warp

template <class A>
__device__ __forceinline__ A negative_infinity() {
  return -static_cast<A>(INFINITY);
}

// x (N, C, H, W) -> y, idx (N, C, out_h, out_w); n_out positions.
template <class T>
__global__ void max_pool2d_kernel(const T* x, T* y, int64_t* idx, int64_t n_out, Window2d g) {
  using acc_t = opmath_t<T>;
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n_out) return;
  const int64_t L = g.out_h * g.out_w, H = g.in_h, W = g.in_w;
  const int64_t p = e / L, oh = e % L / g.out_w, ow = e % g.out_w;
  const T* plane = x + p * H * W;
  int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
  const int64_t h1 = h0 + (g.kh - 1) * g.dh + 1 < H ? h0 + (g.kh - 1) * g.dh + 1 : H;
  const int64_t w1 = w0 + (g.kw - 1) * g.dw + 1 < W ? w0 + (g.kw - 1) * g.dw + 1 : W;
  while (h0 < 0) h0 += g.dh;
  while (w0 < 0) w0 += g.dw;
  int64_t best_index = h0 * W + w0;
  acc_t best = negative_infinity<acc_t>();
  for (int64_t ih = h0; ih < h1; ih += g.dh) {
    for (int64_t iw = w0; iw < w1; iw += g.dw) {
      const acc_t v = static_cast<acc_t>(plane[ih * W + iw]);
      if (v > best || v != v) {
        best = v;
        best_index = ih * W + iw;
      }
    }
  }
  y[e] = math::convert<T>(best);
  idx[e] = best_index;
}

// x (N, C, H, W) -> y (N, C, out_h, out_w); divisor 0 when not overridden.
template <class T>
__global__ void avg_pool2d_kernel(const T* x, T* y, int64_t n_out, Window2d g,
                                  bool count_include_pad, int64_t divisor) {
  using acc_t = opmath_t<T>;
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n_out) return;
  const int64_t L = g.out_h * g.out_w, H = g.in_h, W = g.in_w;
  const int64_t p = e / L, oh = e % L / g.out_w, ow = e % g.out_w;
  const T* plane = x + p * H * W;
  // The window in padded coordinates, then clipped to the input (the CPU kernel's divisor).
  int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
  int64_t h1 = h0 + g.kh < H + g.ph ? h0 + g.kh : H + g.ph;
  int64_t w1 = w0 + g.kw < W + g.pw ? w0 + g.kw : W + g.pw;
  const int64_t padded_size = (h1 - h0) * (w1 - w0);
  h0 = h0 > 0 ? h0 : 0;
  w0 = w0 > 0 ? w0 : 0;
  h1 = h1 < H ? h1 : H;
  w1 = w1 < W ? w1 : W;
  acc_t sum = acc_t(0);
  for (int64_t ih = h0; ih < h1; ++ih)
    for (int64_t iw = w0; iw < w1; ++iw) sum += static_cast<acc_t>(plane[ih * W + iw]);
  const int64_t count = divisor != 0        ? divisor
                        : count_include_pad ? padded_size
                                            : (h1 - h0) * (w1 - w0);
  y[e] = count != 0 ? math::convert<T>(sum / static_cast<acc_t>(count)) : T(0);
}

// Note [Deterministic max_pool2d backward on CUDA]. gy, idx (planes, L) -> gx (planes, HW);
// acc: gx itself (T = A) or a float32 scratch (planes, HW) for 16-bit T.
template <class T, class A>
__global__ void max_pool2d_backward_kernel(const T* gy, const int64_t* idx, T* gx, A* acc,
                                           int64_t planes, int64_t L, int64_t HW,
                                           DeviceCheckSlot* err) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t p = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (p >= planes) return;  // a whole warp leaves together
  A* sum = acc + p * HW;
  for (int64_t e = lane; e < HW; e += 32) sum[e] = A(0);
  __syncwarp();
  for (int64_t l0 = 0; l0 < L; l0 += 32) {
    const int64_t l = l0 + lane;
    int64_t at = -1;
    A v = A(0);
    if (l < L) {
      at = idx[p * L + l];
      v = static_cast<A>(gy[p * L + l]);
      if (at < 0 || at >= HW) {
        record_bad_value(err, at, p * L + l);
        at = -1;
      }
    }
    A cur = at >= 0 ? sum[at] : A(0);
    bool leader = true;
    for (int s = 0; s < 32; ++s) {
      const int64_t at_s = __shfl_sync(0xffffffffu, at, s);
      const A v_s = __shfl_sync(0xffffffffu, v, s);
      if (at >= 0 && at_s == at) {
        cur += v_s;
        if (s < lane) leader = false;
      }
    }
    __syncwarp();
    if (at >= 0 && leader) sum[at] = cur;
    __syncwarp();
  }
  if (static_cast<void*>(acc) != static_cast<void*>(gx))
    for (int64_t e = lane; e < HW; e += 32) gx[p * HW + e] = math::convert<T>(sum[e]);
}

void max_pool2d_cuda(const Tensor& input, const Tensor& out, const Tensor& indices,
                     const Window2d& g) {
  DeviceGuard guard(input.device());
  const Stream stream = current_stream(input.device());
  const int64_t n = out.numel();
  EMBER_DISPATCH_FLOATING(input.dtype(), "max_pool2d", [&] {
    launch_kernel("max_pool2d_kernel", &max_pool2d_kernel<scalar_t>, dim3(blocks_for(n, kThreads)),
                  dim3(kThreads), 0, stream, input.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
                  indices.data_ptr<int64_t>(), n, g);
  });
}

void avg_pool2d_cuda(const Tensor& input, const Tensor& out, const Window2d& g,
                     bool count_include_pad, int64_t divisor) {
  DeviceGuard guard(input.device());
  const Stream stream = current_stream(input.device());
  const int64_t n = out.numel();
  EMBER_DISPATCH_FLOATING(input.dtype(), "avg_pool2d", [&] {
    launch_kernel("avg_pool2d_kernel", &avg_pool2d_kernel<scalar_t>, dim3(blocks_for(n, kThreads)),
                  dim3(kThreads), 0, stream, input.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
                  n, g, count_include_pad, divisor);
  });
}

void max_pool2d_backward_cuda(const Tensor& grad_out, const Tensor& indices,
                              const Tensor& grad_input) {
  const char* op = "max_pool2d_backward";
  DeviceGuard guard(grad_out.device());
  const Stream stream = current_stream(grad_out.device());
  const int64_t planes = grad_input.size(0) * grad_input.size(1);
  const int64_t HW = grad_input.size(2) * grad_input.size(3);
  const int64_t L = grad_out.size(2) * grad_out.size(3);
  DeviceCheck check(stream);
  const unsigned blocks = blocks_for(planes, kWarpsPerBlock);
  EMBER_DISPATCH_FLOATING(grad_out.dtype(), op, [&] {
    using A = opmath_t<scalar_t>;
    scalar_t* gx = grad_input.data_ptr<scalar_t>();
    DataPtr scratch;
    A* acc = reinterpret_cast<A*>(gx);
    if constexpr (!std::is_same_v<A, scalar_t>) {
      scratch = get_allocator(DeviceType::CUDA)
                    ->allocate(static_cast<size_t>(planes * HW) * sizeof(A), stream);
      acc = static_cast<A*>(scratch.get());
    }
    launch_kernel("max_pool2d_backward_kernel", &max_pool2d_backward_kernel<scalar_t, A>,
                  dim3(blocks), dim3(32 * kWarpsPerBlock), 0, stream, grad_out.data_ptr<scalar_t>(),
                  indices.data_ptr<int64_t>(), gx, acc, planes, L, HW, check.slot());
  });
  const std::vector<int64_t> shape = grad_input.sizes();
  check.defer("max_pool2d_backward_kernel", [op, HW, shape](int64_t at, int64_t where) {
    return ::ember::detail::str(op, ": index ", at, " at output position ", where,
                                " lies outside its plane of ", HW, " elements (input shape ", shape,
                                ")");
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(max_pool2d_stub, DeviceType::CUDA, max_pool2d_cuda);
EMBER_REGISTER_KERNEL(max_pool2d_backward_stub, DeviceType::CUDA, max_pool2d_backward_cuda);
EMBER_REGISTER_KERNEL(avg_pool2d_stub, DeviceType::CUDA, avg_pool2d_cuda);

}  // namespace ember::kernels::cuda
