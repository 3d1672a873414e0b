// Public ops of the conv family (core/ops/conv.h): forward = native::, plus autograd.
//
// - im2col and col2im are each other's adjoint, so each one's gradient is the other.
// - conv2d runs the native kernel forward; its backward is the im2col form of convolution,
//   y[n, g] = w[g] @ im2col(x)[n, g] per group g, differentiated with the differentiable
//   matmul / im2col / col2im: d x = col2im(w^T @ g), d w = sum over n of g @ im2col(x)^T,
//   d bias = g summed over batch and positions. Double backward therefore works. When no graph
//   is being recorded for the backward (no create_graph), float32 / float64 CPU gradients
//   instead come from the fused kernel native::conv2d_backward, one pass over the batch.
// - max pooling sends each output's gradient to the input element its index names (summed
//   where windows overlap): a scatter_add, or without create_graph the one-pass kernel
//   native::max_pool2d_backward; average pooling spreads it over the window, divided by the same
//   divisor as the forward.

#include "autograd/ops/conv.h"

#include <algorithm>

#include "autograd/autocast.h"
#include "autograd/ops/common.h"

namespace ember {

namespace {

// One value for both spatial dims, or {h, w} (conv.h): the value for dim i (0 = h, 1 = w).
int64_t pick(const Shape& v, size_t i) { return v.size() == 1 ? v[0] : v[i]; }

// The gradients of conv2d. x: (N, C, H, W) input (defined when need_w), w: (O, C / groups, kh,
// kw) weight (defined when need_x), g: (N, O, out_h, out_w); all batched.
Tensors conv2d_backward(const Tensor& g, const Tensor& x, const Tensor& w, const Shape& in_shape,
                        const Shape& w_shape, const Shape& stride, const Shape& padding,
                        const Shape& dilation, int64_t groups, bool need_x, bool need_w,
                        bool need_bias) {
  const int64_t N = g.size(0), O = w_shape[0], Cg = w_shape[1], kh = w_shape[2], kw = w_shape[3];
  const int64_t C = Cg * groups, H = in_shape[2], W = in_shape[3];
  const int64_t L = g.size(2) * g.size(3), Og = O / groups, rows = Cg * kh * kw;
  const Tensor g_groups = reshape(g, {N, groups, Og, L});  // (N, G, O/G, L)
  Tensor grad_x, grad_w, grad_bias;
  if (need_x) {
    // (G, rows, O/G) @ (N, G, O/G, L) -> (N, G, rows, L): the gradient of im2col(x).
    const Tensor w_t = transpose(reshape(w, {groups, Og, rows}), 1, 2);
    const Tensor cols = reshape(matmul(w_t, g_groups), {N, C * kh * kw, L});
    grad_x = col2im(cols, {H, W}, {kh, kw}, dilation, padding, stride);
  }
  if (need_w) {
    // (N, G, O/G, L) @ (N, G, L, rows) -> (N, G, O/G, rows), summed over the batch.
    const Tensor cols =
        reshape(im2col(x, {kh, kw}, dilation, padding, stride), {N, groups, rows, L});
    grad_w = reshape(sum(matmul(g_groups, transpose(cols, 2, 3)), {0}), w_shape);
  }
  if (need_bias) grad_bias = sum(g, {0, 2, 3});
  return {grad_x, grad_w, grad_bias};
}

// Whether conv2d's backward may run the fused native kernel (native::conv2d_backward): only
// when grad mode is off, i.e. the engine runs the formula without create_graph (it sets grad
// mode to create_graph around each formula, autograd/engine.cpp), since the kernel records no
// graph; and for the float32 / float64 CPU tensors it has a kernel for, and every floating
// CUDA tensor (kernels/cuda/conv.cu, pool.cu; native::conv2d_backward computes 16-bit ones in
// float32).
bool use_native_backward(const Tensor& g) {
  if (detail::grad_mode_enabled) return false;
  if (g.device().type == DeviceType::CUDA) return is_floating(g.dtype());
  return g.device().type == DeviceType::CPU && (g.dtype() == kFloat32 || g.dtype() == kFloat64);
}

// The gradient of max pooling: g (N, C, out_h, out_w) added at `indices` (flat positions in
// each H * W plane) into zeros of the input's shape. Windows may share their maximum, hence
// the scatter_add.
Tensor max_pool2d_backward(const Tensor& g, const Tensor& indices, const Shape& in_shape) {
  // No double backward being recorded: the one-pass kernel (zeros, then the adds, per plane).
  if (use_native_backward(g)) return native::max_pool2d_backward(g, indices, in_shape);
  const int64_t nd = static_cast<int64_t>(in_shape.size());
  const int64_t plane = in_shape[nd - 2] * in_shape[nd - 1];
  Shape flat(in_shape.begin(), in_shape.end() - 2);  // (N, C) or (C)
  flat.push_back(plane);
  Shape g_flat(in_shape.begin(), in_shape.end() - 2);
  g_flat.push_back(g.size(-2) * g.size(-1));
  Tensor grad =
      scatter_add(zeros(flat, g.options()), -1, reshape(indices, g_flat), reshape(g, g_flat));
  return reshape(grad, in_shape);
}

// 1 / the divisor of each average-pooling window, (out_h, out_w), as the kernel computes it
// (kernels/cpu/pool.cpp): divisor_override, else the window clipped to the padded input
// (count_include_pad) or to the input; 0 for a window with divisor 0 (its output is 0).
Tensor avg_pool2d_scale(int64_t H, int64_t W, int64_t out_h, int64_t out_w, const Shape& k,
                        const Shape& s, const Shape& p, bool count_include_pad,
                        std::optional<int64_t> divisor_override) {
  std::vector<double> scale(static_cast<size_t>(out_h * out_w));
  for (int64_t oh = 0; oh < out_h; ++oh) {
    for (int64_t ow = 0; ow < out_w; ++ow) {
      int64_t h0 = oh * s[0] - p[0], w0 = ow * s[1] - p[1];
      int64_t h1 = std::min(h0 + k[0], H + p[0]), w1 = std::min(w0 + k[1], W + p[1]);
      const int64_t padded_size = (h1 - h0) * (w1 - w0);
      h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0);
      h1 = std::min(h1, H), w1 = std::min(w1, W);
      const int64_t count = divisor_override    ? *divisor_override
                            : count_include_pad ? padded_size
                                                : (h1 - h0) * (w1 - w0);
      scale[static_cast<size_t>(oh * out_w + ow)] =
          count != 0 ? 1.0 / static_cast<double>(count) : 0.0;
    }
  }
  return tensor(scale, {out_h, out_w}, kFloat64);
}

// The gradient of average pooling: each output's g / divisor added to every input pixel of its
// window, i.e. col2im of g / divisor repeated over the kh * kw window taps. In ceil_mode the
// last window may hang over the right / bottom edge: col2im then works on an image enlarged to
// hold it, and the overhang is cut off.
Tensor avg_pool2d_backward(const Tensor& g, const Shape& in_shape, const Shape& k, const Shape& s,
                           const Shape& p, bool count_include_pad,
                           std::optional<int64_t> divisor_override) {
  const int64_t nd = static_cast<int64_t>(in_shape.size());
  const int64_t C = in_shape[nd - 3], H = in_shape[nd - 2], W = in_shape[nd - 1];
  const int64_t out_h = g.size(-2), out_w = g.size(-1), L = out_h * out_w;
  const int64_t N = nd == 4 ? in_shape[0] : 1;
  Tensor scale = avg_pool2d_scale(H, W, out_h, out_w, k, s, p, count_include_pad, divisor_override)
                     .to(g.device(), g.dtype());
  Tensor taps = expand(reshape(g * scale, {N, C, 1, L}), {N, C, k[0] * k[1], L});
  const int64_t big_h = std::max(H, (out_h - 1) * s[0] + k[0] - 2 * p[0]);
  const int64_t big_w = std::max(W, (out_w - 1) * s[1] + k[1] - 2 * p[1]);
  Tensor grad = col2im(reshape(taps, {N, C * k[0] * k[1], L}), {big_h, big_w}, k, {1}, p, s);
  if (big_h != H) grad = narrow(grad, 2, 0, H);
  if (big_w != W) grad = narrow(grad, 3, 0, W);
  return reshape(grad, in_shape);
}

}  // namespace

// d im2col = col2im of g onto the input's image size.
Tensor im2col(const Tensor& input, const Shape& kernel_size, const Shape& dilation,
              const Shape& padding, const Shape& stride) {
  Op op("Im2colBackward", input);
  Tensor y = op.run([&] { return native::im2col(input, kernel_size, dilation, padding, stride); });
  op.set_output(y);
  if (op.recording()) {
    const Shape image{input.size(-2), input.size(-1)};
    op.backward([=](const Saved&, const Tensors& g) -> Tensors {
      return {col2im(g[0], image, kernel_size, dilation, padding, stride)};
    });
  }
  return y;
}
// d col2im = im2col of g.
Tensor col2im(const Tensor& input, const Shape& output_size, const Shape& kernel_size,
              const Shape& dilation, const Shape& padding, const Shape& stride) {
  Op op("Col2imBackward", input);
  Tensor y = op.run(
      [&] { return native::col2im(input, output_size, kernel_size, dilation, padding, stride); });
  op.set_output(y);
  if (op.recording()) {
    op.backward([=](const Saved&, const Tensors& g) -> Tensors {
      return {im2col(g[0], kernel_size, dilation, padding, stride)};
    });
  }
  return y;
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const Shape& stride,
              const Shape& padding, const Shape& dilation, int64_t groups) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor input2 = autocast::cast_lower(input), weight2 = autocast::cast_lower(weight),
                 bias2 = autocast::cast_lower(bias);
    if (!autocast::same(input, input2) || !autocast::same(weight, weight2) ||
        !autocast::same(bias, bias2))
      return conv2d(input2, weight2, bias2, stride, padding, dilation, groups);
  }
  Op op("Conv2dBackward", {input, weight, bias});  // the list form accepts an undefined bias
  Tensor y = op.run(
      [&] { return native::conv2d(input, weight, bias, stride, padding, dilation, groups); });
  op.set_output(y);
  if (op.recording()) {
    op.save(op.needs_grad(1) ? input : Tensor());
    op.save(op.needs_grad(0) ? weight : Tensor());
    op.backward([=, in_shape = input.sizes(), w_shape = weight.sizes()](
                    const Saved& s, const Tensors& g) -> Tensors {
      const Tensor x = s[0];
      if (use_native_backward(g[0])) {
        // No double backward is being recorded: the one-pass kernel. It reads x only for the
        // weight gradient and w only for the input gradient; otherwise a zero-strided stand-in
        // gives the shape.
        auto stand_in = [&](const Tensor& t, const Shape& shape) {
          return t.defined() ? t : expand(zeros({1}, g[0].options()), shape);
        };
        auto [gx, gw, gb] = native::conv2d_backward(
            g[0], stand_in(x, in_shape), stand_in(s[1], w_shape), stride, padding, dilation, groups,
            {s.needs_grad(0), s.needs_grad(1), s.needs_grad(2)});
        return {gx, gw, gb};
      }
      // The formulas work on batched tensors: an unbatched (C, H, W) input gets N = 1.
      const bool unbatched = in_shape.size() == 3;
      const Tensor gb = unbatched ? unsqueeze(g[0], 0) : g[0];
      const Tensor xb = x.defined() && unbatched ? unsqueeze(x, 0) : x;
      Shape batched_shape = in_shape;
      if (unbatched) batched_shape.insert(batched_shape.begin(), 1);
      Tensors grads =
          conv2d_backward(gb, xb, s[1], batched_shape, w_shape, stride, padding, dilation, groups,
                          s.needs_grad(0), s.needs_grad(1), s.needs_grad(2));
      if (unbatched && grads[0].defined()) grads[0] = squeeze(grads[0], 0);
      return grads;
    });
  }
  return y;
}
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const Shape& kernel_size,
                                                   const Shape& stride, const Shape& padding,
                                                   const Shape& dilation, bool ceil_mode) {
  Op op("MaxPool2dWithIndicesBackward", input);
  auto [values, indices] = op.run([&] {
    return native::max_pool2d_with_indices(input, kernel_size, stride, padding, dilation,
                                           ceil_mode);
  });
  op.set_output(values);  // the indices are not differentiable
  if (op.recording()) {
    op.save(indices);
    op.backward([in_shape = input.sizes()](const Saved& s, const Tensors& g) -> Tensors {
      return {max_pool2d_backward(g[0], s[0], in_shape)};
    });
  }
  return {values, indices};
}
// Recorded, it runs the indices-returning kernel: the backward needs the indices.
Tensor max_pool2d(const Tensor& input, const Shape& kernel_size, const Shape& stride,
                  const Shape& padding, const Shape& dilation, bool ceil_mode) {
  Op op("MaxPool2dBackward", input);
  if (!op.recording())
    return native::max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode);
  auto [values, indices] = op.run([&] {
    return native::max_pool2d_with_indices(input, kernel_size, stride, padding, dilation,
                                           ceil_mode);
  });
  op.set_output(values);
  op.save(indices);
  op.backward([in_shape = input.sizes()](const Saved& s, const Tensors& g) -> Tensors {
    return {max_pool2d_backward(g[0], s[0], in_shape)};
  });
  return values;
}
Tensor avg_pool2d(const Tensor& input, const Shape& kernel_size, const Shape& stride,
                  const Shape& padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  Op op("AvgPool2dBackward", input);
  Tensor y = op.run([&] {
    return native::avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                              divisor_override);
  });
  op.set_output(y);
  if (op.recording()) {
    // The window as {h, w} pairs (the forward has checked them); stride defaults to the kernel.
    const Shape k{pick(kernel_size, 0), pick(kernel_size, 1)};
    const Shape s = stride.empty() ? k : Shape{pick(stride, 0), pick(stride, 1)};
    const Shape p{pick(padding, 0), pick(padding, 1)};
    op.backward([=, in_shape = input.sizes()](const Saved&, const Tensors& g) -> Tensors {
      return {avg_pool2d_backward(g[0], in_shape, k, s, p, count_include_pad, divisor_override)};
    });
  }
  return y;
}

// ---- Tensor methods and operators (declared in core/tensor.h) ----------------------------

}  // namespace ember
