#pragma once
// The public, differentiable ops of the index family: each records a node of the autograd graph
// (when an input requires grad) and runs its kernel-level twin ember::native::<op>, declared and
// documented in core/ops/index.h (shapes, dtypes, errors). The derivative formulas are in
// autograd/ops/index.cpp. (Note [Where an op lives] in autograd/ops/ops.h.)

#include "core/ops/index.h"

namespace ember {

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
const Tensor& scatter_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self = true);
const Tensor& scatter_reduce_(const Tensor& self, int64_t dim, const Tensor& index,
                              const Tensor& src, const std::string& reduce,
                              bool include_self = true);
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha = 1);
const Tensor& index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                         const Scalar& alpha = 1);
Tensor index(const Tensor& self, const std::vector<Tensor>& indices);
const Tensor& index_put_(const Tensor& self, const std::vector<Tensor>& indices,
                         const Tensor& values, bool accumulate = false);
Tensor index_put(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values,
                 bool accumulate = false);
Tensor masked_select(const Tensor& self, const Tensor& mask);
Tensor take(const Tensor& self, const Tensor& index);
Tensor embedding(const Tensor& weight, const Tensor& indices,
                 std::optional<int64_t> padding_idx = std::nullopt);
std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim = -1, bool descending = false,
                                bool stable = true);
std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim = -1,
                                bool largest = true, bool sorted = true);

}  // namespace ember
