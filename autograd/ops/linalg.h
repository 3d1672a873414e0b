#pragma once
// The public, differentiable ops of the linalg family: each records a node of the autograd graph
// (when an input requires grad) and runs its kernel-level twin ember::native::<op>, declared and
// documented in core/ops/linalg.h (shapes, dtypes, errors). The derivative formulas are in
// autograd/ops/linalg.cpp. (Note [Where an op lives] in autograd/ops/ops.h.)

#include "core/ops/linalg.h"

namespace ember {

Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor addmm(const Tensor& input, const Tensor& m1, const Tensor& m2, const Scalar& beta = 1,
             const Scalar& alpha = 1);
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});
Tensor dot(const Tensor& a, const Tensor& b);
Tensor outer(const Tensor& a, const Tensor& b);

}  // namespace ember
