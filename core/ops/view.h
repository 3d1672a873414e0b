#pragma once
// Views: new sizes/strides/offset over the same storage, never a copy (reshape copies only when
// no view can express the result). Every method of the "views" section of Tensor forwards here.
// Negative dims and indices count from the end, as in PyTorch.
//
// Where these ops live (Note [Where an op lives] in autograd/ops/ops.h): the ops autograd
// differentiates, and every in-place op, are declared here as ember::native::<op>, the
// kernel-level function that checks, allocates and dispatches without recording; their public
// forms ember::<op> (and the Tensor methods) are in autograd/ops/view.h. The ops autograd does
// not see are declared here as public functions and defined in core.

#include "core/tensor.h"

namespace ember {

namespace native {
Tensor view(const Tensor& t, const Shape& shape);  // one size may be -1
Tensor reshape(const Tensor& t, const Shape& shape);
Tensor permute(const Tensor& t, const Shape& dims);
Tensor transpose(const Tensor& t, int64_t d0, int64_t d1);
Tensor squeeze(const Tensor& t);
Tensor squeeze(const Tensor& t, int64_t d);
Tensor unsqueeze(const Tensor& t, int64_t d);
Tensor expand(const Tensor& t, const Shape& shape);  // -1 keeps a size
Tensor flatten(const Tensor& t, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor unflatten(const Tensor& t, int64_t d, const Shape& sizes);
Tensor narrow(const Tensor& t, int64_t d, int64_t start, int64_t length);
Tensor slice(const Tensor& t, int64_t d, std::optional<int64_t> start, std::optional<int64_t> end,
             int64_t step = 1);
Tensor select(const Tensor& t, int64_t d, int64_t index);
Tensor unfold(const Tensor& t, int64_t d, int64_t size, int64_t step);
Tensor diagonal(const Tensor& t, int64_t offset = 0, int64_t d1 = 0, int64_t d2 = 1);
Tensor as_strided(const Tensor& t, const Shape& sizes, const Shape& strides,
                  std::optional<int64_t> storage_offset = std::nullopt);
}  // namespace native

// The strides a view of shape `shape` would need over a tensor with sizes/strides, if one
// exists (PyTorch's computeStride).
std::optional<Shape> view_strides(const Shape& sizes, const Shape& strides, const Shape& shape);
// Replaces one -1 in shape by the size that makes numel match; checks the product.
Shape infer_size(const Shape& shape, int64_t numel, const char* op);

}  // namespace ember
