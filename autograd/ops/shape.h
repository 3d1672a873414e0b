#pragma once
// The public, differentiable ops of the shape family: each records a node of the autograd graph
// (when an input requires grad) and runs its kernel-level twin ember::native::<op>, declared and
// documented in core/ops/shape.h (shapes, dtypes, errors). The derivative formulas are in
// autograd/ops/shape.cpp. (Note [Where an op lives] in autograd/ops/ops.h.)

#include "core/ops/shape.h"

namespace ember {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& self, const Shape& split_sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim = 0);
Tensor repeat(const Tensor& self, const Shape& repeats);
Tensor tile(const Tensor& self, const Shape& reps);
Tensor flip(const Tensor& self, const Shape& dims);
Tensor roll(const Tensor& self, const Shape& shifts, const Shape& dims = {});
Tensor pad(const Tensor& self, const Shape& pad, const std::string& mode = "constant",
           const Scalar& value = 0);
Tensor tril(const Tensor& self, int64_t diagonal = 0);
Tensor triu(const Tensor& self, int64_t diagonal = 0);

}  // namespace ember
