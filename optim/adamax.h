#pragma once
// Adamax: Adam with the infinity norm (PyTorch's torch.optim.Adamax).
//
// For each parameter p with gradient g at step t (state "step", a 0-dim float32 tensor),
// PyTorch 1.13's single-tensor update:
//   g = -g if maximize
//   g = g + weight_decay * p                          if weight_decay != 0
//   m = beta1 * m + (1 - beta1) * g                   (state "exp_avg")
//   u = max(beta2 * u, |g| + eps)                     (state "exp_inf")
//   p = p - lr / (1 - beta1^t) * m / u
//
//   optim::Adamax opt(model->parameters(), optim::AdamaxOptions(2e-3));
// Group options: "lr", "betas0", "betas1", "eps", "weight_decay", "maximize". A chain of native
// ops.

#include <vector>

#include "optim/adam.h"
#include "optim/optimizer.h"

namespace ember::optim {

struct AdamaxOptions {
  explicit AdamaxOptions(double lr = 2e-3) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(Betas, betas) = {0.9, 0.999};
  EMBER_ARG(double, eps) = 1e-8;
  EMBER_ARG(double, weight_decay) = 0.0;
  EMBER_ARG(bool, maximize) = false;
};

class Adamax : public Optimizer {
 public:
  explicit Adamax(std::vector<Tensor> params, const AdamaxOptions& options = AdamaxOptions());
  explicit Adamax(std::vector<ParamGroup> groups, const AdamaxOptions& options = AdamaxOptions());

 protected:
  void check_options(const GroupOptions& options) const override;
  void update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
              ParamState& state) override;
};

}  // namespace ember::optim
