#include "nn/activation.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "autograd/ops/binary.h"
#include "autograd/ops/copy.h"
#include "autograd/ops/softmax.h"
#include "autograd/ops/unary.h"
#include "core/op_registry.h"
#include "nn/repr.h"

namespace ember::nn {

namespace {
constexpr const char* kActivationOps[] = {"leaky_relu"};
static_assert(sizeof(kActivationOps) / sizeof(kActivationOps[0]) == 1);
const OpFamilyRegistrar registrar("nn_activation", kActivationOps);

void check_floating(const Tensor& input, const char* op) {
  EMBER_CHECK(input.is_floating_point(), op, ": expected a floating-point input, got ",
              dtype_name(input.dtype()), " ", input.sizes());
}
}  // namespace

namespace functional {

Tensor relu(const Tensor& input, bool inplace) {
  return inplace ? ember::relu_(input) : ember::relu(input);
}

Tensor leaky_relu(const Tensor& input, double negative_slope, bool inplace) {
  check_floating(input, "leaky_relu");
  // where() sends the gradient to the branch it picked: 1 for x > 0, negative_slope elsewhere.
  Tensor out = where(input.gt(0), input, input.mul(negative_slope));
  return inplace ? input.copy_(out) : out;
}

Tensor gelu(const Tensor& input, const std::string& approximate) {
  return ember::gelu(input, approximate);
}

Tensor silu(const Tensor& input, bool inplace) {
  return inplace ? ember::silu_(input) : ember::silu(input);
}

Tensor tanh(const Tensor& input) { return ember::tanh(input); }
Tensor sigmoid(const Tensor& input) { return ember::sigmoid(input); }

Tensor softmax(const Tensor& input, int64_t dim, std::optional<DType> dtype) {
  return ember::softmax(dtype ? input.to(*dtype) : input, dim);
}

Tensor log_softmax(const Tensor& input, int64_t dim, std::optional<DType> dtype) {
  return ember::log_softmax(dtype ? input.to(*dtype) : input, dim);
}

}  // namespace functional

namespace F = functional;

Tensor ReLU::forward(const Tensor& input) { return F::relu(input, inplace_); }
std::string ReLU::extra_repr() const { return inplace_ ? "inplace=True" : ""; }

Tensor LeakyReLU::forward(const Tensor& input) {
  return F::leaky_relu(input, negative_slope_, inplace_);
}
std::string LeakyReLU::extra_repr() const {
  return "negative_slope=" + python_float(negative_slope_) + (inplace_ ? ", inplace=True" : "");
}

GELU::GELU(std::string approximate) : Module("GELU"), approximate_(std::move(approximate)) {
  EMBER_CHECK(approximate_ == "none" || approximate_ == "tanh",
              "GELU: approximate must be 'none' or 'tanh', got '", approximate_, "'");
}
Tensor GELU::forward(const Tensor& input) { return F::gelu(input, approximate_); }
std::string GELU::extra_repr() const { return "approximate='" + approximate_ + "'"; }

Tensor SiLU::forward(const Tensor& input) { return F::silu(input, inplace_); }
std::string SiLU::extra_repr() const { return inplace_ ? "inplace=True" : ""; }

Tensor Tanh::forward(const Tensor& input) { return F::tanh(input); }
Tensor Sigmoid::forward(const Tensor& input) { return F::sigmoid(input); }

Tensor Softmax::forward(const Tensor& input) { return F::softmax(input, dim_); }
std::string Softmax::extra_repr() const { return "dim=" + std::to_string(dim_); }

Tensor LogSoftmax::forward(const Tensor& input) { return F::log_softmax(input, dim_); }
std::string LogSoftmax::extra_repr() const { return "dim=" + std::to_string(dim_); }

}  // namespace ember::nn
