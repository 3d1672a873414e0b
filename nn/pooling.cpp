#include "nn/pooling.h"

#include <vector>

#include "autograd/ops/conv.h"
#include "autograd/ops/linalg.h"
#include "core/op_registry.h"
#include "core/ops/factory.h"
#include "nn/repr.h"

namespace ember::nn {

namespace {
// The op of family nn_conv defined in this file (the others: nn/linear.cpp, nn/conv.cpp).
constexpr const char* kPoolingOps[] = {"adaptive_avg_pool2d"};
static_assert(sizeof(kPoolingOps) / sizeof(kPoolingOps[0]) == 1);
const OpFamilyRegistrar registrar("nn_conv", kPoolingOps);

// A (out, in) matrix whose row i averages PyTorch's adaptive window
// [floor(i * in / out), ceil((i + 1) * in / out)).
Tensor adaptive_weights(int64_t in, int64_t out, const TensorOptions& options) {
  std::vector<double> w(static_cast<size_t>(out * in), 0.0);
  for (int64_t i = 0; i < out; ++i) {
    const int64_t start = i * in / out, end = ((i + 1) * in + out - 1) / out;
    for (int64_t j = start; j < end; ++j) {
      w[static_cast<size_t>(i * in + j)] = 1.0 / static_cast<double>(end - start);
    }
  }
  return tensor(w, {out, in}, options);
}

// Checks a pooling layer's window argument (1 or 2 values) when the layer is built.
IntArg checked(const IntArg& arg, const char* layer, const char* name) {
  arg.expand(2, layer, name);
  return arg;
}

}  // namespace

// ---- functional ------------------------------------------------------------------------------
Tensor functional::adaptive_avg_pool2d(const Tensor& input, const Shape& output_size) {
  const char* op = "adaptive_avg_pool2d";
  EMBER_CHECK(input.defined() && (input.dim() == 3 || input.dim() == 4), op,
              ": expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape ",
              input.defined() ? input.sizes() : Shape{});
  EMBER_CHECK(input.is_floating_point(), op, ": expected a floating-point input, got dtype ",
              dtype_name(input.dtype()));
  for (int64_t d = input.dim() - 3; d < input.dim(); ++d) {
    EMBER_CHECK(input.size(d) > 0, op,
                ": expected non-empty channel and spatial dims, got input shape ", input.sizes());
  }
  EMBER_CHECK(output_size.size() == 1 || output_size.size() == 2, op,
              ": output_size must be one value or two values (h, w), got ", output_size);
  const int64_t out_h = output_size[0], out_w = output_size.back();
  EMBER_CHECK(out_h > 0 && out_w > 0, op, ": output_size must be positive, got ", output_size);
  const int64_t in_h = input.size(-2), in_w = input.size(-1);
  if (in_h % out_h == 0 && in_w % out_w == 0) {
    // Equal windows that tile the input: plain average pooling.
    return ember::avg_pool2d(input, {in_h / out_h, in_w / out_w});
  }
  // (out_h, H) @ (*, H, W) @ (W, out_w) -> (*, out_h, out_w).
  Tensor rows = adaptive_weights(in_h, out_h, input.options());
  Tensor cols = adaptive_weights(in_w, out_w, input.options());
  return matmul(matmul(rows, input), cols.transpose(0, 1));
}

// ---- modules ---------------------------------------------------------------------------------
MaxPool2d::MaxPool2d(const IntArg& kernel_size, const IntArg& stride, const IntArg& padding,
                     const IntArg& dilation, bool return_indices, bool ceil_mode)
    : Module("MaxPool2d"),
      kernel_size(checked(kernel_size, "MaxPool2d", "kernel_size")),
      stride(checked(stride.empty() ? kernel_size : stride, "MaxPool2d", "stride")),
      padding(checked(padding, "MaxPool2d", "padding")),
      dilation(checked(dilation, "MaxPool2d", "dilation")),
      return_indices(return_indices),
      ceil_mode(ceil_mode) {}

Tensor MaxPool2d::forward(const Tensor& input) {
  EMBER_CHECK(!return_indices,
              "MaxPool2d: built with return_indices=True, it returns values and indices; call "
              "forward_with_indices");
  return ember::max_pool2d(input, kernel_size.values(), stride.values(), padding.values(),
                           dilation.values(), ceil_mode);
}

std::tuple<Tensor, Tensor> MaxPool2d::forward_with_indices(const Tensor& input) {
  return ember::max_pool2d_with_indices(input, kernel_size.values(), stride.values(),
                                        padding.values(), dilation.values(), ceil_mode);
}

std::string MaxPool2d::extra_repr() const {
  return "kernel_size=" + kernel_size.repr() + ", stride=" + stride.repr() +
         ", padding=" + padding.repr() + ", dilation=" + dilation.repr() +
         ", ceil_mode=" + python_bool(ceil_mode);
}

AvgPool2d::AvgPool2d(const IntArg& kernel_size, const IntArg& stride, const IntArg& padding,
                     bool ceil_mode, bool count_include_pad,
                     std::optional<int64_t> divisor_override)
    : Module("AvgPool2d"),
      kernel_size(checked(kernel_size, "AvgPool2d", "kernel_size")),
      stride(checked(stride.empty() ? kernel_size : stride, "AvgPool2d", "stride")),
      padding(checked(padding, "AvgPool2d", "padding")),
      ceil_mode(ceil_mode),
      count_include_pad(count_include_pad),
      divisor_override(divisor_override) {}

Tensor AvgPool2d::forward(const Tensor& input) {
  return ember::avg_pool2d(input, kernel_size.values(), stride.values(), padding.values(),
                           ceil_mode, count_include_pad, divisor_override);
}

std::string AvgPool2d::extra_repr() const {
  return "kernel_size=" + kernel_size.repr() + ", stride=" + stride.repr() +
         ", padding=" + padding.repr();
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(const IntArg& output_size)
    : Module("AdaptiveAvgPool2d"),
      output_size(checked(output_size, "AdaptiveAvgPool2d", "output_size")) {
  for (int64_t v : output_size.values())
    EMBER_CHECK(v > 0, "AdaptiveAvgPool2d: output_size must be positive, got ",
                output_size.values());
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& input) {
  return functional::adaptive_avg_pool2d(input, output_size.values());
}

std::string AdaptiveAvgPool2d::extra_repr() const { return "output_size=" + output_size.repr(); }

}  // namespace ember::nn
