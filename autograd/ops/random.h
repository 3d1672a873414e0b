#pragma once
// The public, differentiable ops of the random family: each records a node of the autograd graph
// (when an input requires grad) and runs its kernel-level twin ember::native::<op>, declared and
// documented in core/ops/random.h (shapes, dtypes, errors). The derivative formulas are in
// autograd/ops/random.cpp. (Note [Where an op lives] in autograd/ops/ops.h.)

#include "core/ops/random.h"

namespace ember {

const Tensor& uniform_(const Tensor& self, double from = 0.0, double to = 1.0,
                       Generator* gen = nullptr);
const Tensor& normal_(const Tensor& self, double mean = 0.0, double std = 1.0,
                      Generator* gen = nullptr);
const Tensor& bernoulli_(const Tensor& self, double p = 0.5, Generator* gen = nullptr);

}  // namespace ember
