#pragma once
// The public, differentiable ops of the conv family: each records a node of the autograd graph
// (when an input requires grad) and runs its kernel-level twin ember::native::<op>, declared and
// documented in core/ops/conv.h (shapes, dtypes, errors). The derivative formulas are in
// autograd/ops/conv.cpp. (Note [Where an op lives] in autograd/ops/ops.h.)

#include "core/ops/conv.h"

namespace ember {

Tensor im2col(const Tensor& input, const Shape& kernel_size, const Shape& dilation = {1},
              const Shape& padding = {0}, const Shape& stride = {1});
Tensor col2im(const Tensor& input, const Shape& output_size, const Shape& kernel_size,
              const Shape& dilation = {1}, const Shape& padding = {0}, const Shape& stride = {1});
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              const Shape& stride = {1}, const Shape& padding = {0}, const Shape& dilation = {1},
              int64_t groups = 1);
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const Shape& kernel_size,
                                                   const Shape& stride = {},
                                                   const Shape& padding = {0},
                                                   const Shape& dilation = {1},
                                                   bool ceil_mode = false);
Tensor max_pool2d(const Tensor& input, const Shape& kernel_size, const Shape& stride = {},
                  const Shape& padding = {0}, const Shape& dilation = {1}, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& input, const Shape& kernel_size, const Shape& stride = {},
                  const Shape& padding = {0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);

}  // namespace ember
