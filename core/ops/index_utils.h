#pragma once
// Internal to the index family (core/ops/index*.cpp): the helpers its files share. Not part of
// the public API; nothing outside core/ops/index*.cpp includes this header.
//
// Where the family lives (the ops are declared and documented in core/ops/index.h):
//   index.cpp           the family's op registry, check_index_values
//   index_gather.cpp    index_select, gather, embedding (the gather kernel along one dim)
//   index_scatter.cpp   scatter, scatter_add, scatter_reduce, index_add (the scatter kernel)
//   index_advanced.cpp  advanced indexing: index, index_put_, index_put
//   index_take.cpp      masked_select, take, nonzero
//   index_sort.cpp      sort, argsort, topk

#include <utility>
#include <vector>

#include "core/ops/copy.h"
#include "core/ops/index.h"
#include "core/ops/view.h"
#include "core/tensor.h"

namespace ember::index_detail {

// The same memory seen with other sizes and strides (a stride may be 0). Only used for the
// operands of one kernel, always within the bounds of the original view (Note [Indexed
// iteration] in core/ops/index.h).
inline Tensor restride(const Tensor& t, Shape sizes, Shape strides) {
  return make_tensor(t.storage(), std::move(sizes), std::move(strides), t.storage_offset(),
                     t.dtype());
}

inline Shape with_size(Shape s, int64_t d, int64_t v) {
  s[d] = v;
  return s;
}

// 0-dim tensors take part in dim-wise ops as 1-D tensors of one element, as in PyTorch.
inline Tensor at_least_1d(const Tensor& t) { return t.dim() == 0 ? native::view(t, {1}) : t; }

inline void check_defined(const Tensor& t, const char* op, const char* what) {
  EMBER_CHECK(t.defined(), op, ": ", what, " is an undefined tensor");
}

inline void check_same_device(const Tensor& self, const Tensor& other, const char* op,
                              const char* what) {
  EMBER_CHECK(self.device() == other.device(), op, ": expected ", what, " on ", self.device(),
              " (the device of self), got ", other.device());
}

// gather and the scatters take int64 indices only, as PyTorch does.
inline void check_int64_index(const Tensor& index, const char* op) {
  check_defined(index, op, "index");
  EMBER_CHECK(index.dtype() == kInt64, op, ": expected an int64 index tensor, got ",
              dtype_name(index.dtype()));
}

// index_select, index_add and embedding accept int32 indices too; kernels see int64.
inline Tensor int64_index(const Tensor& index, const char* op) {
  check_defined(index, op, "index");
  EMBER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, op,
              ": expected an int64 or int32 index tensor, got ", dtype_name(index.dtype()));
  return native::to(index, kInt64);
}

inline int64_t byte_stride(const Tensor& t, int64_t d) {
  return t.stride(d) * static_cast<int64_t>(t.element_size());
}

// Checks every value of an int64 index against axis. For results with no elements, where the
// kernels would not look at the index, so that a bad index is an error whatever the shapes.
// (index.cpp)
void check_index_values(const Tensor& index, const IndexAxis& axis);

// Refuses a scatter-like write into self (scatter_, index_add_, index_put_...) when self overlaps
// itself or shares memory with index or src (Note [Writes over overlapping memory] in
// core/mem_overlap.h). An undefined index is skipped.
void check_scatter_overlap(const Tensor& self, const Tensor& index, const Tensor& src,
                           const char* op);

// Runs the scatter kernel: for every position of `shape`, the loop walks `loop.steps` source
// elements of `src` and writes each into `self` at the position its `index` entry names along
// `axis` (scatter, scatter_add/reduce, index_add and index_put_ all come down to this).
// (index_scatter.cpp)
void run_scatter(const Tensor& self, const Tensor& src, const Tensor& index, const Shape& shape,
                 const IndexAxis& axis, const ScatterLoop& loop, ScatterReduce reduce,
                 const Scalar& alpha, const char* op);

// self[indices] as a copy (advanced indexing; `op` names the op in errors: index,
// masked_select). (index_advanced.cpp)
Tensor index_impl(const Tensor& self, const std::vector<Tensor>& indices, const char* op);

}  // namespace ember::index_detail
