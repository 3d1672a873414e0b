#pragma once
// Prefix sums inside a block: a warp scan with shuffles, then a scan of the warp totals by the
// first warp (nonzero's count and write passes, kernels/cuda/index.cu).
//
//   value:  3 1 0 2 | 1 ...      (one value per thread, thread order)
//   result: 0 3 4 4 | 6 ...      (exclusive: the sum over the threads before the caller)
//
// Every thread of the block must call it (it has barriers); blockDim.x a multiple of 32, at
// most 1024.

#include "kernels/cuda/common.cuh"

namespace ember::kernels::cuda {

constexpr unsigned kFullWarp = 0xffffffffu;

// Inclusive prefix sum over the lanes of the caller's warp.
template <class T>
__device__ __forceinline__ T warp_inclusive_scan(T value) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  for (int delta = 1; delta < 32; delta <<= 1) {
    const T other = __shfl_up_sync(kFullWarp, value, delta);
    if (lane >= delta) value += other;
  }
  return value;
}

// Exclusive prefix sum over the block's threads in threadIdx.x order; *total gets the block's
// sum (in every thread).
template <class T>
__device__ __forceinline__ T block_exclusive_scan(T value, T* total) {
  EMBER_SHARED_ARRAY(T, warp_sums, 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int warps = static_cast<int>(blockDim.x / 32);
  const T inclusive = warp_inclusive_scan(value);
  if (lane == 31) warp_sums[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    const T s = lane < warps ? static_cast<T>(warp_sums[lane]) : T(0);
    const T scanned = warp_inclusive_scan(s);
    if (lane < warps) warp_sums[lane] = scanned;  // inclusive over the warps
  }
  __syncthreads();
  const T before = warp == 0 ? T(0) : static_cast<T>(warp_sums[warp - 1]);
  *total = static_cast<T>(warp_sums[warps - 1]);
  __syncthreads();  // warp_sums is reused by the caller's next scan
  return before + inclusive - value;
}

}  // namespace ember::kernels::cuda
