// CPU kernels for sort and topk (core/ops/index.h).
//
// Each slice along the sorted dim is copied into a buffer of (key, position) pairs, ordered, and
// written back. Keys are compared in opmath_t (float for Half/BFloat16, exact). Ties are broken
// by position, which makes the order a strict total order: std::sort then gives exactly what a
// stable sort gives, in both directions, and topk's choice among equal values is deterministic.
// NaN compares as larger than every number (PyTorch's order).

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/ops/index.h"
#include "core/tensor_iter.h"
#include "kernels/math/convert.h"

namespace ember::kernels::cpu {

namespace {

template <class K>
bool key_is_nan(K v) {
  if constexpr (std::is_floating_point_v<K>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// a < b with NaN as the largest value (NaNs equal among themselves).
template <class K>
bool key_less(K a, K b) {
  return a < b || (!key_is_nan(a) && key_is_nan(b));
}

template <class K, bool Descending>
struct KeyOrder {
  bool operator()(const std::pair<K, int64_t>& a, const std::pair<K, int64_t>& b) const {
    const bool before = Descending ? key_less(b.first, a.first) : key_less(a.first, b.first);
    const bool after = Descending ? key_less(a.first, b.first) : key_less(b.first, a.first);
    if (before || after) return before;
    return a.second < b.second;
  }
};

// Calls fn(slice, values, indices) for every slice; `slice` holds self's values along the dim
// as (key, position) pairs, and fn writes loop.k results per slice.
template <class T, class Fn>
void for_each_slice(TensorIter& iter, const SortLoop& loop, Fn fn) {
  using K = opmath_t<T>;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, loop.n));
  iter.for_each(
      [&](char** data, const int64_t* strides, int64_t count) {
        std::vector<std::pair<K, int64_t>> slice(static_cast<size_t>(loop.n));
        for (int64_t s = 0; s < count; ++s) {
          const char* self = data[2] + s * strides[2];
          for (int64_t i = 0; i < loop.n; ++i) {
            const T v = *reinterpret_cast<const T*>(self + i * loop.self_stride);
            slice[i] = {static_cast<K>(v), i};
          }
          fn(slice);
          char* values = data[0] + s * strides[0];
          char* indices = data[1] + s * strides[1];
          for (int64_t i = 0; i < loop.k; ++i) {
            *reinterpret_cast<T*>(values + i * loop.values_stride) =
                math::convert<T>(slice[i].first);
            *reinterpret_cast<int64_t*>(indices + i * loop.indices_stride) = slice[i].second;
          }
        }
      },
      grain);
}

void sort_kernel(TensorIter& iter, const SortLoop& loop, bool descending) {
  EMBER_DISPATCH_ALL(iter.dtype(2), "sort", [&] {
    using K = opmath_t<scalar_t>;
    for_each_slice<scalar_t>(iter, loop, [&](std::vector<std::pair<K, int64_t>>& slice) {
      if (descending) {
        std::sort(slice.begin(), slice.end(), KeyOrder<K, true>{});
      } else {
        std::sort(slice.begin(), slice.end(), KeyOrder<K, false>{});
      }
    });
  });
}

template <class K, bool Largest>
void select_top(std::vector<std::pair<K, int64_t>>& slice, int64_t k, bool sorted) {
  const KeyOrder<K, Largest> order{};
  const auto mid = slice.begin() + k;
  if (sorted) {
    std::partial_sort(slice.begin(), mid, slice.end(), order);
  } else if (mid != slice.end()) {
    std::nth_element(slice.begin(), mid, slice.end(), order);
  }
}

void topk_kernel(TensorIter& iter, const SortLoop& loop, bool largest, bool sorted) {
  EMBER_DISPATCH_ALL(iter.dtype(2), "topk", [&] {
    using K = opmath_t<scalar_t>;
    for_each_slice<scalar_t>(iter, loop, [&](std::vector<std::pair<K, int64_t>>& slice) {
      if (largest) {
        select_top<K, true>(slice, loop.k, sorted);
      } else {
        select_top<K, false>(slice, loop.k, sorted);
      }
    });
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(sort_stub, DeviceType::CPU, sort_kernel);
EMBER_REGISTER_KERNEL(topk_stub, DeviceType::CPU, topk_kernel);

}  // namespace ember::kernels::cpu
