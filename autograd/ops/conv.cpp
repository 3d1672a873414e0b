// Public ops of the conv family (core/ops/conv.h): forward = native::, plus autograd.

#include "autograd/ops/common.h"
#include "core/ops/conv.h"

namespace ember {

Tensor im2col(const Tensor& input, const Shape& kernel_size, const Shape& dilation, const Shape& padding, const Shape& stride) {
  return native::im2col(input, kernel_size, dilation, padding, stride);
}
Tensor col2im(const Tensor& input, const Shape& output_size, const Shape& kernel_size, const Shape& dilation, const Shape& padding, const Shape& stride) {
  return native::col2im(input, output_size, kernel_size, dilation, padding, stride);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const Shape& stride, const Shape& padding, const Shape& dilation, int64_t groups) {
  return native::conv2d(input, weight, bias, stride, padding, dilation, groups);
}
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const Shape& kernel_size, const Shape& stride, const Shape& padding, const Shape& dilation, bool ceil_mode) {
  return native::max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode);
}
Tensor max_pool2d(const Tensor& input, const Shape& kernel_size, const Shape& stride, const Shape& padding, const Shape& dilation, bool ceil_mode) {
  return native::max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode);
}
Tensor avg_pool2d(const Tensor& input, const Shape& kernel_size, const Shape& stride, const Shape& padding, bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  return native::avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
}

}  // namespace ember
