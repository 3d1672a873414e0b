#pragma once
// Indexing: pick, place and order elements by index. Every method of the "indexing" section of
// Tensor forwards here. Names and argument orders are PyTorch's.
//
// Index tensors hold int64 values (int32 too where PyTorch accepts it: index_select, index_add,
// advanced indexing, embedding). Every index value is bounds-checked before it is used, and a bad
// one raises ember::Error naming the op, the value, the dim and its size:
//   "index_select: index 7 is out of bounds for dimension 0 with size 5"
// Negative index values count from the end only where PyTorch allows it: advanced indexing
// (index, index_put_) and take. gather, scatter*, index_select, index_add and embedding reject
// them. Value tensors may have any dtype.
//
// How the kernels see these ops (Note [Indexed iteration]):
// an op builds a TensorIter whose operands are views of self/src/index restrided to a common
// shape, where self's stride along the indexed dim is 0. At each iteration position the kernel
// reads the index value i, checks it against IndexAxis::size and adds i * IndexAxis::stride to
// self's pointer. Scatters (which write into self) additionally give the iteration a size of 1
// along `dim` and walk `dim` themselves (ScatterLoop), so every element of self is written by one
// thread, in index order: results are deterministic and duplicate indices never race.
//
// Where these ops live (Note [Where an op lives] in autograd/ops/ops.h): the ops autograd
// differentiates, and every in-place op, are declared here as ember::native::<op>, the
// kernel-level function that checks, allocates and dispatches without recording; their public
// forms ember::<op> (and the Tensor methods) are in autograd/ops/index.h. The ops autograd does
// not see are declared here as public functions and defined in core.

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ember {

class TensorIter;

namespace native {
// ---- dim-wise indexing ---------------------------------------------------------------------
// out = self with dim restricted to the positions in `index` (1-D, int64 or int32).
// out.size(dim) == index.numel().
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index);

// out[i][j][k] = self[index[i][j][k]][j][k] (dim 0). index: int64 with self's number of dims and
// index.size(d) <= self.size(d) for d != dim. out has index's shape.
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index);

// self[index[i][j][k]][j][k] = src[i][j][k] (dim 0): the inverse of gather. index: int64, same
// number of dims as self and src, index.size(d) <= src.size(d) for every d and <= self.size(d)
// for d != dim. With duplicate indices the last one (in index order) wins. src must have self's
// dtype; a Scalar value is written to every indexed position.
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);

// Like scatter, but duplicate indices accumulate: self[index[i][j]][j] += src[i][j].
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
const Tensor& scatter_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);

// Scatter with a reduction: reduce is "sum", "prod", "mean", "amax" or "amin". With
// include_self=false the values of self at scattered positions do not take part (positions that
// receive nothing keep self's value). "mean" on integers rounds down (floor division), as
// PyTorch does; "amax"/"amin" propagate NaN. Bool supports every reduction but "mean" (sum and
// amax are `or`, prod and amin are `and`).
Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self = true);
const Tensor& scatter_reduce_(const Tensor& self, int64_t dim, const Tensor& index,
                              const Tensor& src, const std::string& reduce,
                              bool include_self = true);

// self.index_select(dim, index) += alpha * source, accumulating duplicate indices.
// index: 1-D int64/int32; source: self's shape except source.size(dim) == index.numel().
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha = 1);
const Tensor& index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                         const Scalar& alpha = 1);

// ---- advanced indexing (NumPy / PyTorch `x[i, :, j]`) ---------------------------------------
// indices[k] indexes dim k of self (after earlier bool masks, which consume one dim each of
// theirs). Each entry is
//   - undefined: the full slice `:`;
//   - an int64/int32 tensor: the positions to take (negative values count from the end);
//   - a bool mask: its shape must equal the sizes of the dims it covers; it is replaced by the
//     coordinates of its true elements (nonzero), in row-major order.
// The index tensors broadcast together to a shape B. If they index adjacent dims, B replaces
// those dims in place ([4, 5, 6] indexed at dims 1 and 2 by [2, 3] tensors -> [4, 2, 3]);
// otherwise B comes first, followed by the sliced dims ([4, 5, 6] at dims 0 and 2 -> [B..., 5]).
// The result is a copy.
Tensor index(const Tensor& self, const std::vector<Tensor>& indices);
// self[indices] = values (values broadcast to the shape `index(self, indices)` would have and
// must have self's dtype). With accumulate=true, self[indices] += values and duplicate indices
// add up; without, one of the duplicates wins.
const Tensor& index_put_(const Tensor& self, const std::vector<Tensor>& indices,
                         const Tensor& values, bool accumulate = false);
Tensor index_put(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values,
                 bool accumulate = false);

// The elements of self where mask (bool) is true, as a 1-D tensor; self and mask broadcast.
Tensor masked_select(const Tensor& self, const Tensor& mask);
// self viewed as 1-D, indexed by `index` (int64, any shape; negative values count from the end).
// out has index's shape.
Tensor take(const Tensor& self, const Tensor& index);
}  // namespace native
// Coordinates of the non-zero elements, row-major: int64 [n, self.dim()].
Tensor nonzero(const Tensor& self);

namespace native {
// Rows of weight [V, D] picked by indices (int64/int32, any shape): out [*indices.shape, D].
// padding_idx only affects gradients (those rows get none); here it is only range-checked.
Tensor embedding(const Tensor& weight, const Tensor& indices,
                 std::optional<int64_t> padding_idx = std::nullopt);

// ---- ordering (kernels/cpu/sort.cpp) ---------------------------------------------------------
// Sorts along dim: (values, int64 indices with values == self.gather(dim, indices)). The sort is
// always stable (equal keys keep their order, in both directions), so `stable` is accepted for
// PyTorch compatibility only. NaN sorts as larger than every number (last ascending, first
// descending), as in PyTorch.
std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim = -1, bool descending = false,
                                bool stable = true);
}  // namespace native
Tensor argsort(const Tensor& self, int64_t dim = -1, bool descending = false);
namespace native {
// The k largest (or smallest) elements along dim and their indices; out.size(dim) == k.
// sorted=true returns them in order (largest first when largest); equal values come in index
// order. NaN counts as the largest value.
std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim = -1,
                                bool largest = true, bool sorted = true);
}  // namespace native

// ---- kernels ---------------------------------------------------------------------------------
// How index values address self along one axis (Note [Indexed iteration]).
struct IndexAxis {
  int64_t size = 0;            // valid index values are [0, size) ([-size, size) if wrap)
  int64_t stride = 0;          // bytes one index step moves through self
  bool wrap_negative = false;  // whether -size <= i < 0 means i + size
  int64_t dim = 0;             // reported in errors
  const char* op = "index";    // reported in errors
};

// The dim a scatter walks at each iteration position.
struct ScatterLoop {
  int64_t steps = 1;       // index.size(dim); 1 for element-wise scatters (index_put_)
  int64_t src_stride = 0;  // byte strides along the walked dim
  int64_t index_stride = 0;
  int64_t grain = 1;  // iteration positions per thread (a huge grain runs serially)
};

enum class ScatterReduce : uint8_t { Assign, Sum, Prod, Max, Min };

// gather: iter = (out, self restrided, index int64): out = self[index] along the axis.
using gather_fn = void (*)(TensorIter& iter, const IndexAxis& axis);
// scatter: iter = (self restrided [written], src, index int64):
//   self[index] = reduce(self[index], alpha * src) along the axis (alpha only for Sum).
using scatter_fn = void (*)(TensorIter& iter, const IndexAxis& axis, const ScatterLoop& loop,
                            ScatterReduce reduce, const Scalar& alpha);
// Divides self by count where count > 0 (floor division for integers): the end of
// scatter_reduce "mean". iter = (self [written], self, count int64).
using scatter_mean_fn = void (*)(TensorIter& iter);
// Byte offsets of multi-tensor advanced indexing: iter = (offset out, offset in, index int64):
//   out = in + checked(index) * axis.stride.
using index_offsets_fn = void (*)(TensorIter& iter, const IndexAxis& axis);
// index_select of a contiguous self viewed as [outer, axis.size, row_bytes]:
//   out[o, i, :] = self[o, index[i], :] for i < n (index contiguous int64).
using index_select_rows_fn = void (*)(char* out, const char* self, const int64_t* index, int64_t n,
                                      int64_t outer, int64_t row_bytes, const IndexAxis& axis);
// nonzero of a contiguous tensor: allocates and fills out (int64 [n, self.dim()]).
using nonzero_fn = void (*)(const Tensor& self, Tensor& out);

// sort/topk: iter = (values, indices, self), all restrided to size 1 along dim; the kernel walks
// the dim (n elements of self, k of values/indices).
struct SortLoop {
  int64_t n = 0;            // self.size(dim)
  int64_t k = 0;            // outputs per slice (n for sort)
  int64_t self_stride = 0;  // byte strides along dim
  int64_t values_stride = 0;
  int64_t indices_stride = 0;
};
using sort_fn = void (*)(TensorIter& iter, const SortLoop& loop, bool descending);
using topk_fn = void (*)(TensorIter& iter, const SortLoop& loop, bool largest, bool sorted);

EMBER_DECLARE_DISPATCH(gather_fn, gather_stub);
EMBER_DECLARE_DISPATCH(scatter_fn, scatter_stub);
EMBER_DECLARE_DISPATCH(scatter_mean_fn, scatter_mean_stub);
EMBER_DECLARE_DISPATCH(index_offsets_fn, index_offsets_stub);
EMBER_DECLARE_DISPATCH(index_select_rows_fn, index_select_rows_stub);
EMBER_DECLARE_DISPATCH(nonzero_fn, nonzero_stub);
EMBER_DECLARE_DISPATCH(sort_fn, sort_stub);
EMBER_DECLARE_DISPATCH(topk_fn, topk_stub);

}  // namespace ember
