#pragma once
// The public, differentiable ops of the view family: each records a node of the autograd graph
// (when an input requires grad) and runs its kernel-level twin ember::native::<op>, declared and
// documented in core/ops/view.h (shapes, dtypes, errors). The derivative formulas are in
// autograd/ops/view.cpp. (Note [Where an op lives] in autograd/ops/ops.h.)

#include "core/ops/view.h"

namespace ember {

Tensor view(const Tensor& t, const Shape& shape);
Tensor reshape(const Tensor& t, const Shape& shape);
Tensor permute(const Tensor& t, const Shape& dims);
Tensor transpose(const Tensor& t, int64_t d0, int64_t d1);
Tensor squeeze(const Tensor& t);
Tensor squeeze(const Tensor& t, int64_t d);
Tensor unsqueeze(const Tensor& t, int64_t d);
Tensor expand(const Tensor& t, const Shape& shape);
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

}  // namespace ember
