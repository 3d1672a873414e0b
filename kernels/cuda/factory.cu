// CUDA kernels of the filling factories: arange, linspace (kernels/math/factory.h, the functors
// the CPU kernels apply) and eye's diagonal. full and zeros fill through fill_stub
// (kernels/cuda/copy.cu).

#include <algorithm>

#include "core/ops/factory.h"
#include "kernels/cuda/common.cuh"
#include "kernels/math/factory.h"

namespace ember::kernels::cuda {

namespace {

constexpr int kThreads = 256;

// out[i] = op(i) for i < n. out: (n,) contiguous; n < 2^31 (checked by the caller).
template <class T, class Op>
__global__ void fill_indexed_kernel(T* out, int64_t n, Op op) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = op(i);
}

// out[i * (m + 1)] = 1 for i < k: the diagonal of a contiguous (n, m) out, already zeroed.
template <class T>
__global__ void eye_kernel(T* out, int64_t k, int64_t m) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < k) out[i * (m + 1)] = static_cast<T>(1);
}

template <class T, class Op>
void fill_indexed(const Tensor& out, const Op& op, const char* op_name) {
  const int64_t n = out.numel();
  if (n == 0) return;
  EMBER_CHECK(n <= INT32_MAX, op_name, ": ", n, " elements; a CUDA factory takes up to 2^31 - 1");
  DeviceGuard guard(out.device());
  launch_kernel(op_name, &fill_indexed_kernel<T, Op>, dim3(blocks_for(n, kThreads)), dim3(kThreads),
                0, current_stream(out.device()), out.data_ptr<T>(), n, op);
}

void arange_kernel(const Tensor& out, const ArangeArgs& args) {
  EMBER_DISPATCH_NUMERIC(out.dtype(), "arange", [&] {
    if (args.floating)
      fill_indexed<scalar_t>(out, math::ArangeOp<scalar_t>{args.start, args.step}, "arange");
    else
      fill_indexed<scalar_t>(out, math::ArangeIntOp<scalar_t>{args.int_start, args.int_step},
                             "arange");
  });
}

void linspace_kernel(const Tensor& out, double start, double end) {
  EMBER_DISPATCH_NUMERIC(out.dtype(), "linspace", [&] {
    fill_indexed<scalar_t>(out, math::LinspaceOp<scalar_t>::make(start, end, out.numel()),
                           "linspace");
  });
}

void eye_cuda_kernel(const Tensor& out) {
  const int64_t n = out.size(0), m = out.size(1), k = std::min(n, m);
  if (k == 0) return;
  DeviceGuard guard(out.device());
  EMBER_DISPATCH_ALL(out.dtype(), "eye", [&] {
    launch_kernel("eye_kernel", &eye_kernel<scalar_t>, dim3(blocks_for(k, kThreads)),
                  dim3(kThreads), 0, current_stream(out.device()), out.data_ptr<scalar_t>(), k, m);
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(arange_stub, DeviceType::CUDA, arange_kernel);
EMBER_REGISTER_KERNEL(linspace_stub, DeviceType::CUDA, linspace_kernel);
EMBER_REGISTER_KERNEL(eye_stub, DeviceType::CUDA, eye_cuda_kernel);

}  // namespace ember::kernels::cuda
