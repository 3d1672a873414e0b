#pragma once
// Convolution layers (PyTorch's nn.Conv1d, nn.Conv2d, nn.ConvTranspose2d) and their functional
// forms.
//
//   namespace F = ember::nn::functional;
//   Tensor y = F::conv2d(x, w, b, /*stride*/ {1}, /*padding*/ "same");
//   auto conv = std::make_shared<nn::Conv2d>(3, 8, /*kernel_size*/ 3, /*stride*/ 2, /*padding*/ 1);
//   auto up = std::make_shared<nn::ConvTranspose2d>(8, 3, 4, /*stride*/ 2, /*padding*/ 1);
//
// Layouts: 1-D (N, C, L) or unbatched (C, L); 2-D (N, C, H, W) or unbatched (C, H, W); an
// unbatched input gives an unbatched result. Every window argument (kernel_size, stride,
// padding, dilation, output_padding) is one value for every spatial dim or one value per dim.
// dtypes: float32, float64, float16, bfloat16 (what ember::conv2d and matmul support).
//
// Padding "valid" means none; "same" (stride 1 only) pads so that the output has the input's
// size: d * (k - 1) zeros per dim, half on each side and the odd one, if any, on the right /
// bottom (PyTorch's rule), so an even kernel works too.
//
// Default initialisation (PyTorch 1.13's reset_parameters): weight kaiming_uniform_(a =
// sqrt(5)), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)), with fan_in = weight.size(1) * kernel
// elements; for ConvTranspose2d that is out_channels / groups * kh * kw, as in PyTorch.

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include "core/tensor.h"
#include "nn/module.h"

namespace ember::nn {

// A layer's window argument (kernel_size, stride, ...): one number for every spatial dim, or
// one number per dim, as PyTorch's int-or-tuple. It remembers which, because PyTorch prints
// pooling layers' arguments as they were given ("kernel_size=2" vs "kernel_size=(3, 2)").
// Empty (default-constructed) means "not given" where a layer has such a default (pooling's
// stride).
class IntArg {
 public:
  IntArg() = default;
  IntArg(int64_t v) : values_{v} {}  // NOLINT: implicit on purpose (Conv2d(3, 8, 3))
  IntArg(std::initializer_list<int64_t> v) : values_(v) {}
  IntArg(Shape v) : values_(std::move(v)) {}  // NOLINT
  const Shape& values() const { return values_; }
  bool empty() const { return values_.empty(); }
  // One value per dim for `dims` spatial dims; an error naming `layer` and `name` unless the
  // argument has 1 or `dims` values.
  Shape expand(size_t dims, const char* layer, const char* name) const;
  // As Python prints the argument: "2", "(3, 2)".
  std::string repr() const;

 private:
  Shape values_;
};

// A convolution's padding: numbers (as IntArg) or the strings "valid" / "same".
class ConvPadding {
 public:
  ConvPadding(int64_t v = 0) : values_{v} {}  // NOLINT: implicit, like IntArg
  ConvPadding(std::initializer_list<int64_t> v) : values_(v) {}
  ConvPadding(Shape v) : values_(std::move(v)) {}  // NOLINT
  // "valid" or "same" (anything else is an error when the padding is used).
  template <size_t N>
  ConvPadding(const char (&mode)[N]) : mode_(mode) {}        // NOLINT
  ConvPadding(std::string mode) : mode_(std::move(mode)) {}  // NOLINT
  bool is_mode() const { return !mode_.empty(); }
  const std::string& mode() const { return mode_; }
  const Shape& values() const { return values_; }

 private:
  Shape values_;
  std::string mode_;  // empty when given as numbers
};

}  // namespace ember::nn

namespace ember::nn::functional {

// input (N, C, L) or (C, L), weight (O, C / groups, k), bias (O) or undefined
// -> (N, O, out_l): ember::conv2d on a height-1 image. Op "conv1d" (family nn_conv).
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              const Shape& stride = {1}, const ConvPadding& padding = {0},
              const Shape& dilation = {1}, int64_t groups = 1);

// input (N, C, H, W) or (C, H, W), weight (O, C / groups, kh, kw), bias (O) or undefined
// -> (N, O, out_h, out_w): ember::conv2d, plus padding "valid" / "same" (an odd total "same"
// padding pads the input's right / bottom first, with ember::pad).
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              const Shape& stride = {1}, const ConvPadding& padding = {0},
              const Shape& dilation = {1}, int64_t groups = 1);

// The adjoint of conv2d in its input (the "deconvolution"): input (N, C_in, H, W) or
// (C_in, H, W), weight (C_in, C_out / groups, kh, kw), bias (C_out) or undefined
// -> (N, C_out, out_h, out_w) with
//   out_h = (H - 1) * stride - 2 * padding + dilation * (kh - 1) + output_padding + 1.
// output_padding (extra rows / columns at the bottom / right) must be smaller than the stride
// or the dilation of its dim. Op "conv_transpose2d" (family nn_conv): per group, the weight's
// transpose times the input's pixels gives columns that col2im sums into the image
// (differentiable matmul and col2im, so double backward works).
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        const Shape& stride = {1}, const Shape& padding = {0},
                        const Shape& output_padding = {0}, int64_t groups = 1,
                        const Shape& dilation = {1});

}  // namespace ember::nn::functional

namespace ember::nn {

// What Conv1d, Conv2d and ConvTranspose2d share (PyTorch's _ConvNd): the settings, the
// parameters "weight" and "bias", the default initialisation and extra_repr. The window
// settings are stored expanded to one value per spatial dim, as PyTorch stores them.
class ConvNd : public Module {
 public:
  std::string extra_repr() const override;
  void reset_parameters();

  const int64_t in_channels, out_channels;
  const Shape kernel_size, stride;
  const ConvPadding padding;  // one number per spatial dim, or the mode
  const Shape dilation;
  const Shape output_padding;  // zeros unless transposed
  const int64_t groups;
  const bool transposed;
  // How the input is padded (Note [Convolution padding modes] in nn/conv.cpp): "zeros" (the
  // convolution's own zero padding), "reflect", "replicate" or "circular" (the input is padded
  // with ember::pad in that mode first, and the convolution itself pads nothing), as PyTorch's.
  // ConvTranspose2d supports "zeros" only.
  const std::string padding_mode;
  // weight (out, in / groups, *kernel) or, transposed, (in, out / groups, *kernel).
  Tensor weight, bias;  // bias undefined when disabled

 protected:
  ConvNd(const char* type_name, size_t dims, int64_t in_channels, int64_t out_channels,
         const IntArg& kernel_size, const IntArg& stride, const ConvPadding& padding,
         const IntArg& dilation, bool transposed, const IntArg& output_padding, int64_t groups,
         bool bias, const std::string& padding_mode, DType dtype);
  // Checks that `input` has 1 + dims (unbatched) or 2 + dims dims and in_channels channels.
  void check_input(const Tensor& input, size_t dims) const;
  // With a padding_mode other than "zeros": `input` padded in that mode by the module's padding
  // (the last spatial dim first, as ember::pad takes it). Otherwise `input` itself.
  Tensor pad_input(const Tensor& input) const;
  // The padding the convolution itself applies: none when pad_input already padded.
  ConvPadding conv_padding() const;

 private:
  Shape mode_padding_;  // ember::pad's (left, right) pairs, last dim first; empty for "zeros"
};

// Parameters "weight" (out_channels, in_channels / groups, kernel_size) and "bias"
// (out_channels). Input (N, in_channels, L) or (in_channels, L).
class Conv1d : public ConvNd {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, const IntArg& kernel_size,
         const IntArg& stride = 1, const ConvPadding& padding = 0, const IntArg& dilation = 1,
         int64_t groups = 1, bool bias = true, const std::string& padding_mode = "zeros",
         DType dtype = kFloat32);
  Tensor forward(const Tensor& input) override;
};

// Parameters "weight" (out_channels, in_channels / groups, kh, kw) and "bias" (out_channels).
// Input (N, in_channels, H, W) or (in_channels, H, W).
class Conv2d : public ConvNd {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, const IntArg& kernel_size,
         const IntArg& stride = 1, const ConvPadding& padding = 0, const IntArg& dilation = 1,
         int64_t groups = 1, bool bias = true, const std::string& padding_mode = "zeros",
         DType dtype = kFloat32);
  Tensor forward(const Tensor& input) override;
};

// Parameters "weight" (in_channels, out_channels / groups, kh, kw) and "bias" (out_channels).
// Input (N, in_channels, H, W) or (in_channels, H, W). Padding is numbers only.
class ConvTranspose2d : public ConvNd {
 public:
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, const IntArg& kernel_size,
                  const IntArg& stride = 1, const IntArg& padding = 0,
                  const IntArg& output_padding = 0, int64_t groups = 1, bool bias = true,
                  const IntArg& dilation = 1, const std::string& padding_mode = "zeros",
                  DType dtype = kFloat32);
  Tensor forward(const Tensor& input) override;
  // PyTorch's forward(input, output_size): the output_padding that makes the result
  // output_size ({h, w}, or the last two dims of a longer list) instead of the constructor's;
  // an error when no output_padding in [0, stride) gives that size.
  Tensor forward(const Tensor& input, const Shape& output_size);
};

}  // namespace ember::nn
