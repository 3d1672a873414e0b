#pragma once
// Linear layers (PyTorch's nn.Identity, nn.Linear, nn.Bilinear) and their functional forms.
//
//   auto fc = std::make_shared<nn::Linear>(784, 256);   // weight (256, 784), bias (256)
//   Tensor y = (*fc)(x);                                // x (*, 784) -> y (*, 256)
//   auto bl = std::make_shared<nn::Bilinear>(3, 4, 5);  // weight (5, 3, 4), bias (5)
//   Tensor z = bl->forward(x1, x2);                     // (*, 3), (*, 4) -> (*, 5)
//
// Default initialisation is PyTorch 1.13's (reset_parameters), drawn from the default
// generator: Linear's weight kaiming_uniform_(a = sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in)),
// and its bias U(-1/sqrt(in), 1/sqrt(in)); Bilinear's weight and bias U(-1/sqrt(in1),
// 1/sqrt(in1)).

#include <string>

#include "autograd/ops/linalg.h"
#include "core/tensor.h"
#include "nn/module.h"

namespace ember::nn::functional {

// linear(input (*, in), weight (out, in), bias (out) or undefined) = input @ weight^T + bias
// -> (*, out). It IS ember::linear (core/ops/linalg.h): a using-declaration rather than a
// wrapper, so that an unqualified linear(x, w, b) inside this namespace, which also finds
// ember::linear through the Tensor arguments, is not ambiguous.
using ember::linear;

// y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o].
// input1 (*, in1) and input2 (*, in2) with the same leading dims (none: 1-D inputs),
// weight (out, in1, in2), bias (out) or undefined -> (*, out). Op "bilinear" (family nn_conv),
// composed of differentiable matmuls.
Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight,
                const Tensor& bias = {});

}  // namespace ember::nn::functional

namespace ember::nn {

namespace detail {
// PyTorch's reset_parameters of Linear and the convolutions: weight kaiming_uniform_(a =
// sqrt(5)) and bias (if defined) U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in from the weight
// (init::fans). Zero-element tensors are left alone (PyTorch's no-op).
void reset_linear_like(const Tensor& weight, const Tensor& bias);
}  // namespace detail

// Returns its input (a placeholder layer, e.g. to switch a block off).
class Identity : public Module {
 public:
  Identity() : Module("Identity") {}
  Tensor forward(const Tensor& input) override { return input; }
};

// y = x @ weight^T + bias. Parameters "weight" (out_features, in_features) and "bias"
// (out_features, absent when bias = false). Input (*, in_features) -> (*, out_features).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, DType dtype = kFloat32);
  Tensor forward(const Tensor& input) override;
  // "in_features=784, out_features=256, bias=True"
  std::string extra_repr() const override;
  // Draws the default initialisation again.
  void reset_parameters();

  const int64_t in_features, out_features;
  Tensor weight, bias;  // bias undefined when disabled

 protected:
  // For subclasses that only rename the layer (MultiheadAttention's out_proj prints as
  // PyTorch's NonDynamicallyQuantizableLinear).
  Linear(std::string type_name, int64_t in_features, int64_t out_features, bool bias, DType dtype);
};

// y = x1^T A x2 + b per output feature. Parameters "weight" (out, in1, in2) and "bias" (out).
// Inputs (*, in1_features) and (*, in2_features) -> (*, out_features).
class Bilinear : public Module {
 public:
  Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias = true,
           DType dtype = kFloat32);
  using Module::forward;  // the one-input form: an error (two inputs are needed)
  using Module::operator();
  Tensor forward(const Tensor& input1, const Tensor& input2);
  Tensor operator()(const Tensor& input1, const Tensor& input2) { return forward(input1, input2); }
  // "in1_features=3, in2_features=4, out_features=5, bias=True"
  std::string extra_repr() const override;
  void reset_parameters();

  const int64_t in1_features, in2_features, out_features;
  Tensor weight, bias;
};

}  // namespace ember::nn
