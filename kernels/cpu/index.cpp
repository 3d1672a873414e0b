// CPU kernels for the indexing ops (core/ops/index.h): gather, scatter with reductions,
// advanced-indexing offsets, row-wise index_select and nonzero.
//
// Kernels that only move elements (gather, index_select) dispatch on the element size, not the
// dtype: a float32 and an int32 move the same 4 bytes. Every index value goes through
// checked_index before it touches memory.

#include "core/ops/index.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/ops/factory.h"
#include "kernels/cpu/loops.h"
#include "kernels/math/binary.h"
#include "kernels/math/convert.h"

namespace ember::kernels::cpu {

namespace {

// The index value, wrapped if the axis allows negatives; an ember::Error if out of range.
inline int64_t checked_index(int64_t i, const IndexAxis& axis) {
  const int64_t w = (axis.wrap_negative && i < 0) ? i + axis.size : i;
  if (EMBER_UNLIKELY(w < 0 || w >= axis.size)) {
    EMBER_ERROR(axis.op, ": index ", i, " is out of bounds for dimension ", axis.dim, " with size ",
                axis.size);
  }
  return w;
}

inline int64_t load_index(const char* p) {
  int64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// One element of N bytes (memcpy of a constant size compiles to a single move).
template <size_t N>
struct Bytes {
  static void copy(char* dst, const char* src) { std::memcpy(dst, src, N); }
};

template <class F>
void dispatch_element_size(size_t size, const char* op, F&& f) {
  switch (size) {
    case 1:
      return f(Bytes<1>{});
    case 2:
      return f(Bytes<2>{});
    case 4:
      return f(Bytes<4>{});
    case 8:
      return f(Bytes<8>{});
    default:
      EMBER_ERROR(op, ": unsupported element size ", size);
  }
}

// iter = (out, self restrided, index): out[e] = self[e] + index[e] * axis.stride.
void gather_kernel(TensorIter& iter, const IndexAxis& axis) {
  dispatch_element_size(iter.tensor(0).element_size(), axis.op, [&](auto elem) {
    using Elem = decltype(elem);
    iter.for_each([&](char** data, const int64_t* strides, int64_t n) {
      char* out = data[0];
      const char* self = data[1];
      const char* index = data[2];
      for (int64_t k = 0; k < n; ++k) {
        const int64_t i = checked_index(load_index(index + k * strides[2]), axis);
        Elem::copy(out + k * strides[0], self + k * strides[1] + i * axis.stride);
      }
    });
  });
}

template <class T>
constexpr bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else {
    return false;
  }
}

// self[index] = combine(self[index], src), walking loop.steps positions of the scattered dim at
// each iteration position (Note [Indexed iteration] in core/ops/index.h).
template <class T, class Combine>
void scatter_loop(TensorIter& iter, const IndexAxis& axis, const ScatterLoop& loop,
                  Combine combine) {
  iter.for_each(
      [&](char** data, const int64_t* strides, int64_t n) {
        for (int64_t k = 0; k < n; ++k) {
          char* self = data[0] + k * strides[0];
          const char* src = data[1] + k * strides[1];
          const char* index = data[2] + k * strides[2];
          for (int64_t j = 0; j < loop.steps; ++j) {
            const int64_t i = checked_index(load_index(index + j * loop.index_stride), axis);
            T* dst = reinterpret_cast<T*>(self + i * axis.stride);
            *dst = combine(*dst, *reinterpret_cast<const T*>(src + j * loop.src_stride));
          }
        }
      },
      loop.grain);
}

void scatter_kernel(TensorIter& iter, const IndexAxis& axis, const ScatterLoop& loop,
                    ScatterReduce reduce, const Scalar& alpha) {
  EMBER_DISPATCH_ALL(iter.dtype(0), axis.op, [&] {
    using T = scalar_t;
    using M = opmath_t<T>;
    switch (reduce) {
      case ScatterReduce::Assign:
        scatter_loop<T>(iter, axis, loop, [](T, T s) { return s; });
        break;
      case ScatterReduce::Sum: {
        // bool: a + b is `or`.
        const M a = alpha.to<M>();
        scatter_loop<T>(iter, axis, loop, [a](T d, T s) {
          return math::convert<T>(static_cast<M>(d) + a * static_cast<M>(s));
        });
        break;
      }
      case ScatterReduce::Prod:
        // bool: a * b is `and`.
        scatter_loop<T>(iter, axis, loop, [](T d, T s) {
          return math::convert<T>(static_cast<M>(d) * static_cast<M>(s));
        });
        break;
      case ScatterReduce::Max:
        // NaN wins: once self is NaN it stays, and a NaN src replaces self.
        scatter_loop<T>(iter, axis, loop, [](T d, T s) {
          const M a = static_cast<M>(d), b = static_cast<M>(s);
          return (is_nan(b) || b > a) ? s : d;
        });
        break;
      case ScatterReduce::Min:
        scatter_loop<T>(iter, axis, loop, [](T d, T s) {
          const M a = static_cast<M>(d), b = static_cast<M>(s);
          return (is_nan(b) || b < a) ? s : d;
        });
        break;
    }
  });
}

// iter = (self, self, count): self / count where count > 0, rounding down for integers.
void scatter_mean_kernel(TensorIter& iter) {
  EMBER_DISPATCH_NUMERIC(iter.dtype(0), "scatter_reduce",
                         [&] { cpu_kernel(iter, math::ScatterMeanOp<scalar_t>{}); });
}

// iter = (offset out, offset in, index): out = in + checked(index) * axis.stride.
void index_offsets_kernel(TensorIter& iter, const IndexAxis& axis) {
  iter.for_each([&](char** data, const int64_t* strides, int64_t n) {
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = checked_index(load_index(data[2] + k * strides[2]), axis);
      const int64_t offset = load_index(data[1] + k * strides[1]) + i * axis.stride;
      std::memcpy(data[0] + k * strides[0], &offset, sizeof(offset));
    }
  });
}

// out: [outer, n, row_bytes], self: [outer, axis.size, row_bytes], both contiguous.
void index_select_rows_kernel(char* out, const char* self, const int64_t* index, int64_t n,
                              int64_t outer, int64_t row_bytes, const IndexAxis& axis) {
  // Rows per task: enough that a task copies about 128 KiB.
  const int64_t grain = std::max<int64_t>(1, (kGrainSize * 4) / row_bytes);
  parallel_for(0, outer * n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t o = p / n, j = p % n;
      const int64_t i = checked_index(index[j], axis);
      std::memcpy(out + p * row_bytes, self + (o * axis.size + i) * row_bytes,
                  static_cast<size_t>(row_bytes));
    }
  });
}

// self: contiguous, any dtype. Two passes over fixed chunks (count, then write at each chunk's
// prefix-sum offset) so the output is in row-major order whatever the thread count.
void nonzero_kernel(const Tensor& self, Tensor& out) {
  const int64_t numel = self.numel(), ndim = self.dim();
  if (numel == 0) {
    out = empty({0, ndim}, TensorOptions(kInt64).device(self.device()));
    return;
  }
  const int64_t nchunks =
      std::max<int64_t>(1, std::min<int64_t>(num_threads(), numel / kGrainSize));
  auto chunk_begin = [&](int64_t c) { return numel * c / nchunks; };
  EMBER_DISPATCH_ALL(self.dtype(), "nonzero", [&] {
    const scalar_t* p = static_cast<const scalar_t*>(self.data_ptr());
    std::vector<int64_t> offsets(static_cast<size_t>(nchunks) + 1, 0);
    parallel_for(0, nchunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        int64_t count = 0;
        for (int64_t i = chunk_begin(c); i < chunk_begin(c + 1); ++i)
          count += math::convert<bool>(p[i]) ? 1 : 0;
        offsets[c + 1] = count;
      }
    });
    for (int64_t c = 0; c < nchunks; ++c) offsets[c + 1] += offsets[c];
    out = empty({offsets[nchunks], ndim}, TensorOptions(kInt64).device(self.device()));
    int64_t* o = static_cast<int64_t*>(out.data_ptr());
    const Shape& sizes = self.sizes();
    parallel_for(0, nchunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        // Multi-index of the chunk's first element, then counted up element by element.
        Shape idx(static_cast<size_t>(ndim));
        int64_t rem = chunk_begin(c);
        for (int64_t d = ndim - 1; d >= 0; --d) {
          idx[d] = rem % sizes[d];
          rem /= sizes[d];
        }
        int64_t* row = o + offsets[c] * ndim;
        for (int64_t i = chunk_begin(c); i < chunk_begin(c + 1); ++i) {
          if (math::convert<bool>(p[i])) {
            std::copy(idx.begin(), idx.end(), row);
            row += ndim;
          }
          for (int64_t d = ndim - 1; d >= 0; --d) {
            if (++idx[d] < sizes[d]) break;
            idx[d] = 0;
          }
        }
      }
    });
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(gather_stub, DeviceType::CPU, gather_kernel);
EMBER_REGISTER_KERNEL(scatter_stub, DeviceType::CPU, scatter_kernel);
EMBER_REGISTER_KERNEL(scatter_mean_stub, DeviceType::CPU, scatter_mean_kernel);
EMBER_REGISTER_KERNEL(index_offsets_stub, DeviceType::CPU, index_offsets_kernel);
EMBER_REGISTER_KERNEL(index_select_rows_stub, DeviceType::CPU, index_select_rows_kernel);
EMBER_REGISTER_KERNEL(nonzero_stub, DeviceType::CPU, nonzero_kernel);

}  // namespace ember::kernels::cpu
