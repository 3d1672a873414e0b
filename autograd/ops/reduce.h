#pragma once
// The public, differentiable ops of the reduce family: each records a node of the autograd graph
// (when an input requires grad) and runs its kernel-level twin ember::native::<op>, declared and
// documented in core/ops/reduce.h (shapes, dtypes, errors). The derivative formulas are in
// autograd/ops/reduce.cpp. (Note [Where an op lives] in autograd/ops/ops.h.)

#include "core/ops/reduce.h"

namespace ember {

Tensor sum(const Tensor& self, const Shape& dims = {}, bool keepdim = false,
           std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& self, const Shape& dims = {}, bool keepdim = false);
Tensor prod(const Tensor& self, const Shape& dims = {}, bool keepdim = false);
Tensor var(const Tensor& self, const Shape& dims = {}, int64_t correction = 1,
           bool keepdim = false);
Tensor std(const Tensor& self, const Shape& dims = {}, int64_t correction = 1,
           bool keepdim = false);
Tensor amax(const Tensor& self, const Shape& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& self, const Shape& dims = {}, bool keepdim = false);
Tensor max(const Tensor& self);
Tensor min(const Tensor& self);
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim = false);
Tensor logsumexp(const Tensor& self, const Shape& dims, bool keepdim = false);
Tensor norm(const Tensor& self, double p = 2, const Shape& dims = {}, bool keepdim = false);
Tensor cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor cumprod(const Tensor& self, int64_t dim, std::optional<DType> dtype = std::nullopt);

}  // namespace ember
