#pragma once
// Convolution and pooling building blocks over images laid out (N, C, H, W), with PyTorch's names,
// argument order and results:
//
//   im2col(x, {3, 3}, /*dilation*/ {1}, /*padding*/ {1}, /*stride*/ {1})  // F.unfold
//   col2im(cols, {H, W}, {3, 3}, {1}, {1}, {1})                           // F.fold
//   conv2d(x, weight, bias, /*stride*/ {2}, /*padding*/ {1}, /*dilation*/ {1}, /*groups*/ 1)
//   auto [values, indices] = max_pool2d_with_indices(x, {2, 2});
//   avg_pool2d(x, {3, 3}, /*stride*/ {2}, /*padding*/ {1});
//
// - Every op also takes an unbatched (C, H, W) input ((C * kh * kw, L) for col2im) and then
//   returns an unbatched result. The batch may be empty; the other dims may not.
// - Each window parameter (kernel_size, stride, padding, dilation, output_size) is one value for
//   both spatial dims or {h, w}. Pooling's stride defaults ({}) to the kernel size.
// - Along one spatial dim, a window of size k with dilation d covers d * (k - 1) + 1 input pixels
//   and there are  out = floor((in + 2 * pad - d * (k - 1) - 1) / stride) + 1  positions (ceil
//   instead of floor in pooling's ceil_mode, dropping a last window that would start in the
//   right padding). Position (oh, ow) reads input rows oh * stride - pad + i * d, i < k.
// - dtypes: float32, float64, float16 and bfloat16; the 16-bit types accumulate in float
//   (conv2d computes them in float32 and rounds the result).
// - Inputs may be non-contiguous (they are made contiguous first).
//
// Where these ops live (Note [Where an op lives] in autograd/ops/ops.h): the ops autograd
// differentiates, and every in-place op, are declared here as ember::native::<op>, the
// kernel-level function that checks, allocates and dispatches without recording; their public
// forms ember::<op> (and the Tensor methods) are in autograd/ops/conv.h. The ops autograd does
// not see are declared here as public functions and defined in core.

#include <array>
#include <optional>
#include <tuple>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ember {

namespace native {
// F.unfold: input (N, C, H, W) -> (N, C * kh * kw, L), L = out_h * out_w. Row (c * kh + i) * kw
// + j, column oh * out_w + ow holds input[n, c, oh*sh - ph + i*dh, ow*sw - pw + j*dw] (0 in the
// padding).
Tensor im2col(const Tensor& input, const Shape& kernel_size, const Shape& dilation = {1},
              const Shape& padding = {0}, const Shape& stride = {1});
// F.fold, the adjoint of im2col: input (N, C * kh * kw, L) -> (N, C, H, W) with
// (H, W) = output_size, summing the values that overlapping windows put on one pixel.
Tensor col2im(const Tensor& input, const Shape& output_size, const Shape& kernel_size,
              const Shape& dilation = {1}, const Shape& padding = {0}, const Shape& stride = {1});

// input (N, C, H, W), weight (O, C / groups, kh, kw), bias (O) or undefined ->
// (N, O, out_h, out_w). Input channels [g * C/groups, (g+1) * C/groups) feed output channels
// [g * O/groups, (g+1) * O/groups).
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              const Shape& stride = {1}, const Shape& padding = {0}, const Shape& dilation = {1},
              int64_t groups = 1);

// Max over each window: values (N, C, out_h, out_w) and int64 indices of the maxima in the
// flattened H * W input plane (ih * W + iw). Padding counts as -infinity and may be at most half
// the kernel. A NaN in a window wins.
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const Shape& kernel_size,
                                                   const Shape& stride = {},
                                                   const Shape& padding = {0},
                                                   const Shape& dilation = {1},
                                                   bool ceil_mode = false);
Tensor max_pool2d(const Tensor& input, const Shape& kernel_size, const Shape& stride = {},
                  const Shape& padding = {0}, const Shape& dilation = {1}, bool ceil_mode = false);

// Mean over each window. The divisor is divisor_override if given; else the window's size
// clipped to the padded input (count_include_pad) or to the input itself (!count_include_pad).
Tensor avg_pool2d(const Tensor& input, const Shape& kernel_size, const Shape& stride = {},
                  const Shape& padding = {0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
}  // namespace native

// The geometry of a sliding 2-D window, checked by the op before any kernel sees it.
struct Window2d {
  int64_t kh = 1, kw = 1;        // kernel size
  int64_t sh = 1, sw = 1;        // stride
  int64_t ph = 0, pw = 0;        // padding, each side
  int64_t dh = 1, dw = 1;        // dilation
  int64_t in_h = 0, in_w = 0;    // the image plane (col2im: its output)
  int64_t out_h = 0, out_w = 0;  // window positions
};

// Kernels. Every tensor is contiguous and batched; the shapes are those of the ops above.
// input (N, C, H, W) -> out (N, C * kh * kw, out_h * out_w)
using im2col_fn = void (*)(const Tensor& input, const Tensor& out, const Window2d& win);
// input (N, C * kh * kw, out_h * out_w) -> out (N, C, H, W)
using col2im_fn = void (*)(const Tensor& input, const Tensor& out, const Window2d& win);
// float32 / float64. bias (O) or undefined.
using conv2d_fn = void (*)(const Tensor& input, const Tensor& weight, const Tensor& bias,
                           const Tensor& out, const Window2d& win, int64_t groups);
// grad_out (N, O, out_h, out_w), input (N, C, H, W), weight (O, C / groups, kh, kw), all of
// one dtype (float32 / float64) -> grad_input (N, C, H, W), grad_weight (weight's shape) and
// grad_bias (O), each undefined when not wanted (then not written). input is read only for
// grad_weight, weight only for grad_input.
using conv2d_backward_fn = void (*)(const Tensor& grad_out, const Tensor& input,
                                    const Tensor& weight, const Tensor& grad_input,
                                    const Tensor& grad_weight, const Tensor& grad_bias,
                                    const Window2d& win, int64_t groups);
// indices: int64, out's shape
using max_pool2d_fn = void (*)(const Tensor& input, const Tensor& out, const Tensor& indices,
                               const Window2d& win);
// grad_out, indices (int64): (N, C, out_h, out_w) -> grad_input (N, C, H, W), overwritten:
// each plane cleared, then each output's gradient added at the flat position its index names.
// Throws if an index lies outside its H * W plane.
using max_pool2d_backward_fn = void (*)(const Tensor& grad_out, const Tensor& indices,
                                        const Tensor& grad_input);
// divisor: 0 when not overridden
using avg_pool2d_fn = void (*)(const Tensor& input, const Tensor& out, const Window2d& win,
                               bool count_include_pad, int64_t divisor);
EMBER_DECLARE_DISPATCH(im2col_fn, im2col_stub);
EMBER_DECLARE_DISPATCH(col2im_fn, col2im_stub);
EMBER_DECLARE_DISPATCH(conv2d_fn, conv2d_stub);
EMBER_DECLARE_DISPATCH(conv2d_backward_fn, conv2d_backward_stub);
EMBER_DECLARE_DISPATCH(max_pool2d_fn, max_pool2d_stub);
EMBER_DECLARE_DISPATCH(max_pool2d_backward_fn, max_pool2d_backward_stub);
EMBER_DECLARE_DISPATCH(avg_pool2d_fn, avg_pool2d_stub);

// Kernel-level helpers without a public twin.
namespace native {
// The three gradients of conv2d(input, weight, bias, stride, padding, dilation, groups) for
// grad_out (conv2d's result shape), in one pass over the batch (not differentiable: autograd
// uses it only when no double backward is recorded). Returns {grad_input (input's shape),
// grad_weight (weight's shape), grad_bias (O)}; an entry whose output_mask is false is
// undefined. input's values are read only for grad_weight and weight's only for grad_input
// (otherwise only their shapes matter: a zero-strided expand will do). Unbatched (C, H, W)
// input and grad_out are accepted. All of one floating dtype; 16-bit ones are computed in
// float32.
std::tuple<Tensor, Tensor, Tensor> conv2d_backward(const Tensor& grad_out, const Tensor& input,
                                                   const Tensor& weight, const Shape& stride,
                                                   const Shape& padding, const Shape& dilation,
                                                   int64_t groups, std::array<bool, 3> output_mask);
// The gradient of max pooling in one pass: grad_out (N, C, out_h, out_w) or (C, out_h, out_w)
// added at `indices` (max_pool2d_with_indices' second result: flat positions in each H * W
// plane) into zeros of input_shape. Overlapping windows that share a maximum add up. The
// autograd formula (autograd/ops/conv.cpp) runs it when no double backward is recorded.
Tensor max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Shape& input_shape);
}  // namespace native

}  // namespace ember
