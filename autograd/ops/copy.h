#pragma once
// The public, differentiable ops of the copy family: each records a node of the autograd graph
// (when an input requires grad) and runs its kernel-level twin ember::native::<op>, declared and
// documented in core/ops/copy.h (shapes, dtypes, errors). The derivative formulas are in
// autograd/ops/copy.cpp. (Note [Where an op lives] in autograd/ops/ops.h.)

#include "core/ops/copy.h"

namespace ember {

const Tensor& copy_(const Tensor& dst, const Tensor& src, bool non_blocking = false);
const Tensor& fill_(const Tensor& t, const Scalar& value);
const Tensor& zero_(const Tensor& t);
Tensor contiguous(const Tensor& t);
Tensor clone(const Tensor& t);
Tensor to(const Tensor& t, Device device, DType dtype, bool non_blocking = false);

}  // namespace ember
