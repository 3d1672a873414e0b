// CUDA kernels for softmax / log_softmax (core/ops/softmax.h): out (contiguous, the input's shape
// and dtype) = softmax or log_softmax of the input along dim, computed in opmath_t (float for
// float16 / bfloat16).
//
// Note [Online softmax]
// The CPU kernel reads a line three times (max, sum of exp(x - max), outputs). Here the first two
// passes are one: each thread keeps a running max m and the sum s of exp(x - m) over the elements
// it reads, rescaling s by exp(m_old - m_new) when the max grows, and the threads' (m, s) states
// merge the same way (warp shuffles, then shared memory across warps). A second pass writes
// exp(x - m) / s or x - m - log(s). The special values follow the CPU kernel: a line holding NaN
// or +inf, or only -inf, gives NaN everywhere (there exp(x - m) is NaN for some element, so the
// CPU's sum is NaN).
//
// Note [Three softmax layouts]
// The input is made contiguous and seen as (outer, n, inner), the line being dim (n elements at
// stride inner):
// - inner == 1, n <= kWarpRowMax: a warp per row (4 rows per block of 128 threads); lanes read
//   neighbouring elements, merge with shuffles, and every lane gets the row's state back.
// - inner == 1, longer rows that fit (Note [Rows held in registers]): a block of kBlockThreads
//   per row holds the row in registers; the max and the sum are two block reductions and x is
//   read once.
// - inner == 1, other longer rows: a block of kBlockThreads per row, merged in shared memory.
// - inner > 1 (dim is not the last): a thread per line; the threads of a warp take neighbouring
//   lines, so each step reads 32 neighbouring elements (coalesced), and a line needs no merge.
//
// cuDNN's softmax is the reference (core/norm_backend.h, Note [Norm backends on CUDA] in
// kernels/cuda/norm_cudnn.h): softmax_kernel asks choose_norm_cudnn which one runs.

#include <cstdint>
#include <limits>
#include <sstream>

#include "core/dtype.h"
#include "core/ops/copy.h"
#include "core/ops/softmax.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/norm_cudnn.h"
#include "kernels/cuda/online_softmax.cuh"
#include "kernels/cuda/row_cache.cuh"
#include "kernels/cuda/warp.cuh"
#include "kernels/math/convert.h"

namespace ember::kernels::cuda {

namespace {

using math::convert;

constexpr int64_t kWarpRowMax = 1024;
constexpr int kWarpRowsPerBlock = 4;
constexpr int kBlockThreads = 512;
constexpr int kLineThreads = 128;

// The second pass over one line: y[i * step] from x[i * step], i in [begin, n) by `stride`.
template <class T, class A, bool kLog>
__device__ __forceinline__ void write_line(const T* x, T* y, int64_t n, int64_t begin,
                                           int64_t stride, int64_t step, Online<A> s) {
  if (kLog) {
    const A shift = s.max + std::log(s.sum);
    for (int64_t i = begin; i < n; i += stride)
      y[i * step] = convert<T>(convert<A>(x[i * step]) - shift);
  } else {
    const A inv = A(1) / s.sum;
    for (int64_t i = begin; i < n; i += stride)
      y[i * step] = convert<T>(std::exp(convert<A>(x[i * step]) - s.max) * inv);
  }
}

// x, y: (rows, n) contiguous; a warp per row.
template <class T, bool kLog>
__global__ void softmax_warp_kernel(const T* x, T* y, int64_t rows, int64_t n) {
  using A = opmath_t<T>;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpRowsPerBlock + threadIdx.x / 32;
  // A warp past the last row still shuffles (full mask) but reads and writes nothing.
  const bool live = row < rows;
  const T* xr = x + (live ? row : 0) * n;
  Online<A> s = Online<A>::empty();
  if (live)
    for (int64_t i = lane; i < n; i += 32) s.add(convert<A>(xr[i]));
  s = online_warp_merge(s);
  s.finish();
  if (live) write_line<T, A, kLog>(xr, y + row * n, n, lane, 32, 1, s);
}

// x, y: (rows, n) contiguous; a block of kBlockThreads per row.
template <class T, bool kLog>
__global__ void softmax_block_kernel(const T* x, T* y, int64_t n) {
  using A = opmath_t<T>;
  EMBER_SHARED_ARRAY(Online<A>, partial, kBlockThreads / 32);
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int64_t row = blockIdx.x;
  const T* xr = x + row * n;
  Online<A> s = Online<A>::empty();
  for (int64_t i = tid; i < n; i += kBlockThreads) s.add(convert<A>(xr[i]));
  s = online_warp_merge(s);
  if (lane == 0) partial[warp] = s;
  __syncthreads();
  // Every warp merges the warps' states in the same order, so all threads hold the same state.
  s = lane < kBlockThreads / 32 ? partial[lane] : Online<A>::empty();
  s = online_warp_merge(s);
  s.finish();
  write_line<T, A, kLog>(xr, y + row * n, n, tid, kBlockThreads, 1, s);
}

// x, y: (rows, n) contiguous, 16-byte aligned rows of whole vectors; a block of kBlockThreads
// per row, the row in registers (Note [Rows held in registers]): its max, then the sum of
// exp(x - max), then the outputs, with x read once. A row holding NaN or +inf, or only -inf,
// gives NaN everywhere, as the other kernels do (exp(x - max) is NaN for some element).
template <class T, bool kLog, int kVecs>
__global__ void softmax_cached_kernel(const T* x, T* y, int64_t n) {
  using A = opmath_t<T>;
  EMBER_SHARED_ARRAY(A, partial, kBlockThreads / 32);
  const int64_t row = blockIdx.x;
  RowCache<T, A, kVecs, kBlockThreads> c;
  c.load(x + row * n, n);
  A m = -std::numeric_limits<A>::infinity();
  c.for_each(n, [&](int, int, A v) { m = NanMax{}(m, v); });
  m = block_all_reduce<kBlockThreads>(m, NanMax{}, partial);
  A s = A(0);
  c.for_each(n, [&](int k, int e, A v) {
    const A ex = std::exp(v - m);
    s += ex;
    if (!kLog) c.v[k][e] = ex;
  });
  s = block_all_reduce<kBlockThreads>(s, Plus{}, partial);
  if (kLog) {
    const A shift = m + std::log(s);
    c.for_each(n, [&](int k, int e, A v) { c.v[k][e] = v - shift; });
  } else {
    const A inv = A(1) / s;
    c.for_each(n, [&](int k, int e, A v) { c.v[k][e] = v * inv; });
  }
  c.store(y + row * n, n);
}

// x, y: (outer, n, inner) contiguous, inner > 1; a thread per line (o, j).
template <class T, bool kLog>
__global__ void softmax_lines_kernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  using A = opmath_t<T>;
  const int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (line >= outer * inner) return;
  const int64_t offset = (line / inner) * n * inner + line % inner;
  const T* xl = x + offset;
  Online<A> s = Online<A>::empty();
  for (int64_t i = 0; i < n; ++i) s.add(convert<A>(xl[i * inner]));
  s.finish();
  write_line<T, A, kLog>(xl, y + offset, n, 0, 1, inner, s);
}

template <class T, bool kLog>
void softmax_launch(const Tensor& out, const Tensor& in, int64_t dim) {
  const char* op = kLog ? "log_softmax" : "softmax";
  const int64_t nd = in.dim();
  const int64_t n = nd == 0 ? 1 : in.size(dim);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= in.size(d);
  for (int64_t d = dim + 1; d < nd; ++d) inner *= in.size(d);
  const Device device = in.device();
  DeviceGuard guard(device);
  const Stream stream = current_stream(device);
  const T* x = static_cast<const T*>(in.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  if (inner > 1) {
    launch_kernel(op, &softmax_lines_kernel<T, kLog>, dim3(blocks_for(outer * inner, kLineThreads)),
                  dim3(kLineThreads), 0, stream, x, y, outer, n, inner);
  } else if (n <= kWarpRowMax) {
    uses_collectives(&softmax_warp_kernel<T, kLog>);
    launch_kernel(op, &softmax_warp_kernel<T, kLog>, dim3(blocks_for(outer, kWarpRowsPerBlock)),
                  dim3(32 * kWarpRowsPerBlock), 0, stream, x, y, outer, n);
  } else if (row_vecs<T, kBlockThreads>(n) > 0 && rows_fit_vectors<T>(n, {x, y})) {
    EMBER_CHECK(outer <= INT32_MAX, op, ": ", outer, " rows; a CUDA softmax takes up to 2^31 - 1");
    dispatch_row_vecs(row_vecs<T, kBlockThreads>(n), [&](auto vecs) {
      const auto kernel = &softmax_cached_kernel<T, kLog, decltype(vecs)::value>;
      uses_collectives(kernel);
      launch_kernel(op, kernel, dim3(static_cast<unsigned>(outer)), dim3(kBlockThreads), 0, stream,
                    x, y, n);
    });
  } else {
    uses_collectives(&softmax_block_kernel<T, kLog>);
    EMBER_CHECK(outer <= INT32_MAX, op, ": ", outer, " rows; a CUDA softmax takes up to 2^31 - 1");
    launch_kernel(op, &softmax_block_kernel<T, kLog>, dim3(static_cast<unsigned>(outer)),
                  dim3(kBlockThreads), 0, stream, x, y, n);
  }
}

void softmax_kernel(const Tensor& out, const Tensor& input, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  auto run_ember = [&] {
    // out is new and contiguous; a strided input is read through a contiguous copy.
    const Tensor in = input.is_contiguous() ? input : native::contiguous(input);
    EMBER_DISPATCH_FLOATING(in.dtype(), op, [&] {
      if (log)
        softmax_launch<scalar_t, true>(out, in, dim);
      else
        softmax_launch<scalar_t, false>(out, in, dim);
    });
  };
  auto run_cudnn = [&] { cudnn_softmax_forward(out, input, log); };
  auto key = [&] {
    std::ostringstream k;
    k << op << " " << dtype_name(input.dtype()) << " " << shape_str(input.sizes())
      << " dim=" << dim;
    return k.str();
  };
  if (choose_norm_cudnn(op, key, cudnn_softmax_supported(input, dim),
                        current_stream(input.device()), run_ember, run_cudnn)) {
    run_cudnn();
  } else {
    run_ember();
  }
}

}  // namespace

EMBER_REGISTER_KERNEL(softmax_stub, DeviceType::CUDA, softmax_kernel);

}  // namespace ember::kernels::cuda
