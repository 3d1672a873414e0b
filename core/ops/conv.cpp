#include "core/ops/conv.h"

#include <array>

#include "core/checked_math.h"
#include "core/op_registry.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/view.h"

namespace ember {

namespace {
constexpr const char* kConvOps[] = {"im2col",     "col2im",    "conv2d", "max_pool2d_with_indices",
                                    "max_pool2d", "avg_pool2d"};
static_assert(sizeof(kConvOps) / sizeof(kConvOps[0]) == 6);
const OpFamilyRegistrar registrar("conv", kConvOps);

using Pair = std::array<int64_t, 2>;

// A window argument: one value for both dims, or {h, w}.
Pair pair_arg(const Shape& v, const char* op, const char* name) {
  EMBER_CHECK(v.size() == 1 || v.size() == 2, op, ": ", name,
              " must be one value or two values (h, w), got ", v);
  return v.size() == 1 ? Pair{v[0], v[0]} : Pair{v[0], v[1]};
}

Shape shape_of(const Pair& p) { return {p[0], p[1]}; }

int64_t div_floor(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// in + 2p - d(k-1) - 1, the extent the windows may start in, checked (Note [Sizes that
// overflow] in core/checked_math.h): k, s and d are positive and p non-negative here.
int64_t window_span(int64_t in, int64_t k, int64_t p, int64_t d, const char* op) {
  const char* what = "the output size";
  const int64_t padded = checked_add(in, checked_mul(2, p, op, what), op, what);
  return checked_sub(padded, checked_add(checked_mul(d, k - 1, op, what), 1, op, what), op, what);
}

// Window positions along one dim (conv.h): floor((in + 2p - d(k-1) - 1) / s) + 1.
int64_t conv_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, const char* op) {
  return div_floor(window_span(in, k, p, d, op), s) + 1;
}

// Pooling's rule (PyTorch's pooling_output_shape): in ceil_mode the last window may hang over
// the right edge, but must start inside the input or the left padding.
int64_t pool_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode,
                      const char* op) {
  const int64_t span = window_span(in, k, p, d, op);
  int64_t out =
      div_floor(ceil_mode ? checked_add(span, s - 1, op, "the output size") : span, s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

void check_window(const char* op, const Pair& k, const Pair& s, const Pair& p, const Pair& d) {
  EMBER_CHECK(k[0] > 0 && k[1] > 0, op, ": kernel_size must be positive, got ", shape_of(k));
  EMBER_CHECK(s[0] > 0 && s[1] > 0, op, ": stride must be positive, got ", shape_of(s));
  EMBER_CHECK(p[0] >= 0 && p[1] >= 0, op, ": padding must be non-negative, got ", shape_of(p));
  EMBER_CHECK(d[0] > 0 && d[1] > 0, op, ": dilation must be positive, got ", shape_of(d));
  checked_mul(k[0], k[1], op, "the kernel's element count");  // so that k[0] * k[1] is safe
}

// input: (C, H, W) or (N, C, H, W), floating, every non-batch dim non-empty.
void check_image(const Tensor& input, const char* op) {
  EMBER_CHECK(input.defined(), op, ": undefined input");
  EMBER_CHECK(input.dim() == 3 || input.dim() == 4, op,
              ": expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape ", input.sizes());
  EMBER_CHECK(is_floating(input.dtype()), op, ": expected a floating-point input, got dtype ",
              dtype_name(input.dtype()));
  for (int64_t dim = input.dim() - 3; dim < input.dim(); ++dim) {
    EMBER_CHECK(input.size(dim) > 0, op,
                ": expected non-empty channel and spatial dims, got input shape ", input.sizes());
  }
}

Window2d make_window(const Pair& k, const Pair& s, const Pair& p, const Pair& d, int64_t h,
                     int64_t w) {
  Window2d win;
  win.kh = k[0], win.kw = k[1];
  win.sh = s[0], win.sw = s[1];
  win.ph = p[0], win.pw = p[1];
  win.dh = d[0], win.dw = d[1];
  win.in_h = h, win.in_w = w;
  return win;
}

// The batched, contiguous form of a possibly unbatched input.
Tensor batched(const Tensor& t, int64_t batched_dim) {
  return native::contiguous((t.dim() == batched_dim ? t : native::unsqueeze(t, 0)));
}

Tensor unbatch_like(const Tensor& out, const Tensor& input, int64_t batched_dim) {
  return input.dim() == batched_dim ? out : native::squeeze(out, 0);
}

// The checked geometry of a pooling op over the batched input x.
Window2d pool_window(const char* op, const Tensor& input, const Tensor& x, const Shape& kernel_size,
                     const Shape& stride, const Shape& padding, const Shape& dilation,
                     bool ceil_mode) {
  Pair k = pair_arg(kernel_size, op, "kernel_size");
  Pair s = stride.empty() ? k : pair_arg(stride, op, "stride");
  Pair p = pair_arg(padding, op, "padding");
  Pair d = pair_arg(dilation, op, "dilation");
  check_window(op, k, s, p, d);
  EMBER_CHECK(p[0] <= k[0] / 2 && p[1] <= k[1] / 2, op, ": padding ", shape_of(p),
              " should be at most half of kernel_size ", shape_of(k));
  Window2d win = make_window(k, s, p, d, x.size(2), x.size(3));
  win.out_h = pool_out_size(win.in_h, k[0], s[0], p[0], d[0], ceil_mode, op);
  win.out_w = pool_out_size(win.in_w, k[1], s[1], p[1], d[1], ceil_mode, op);
  EMBER_CHECK(win.out_h >= 1 && win.out_w >= 1, op, ": given input of shape ", input.sizes(),
              ", kernel_size ", shape_of(k), ", stride ", shape_of(s), ", padding ", shape_of(p),
              " and dilation ", shape_of(d), ", the output size [", win.out_h, ", ", win.out_w,
              "] is too small");
  return win;
}

}  // namespace

// ---- im2col / col2im ---------------------------------------------------------------------------
Tensor native::im2col(const Tensor& input, const Shape& kernel_size, const Shape& dilation,
                      const Shape& padding, const Shape& stride) {
  const char* op = "im2col";
  check_image(input, op);
  Pair k = pair_arg(kernel_size, op, "kernel_size"), d = pair_arg(dilation, op, "dilation");
  Pair p = pair_arg(padding, op, "padding"), s = pair_arg(stride, op, "stride");
  check_window(op, k, s, p, d);
  Tensor x = batched(input, 4);  // (N, C, H, W)
  Window2d win = make_window(k, s, p, d, x.size(2), x.size(3));
  win.out_h = conv_out_size(win.in_h, k[0], s[0], p[0], d[0], op);
  win.out_w = conv_out_size(win.in_w, k[1], s[1], p[1], d[1], op);
  EMBER_CHECK(win.out_h >= 1 && win.out_w >= 1, op, ": input of shape ", input.sizes(),
              " with kernel_size ", shape_of(k), ", dilation ", shape_of(d), ", padding ",
              shape_of(p), " and stride ", shape_of(s), " gives ", win.out_h, " x ", win.out_w,
              " sliding blocks; both must be at least 1");
  Tensor out = empty({x.size(0), checked_mul(x.size(1), k[0] * k[1], op, "the column count"),
                      checked_mul(win.out_h, win.out_w, op, "the block count")},
                     x.options());
  if (out.numel() > 0) im2col_stub(x.device().type, x, out, win);
  return unbatch_like(out, input, 4);
}

Tensor native::col2im(const Tensor& input, const Shape& output_size, const Shape& kernel_size,
                      const Shape& dilation, const Shape& padding, const Shape& stride) {
  const char* op = "col2im";
  EMBER_CHECK(input.defined(), op, ": undefined input");
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3, op,
              ": expected a 2-D (C * kh * kw, L) or 3-D (N, C * kh * kw, L) input, got shape ",
              input.sizes());
  EMBER_CHECK(is_floating(input.dtype()), op, ": expected a floating-point input, got dtype ",
              dtype_name(input.dtype()));
  EMBER_CHECK(input.size(-1) > 0 && input.size(-2) > 0, op,
              ": expected non-empty non-batch dims, got input shape ", input.sizes());
  Pair size = pair_arg(output_size, op, "output_size");
  Pair k = pair_arg(kernel_size, op, "kernel_size"), d = pair_arg(dilation, op, "dilation");
  Pair p = pair_arg(padding, op, "padding"), s = pair_arg(stride, op, "stride");
  check_window(op, k, s, p, d);
  EMBER_CHECK(size[0] > 0 && size[1] > 0, op, ": output_size must be positive, got ",
              shape_of(size));
  Tensor x = batched(input, 3);  // (N, C * kh * kw, L)
  const int64_t rows = x.size(1), cols = x.size(2);
  EMBER_CHECK(rows % (k[0] * k[1]) == 0, op, ": expected the size of the input's dim ",
              input.dim() - 2, " (", rows, ") to be divisible by the product of kernel_size ",
              shape_of(k), ", got input shape ", input.sizes());
  Window2d win = make_window(k, s, p, d, size[0], size[1]);
  win.out_h = conv_out_size(size[0], k[0], s[0], p[0], d[0], op);
  win.out_w = conv_out_size(size[1], k[1], s[1], p[1], d[1], op);
  EMBER_CHECK(win.out_h >= 1 && win.out_w >= 1 &&
                  cols == checked_mul(win.out_h, win.out_w, op, "the block count"),
              op, ": given output_size=", shape_of(size), ", kernel_size=", shape_of(k),
              ", dilation=", shape_of(d), ", padding=", shape_of(p), ", stride=", shape_of(s),
              ", expected the input's last dim to match the number of sliding blocks ", win.out_h,
              " * ", win.out_w, " = ", win.out_h * win.out_w, ", but got input shape ",
              input.sizes());
  Tensor out = empty({x.size(0), rows / (k[0] * k[1]), size[0], size[1]}, x.options());
  if (out.numel() > 0) col2im_stub(x.device().type, x, out, win);
  return unbatch_like(out, input, 3);
}

// ---- conv2d -------------------------------------------------------------------------------------
namespace {
// Checks conv2d's arguments (input (C, H, W) or (N, C, H, W)) and returns its geometry.
Window2d conv2d_window(const char* op, const Tensor& input, const Tensor& weight,
                       const Tensor& bias, const Shape& stride, const Shape& padding,
                       const Shape& dilation, int64_t groups) {
  check_image(input, op);
  EMBER_CHECK(weight.defined() && weight.dim() == 4, op,
              ": expected a 4-D weight (out_channels, in_channels / groups, kh, kw), got shape ",
              weight.defined() ? weight.sizes() : Shape{});
  EMBER_CHECK(weight.dtype() == input.dtype() && (!bias.defined() || bias.dtype() == input.dtype()),
              op, ": input (", dtype_name(input.dtype()), "), weight (", dtype_name(weight.dtype()),
              ")", bias.defined() ? " and bias (" : "",
              bias.defined() ? dtype_name(bias.dtype()) : "", bias.defined() ? ")" : "",
              " must have the same dtype");
  EMBER_CHECK(
      weight.device() == input.device() && (!bias.defined() || bias.device() == input.device()), op,
      ": input, weight and bias must be on the same device, got ", input.device(), " and ",
      weight.device());
  EMBER_CHECK(groups > 0, op, ": groups must be positive, got ", groups);
  const int64_t channels = input.size(-3), out_channels = weight.size(0);
  EMBER_CHECK(channels % groups == 0, op, ": input channels (", channels, ", input shape ",
              input.sizes(), ") are not divisible by groups=", groups);
  EMBER_CHECK(out_channels % groups == 0, op, ": out_channels (", out_channels, ", weight shape ",
              weight.sizes(), ") are not divisible by groups=", groups);
  EMBER_CHECK(checked_mul(weight.size(1), groups, op, "the channel count") == channels, op,
              ": given groups=", groups, ", weight of shape ", weight.sizes(),
              " expects input of shape ", input.sizes(), " to have ", weight.size(1) * groups,
              " channels, but it has ", channels);
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == out_channels), op,
              ": expected a bias of shape [", out_channels, "], got ",
              bias.defined() ? bias.sizes() : Shape{});
  Pair k{weight.size(2), weight.size(3)};
  Pair s = pair_arg(stride, op, "stride"), p = pair_arg(padding, op, "padding");
  Pair d = pair_arg(dilation, op, "dilation");
  check_window(op, k, s, p, d);
  Window2d win = make_window(k, s, p, d, input.size(-2), input.size(-1));
  // window_span is checked, so the sums below are in range once it returns.
  const bool fits = window_span(win.in_h, k[0], p[0], d[0], op) >= 0 &&
                    window_span(win.in_w, k[1], p[1], d[1], op) >= 0;
  const Shape dilated{d[0] * (k[0] - 1) + 1, d[1] * (k[1] - 1) + 1};
  EMBER_CHECK(fits, op, ": the (dilated) kernel ", dilated, " is larger than the padded input [",
              win.in_h + 2 * p[0], ", ", win.in_w + 2 * p[1], "] (input shape ", input.sizes(),
              ", weight shape ", weight.sizes(), ", padding ", shape_of(p), ", dilation ",
              shape_of(d), ")");
  win.out_h = conv_out_size(win.in_h, k[0], s[0], p[0], d[0], op);
  win.out_w = conv_out_size(win.in_w, k[1], s[1], p[1], d[1], op);
  return win;
}
}  // namespace

Tensor native::conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                      const Shape& stride, const Shape& padding, const Shape& dilation,
                      int64_t groups) {
  const Window2d win =
      conv2d_window("conv2d", input, weight, bias, stride, padding, dilation, groups);
  Tensor x = batched(input, 4);  // (N, C, H, W)
  const int64_t out_channels = weight.size(0);

  if (input.dtype() == kFloat16 || input.dtype() == kBFloat16) {
    // 16-bit floats: compute in float32, round once at the end.
    Tensor b = bias.defined() ? native::to(bias, kFloat32) : bias;
    return native::to(native::conv2d(native::to(input, kFloat32), native::to(weight, kFloat32), b,
                                     stride, padding, dilation, groups),
                      input.dtype());
  }
  Tensor out = empty({x.size(0), out_channels, win.out_h, win.out_w}, x.options());
  if (out.numel() > 0) {
    conv2d_stub(x.device().type, x, native::contiguous(weight),
                bias.defined() ? native::contiguous(bias) : bias, out, win, groups);
  }
  return unbatch_like(out, input, 4);
}

std::tuple<Tensor, Tensor, Tensor> native::conv2d_backward(
    const Tensor& grad_out, const Tensor& input, const Tensor& weight, const Shape& stride,
    const Shape& padding, const Shape& dilation, int64_t groups, std::array<bool, 3> output_mask) {
  const char* op = "conv2d_backward";
  const Window2d win = conv2d_window(op, input, weight, {}, stride, padding, dilation, groups);
  EMBER_CHECK(grad_out.defined() && grad_out.dtype() == input.dtype() &&
                  grad_out.device() == input.device(),
              op, ": expected grad_out of the input's dtype (", dtype_name(input.dtype()),
              ") and device, got ", grad_out.defined() ? dtype_name(grad_out.dtype()) : "none");
  Shape out_shape = input.sizes();
  out_shape[out_shape.size() - 3] = weight.size(0);
  out_shape[out_shape.size() - 2] = win.out_h;
  out_shape[out_shape.size() - 1] = win.out_w;
  EMBER_CHECK(grad_out.sizes() == out_shape, op, ": expected grad_out of shape ", out_shape,
              " (input shape ", input.sizes(), ", weight shape ", weight.sizes(), "), got ",
              grad_out.sizes());
  if (input.dtype() == kFloat16 || input.dtype() == kBFloat16) {
    // 16-bit floats: compute in float32, round each gradient once.
    auto [gx, gw, gb] = native::conv2d_backward(
        native::to(grad_out, kFloat32), native::to(input, kFloat32), native::to(weight, kFloat32),
        stride, padding, dilation, groups, output_mask);
    const DType dt = input.dtype();
    return {gx.defined() ? native::to(gx, dt) : gx, gw.defined() ? native::to(gw, dt) : gw,
            gb.defined() ? native::to(gb, dt) : gb};
  }
  // Only the operands a wanted gradient reads are made contiguous (conv2d_backward_fn).
  Tensor g = batched(grad_out, 4);  // (N, O, out_h, out_w)
  Tensor x = output_mask[1] ? batched(input, 4) : Tensor();
  Tensor w = output_mask[0] ? native::contiguous(weight) : Tensor();
  Shape in_shape = input.sizes();
  if (input.dim() == 3) in_shape.insert(in_shape.begin(), 1);
  Tensor grad_input = output_mask[0] ? empty(in_shape, input.options()) : Tensor();
  Tensor grad_weight = output_mask[1] ? empty(weight.sizes(), weight.options()) : Tensor();
  Tensor grad_bias = output_mask[2] ? empty({weight.size(0)}, weight.options()) : Tensor();
  const bool any = output_mask[0] || output_mask[1] || output_mask[2];
  if (any && g.numel() > 0) {
    conv2d_backward_stub(g.device().type, g, x, w.defined() ? w : weight, grad_input, grad_weight,
                         grad_bias, win, groups);
  } else {
    // No output positions to read (an empty batch or no output channels): zero gradients.
    for (Tensor* t : {&grad_input, &grad_weight, &grad_bias})
      if (t->defined()) native::zero_(*t);
  }
  if (grad_input.defined()) grad_input = unbatch_like(grad_input, input, 4);
  return {grad_input, grad_weight, grad_bias};
}

// ---- pooling -----------------------------------------------------------------------------------
std::tuple<Tensor, Tensor> native::max_pool2d_with_indices(const Tensor& input,
                                                           const Shape& kernel_size,
                                                           const Shape& stride,
                                                           const Shape& padding,
                                                           const Shape& dilation, bool ceil_mode) {
  const char* op = "max_pool2d";
  check_image(input, op);
  Tensor x = batched(input, 4);  // (N, C, H, W)
  Window2d win = pool_window(op, input, x, kernel_size, stride, padding, dilation, ceil_mode);
  Tensor out = empty({x.size(0), x.size(1), win.out_h, win.out_w}, x.options());
  Tensor indices = empty(out.sizes(), out.options().dtype(kInt64));
  if (out.numel() > 0) max_pool2d_stub(x.device().type, x, out, indices, win);
  return {unbatch_like(out, input, 4), unbatch_like(indices, input, 4)};
}

Tensor native::max_pool2d(const Tensor& input, const Shape& kernel_size, const Shape& stride,
                          const Shape& padding, const Shape& dilation, bool ceil_mode) {
  return std::get<0>(
      native::max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode));
}

Tensor native::max_pool2d_backward(const Tensor& grad_out, const Tensor& indices,
                                   const Shape& input_shape) {
  const char* op = "max_pool2d_backward";
  EMBER_CHECK(grad_out.defined() && indices.defined(), op,
              ": grad_out and indices must be defined");
  EMBER_CHECK(indices.dtype() == kInt64, op, ": expected int64 indices, got ",
              dtype_name(indices.dtype()));
  EMBER_CHECK(is_floating(grad_out.dtype()), op, ": expected a floating grad_out, got ",
              dtype_name(grad_out.dtype()));
  EMBER_CHECK(grad_out.sizes() == indices.sizes(), op, ": grad_out of shape ", grad_out.sizes(),
              " and indices of shape ", indices.sizes(), " differ");
  EMBER_CHECK(grad_out.device() == indices.device(), op, ": grad_out on ", grad_out.device(),
              " and indices on ", indices.device());
  const auto nd = static_cast<int64_t>(input_shape.size());
  EMBER_CHECK((nd == 3 || nd == 4) && grad_out.dim() == nd, op,
              ": expected an input shape of 3 or 4 ", "dims matching grad_out of shape ",
              grad_out.sizes(), ", got ", input_shape);
  for (int64_t d = 0; d < nd - 2; ++d)
    EMBER_CHECK(input_shape[d] == grad_out.size(d), op, ": input shape ", input_shape,
                " does not match grad_out of shape ", grad_out.sizes());
  Tensor g = batched(grad_out, 4), idx = batched(indices, 4);
  Shape in_shape = input_shape;
  if (nd == 3) in_shape.insert(in_shape.begin(), 1);
  Tensor grad_input = empty(in_shape, grad_out.options());
  if (grad_input.numel() > 0) max_pool2d_backward_stub(g.device().type, g, idx, grad_input);
  return nd == 3 ? native::squeeze(grad_input, 0) : grad_input;
}

Tensor native::avg_pool2d(const Tensor& input, const Shape& kernel_size, const Shape& stride,
                          const Shape& padding, bool ceil_mode, bool count_include_pad,
                          std::optional<int64_t> divisor_override) {
  const char* op = "avg_pool2d";
  check_image(input, op);
  EMBER_CHECK(!divisor_override || *divisor_override != 0, op,
              ": divisor_override must not be zero");
  Tensor x = batched(input, 4);  // (N, C, H, W)
  Window2d win = pool_window(op, input, x, kernel_size, stride, padding, {1}, ceil_mode);
  Tensor out = empty({x.size(0), x.size(1), win.out_h, win.out_w}, x.options());
  if (out.numel() > 0) {
    avg_pool2d_stub(x.device().type, x, out, win, count_include_pad,
                    divisor_override ? *divisor_override : 0);
  }
  return unbatch_like(out, input, 4);
}

}  // namespace ember
