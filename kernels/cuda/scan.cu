// CUDA kernels for the scans cumsum and cumprod (core/ops/reduce.h): out (contiguous, in the
// result dtype) = inclusive scan of the input along dim, in the CPU kernel's accumulator types
// (kernels/cpu/reduce.cpp: double for float32 and float64, float for the 16-bit floats, int64 for
// integers).
//
// Note [Two scan layouts]
// A scan works on lines: every index of the other dims, walking `dim`.
// - When dim is not the input's contiguous dim, neighbouring lines are neighbours in memory
//   (cumsum(dim=0) of a row-major matrix). One thread scans one line sequentially, and a warp's
//   32 threads read 32 neighbouring elements at each step: coalesced, and the same additions in
//   the same order as the CPU.
// - When the line is contiguous (cumsum(dim=-1)), a thread per line would read 32 lines' elements
//   at once, 32 cache lines apart. Instead a block scans one line in tiles of blockDim elements:
//   each warp scans its 32 elements with shuffles (Hillis-Steele: log2(32) steps), warp 0 scans
//   the warps' totals, every thread adds the totals of the warps before its own and the carry of
//   the tiles before, and the tile's total becomes the next carry. The additions are grouped
//   differently from the CPU's sequential loop, so float results may differ in the last bits of
//   the wide accumulator (integers wrap identically: the operation is associative modulo 2^64).
// Short lines (<= kSequentialLine elements) use the first layout either way.

#include <type_traits>

#include "core/ops/reduce.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/warp.cuh"
#include "kernels/math/common.h"
#include "kernels/math/convert.h"
#include "kernels/math/reduce.h"

namespace ember::kernels::cuda {

namespace {

using math::convert;

constexpr int kMaxScanDims = 16;
constexpr int64_t kSequentialLine = 16;
constexpr int kScanThreads = 256;

// The lines of a scan: line l's first element, in the input and in the output, from unravelling
// l over the other dims (last fastest).
struct Lines {
  int ndim = 0;
  int64_t sizes[kMaxScanDims], in_strides[kMaxScanDims], out_strides[kMaxScanDims];
  int64_t count = 1;                  // the number of lines
  int64_t len = 1;                    // elements per line
  int64_t in_step = 0, out_step = 0;  // strides along dim

  EMBER_HOST_DEVICE void offsets(int64_t line, int64_t& in_off, int64_t& out_off) const {
    in_off = 0;
    out_off = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t i = line % sizes[d];
      line /= sizes[d];
      in_off += i * in_strides[d];
      out_off += i * out_strides[d];
    }
  }
};

template <bool kProd, class A>
__device__ __forceinline__ A scan_op(A a, A b) {
  return kProd ? math::wrapping_mul(a, b) : math::wrapping_add(a, b);
}

// Note [Two scan layouts], first layout: thread l scans line l.
template <class T, class A, class O, bool kProd>
__global__ void scan_lines_kernel(const T* in, O* out, Lines lines) {
  const int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (line >= lines.count) return;
  int64_t i0 = 0, o0 = 0;
  lines.offsets(line, i0, o0);
  A acc = kProd ? A(1) : A(0);
  for (int64_t k = 0; k < lines.len; ++k) {
    acc = scan_op<kProd>(acc, convert<A>(in[i0 + k * lines.in_step]));
    out[o0 + k * lines.out_step] = convert<O>(acc);
  }
}

// Note [Two scan layouts], second layout: block b scans line b (in_step 1) in tiles of
// blockDim.x (a multiple of 32, at most kScanThreads) elements.
template <class T, class A, class O, bool kProd>
__global__ void scan_tiles_kernel(const T* in, O* out, Lines lines) {
  EMBER_SHARED_ARRAY(A, warp_totals, kScanThreads / 32);
  const A identity = kProd ? A(1) : A(0);
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int warps = static_cast<int>(blockDim.x) / 32;
  int64_t i0 = 0, o0 = 0;
  lines.offsets(blockIdx.x, i0, o0);
  A carry = identity;
  for (int64_t base = 0; base < lines.len; base += blockDim.x) {
    const int64_t k = base + threadIdx.x;
    A x = k < lines.len ? convert<A>(in[i0 + k]) : identity;
    for (int d = 1; d < 32; d *= 2) {  // inclusive scan of the warp
      const A y = shfl_up_any(0xffffffffu, x, d, 32);
      if (lane >= d) x = scan_op<kProd>(y, x);
    }
    if (lane == 31) warp_totals[warp] = x;
    __syncthreads();
    if (warp == 0) {  // inclusive scan of the warps' totals
      A t = lane < warps ? warp_totals[lane] : identity;
      for (int d = 1; d < 32; d *= 2) {
        const A y = shfl_up_any(0xffffffffu, t, d, 32);
        if (lane >= d) t = scan_op<kProd>(y, t);
      }
      if (lane < warps) warp_totals[lane] = t;
    }
    __syncthreads();
    A prefix = warp > 0 ? scan_op<kProd, A>(carry, warp_totals[warp - 1]) : carry;
    if (k < lines.len) out[o0 + k * lines.out_step] = convert<O>(scan_op<kProd>(prefix, x));
    carry = scan_op<kProd, A>(carry, warp_totals[warps - 1]);
    __syncthreads();  // the totals are read before the next tile overwrites them
  }
}

template <class T, bool kProd>
void scan(const Tensor& out, const Tensor& in, int64_t dim, const char* op) {
  using A = math::scan_acc_t<T>;
  using O = math::sum_out_t<T>;
  const int64_t nd = in.dim();
  EMBER_CHECK(nd <= kMaxScanDims + 1, op, ": a CUDA scan takes up to ", kMaxScanDims + 1,
              " dims, got ", in.sizes());
  Lines lines;
  lines.len = nd == 0 ? 1 : in.size(dim);
  lines.in_step = nd == 0 ? 0 : in.stride(dim);
  lines.out_step = nd == 0 ? 0 : out.stride(dim);
  for (int64_t d = 0; d < nd; ++d) {
    if (d == dim) continue;
    lines.sizes[lines.ndim] = in.size(d);
    lines.in_strides[lines.ndim] = in.stride(d);
    lines.out_strides[lines.ndim] = out.stride(d);
    ++lines.ndim;
    lines.count *= in.size(d);
  }
  if (lines.count == 0 || lines.len == 0) return;
  EMBER_CHECK(lines.count <= INT32_MAX, op, ": ", lines.count,
              " lines; a CUDA scan takes up to 2^31 - 1");
  const Device device = in.device();
  DeviceGuard guard(device);
  const Stream stream = current_stream(device);
  const T* src = static_cast<const T*>(in.data_ptr());
  O* dst = static_cast<O*>(out.data_ptr());
  if (lines.in_step == 1 && lines.len > kSequentialLine) {
    int threads = 32;
    while (threads < kScanThreads && threads < lines.len) threads *= 2;
    launch_kernel(op, &scan_tiles_kernel<T, A, O, kProd>, dim3(static_cast<unsigned>(lines.count)),
                  dim3(static_cast<unsigned>(threads)), 0, stream, src, dst, lines);
    return;
  }
  constexpr int kThreads = 128;
  launch_kernel(op, &scan_lines_kernel<T, A, O, kProd>, dim3(blocks_for(lines.count, kThreads)),
                dim3(kThreads), 0, stream, src, dst, lines);
}

void cumsum_kernel(const Tensor& out, const Tensor& in, int64_t dim) {
  EMBER_DISPATCH_ALL(in.dtype(), "cumsum", [&] { scan<scalar_t, false>(out, in, dim, "cumsum"); });
}

void cumprod_kernel(const Tensor& out, const Tensor& in, int64_t dim) {
  EMBER_DISPATCH_ALL(in.dtype(), "cumprod", [&] { scan<scalar_t, true>(out, in, dim, "cumprod"); });
}

}  // namespace

EMBER_REGISTER_KERNEL(cumsum_stub, DeviceType::CUDA, cumsum_kernel);
EMBER_REGISTER_KERNEL(cumprod_stub, DeviceType::CUDA, cumprod_kernel);

}  // namespace ember::kernels::cuda
