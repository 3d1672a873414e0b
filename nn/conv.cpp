#include "nn/conv.h"

#include <array>
#include <cmath>

#include "autograd/ops/conv.h"
#include "autograd/ops/linalg.h"
#include "autograd/ops/shape.h"
#include "core/checked_math.h"
#include "core/op_registry.h"
#include "core/ops/factory.h"
#include "nn/linear.h"
#include "nn/repr.h"

namespace ember::nn {

namespace {
// The ops of family nn_conv defined in this file (the others: nn/linear.cpp, nn/pooling.cpp).
constexpr const char* kConvOps[] = {"conv1d", "conv_transpose2d"};
static_assert(sizeof(kConvOps) / sizeof(kConvOps[0]) == 2);
const OpFamilyRegistrar registrar("nn_conv", kConvOps);

using Pair = std::array<int64_t, 2>;

// A 2-D window argument of a functional op: one value for both dims, or {h, w}, each >= min.
Pair pair_arg(const Shape& v, const char* op, const char* name, int64_t min) {
  EMBER_CHECK(v.size() == 1 || v.size() == 2, op, ": ", name,
              " must be one value or two values (h, w), got ", v);
  Pair p = v.size() == 1 ? Pair{v[0], v[0]} : Pair{v[0], v[1]};
  EMBER_CHECK(p[0] >= min && p[1] >= min, op, ": ", name,
              min > 0 ? " must be positive, got " : " must be non-negative, got ", v);
  return p;
}

// The one value of a 1-D window argument.
int64_t single_arg(const Shape& v, const char* op, const char* name) {
  EMBER_CHECK(v.size() == 1, op, ": ", name, " must be one value, got ", v);
  return v[0];
}

bool all_equal(const Shape& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

}  // namespace

// ---- window arguments ------------------------------------------------------------------------
Shape IntArg::expand(size_t dims, const char* layer, const char* name) const {
  EMBER_CHECK(values_.size() == 1 || values_.size() == dims, layer, ": ", name,
              " must be one value or ", dims, " values, got ", values_);
  return values_.size() == 1 ? Shape(dims, values_[0]) : values_;
}

std::string IntArg::repr() const {
  if (values_.empty()) return "None";
  if (values_.size() == 1) return std::to_string(values_[0]);
  return python_tuple(values_);
}

// ---- functional ------------------------------------------------------------------------------
Tensor functional::conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                          const Shape& stride, const ConvPadding& padding, const Shape& dilation,
                          int64_t groups) {
  if (!padding.is_mode()) {
    return ember::conv2d(input, weight, bias, stride, padding.values(), dilation, groups);
  }
  const char* op = "conv2d";
  const std::string& mode = padding.mode();
  EMBER_CHECK(mode == "valid" || mode == "same", op,
              ": padding must be numbers, \"valid\" or \"same\", got \"", mode, "\"");
  if (mode == "valid") return ember::conv2d(input, weight, bias, stride, {0}, dilation, groups);

  // "same": d * (k - 1) zeros per dim, the odd one on the right / bottom.
  EMBER_CHECK(input.defined() && (input.dim() == 3 || input.dim() == 4), op,
              ": expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape ",
              input.defined() ? input.sizes() : Shape{});
  EMBER_CHECK(weight.defined() && weight.dim() == 4 && weight.size(2) > 0 && weight.size(3) > 0, op,
              ": expected a 4-D weight (out_channels, in_channels / groups, kh, kw), got shape ",
              weight.defined() ? weight.sizes() : Shape{});
  const Pair s = pair_arg(stride, op, "stride", 1), d = pair_arg(dilation, op, "dilation", 1);
  EMBER_CHECK(s[0] == 1 && s[1] == 1, op,
              ": padding=\"same\" is not supported for strided convolutions, got stride ", stride);
  Shape before(2), extra(2);
  for (size_t i = 0; i < 2; ++i) {
    const int64_t total = d[i] * (weight.size(2 + static_cast<int64_t>(i)) - 1);
    before[i] = total / 2;
    extra[i] = total - 2 * before[i];  // 0 or 1
  }
  Tensor x = input;
  if (extra[0] != 0 || extra[1] != 0) x = ember::pad(input, {0, extra[1], 0, extra[0]});
  return ember::conv2d(x, weight, bias, {1}, before, dilation, groups);
}

Tensor functional::conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                          const Shape& stride, const ConvPadding& padding, const Shape& dilation,
                          int64_t groups) {
  const char* op = "conv1d";
  EMBER_CHECK(input.defined() && (input.dim() == 2 || input.dim() == 3), op,
              ": expected a 2-D (C, L) or 3-D (N, C, L) input, got shape ",
              input.defined() ? input.sizes() : Shape{});
  EMBER_CHECK(weight.defined() && weight.dim() == 3, op,
              ": expected a 3-D weight (out_channels, in_channels / groups, k), got shape ",
              weight.defined() ? weight.sizes() : Shape{});
  EMBER_CHECK(groups > 0, op, ": groups must be positive, got ", groups);
  EMBER_CHECK(checked_mul(weight.size(1), groups, op, "the channel count") == input.size(-2), op,
              ": given groups=", groups, ", weight of shape ", weight.sizes(),
              " expects input of shape ", input.sizes(), " to have ", weight.size(1) * groups,
              " channels, but it has ", input.size(-2));
  const int64_t s = single_arg(stride, op, "stride"), d = single_arg(dilation, op, "dilation");
  ConvPadding padding_2d = padding;
  if (padding.is_mode()) {
    EMBER_CHECK(padding.mode() != "same" || s == 1, op,
                ": padding=\"same\" is not supported for strided convolutions, got stride ", s);
  } else {
    padding_2d = Shape{0, single_arg(padding.values(), op, "padding")};
  }
  // (N, C, L) -> (N, C, 1, L), weight (O, C / groups, 1, k).
  Tensor y =
      conv2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, {1, s}, padding_2d, {1, d}, groups);
  return y.squeeze(-2);
}

Tensor functional::conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                    const Shape& stride, const Shape& padding,
                                    const Shape& output_padding, int64_t groups,
                                    const Shape& dilation) {
  const char* op = "conv_transpose2d";
  EMBER_CHECK(input.defined() && (input.dim() == 3 || input.dim() == 4), op,
              ": expected a 3-D (C_in, H, W) or 4-D (N, C_in, H, W) input, got shape ",
              input.defined() ? input.sizes() : Shape{});
  EMBER_CHECK(input.is_floating_point(), op, ": expected a floating-point input, got dtype ",
              dtype_name(input.dtype()));
  EMBER_CHECK(weight.defined() && weight.dim() == 4, op,
              ": expected a 4-D weight (in_channels, out_channels / groups, kh, kw), got shape ",
              weight.defined() ? weight.sizes() : Shape{});
  EMBER_CHECK(weight.dtype() == input.dtype() && (!bias.defined() || bias.dtype() == input.dtype()),
              op, ": input (", dtype_name(input.dtype()), "), weight (", dtype_name(weight.dtype()),
              ") and bias must have the same dtype");
  EMBER_CHECK(groups > 0, op, ": groups must be positive, got ", groups);
  const int64_t in_channels = input.size(-3);
  EMBER_CHECK(weight.size(0) == in_channels && in_channels % groups == 0, op, ": weight of shape ",
              weight.sizes(), " and groups=", groups, " expect ", weight.size(0),
              " input channels (divisible by groups), got input of shape ", input.sizes());
  const int64_t out_per_group = weight.size(1), out_channels = out_per_group * groups;
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == out_channels), op,
              ": expected a bias of shape [", out_channels, "], got ",
              bias.defined() ? bias.sizes() : Shape{});
  const Pair k{weight.size(2), weight.size(3)};
  EMBER_CHECK(k[0] > 0 && k[1] > 0, op, ": the kernel of weight ", weight.sizes(),
              " must not be empty");
  const Pair s = pair_arg(stride, op, "stride", 1), p = pair_arg(padding, op, "padding", 0);
  const Pair d = pair_arg(dilation, op, "dilation", 1);
  const Pair op_pad = pair_arg(output_padding, op, "output_padding", 0);
  const int64_t H = input.size(-2), W = input.size(-1);
  EMBER_CHECK(H > 0 && W > 0, op, ": expected non-empty spatial dims, got input shape ",
              input.sizes());
  Pair out_size{}, full_size{};  // full: without padding and output_padding
  const Pair in_size{H, W};
  for (size_t i = 0; i < 2; ++i) {
    EMBER_CHECK(op_pad[i] < s[i] || op_pad[i] < d[i], op, ": output_padding ", output_padding,
                " must be smaller than either stride ", stride, " or dilation ", dilation);
    const char* what = "the output size";  // Note [Sizes that overflow] in core/checked_math.h
    full_size[i] =
        checked_add(checked_mul(in_size[i] - 1, s[i], op, what),
                    checked_add(checked_mul(d[i], k[i] - 1, op, what), 1, op, what), op, what);
    out_size[i] = checked_add(checked_sub(full_size[i], checked_mul(2, p[i], op, what), op, what),
                              op_pad[i], op, what);
    EMBER_CHECK(out_size[i] > 0, op, ": input of shape ", input.sizes(), ", weight of shape ",
                weight.sizes(), ", stride ", stride, ", padding ", padding, ", dilation ", dilation,
                " and output_padding ", output_padding, " give a non-positive output size [",
                out_size[0], ", ", out_size[1], "]");
  }

  // cols[n, g] = weight[g]^T @ x[n, g]: (C_out/G * kh * kw, C_in/G) @ (C_in/G, H * W), then
  // col2im sums every input pixel's kh x kw taps into the image (the adjoint of conv2d's im2col).
  Tensor x = input.dim() == 4 ? input : input.unsqueeze(0);
  const int64_t N = x.size(0), cin_g = in_channels / groups, taps = k[0] * k[1];
  Tensor xg = x.reshape({N, groups, cin_g, H * W});
  Tensor wg = weight.reshape({groups, cin_g, out_per_group * taps}).transpose(-1, -2);
  Tensor cols = matmul(wg, xg).reshape({N, out_channels * taps, H * W});
  Tensor y;
  if (op_pad[0] < s[0] && op_pad[1] < s[1]) {
    // col2im drops the padding itself: out_size has exactly H x W window positions.
    y = col2im(cols, {out_size[0], out_size[1]}, {k[0], k[1]}, {d[0], d[1]}, {p[0], p[1]},
               {s[0], s[1]});
  } else {
    // output_padding >= stride (allowed when smaller than the dilation): the full image, then
    // crop the padding and extend by output_padding (ember::pad with negative pads crops).
    y = col2im(cols, {full_size[0], full_size[1]}, {k[0], k[1]}, {d[0], d[1]}, {0}, {s[0], s[1]});
    y = ember::pad(y, {-p[1], op_pad[1] - p[1], -p[0], op_pad[0] - p[0]});
  }
  if (bias.defined()) y = y + bias.view({out_channels, 1, 1});
  return input.dim() == 4 ? y : y.squeeze(0);
}

// ---- modules ---------------------------------------------------------------------------------
ConvNd::ConvNd(const char* type_name, size_t dims, int64_t in_channels, int64_t out_channels,
               const IntArg& kernel_size, const IntArg& stride, const ConvPadding& padding,
               const IntArg& dilation, bool transposed, const IntArg& output_padding,
               int64_t groups, bool bias, const std::string& padding_mode, DType dtype)
    : Module(type_name),
      in_channels(in_channels),
      out_channels(out_channels),
      kernel_size(kernel_size.expand(dims, type_name, "kernel_size")),
      stride(stride.expand(dims, type_name, "stride")),
      padding(padding.is_mode()
                  ? padding
                  : ConvPadding(IntArg(padding.values()).expand(dims, type_name, "padding"))),
      dilation(dilation.expand(dims, type_name, "dilation")),
      output_padding(output_padding.expand(dims, type_name, "output_padding")),
      groups(groups),
      transposed(transposed),
      padding_mode(padding_mode) {
  EMBER_CHECK(groups > 0, type_name, ": groups must be a positive integer, got ", groups);
  EMBER_CHECK(in_channels > 0 && out_channels > 0, type_name,
              ": in_channels and out_channels must be positive, got ", in_channels, " and ",
              out_channels);
  EMBER_CHECK(in_channels % groups == 0, type_name, ": in_channels (", in_channels,
              ") must be divisible by groups (", groups, ")");
  EMBER_CHECK(out_channels % groups == 0, type_name, ": out_channels (", out_channels,
              ") must be divisible by groups (", groups, ")");
  EMBER_CHECK(padding_mode == "zeros" || padding_mode == "reflect" || padding_mode == "replicate" ||
                  padding_mode == "circular",
              type_name,
              ": padding_mode must be one of \"zeros\", \"reflect\", \"replicate\" or "
              "\"circular\", but got padding_mode=\"",
              padding_mode, "\"");
  EMBER_CHECK(!transposed || padding_mode == "zeros", type_name,
              ": only \"zeros\" padding mode is supported, got padding_mode=\"", padding_mode,
              "\"");
  for (size_t i = 0; i < dims; ++i) {
    EMBER_CHECK(this->kernel_size[i] > 0 && this->stride[i] > 0 && this->dilation[i] > 0 &&
                    this->output_padding[i] >= 0,
                type_name, ": kernel_size ", this->kernel_size, ", stride ", this->stride,
                " and dilation ", this->dilation,
                " must be positive and output_padding non-negative, got output_padding ",
                this->output_padding);
  }
  if (this->padding.is_mode()) {
    const std::string& mode = this->padding.mode();
    EMBER_CHECK(mode == "valid" || mode == "same", type_name, ": invalid padding string \"", mode,
                "\", should be one of {\"valid\", \"same\"}");
    EMBER_CHECK(mode != "same" || all_equal(this->stride, 1), type_name,
                ": padding=\"same\" is not supported for strided convolutions (stride ",
                this->stride, ")");
  } else {
    for (int64_t p : this->padding.values())
      EMBER_CHECK(p >= 0, type_name, ": padding must be non-negative, got ",
                  this->padding.values());
  }
  if (padding_mode != "zeros") {
    // Note [Convolution padding modes]
    // PyTorch pads the input with F.pad in the module's mode, by the module's padding reversed
    // and repeated twice (last dim first, the same amount on both sides), then convolves with
    // no padding. "same" pads d * (k - 1) in total per dim, the smaller half on the left (the
    // functional form puts the odd one on the right too); "valid" pads nothing.
    for (size_t i = dims; i-- > 0;) {
      int64_t left = 0, right = 0;
      if (!this->padding.is_mode()) {
        left = right = this->padding.values()[i];
      } else if (this->padding.mode() == "same") {
        const int64_t total = this->dilation[i] * (this->kernel_size[i] - 1);
        left = total / 2;
        right = total - left;
      }
      mode_padding_.insert(mode_padding_.end(), {left, right});
    }
  }
  // weight (out, in / groups, *kernel), or (in, out / groups, *kernel) when transposed.
  Shape w_shape = transposed ? Shape{in_channels, out_channels / groups}
                             : Shape{out_channels, in_channels / groups};
  w_shape.insert(w_shape.end(), this->kernel_size.begin(), this->kernel_size.end());
  weight = register_parameter("weight", empty(w_shape, dtype));
  if (bias) this->bias = register_parameter("bias", empty({out_channels}, dtype));
  reset_parameters();
}

void ConvNd::reset_parameters() { detail::reset_linear_like(weight, bias); }

std::string ConvNd::extra_repr() const {
  std::string s = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                  ", kernel_size=" + python_tuple(kernel_size) + ", stride=" + python_tuple(stride);
  if (padding.is_mode()) {
    s += ", padding=" + padding.mode();
  } else if (!all_equal(padding.values(), 0)) {
    s += ", padding=" + python_tuple(padding.values());
  }
  if (!all_equal(dilation, 1)) s += ", dilation=" + python_tuple(dilation);
  if (!all_equal(output_padding, 0)) s += ", output_padding=" + python_tuple(output_padding);
  if (groups != 1) s += ", groups=" + std::to_string(groups);
  if (!bias.defined()) s += ", bias=False";
  if (padding_mode != "zeros") s += ", padding_mode=" + padding_mode;
  return s;
}

void ConvNd::check_input(const Tensor& input, size_t dims) const {
  const int64_t n = static_cast<int64_t>(dims);
  EMBER_CHECK(input.defined() && (input.dim() == n + 1 || input.dim() == n + 2), type_name(),
              ": expected a ", n + 1, "-D (unbatched) or ", n + 2, "-D (batched) input, got ",
              input.defined() ? "shape " : "an undefined tensor",
              input.defined() ? input.sizes() : Shape{});
  EMBER_CHECK(input.size(-n - 1) == in_channels, type_name(), ": expected input of shape ",
              input.sizes(), " to have ", in_channels, " channels (in_channels), but it has ",
              input.size(-n - 1));
}

Tensor ConvNd::pad_input(const Tensor& input) const {
  return mode_padding_.empty() ? input : pad(input, mode_padding_, padding_mode);
}

ConvPadding ConvNd::conv_padding() const {
  return mode_padding_.empty() ? padding : ConvPadding(0);
}

Conv1d::Conv1d(int64_t in_channels, int64_t out_channels, const IntArg& kernel_size,
               const IntArg& stride, const ConvPadding& padding, const IntArg& dilation,
               int64_t groups, bool bias, const std::string& padding_mode, DType dtype)
    : ConvNd("Conv1d", 1, in_channels, out_channels, kernel_size, stride, padding, dilation,
             /*transposed=*/false, 0, groups, bias, padding_mode, dtype) {}

Tensor Conv1d::forward(const Tensor& input) {
  check_input(input, 1);
  return functional::conv1d(pad_input(input), weight, bias, stride, conv_padding(), dilation,
                            groups);
}

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, const IntArg& kernel_size,
               const IntArg& stride, const ConvPadding& padding, const IntArg& dilation,
               int64_t groups, bool bias, const std::string& padding_mode, DType dtype)
    : ConvNd("Conv2d", 2, in_channels, out_channels, kernel_size, stride, padding, dilation,
             /*transposed=*/false, 0, groups, bias, padding_mode, dtype) {}

Tensor Conv2d::forward(const Tensor& input) {
  check_input(input, 2);
  return functional::conv2d(pad_input(input), weight, bias, stride, conv_padding(), dilation,
                            groups);
}

ConvTranspose2d::ConvTranspose2d(int64_t in_channels, int64_t out_channels,
                                 const IntArg& kernel_size, const IntArg& stride,
                                 const IntArg& padding, const IntArg& output_padding,
                                 int64_t groups, bool bias, const IntArg& dilation,
                                 const std::string& padding_mode, DType dtype)
    : ConvNd("ConvTranspose2d", 2, in_channels, out_channels, kernel_size, stride,
             ConvPadding(padding.values()), dilation, /*transposed=*/true, output_padding, groups,
             bias, padding_mode, dtype) {
  for (size_t i = 0; i < 2; ++i) {
    EMBER_CHECK(
        this->output_padding[i] < this->stride[i] || this->output_padding[i] < this->dilation[i],
        "ConvTranspose2d: output_padding ", this->output_padding,
        " must be smaller than either stride ", this->stride, " or dilation ", this->dilation);
  }
}

Tensor ConvTranspose2d::forward(const Tensor& input) {
  check_input(input, 2);
  return functional::conv_transpose2d(input, weight, bias, stride, padding.values(), output_padding,
                                      groups, dilation);
}

Tensor ConvTranspose2d::forward(const Tensor& input, const Shape& output_size) {
  check_input(input, 2);
  EMBER_CHECK(output_size.size() >= 2,
              "ConvTranspose2d: output_size must hold at least (h, w), got ", output_size);
  Shape extra(2);
  for (size_t i = 0; i < 2; ++i) {
    const int64_t in = input.size(-2 + static_cast<int64_t>(i));
    const int64_t want = output_size[output_size.size() - 2 + i];
    const int64_t min_size =
        (in - 1) * stride[i] - 2 * padding.values()[i] + dilation[i] * (kernel_size[i] - 1) + 1;
    const int64_t max_size = min_size + stride[i] - 1;
    EMBER_CHECK(want >= min_size && want <= max_size,
                "ConvTranspose2d: requested an output size of ", output_size,
                ", but valid sizes for input of shape ", input.sizes(), " range from [", min_size,
                "] to [", max_size, "] in dim ", i);
    extra[i] = want - min_size;
  }
  return functional::conv_transpose2d(input, weight, bias, stride, padding.values(), extra, groups,
                                      dilation);
}

}  // namespace ember::nn
