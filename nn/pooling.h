#pragma once
// Pooling layers (PyTorch's nn.MaxPool2d, nn.AvgPool2d, nn.AdaptiveAvgPool2d) and their
// functional forms, over images (N, C, H, W) or unbatched (C, H, W).
//
//   auto pool = std::make_shared<nn::MaxPool2d>(2);           // 2x2 windows, stride 2
//   Tensor y = (*pool)(x);                                     // (N, C, H, W) -> (N, C, H/2, W/2)
//   Tensor z = F::adaptive_avg_pool2d(x, {3, 2});              // any (H, W) -> (3, 2)
//
// The window geometry and its rules (output sizes, ceil_mode, padding at most half the kernel,
// count_include_pad, divisor_override) are those of the core ops in core/ops/conv.h, which
// max_pool2d and avg_pool2d wrap. Window arguments are one value for both dims or {h, w};
// stride defaults (empty) to the kernel size.

#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>

#include "autograd/ops/conv.h"
#include "core/tensor.h"
#include "nn/conv.h"
#include "nn/module.h"

namespace ember::nn::functional {

// max_pool2d, max_pool2d_with_indices (F.max_pool2d(..., return_indices=True): values and
// int64 indices into each flattened H * W plane) and avg_pool2d ARE the core ops of
// core/ops/conv.h: using-declarations rather than wrappers, so that an unqualified call inside
// this namespace, which also finds the core op through the Tensor argument, is not ambiguous.
using ember::avg_pool2d;
using ember::max_pool2d;
using ember::max_pool2d_with_indices;

// input (N, C, H, W) or (C, H, W) -> (N, C, out_h, out_w), output_size one value or {h, w},
// each positive (it may exceed the input's). Output row i averages input rows
// [floor(i * H / out_h), ceil((i + 1) * H / out_h)), and likewise for columns (PyTorch's
// windows). Op "adaptive_avg_pool2d" (family nn_conv): avg_pool2d when out divides in in both
// dims; otherwise A_h @ x @ A_w^T with the (out, in) averaging matrices A, which is exact and
// differentiable.
Tensor adaptive_avg_pool2d(const Tensor& input, const Shape& output_size);

}  // namespace ember::nn::functional

namespace ember::nn {

// Parameters: none. forward(x) returns the pooled values; with return_indices = true, a module
// that returns two tensors, so call forward_with_indices (forward is then an error, as such a
// PyTorch module cannot be used as a one-tensor layer either).
class MaxPool2d : public Module {
 public:
  MaxPool2d(const IntArg& kernel_size, const IntArg& stride = {}, const IntArg& padding = 0,
            const IntArg& dilation = 1, bool return_indices = false, bool ceil_mode = false);
  // MaxPool2d({3, 2}): without this overload the braces could also build a MaxPool2d(3, 2) for
  // the (deleted) copy constructor, an ambiguous call.
  MaxPool2d(std::initializer_list<int64_t> kernel_size, const IntArg& stride = {},
            const IntArg& padding = 0, const IntArg& dilation = 1, bool return_indices = false,
            bool ceil_mode = false)
      : MaxPool2d(IntArg(kernel_size), stride, padding, dilation, return_indices, ceil_mode) {}
  Tensor forward(const Tensor& input) override;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  // "kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False"
  std::string extra_repr() const override;

  const IntArg kernel_size, stride, padding, dilation;  // as given (stride: kernel_size if not)
  const bool return_indices, ceil_mode;
};

class AvgPool2d : public Module {
 public:
  AvgPool2d(const IntArg& kernel_size, const IntArg& stride = {}, const IntArg& padding = 0,
            bool ceil_mode = false, bool count_include_pad = true,
            std::optional<int64_t> divisor_override = std::nullopt);
  // AvgPool2d({3, 2}): see MaxPool2d.
  AvgPool2d(std::initializer_list<int64_t> kernel_size, const IntArg& stride = {},
            const IntArg& padding = 0, bool ceil_mode = false, bool count_include_pad = true,
            std::optional<int64_t> divisor_override = std::nullopt)
      : AvgPool2d(IntArg(kernel_size), stride, padding, ceil_mode, count_include_pad,
                  divisor_override) {}
  Tensor forward(const Tensor& input) override;
  // "kernel_size=2, stride=2, padding=0"
  std::string extra_repr() const override;

  const IntArg kernel_size, stride, padding;
  const bool ceil_mode, count_include_pad;
  const std::optional<int64_t> divisor_override;
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(const IntArg& output_size);
  Tensor forward(const Tensor& input) override;
  // "output_size=(3, 2)" or "output_size=4"
  std::string extra_repr() const override;

  const IntArg output_size;
};

}  // namespace ember::nn
