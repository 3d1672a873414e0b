#pragma once
// gradcheck and gradgradcheck: compare autograd's gradients with central differences.
//
//   auto f = [](const Tensors& x) { return Tensors{(x[0] * x[1]).exp().sum({1})}; };
//   Tensor a = randn({3, 4}, kFloat64).requires_grad_(), b = randn({4}, kFloat64).requires_grad_();
//   GradcheckResult r = gradcheck(f, {a, b});
//   if (!r) std::cerr << r.report;   // names the worst element
//
// gradcheck builds the full Jacobian of every floating output with respect to every input that
// requires grad, twice: analytically (one autograd::grad call per output element) and
// numerically ((f(x + eps) - f(x - eps)) / 2 eps per input element), and requires
// |analytical - numerical| <= atol + rtol * |numerical| everywhere. Inputs that require grad must
// be float64 (float32 differences are too coarse to tell a wrong formula from rounding).
// gradgradcheck runs gradcheck on the backward itself, (inputs, v) -> vJ with create_graph, for
// a random v: it checks the second derivatives.

#include <functional>
#include <string>

#include "autograd/node.h"

namespace ember::autograd {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  uint64_t seed = 0;  // for gradgradcheck's random v
};

struct GradcheckResult {
  bool ok = true;
  std::string report;  // empty when ok; else the worst element and both values
  double max_abs_error = 0.0;
  explicit operator bool() const { return ok; }
};

using GradcheckFn = std::function<Tensors(const Tensors&)>;

GradcheckResult gradcheck(const GradcheckFn& fn, const Tensors& inputs,
                          const GradcheckOptions& options = {});
GradcheckResult gradgradcheck(const GradcheckFn& fn, const Tensors& inputs,
                              const GradcheckOptions& options = {});

}  // namespace ember::autograd
