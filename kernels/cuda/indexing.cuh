#pragma once
// What the CUDA indexing, shape and sort kernels (index.cu, shape.cu, sort.cu) share: offset
// calculators built from a TensorIter, element types by size, and the device-side bounds check
// of index values.
//
// Note [Index checks on the device]
// The CPU kernels raise on the first bad index value they meet. A CUDA kernel cannot throw, so
// every kernel that reads an index value checks it against its IndexAxis (core/ops/index.h) and,
// when it is out of range, skips the access (nothing is ever read or written out of bounds) and
// records the value in a small device slot: the first thread to claim the slot (atomicCAS on its
// flag) writes the value. When the op's kernels have been launched, IndexCheck::raise_if_bad
// copies the slot back -- a synchronisation of the stream, paid by every op that takes index
// values -- and raises the CPU's error:
//   "index_select: index 7 is out of bounds for dimension 0 with size 5".
// With several bad values the one reported is whichever a thread found first, not necessarily
// the first in row-major order. A failed op may have written part of its output, as on the CPU.

#include <cstdint>

#include "core/allocator.h"
#include "core/ops/index.h"
#include "core/tensor_iter.h"
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

// Where a kernel records a bad index value (Note [Index checks on the device]).
struct IndexErrorSlot {
  int flag;
  int unused;
  long long value;
};

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
__device__ __forceinline__ bool check_index(int64_t i, const DeviceAxis& axis, IndexErrorSlot* err,
                                            int64_t* out) {
  const int64_t w = (axis.wrap_negative && i < 0) ? i + axis.size : i;
  if (w < 0 || w >= axis.size) {
    if (atomicCAS(&err->flag, 0, 1) == 0) err->value = static_cast<long long>(i);
    return false;
  }
  *out = w;
  return true;
}

// The device slot of one op and its read-back (Note [Index checks on the device]).
class IndexCheck {
 public:
  // A zeroed slot in stream order on `stream`.
  IndexCheck(const Stream& stream, const char* op)
      : stream_(stream),
        op_(op),
        mem_(get_allocator(DeviceType::CUDA)->allocate(sizeof(IndexErrorSlot), stream)) {
    memset_async(slot(), 0, sizeof(IndexErrorSlot), native_stream(stream_), op_);
  }
  IndexErrorSlot* slot() const { return static_cast<IndexErrorSlot*>(mem_.get()); }

  // Waits for the op's kernels and raises the CPU's error if one of them met a bad value.
  void raise_if_bad(const IndexAxis& axis) const {
    IndexErrorSlot host{0, 0, 0};
    memcpy_async(&host, slot(), sizeof(host), native_stream(stream_), op_);
    stream_synchronize(native_stream(stream_), op_);
    if (host.flag != 0) {
      EMBER_ERROR(axis.op, ": index ", static_cast<int64_t>(host.value),
                  " is out of bounds for dimension ", axis.dim, " with size ", axis.size);
    }
  }

 private:
  Stream stream_;
  const char* op_;
  DataPtr mem_;
};

}  // namespace ember::kernels::cuda
