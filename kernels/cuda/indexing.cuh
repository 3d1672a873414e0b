#pragma once
// What the CUDA indexing, shape and sort kernels (index.cu, shape.cu, sort.cu) share: offset
// calculators built from a TensorIter, element types by size, and the device-side bounds check
// of index values.
//
// Note [Index checks on the device]
// The CPU kernels raise on the first bad index value they meet. A CUDA kernel cannot throw, so
// every kernel that reads an index value checks it against its IndexAxis (core/ops/index.h) and,
// when it is out of range, skips the access (nothing is ever read or written out of bounds) and
// records the value in its op's DeviceCheckSlot. The op then defers the check (Note [Deferred
// device checks] in kernels/cuda/device_checks.h): no synchronisation per op; the CPU's error
//   "index_select: index 7 is out of bounds for dimension 0 with size 5"
// is raised at the next synchronisation, with where it surfaced appended. With several bad
// values the one reported is whichever a thread found first, not necessarily the first in
// row-major order. A failed op may have written part of its output, as on the CPU.

#include <cstdint>

#include "core/allocator.h"
#include "core/ops/index.h"
#include "core/tensor_iter.h"
#include "kernels/cuda/device_checks.h"
#include "kernels/cuda/loops.cuh"

namespace ember::kernels::cuda {

// Linear index -> byte offsets of iter's first N operands (Note [32-bit indexing]: iter must
// can_use_32bit_indexing()).
template <int N>
OffsetCalculator<N> make_offset_calculator(const TensorIter& iter) {
  EMBER_CHECK(iter.ndim() <= kMaxIterDims, iter.op_name(), ": ", iter.ndim(),
              " dims after coalescing; the CUDA indexing kernels take up to ", kMaxIterDims);
  OffsetCalculator<N> calc;
  calc.ndim = iter.ndim();
  for (int d = 0; d < iter.ndim(); ++d) {
    calc.sizes[d] = static_cast<int32_t>(iter.shape()[d]);
    for (int k = 0; k < N; ++k) calc.strides[d][k] = static_cast<int32_t>(iter.strides(k)[d]);
  }
  return calc;
}

template <int N>
OperandData<N> operand_data(const TensorIter& iter) {
  OperandData<N> data;
  for (int k = 0; k < N; ++k) data.ptr[k] = iter.data(k);
  return data;
}

// Calls f(iter) for iter or, when it is too large for 32-bit offsets, for each of its parts.
template <class F>
void for_each_32bit(const TensorIter& iter, F&& f) {
  if (iter.can_use_32bit_indexing()) {
    f(iter);
    return;
  }
  for (const TensorIter& sub : iter.with_32bit_indexing()) f(sub);
}

// Kernels that only move elements dispatch on the element size: f(uintN_t{}).
template <class F>
void dispatch_element_size(size_t size, const char* op, F&& f) {
  switch (size) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    case 8:
      return f(uint64_t{});
    default:
      EMBER_ERROR(op, ": unsupported element size ", size);
  }
}

// IndexAxis as a kernel parameter.
struct DeviceAxis {
  int64_t size;
  int64_t stride;
  bool wrap_negative;
};

inline DeviceAxis device_axis(const IndexAxis& axis) {
  return {axis.size, axis.stride, axis.wrap_negative};
}

// The index value i, wrapped if the axis allows negatives, in *out; false (and i recorded in
// err) when it is out of range.
__device__ __forceinline__ bool check_index(int64_t i, const DeviceAxis& axis, DeviceCheckSlot* err,
                                            int64_t* out) {
  const int64_t w = (axis.wrap_negative && i < 0) ? i + axis.size : i;
  if (w < 0 || w >= axis.size) {
    record_bad_value(err, i, 0);
    return false;
  }
  *out = w;
  return true;
}

// One op's check of its index values (Note [Index checks on the device]): construct it before
// the launches, pass slot() to the kernels, then defer(axis, kernel).
class IndexCheck {
 public:
  explicit IndexCheck(const Stream& stream) : check_(stream) {}
  DeviceCheckSlot* slot() const { return check_.slot(); }
  void defer(const IndexAxis& axis, const char* kernel) {
    const IndexAxis a = axis;
    check_.defer(kernel, [a](int64_t value, int64_t) {
      return ::ember::detail::str(a.op, ": index ", value, " is out of bounds for dimension ",
                                  a.dim, " with size ", a.size);
    });
  }

 private:
  DeviceCheck check_;
};

}  // namespace ember::kernels::cuda
