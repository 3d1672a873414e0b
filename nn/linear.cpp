#include "nn/linear.h"

#include <cmath>

#include "autograd/ops/linalg.h"
#include "core/op_registry.h"
#include "core/ops/factory.h"
#include "nn/init.h"
#include "nn/repr.h"

namespace ember::nn {

namespace {
// The op of family nn_conv defined in this file (the others: nn/conv.cpp, nn/pooling.cpp).
constexpr const char* kLinearOps[] = {"bilinear"};
static_assert(sizeof(kLinearOps) / sizeof(kLinearOps[0]) == 1);
const OpFamilyRegistrar registrar("nn_conv", kLinearOps);

}  // namespace

// ---- functional ----------------------------------------------------------------------------
Tensor functional::bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight,
                            const Tensor& bias) {
  const char* op = "bilinear";
  EMBER_CHECK(input1.defined() && input2.defined() && weight.defined(), op,
              ": undefined input or weight");
  EMBER_CHECK(weight.dim() == 3, op, ": expected a 3-D weight (out, in1, in2), got shape ",
              weight.sizes());
  EMBER_CHECK(input1.dim() >= 1 && input1.dim() == input2.dim(), op,
              ": expected inputs with the same number of dims (at least 1), got shapes ",
              input1.sizes(), " and ", input2.sizes());
  const int64_t out = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
  EMBER_CHECK(input1.size(-1) == in1 && input2.size(-1) == in2, op, ": inputs of shapes ",
              input1.sizes(), " and ", input2.sizes(), " do not match weight of shape ",
              weight.sizes(), " (expected last dims ", in1, " and ", in2, ")");
  Shape lead(input1.sizes().begin(), input1.sizes().end() - 1);
  EMBER_CHECK(lead == Shape(input2.sizes().begin(), input2.sizes().end() - 1), op,
              ": inputs of shapes ", input1.sizes(), " and ", input2.sizes(),
              " must have the same leading dims");
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == out), op,
              ": expected a bias of shape [", out, "], got ",
              bias.defined() ? bias.sizes() : Shape{});
  EMBER_CHECK(input1.dtype() == weight.dtype() && input2.dtype() == weight.dtype() &&
                  (!bias.defined() || bias.dtype() == weight.dtype()),
              op, ": inputs (", dtype_name(input1.dtype()), ", ", dtype_name(input2.dtype()),
              ") and weight (", dtype_name(weight.dtype()), ") must have the same dtype");
  const int64_t rows = shape_numel(lead);
  // t[b, o, j] = sum_i x1[b, i] * weight[o, i, j]: one GEMM with the weight laid out (in1,
  // out * in2); then y[b, o] = sum_j t[b, o, j] * x2[b, j], a batched matrix-vector product.
  Tensor x1 = input1.reshape({rows, in1}), x2 = input2.reshape({rows, in2});
  Tensor t = matmul(x1, weight.permute({1, 0, 2}).reshape({in1, out * in2}));
  Tensor y = matmul(t.view({rows, out, in2}), x2.unsqueeze(-1)).squeeze(-1);  // (rows, out)
  if (bias.defined()) y = y + bias;
  lead.push_back(out);
  return y.reshape(lead);
}

// ---- modules -------------------------------------------------------------------------------
void detail::reset_linear_like(const Tensor& weight, const Tensor& bias) {
  if (weight.numel() > 0) init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined() && bias.numel() > 0) {
    const int64_t fan_in = init::fans(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, DType dtype)
    : Linear("Linear", in_features, out_features, bias, dtype) {}

Linear::Linear(std::string type_name, int64_t in_features, int64_t out_features, bool bias,
               DType dtype)
    : Module(std::move(type_name)), in_features(in_features), out_features(out_features) {
  EMBER_CHECK(in_features >= 0 && out_features >= 0,
              "Linear: in_features and out_features must be non-negative, got ", in_features,
              " and ", out_features);
  weight = register_parameter("weight", empty({out_features, in_features}, dtype));
  if (bias) this->bias = register_parameter("bias", empty({out_features}, dtype));
  reset_parameters();
}

void Linear::reset_parameters() { detail::reset_linear_like(weight, bias); }

Tensor Linear::forward(const Tensor& input) {
  EMBER_CHECK(input.defined() && input.dim() >= 1, "Linear: expected an input (*, ", in_features,
              "), got ", input.defined() ? "a 0-dim tensor" : "an undefined tensor");
  EMBER_CHECK(input.size(-1) == in_features, "Linear: input of shape ", input.sizes(), " has ",
              input.size(-1), " features, expected in_features=", in_features);
  return ember::linear(input, weight, bias);
}

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) +
         ", out_features=" + std::to_string(out_features) + ", bias=" + python_bool(bias.defined());
}

Bilinear::Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias,
                   DType dtype)
    : Module("Bilinear"),
      in1_features(in1_features),
      in2_features(in2_features),
      out_features(out_features) {
  EMBER_CHECK(in1_features >= 0 && in2_features >= 0 && out_features >= 0,
              "Bilinear: feature counts must be non-negative, got ", in1_features, ", ",
              in2_features, " and ", out_features);
  weight = register_parameter("weight", empty({out_features, in1_features, in2_features}, dtype));
  if (bias) this->bias = register_parameter("bias", empty({out_features}, dtype));
  reset_parameters();
}

void Bilinear::reset_parameters() {
  // PyTorch: bound = 1 / sqrt(weight.size(1)) for both the weight and the bias.
  const double bound = in1_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in1_features)) : 0.0;
  if (weight.numel() > 0) init::uniform_(weight, -bound, bound);
  if (bias.defined() && bias.numel() > 0) init::uniform_(bias, -bound, bound);
}

Tensor Bilinear::forward(const Tensor& input1, const Tensor& input2) {
  EMBER_CHECK(input1.defined() && input2.defined() && input1.dim() >= 1 && input2.dim() >= 1,
              "Bilinear: expected inputs (*, ", in1_features, ") and (*, ", in2_features, ")");
  EMBER_CHECK(input1.size(-1) == in1_features && input2.size(-1) == in2_features,
              "Bilinear: inputs of shapes ", input1.sizes(), " and ", input2.sizes(),
              " do not have in1_features=", in1_features, " and in2_features=", in2_features,
              " features");
  return functional::bilinear(input1, input2, weight, bias);
}

std::string Bilinear::extra_repr() const {
  return "in1_features=" + std::to_string(in1_features) +
         ", in2_features=" + std::to_string(in2_features) +
         ", out_features=" + std::to_string(out_features) + ", bias=" + python_bool(bias.defined());
}

}  // namespace ember::nn
