#include "nn/dropout.h"

#include "autograd/ops/binary.h"
#include "autograd/ops/random.h"
#include "core/op_registry.h"
#include "core/ops/factory.h"
#include "nn/activation.h"
#include "nn/repr.h"

namespace ember::nn {

namespace {
constexpr const char* kDropoutOps[] = {"dropout", "dropout2d"};
static_assert(sizeof(kDropoutOps) / sizeof(kDropoutOps[0]) == 2);
const OpFamilyRegistrar registrar("nn_activation", kDropoutOps);

void check_p(double p, const char* op) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, op, ": dropout probability has to be between 0 and 1, got ", p);
}

// input * mask / (1 - p), with mask of `mask_shape` (input's shape, or one element per channel,
// broadcast over the plane) drawn from bernoulli(1 - p).
Tensor apply_mask(const Tensor& input, const Shape& mask_shape, double p, bool training,
                  Generator* gen, bool inplace, const char* op) {
  check_p(p, op);
  EMBER_CHECK(input.is_floating_point(), op, ": expected a floating-point input, got ",
              dtype_name(input.dtype()), " ", input.sizes());
  if (!training || p == 0.0 || input.numel() == 0) return input;
  Tensor noise;
  if (p == 1.0) {
    noise = zeros({}, input.options());
  } else {
    noise = empty(mask_shape, input.options());
    noise.bernoulli_(1.0 - p, gen);
    noise.div_(1.0 - p);
  }
  return inplace ? input.mul_(noise) : input.mul(noise);
}
}  // namespace

namespace functional {

Tensor dropout(const Tensor& input, double p, bool training, Generator* gen, bool inplace) {
  return apply_mask(input, input.sizes(), p, training, gen, inplace, "dropout");
}

Tensor dropout2d(const Tensor& input, double p, bool training, Generator* gen, bool inplace) {
  EMBER_CHECK(input.dim() == 3 || input.dim() == 4,
              "dropout2d: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got ", input.sizes());
  // One draw per channel: (N, C, 1, 1) or (C, 1, 1).
  Shape mask_shape = input.sizes();
  mask_shape[input.dim() - 1] = 1;
  mask_shape[input.dim() - 2] = 1;
  return apply_mask(input, mask_shape, p, training, gen, inplace, "dropout2d");
}

}  // namespace functional

namespace {
std::string dropout_repr(double p, bool inplace) {
  return "p=" + python_float(p) + ", inplace=" + python_bool(inplace);
}
}  // namespace

Dropout::Dropout(double p, bool inplace) : Module("Dropout"), p_(p), inplace_(inplace) {
  check_p(p, "Dropout");
}
Tensor Dropout::forward(const Tensor& input) {
  return functional::dropout(input, p_, is_training(), nullptr, inplace_);
}
std::string Dropout::extra_repr() const { return dropout_repr(p_, inplace_); }

Dropout2d::Dropout2d(double p, bool inplace) : Module("Dropout2d"), p_(p), inplace_(inplace) {
  check_p(p, "Dropout2d");
}
Tensor Dropout2d::forward(const Tensor& input) {
  return functional::dropout2d(input, p_, is_training(), nullptr, inplace_);
}
std::string Dropout2d::extra_repr() const { return dropout_repr(p_, inplace_); }

}  // namespace ember::nn
