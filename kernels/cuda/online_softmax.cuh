#pragma once
// The online softmax state (Note [Online softmax] in kernels/cuda/softmax.cu): a running max and
// the sum of exp(x - max), rescaled when the max grows, and its merge across a warp. Used by the
// softmax and the fused cross-entropy kernels.

#include <limits>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/warp.cuh"

namespace ember::kernels::cuda {

// A running max and the sum of exp(x - max) (Note [Online softmax]); sum == 0: no element yet.
template <class A>
struct Online {
  A max;
  A sum;

  __device__ __forceinline__ static Online empty() {
    return {-std::numeric_limits<A>::infinity(), A(0)};
  }
  __device__ __forceinline__ void add(A x) {
    if (x > max) {
      sum = sum * std::exp(max - x) + A(1);
      max = x;
    } else if (sum == A(0)) {  // the first element: -inf or NaN
      max = x;
      sum = A(1);
    } else if (x == max) {
      sum += A(1);  // exp(0), also for x == max == -inf, where x - max would be NaN
    } else {
      sum += std::exp(x - max);  // NaN for x NaN
    }
  }
  __device__ __forceinline__ static Online merge(const Online& a, const Online& b) {
    if (b.sum == A(0)) return a;
    if (a.sum == A(0)) return b;
    // Equal maxima add their sums as they are: two states that saw only -inf (a thread's share
    // of a causal-masked row) would otherwise give exp(-inf - -inf) = NaN.
    if (a.max == b.max) return {a.max, a.sum + b.sum};
    // The larger max's sum is kept as it is and the other's rescaled into it: the same two states
    // give the same bits in either order, so every lane of a butterfly ends with one state (a
    // form symmetric in a and b would still round differently per lane once nvcc contracts it
    // into an FMA).
    const bool a_hi = a.max > b.max;
    const Online hi = a_hi ? a : b;  // copies: a reference to either may put a state on the stack
    const Online lo = a_hi ? b : a;
    return {hi.max, hi.sum + lo.sum * std::exp(lo.max - hi.max)};
  }
  // The line is done: NaN when the max is not finite (+inf present, or only -inf).
  __device__ __forceinline__ void finish() {
    if (!(max - max == A(0))) sum = std::numeric_limits<A>::quiet_NaN();
  }
};

template <class A>
__device__ __forceinline__ Online<A> online_warp_merge(Online<A> s) {
  for (int d = 16; d > 0; d /= 2) {
    const Online<A> other = detail::shuffle_words(
        s, [&](unsigned w) { return __shfl_xor_sync(0xffffffffu, w, d, 32); });
    s = Online<A>::merge(s, other);
  }
  return s;
}

}  // namespace ember::kernels::cuda
