#pragma once
// The public, differentiable ops of the softmax family: each records a node of the autograd graph
// (when an input requires grad) and runs its kernel-level twin ember::native::<op>, declared and
// documented in core/ops/softmax.h (shapes, dtypes, errors). The derivative formulas are in
// autograd/ops/softmax.cpp. (Note [Where an op lives] in autograd/ops/ops.h.)

#include "core/ops/softmax.h"

namespace ember {

Tensor softmax(const Tensor& self, int64_t dim);
Tensor log_softmax(const Tensor& self, int64_t dim);

}  // namespace ember
