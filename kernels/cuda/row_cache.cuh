#pragma once
// Rows held in registers: what the row kernels of softmax and layer_norm share when a row fits.
//
// Note [Rows held in registers]
// A row of n contiguous elements (n a multiple of the 16-byte vector's V elements, every row
// 16-byte aligned) is read once: a block of kThreads threads takes it, thread t holding the
// row's vectors t, t + kThreads, ..., t + (kVecs - 1) kThreads as opmath values in registers
// (RowCache). The statistics the op needs (softmax: max, then the sum of exp; layer_norm: the
// sum, then the sum of squared deviations) are block reductions over those registers, and the
// output is written from them, so x is read from memory once and y written once: a softmax
// moves the bytes of a copy. The loops over k and e have constant bounds, which nvcc unrolls at
// -O3 (ptxas reports no stack frame for these kernels), so the arrays stay in registers.
//
// A block's loads are all issued before its first reduction waits on them, so what keeps the
// memory busy is the bytes each thread has in flight: row_shape gives every thread at least two
// vectors (32 bytes) where the row has them, taking a smaller block (128 or 256 threads) for a
// shorter row rather than one vector per thread of 512 (a 4096-element bfloat16 row held one
// vector per thread, half the bytes in flight of a float32 row of the same length; a smaller
// block also has fewer warps to reduce across). Every element load and store is a 16-byte vector
// for every dtype (8 elements of float16 / bfloat16). Rows longer than kMaxRowThreads *
// kMaxRowVecs vectors, misaligned rows and lengths that are not whole vectors take the kernels'
// strided paths.

#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "kernels/cuda/common.cuh"
#include "kernels/math/convert.h"

namespace ember::kernels::cuda {

// 16 bytes of T: one vector load or store.
template <class T>
struct alignas(16) Vec16 {
  static constexpr int V = 16 / static_cast<int>(sizeof(T));
  T v[V];
};

// Whether rows of n elements at x (and at every other pointer given) can be RowCache'd.
template <class T>
inline bool rows_fit_vectors(int64_t n, std::initializer_list<const void*> pointers) {
  if (n % Vec16<T>::V != 0) return false;
  for (const void* p : pointers)
    if (p != nullptr && reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

// The block a row of n elements is held by: kThreads threads of kVecs vectors each
// (Note [Rows held in registers]); threads == 0 when the row is too long for registers.
struct RowShape {
  int threads;
  int vecs;
};

// The longest row held in registers: kMaxRowThreads threads of kMaxRowVecs vectors.
constexpr int kMaxRowThreads = 512;
constexpr int kMaxRowVecs = 4;

// The block for a row of n elements: at least two vectors per thread where the row has them
// (blocks of 128, 256 or 512 threads), four per thread for the longest rows.
template <class T>
inline RowShape row_shape(int64_t n) {
  const int64_t vecs = n / Vec16<T>::V;
  if (vecs <= 128) return {128, 1};
  if (vecs <= 256) return {128, 2};
  if (vecs <= 512) return {256, 2};
  if (vecs <= 1024) return {512, 2};
  if (vecs <= kMaxRowThreads * kMaxRowVecs) return {512, 4};
  return {0, 0};
}

// f(std::integral_constant<int, kThreads>{}, std::integral_constant<int, kVecs>{}) for the shape
// (one of row_shape's): picks the kernel instantiation.
template <class F>
void dispatch_row_shape(RowShape shape, F&& f) {
  using std::integral_constant;
  if (shape.threads == 128 && shape.vecs == 1)
    f(integral_constant<int, 128>{}, integral_constant<int, 1>{});
  else if (shape.threads == 128)
    f(integral_constant<int, 128>{}, integral_constant<int, 2>{});
  else if (shape.threads == 256)
    f(integral_constant<int, 256>{}, integral_constant<int, 2>{});
  else if (shape.vecs == 2)
    f(integral_constant<int, 512>{}, integral_constant<int, 2>{});
  else
    f(integral_constant<int, 512>{}, integral_constant<int, 4>{});
}

// The combining ops of the row kernels' block reductions: commutative, so block_all_reduce
// gives every thread the same bits.
struct Plus {
  template <class A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    return a + b;
  }
};
struct NanMax {
  template <class A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    return (b > a || b != b) ? b : a;  // NaN wins, in either order
  }
};

// The block's values combined with op (commutative: max, +) and given to every thread, with the
// same bits in all of them: each xor-butterfly step combines a lane's value with its partner's,
// and a commutative op gives both lanes one result. partial: kThreads / 32 slots of shared
// memory; the leading barrier makes it reusable by consecutive calls.
template <int kThreads, class A, class Op, class Shared>
__device__ __forceinline__ A block_all_reduce(A v, Op op, Shared partial) {
  constexpr int kWarps = kThreads / 32;
  static_assert(kThreads % 32 == 0 && kWarps <= 32 && (kWarps & (kWarps - 1)) == 0,
                "a power of two of whole warps, at most 32 of them");
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  for (int d = 16; d > 0; d /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, d, 32));
  __syncthreads();  // the previous call's readers are done with partial
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = partial[lane % kWarps];
  for (int d = 16; d > 0; d /= 2)
    if (d < kWarps) v = op(v, __shfl_xor_sync(0xffffffffu, v, d, 32));
  return v;
}

// f(std::integral_constant<int, i>{}) for i = 0, ..., N - 1: a loop unrolled by the compiler's
// front end, for bodies too large for nvcc's unroller (float16's conversions are software) that
// index a RowCache, which must stay in registers.
template <int N, class F>
__device__ __forceinline__ void for_constant(F&& f) {
  if constexpr (N > 0) {
    for_constant<N - 1>(f);
    f(std::integral_constant<int, N - 1>{});
  }
}

// One row's elements in registers (Note [Rows held in registers]).
template <class T, class A, int kVecs, int kThreads>
struct RowCache {
  static constexpr int V = Vec16<T>::V;
  A v[kVecs][V] = {};  // slots past the row's end are never read; zeroed for the host compiler

  // Vector k of this thread: its index in the row's vectors, and whether the row has it.
  __device__ __forceinline__ static int64_t index(int k) {
    return static_cast<int64_t>(threadIdx.x) + static_cast<int64_t>(k) * kThreads;
  }
  __device__ __forceinline__ void load(const T* row, int64_t n) {
    const auto* vr = reinterpret_cast<const Vec16<T>*>(row);
    const int64_t nv = n / V;
    for (int k = 0; k < kVecs; ++k) {
      if (index(k) < nv) {
        const Vec16<T> w = vr[index(k)];
        for (int e = 0; e < V; ++e) v[k][e] = math::convert<A>(w.v[e]);
      }
    }
  }
  // f(k, e, value) for every element this thread holds, in row order within a vector; k and e
  // are constants once unrolled, so f may index v (or another RowCache) with them.
  template <class F>
  __device__ __forceinline__ void for_each(int64_t n, F&& f) {
    const int64_t nv = n / V;
    for (int k = 0; k < kVecs; ++k) {
      if (index(k) < nv) {
        for (int e = 0; e < V; ++e) f(k, e, v[k][e]);
      }
    }
  }
  // row[j] = convert<T>(value) for every element j this thread holds.
  __device__ __forceinline__ void store(T* row, int64_t n) const {
    auto* vr = reinterpret_cast<Vec16<T>*>(row);
    const int64_t nv = n / V;
    for (int k = 0; k < kVecs; ++k) {
      if (index(k) < nv) {
        Vec16<T> w;
        for (int e = 0; e < V; ++e) w.v[e] = math::convert<T>(v[k][e]);
        vr[index(k)] = w;
      }
    }
  }
};

}  // namespace ember::kernels::cuda
