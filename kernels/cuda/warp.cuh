#pragma once
// Warp shuffles for any trivially copyable value: CUDA's __shfl_*_sync take the built-in
// arithmetic types only, and the reductions and scans move structs (a Welford state, a value
// with its index) and bools between lanes. The value travels as 32-bit words, each shuffled on
// its own; a real GPU and the simulator see the same calls.

#include <cstring>
#include <type_traits>

#include "kernels/cuda/common.cuh"

namespace ember::kernels::cuda {

namespace detail {

template <class T, class Shuffle>
__device__ __forceinline__ T shuffle_words(const T& v, Shuffle shuffle) {
  static_assert(std::is_trivially_copyable_v<T>, "warp shuffles move trivially copyable values");
  constexpr int kWords = (sizeof(T) + 3) / 4;
  unsigned words[kWords] = {};
  memcpy(words, &v, sizeof(T));
  for (int w = 0; w < kWords; ++w) words[w] = shuffle(words[w]);
  T out;
  memcpy(&out, words, sizeof(T));
  return out;
}

}  // namespace detail

// __shfl_down_sync(mask, v, delta, width) for any trivially copyable T.
template <class T>
__device__ __forceinline__ T shfl_down_any(unsigned mask, const T& v, unsigned delta, int width) {
  return detail::shuffle_words(v,
                               [&](unsigned w) { return __shfl_down_sync(mask, w, delta, width); });
}

// __shfl_up_sync(mask, v, delta, width) for any trivially copyable T.
template <class T>
__device__ __forceinline__ T shfl_up_any(unsigned mask, const T& v, unsigned delta, int width) {
  return detail::shuffle_words(v,
                               [&](unsigned w) { return __shfl_up_sync(mask, w, delta, width); });
}

}  // namespace ember::kernels::cuda
