// CUDA kernels of the fused cross-entropy (core/ops/cross_entropy.h, Note [Fused
// cross-entropy]): a block per row of C logits (32 to 512 threads, the smallest power of two
// covering C; rows held in registers take row_shape's block). The forward folds the row into an
// online max / sum-of-exp state per thread (kernels/cuda/online_softmax.cuh), merges them with
// shuffles and shared memory (every thread gets the same state), and thread 0 writes the row's
// loss, weight and lse; with label smoothing a second pass sums w[c] (x[c] - lse). Thread 0 also
// checks the row's target (Note [Index checks on the device] in kernels/cuda/indexing.cuh): the
// targets are not copied to the host, and a bad one raises the CPU's error at the next
// synchronisation (Note [Deferred device checks] in kernels/cuda/device_checks.h). The backward
// writes each dx[c] from p = exp(x[c] - lse) in one pass (plus a block sum of the class weights
// when smoothing); a row that fits in registers is loaded whole first, as in the forward.

#include <cstdint>
#include <limits>

#include "core/dtype.h"
#include "core/ops/cross_entropy.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/indexing.cuh"
#include "kernels/cuda/online_softmax.cuh"
#include "kernels/cuda/row_cache.cuh"
#include "kernels/cuda/warp.cuh"
#include "kernels/math/convert.h"

namespace ember::kernels::cuda {

namespace {

using math::convert;

constexpr int kMaxThreads = 512;
constexpr int kMaxWarps = kMaxThreads / 32;

// The block's sum of v, the same bits in every thread (a symmetric butterfly in each warp, then
// the warps' sums in order). partial: kMaxWarps values.
template <class A, class Shared>
__device__ __forceinline__ A block_sum(A v, Shared partial) {
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int warps = static_cast<int>(blockDim.x) / 32;
  for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d, 32);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < warps ? partial[lane] : A(0);
  for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d, 32);
  return v;
}

// The row's loss, weight and lse from the block's merged online state s (every thread holds the
// same s); the label-smoothing pass reads the row again. sums: kMaxWarps values.
// A target outside [0, C) that is not ignore_index is recorded in err (Note [Index checks on the
// device]) and its row's loss is NaN; x is not read at it.
template <class T, class A, class Shared>
__device__ __forceinline__ void finish_row(Online<A> s, const T* xr, const int64_t* target,
                                           const T* w, A* loss, A* wrow, A* lse, int64_t row,
                                           int64_t C, int64_t ignore_index, A e, Shared sums,
                                           DeviceCheckSlot* err) {
  const int tid = static_cast<int>(threadIdx.x);
  s.finish();
  const A l = s.max + std::log(s.sum);
  A smooth = A(0);
  if (e > A(0)) {
    for (int64_t c = tid; c < C; c += blockDim.x) {
      const A lp = convert<A>(xr[c]) - l;
      smooth -= w ? convert<A>(w[c]) * lp : lp;
    }
    smooth = block_sum(smooth, sums);
  }
  if (tid != 0) return;
  lse[row] = l;
  const int64_t t = target[row];
  if (t == ignore_index) {
    loss[row] = A(0);
    wrow[row] = A(0);
    return;
  }
  if (t < 0 || t >= C) {
    record_bad_value(err, t, row);
    loss[row] = std::numeric_limits<A>::quiet_NaN();
    wrow[row] = A(0);
    return;
  }
  const A wt = w ? convert<A>(w[t]) : A(1);
  A v = -wt * (convert<A>(xr[t]) - l);
  if (e > A(0)) v = (A(1) - e) * v + e / static_cast<A>(C) * smooth;
  loss[row] = v;
  wrow[row] = wt;
}

// The threads' online states merged, warp by warp and then the warps' in order; every thread gets
// the block's state. states: kMaxWarps values.
template <class A, class Shared>
__device__ __forceinline__ Online<A> block_online(Online<A> s, Shared states) {
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int warps = static_cast<int>(blockDim.x) / 32;
  s = online_warp_merge(s);
  if (lane == 0) states[warp] = s;
  __syncthreads();
  s = lane < warps ? states[lane] : Online<A>::empty();
  return online_warp_merge(s);
}

// x: (M, C); target: (M); w: (C) or null; loss, wrow, lse: (M). kVecs == 0: each thread folds
// its elements c, c + blockDim.x, ... into an online state as they stream by. kVecs > 0: a row
// that fits in registers (Note [Rows held in registers] in kernels/cuda/row_cache.cuh; blocks of
// kThreads, row_shape's) is loaded at once, and each thread's state is its max and then its sum of
// exp(x - max), with no rescaling per element. A thread whose elements are all -inf keeps the
// online form's state for them (max -inf, sum = their count), so that they add nothing to a row
// with a finite max.
template <class T, int kThreads, int kVecs>
__global__ void cross_entropy_kernel(const T* x, const int64_t* target, const T* w,
                                     opmath_t<T>* loss, opmath_t<T>* wrow, opmath_t<T>* lse,
                                     int64_t C, int64_t ignore_index, opmath_t<T> e,
                                     DeviceCheckSlot* err) {
  using A = opmath_t<T>;
  EMBER_SHARED_ARRAY(Online<A>, states, kMaxWarps);
  EMBER_SHARED_ARRAY(A, sums, kMaxWarps);
  const int64_t row = blockIdx.x;
  const T* xr = x + row * C;
  Online<A> s = Online<A>::empty();
  if constexpr (kVecs == 0) {
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s.add(convert<A>(xr[c]));
  } else {
    RowCache<T, A, kVecs, kThreads> c;
    c.load(xr, C);
    A count = A(0);
    c.for_each(C, [&](int, int, A v) {
      s.max = NanMax{}(s.max, v);
      count += A(1);
    });
    if (count > A(0)) {
      if (s.max == -std::numeric_limits<A>::infinity()) {
        s.sum = count;
      } else {
        c.for_each(C, [&](int, int, A v) { s.sum += std::exp(v - s.max); });
      }
    }
  }
  s = block_online(s, states);
  finish_row(s, xr, target, w, loss, wrow, lse, row, C, ignore_index, e, sums, err);
}

// dx: (M, C) from grad_rows (M), x, target, w (or null), lse; each dx[j] from p = exp(x[j] -
// lse). kVecs == 0: each thread loads, computes and stores its elements j, j + blockDim.x, ... one
// at a time -- a store to dx may alias x as far as the compiler knows, so the loads are not
// batched, and a thread has 4 bytes in flight. kVecs > 0: a row that fits in registers (Note
// [Rows held in registers]; blocks of kThreads, row_shape's) is loaded whole first (16-byte
// vectors, kVecs a thread), each element is turned into its gradient in place, and the row is
// stored. The same formula, precision and order of sums in both: the same bits.
template <class T, int kThreads, int kVecs>
__global__ void cross_entropy_backward_kernel(const opmath_t<T>* grad_rows, const T* x,
                                              const int64_t* target, const T* w,
                                              const opmath_t<T>* lse, T* dx, int64_t C,
                                              int64_t ignore_index, opmath_t<T> e) {
  using A = opmath_t<T>;
  EMBER_SHARED_ARRAY(A, sums, kMaxWarps);
  const int64_t row = blockIdx.x;
  const int64_t t = target[row];
  const T* xr = x + row * C;
  T* dr = dx + row * C;
  if (t == ignore_index) {  // the whole block leaves: no barrier follows for it
    if constexpr (kVecs == 0) {
      for (int64_t j = threadIdx.x; j < C; j += blockDim.x) dr[j] = convert<T>(A(0));
    } else {
      RowCache<T, A, kVecs, kThreads>{}.store(dr, C);  // zeros
    }
    return;
  }
  A w_sum = static_cast<A>(C);
  if (e > A(0) && w) {
    A acc = A(0);
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) acc += convert<A>(w[j]);
    w_sum = block_sum(acc, sums);
  }
  const A g = grad_rows[row], l = lse[row];
  const A wt = w ? convert<A>(w[t]) : A(1);
  const A a = g * (A(1) - e) * wt, b = g * (e / static_cast<A>(C));
  const auto grad = [&](int64_t j, A xj) {
    const A p = std::exp(xj - l);
    A d = a * (p - (j == t ? A(1) : A(0)));
    if (e > A(0)) d += b * (p * w_sum - (w ? convert<A>(w[j]) : A(1)));
    return d;
  };
  if constexpr (kVecs == 0) {
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x)
      dr[j] = convert<T>(grad(j, convert<A>(xr[j])));
  } else {
    RowCache<T, A, kVecs, kThreads> c;
    c.load(xr, C);
    // for_constant, not for_each: a body this large (16-bit weights convert in software) is not
    // unrolled by nvcc, and the cache would go to local memory.
    using Cache = decltype(c);
    const int64_t nv = C / Cache::V;
    for_constant<kVecs>([&](auto k) {
      if (Cache::index(k) >= nv) return;
      for_constant<Cache::V>(
          [&](auto i) { c.v[k][i] = grad(Cache::index(k) * Cache::V + i, c.v[k][i]); });
    });
    c.store(dr, C);
  }
}

unsigned threads_for(int64_t C) {
  unsigned t = 32;
  while (t < static_cast<unsigned>(kMaxThreads) && t < C) t *= 2;
  return t;
}

template <class T>
const T* cptr(const Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.data_ptr()) : nullptr;
}

void cross_entropy_cuda(const native::CrossEntropyRows& out, const Tensor& logits,
                        const Tensor& target, const Tensor& weight, int64_t ignore_index,
                        double label_smoothing) {
  const int64_t M = logits.size(0), C = logits.size(1);
  EMBER_CHECK(M <= INT32_MAX, "cross_entropy: ", M, " rows; the CUDA kernel takes up to 2^31 - 1");
  const Device device = logits.device();
  DeviceGuard guard(device);
  const Stream stream = current_stream(device);
  DeviceCheck check(stream);
  EMBER_DISPATCH_FLOATING(logits.dtype(), "cross_entropy", [&] {
    using T = scalar_t;
    using A = opmath_t<T>;
    auto run = [&](auto kernel, unsigned threads) {
      uses_collectives(kernel);
      launch_kernel("cross_entropy_kernel", kernel, dim3(static_cast<unsigned>(M)), dim3(threads),
                    0, stream, cptr<T>(logits), target.data_ptr<int64_t>(), cptr<T>(weight),
                    out.loss.data_ptr<A>(), out.weight.data_ptr<A>(), out.lse.data_ptr<A>(), C,
                    ignore_index, static_cast<A>(label_smoothing), check.slot());
    };
    if (C > kMaxThreads && row_shape<T>(C).threads > 0 &&
        rows_fit_vectors<T>(C, {logits.data_ptr()})) {
      dispatch_row_shape(row_shape<T>(C), [&](auto threads, auto vecs) {
        constexpr int kThreads = decltype(threads)::value;
        run(&cross_entropy_kernel<T, kThreads, decltype(vecs)::value>, kThreads);
      });
    } else {
      run(&cross_entropy_kernel<T, 0, 0>, threads_for(C));
    }
  });
  check.defer("cross_entropy_kernel", [C](int64_t t, int64_t) {
    return ::ember::detail::str("cross_entropy: target ", t, " is out of bounds for C=", C,
                                " classes");
  });
}

void cross_entropy_backward_cuda(const Tensor& grad_logits, const Tensor& grad_rows,
                                 const Tensor& logits, const Tensor& target, const Tensor& weight,
                                 const Tensor& lse, int64_t ignore_index, double label_smoothing) {
  const int64_t M = logits.size(0), C = logits.size(1);
  EMBER_CHECK(M <= INT32_MAX, "cross_entropy_backward: ", M,
              " rows; the CUDA kernel takes up to 2^31 - 1");
  const Device device = logits.device();
  DeviceGuard guard(device);
  const Stream stream = current_stream(device);
  EMBER_DISPATCH_FLOATING(logits.dtype(), "cross_entropy_backward", [&] {
    using T = scalar_t;
    using A = opmath_t<T>;
    auto run = [&](auto kernel, unsigned threads) {
      uses_collectives(kernel);
      launch_kernel("cross_entropy_backward_kernel", kernel, dim3(static_cast<unsigned>(M)),
                    dim3(threads), 0, stream, grad_rows.data_ptr<A>(), cptr<T>(logits),
                    target.data_ptr<int64_t>(), cptr<T>(weight), lse.data_ptr<A>(),
                    static_cast<T*>(grad_logits.data_ptr()), C, ignore_index,
                    static_cast<A>(label_smoothing));
    };
    if (C > kMaxThreads && row_shape<T>(C).threads > 0 &&
        rows_fit_vectors<T>(C, {logits.data_ptr(), grad_logits.data_ptr()})) {
      dispatch_row_shape(row_shape<T>(C), [&](auto threads, auto vecs) {
        constexpr int kThreads = decltype(threads)::value;
        run(&cross_entropy_backward_kernel<T, kThreads, decltype(vecs)::value>, kThreads);
      });
    } else {
      run(&cross_entropy_backward_kernel<T, 0, 0>, threads_for(C));
    }
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(cross_entropy_stub, DeviceType::CUDA, cross_entropy_cuda);
EMBER_REGISTER_KERNEL(cross_entropy_backward_stub, DeviceType::CUDA, cross_entropy_backward_cuda);

}  // namespace ember::kernels::cuda
