#include "nn/clip_grad.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "autograd/ops/binary.h"
#include "autograd/ops/copy.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/ops/unary.h"
#include "core/ops/factory.h"
#include "core/ops/multi_tensor.h"

namespace ember::nn::utils {

namespace {

// The p-norm of all elements of t, PyTorch's torch.norm(t, p) for a vector: p = inf is the
// largest |x|, -inf the smallest, 0 the count of non-zeros, otherwise (sum |x|^p)^(1/p).
Tensor vector_norm(const Tensor& t, double p) {
  if (std::isinf(p)) {
    if (t.numel() == 0) return zeros({}, t.dtype());
    return p > 0 ? t.abs().amax() : t.abs().amin();
  }
  if (p == 0.0) return t.ne(0).sum().to(t.dtype());
  if (p > 0.0) return t.norm(p);
  return t.abs().pow(p).sum().pow(1.0 / p);
}

std::vector<Tensor> grads_of(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters) {
    Tensor g = p.grad();
    if (g.defined()) grads.push_back(g.detach());
  }
  return grads;
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  EMBER_CHECK(!std::isnan(norm_type), "clip_grad_norm_: norm_type is NaN");
  autograd::NoGradGuard no_grad;
  const std::vector<Tensor> grads = grads_of(parameters);
  if (grads.empty()) return zeros({}, kFloat32);

  Tensor total;
  if (norm_type == 2.0 && native::multi_tensor_norm_applies(grads)) {
    // One pass over every gradient of one cuda device (core/ops/multi_tensor.h).
    total = native::total_norm2(grads);
  } else {
    const DType dtype = result_type(grads);
    std::vector<Tensor> norms;
    norms.reserve(grads.size());
    for (const Tensor& g : grads) norms.push_back(vector_norm(g, norm_type).to(dtype));
    total = norms.size() == 1 ? norms[0] : vector_norm(stack(norms), norm_type);
  }

  if (error_if_nonfinite) {
    EMBER_CHECK(std::isfinite(total.item<double>()), "clip_grad_norm_: The total norm of order ",
                norm_type,
                " for gradients from `parameters` is non-finite, so it cannot be clipped. To "
                "disable this error and scale the gradients by the non-finite norm anyway, set "
                "`error_if_nonfinite=False`");
  }
  // Always multiplied, also by 1, as PyTorch does (no data-dependent branch).
  const Tensor coef = (max_norm / (total + 1e-6)).clamp_max(1.0);
  for (const Tensor& g : grads) g.mul_(coef.to(g.dtype()));
  return total;
}

Tensor clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  autograd::NoGradGuard no_grad;
  for (const Tensor& g : grads_of(parameters)) g.clamp_(-clip_value, clip_value);
}

void clip_grad_value_(const Tensor& parameter, double clip_value) {
  clip_grad_value_(std::vector<Tensor>{parameter}, clip_value);
}

}  // namespace ember::nn::utils
