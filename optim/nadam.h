#pragma once
// NAdam: Adam with Nesterov momentum (PyTorch's torch.optim.NAdam).
//
// For each parameter p with gradient g at step t (the state's "step", a 0-dim float32 tensor as
// PyTorch keeps it), PyTorch 1.13's single-tensor update:
//   g = g + weight_decay * p                               if weight_decay != 0
//   mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay))   (and mu_{t+1} with t + 1)
//   mu_product = mu_product * mu_t                         (state "mu_product", 0-dim float32)
//   m = beta1 * m + (1 - beta1) * g                        (state "exp_avg")
//   v = beta2 * v + (1 - beta2) * g * g                    (state "exp_avg_sq")
//   denom = sqrt(v / (1 - beta2^t)) + eps
//   p = p - lr * (1 - mu_t) / (1 - mu_product) * g / denom
//   p = p - lr * mu_{t+1} / (1 - mu_product * mu_t * mu_{t+1}) * m / denom
// (1.13's single-tensor path multiplies mu_t into the second product once more than its
// multi-tensor path does; ember follows the single-tensor path, PyTorch's default.) NAdam has
// no maximize in 1.13.
//
//   optim::NAdam opt(model->parameters(), optim::NAdamOptions(2e-3).momentum_decay(4e-3));
// Group options: "lr", "betas0", "betas1", "eps", "weight_decay", "momentum_decay".
// The update is a chain of native ops, as PyTorch's (not a fused kernel).

#include <vector>

#include "optim/adam.h"
#include "optim/optimizer.h"

namespace ember::optim {

struct NAdamOptions {
  explicit NAdamOptions(double lr = 2e-3) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(Betas, betas) = {0.9, 0.999};
  EMBER_ARG(double, eps) = 1e-8;
  EMBER_ARG(double, weight_decay) = 0.0;
  EMBER_ARG(double, momentum_decay) = 4e-3;
};

class NAdam : public Optimizer {
 public:
  explicit NAdam(std::vector<Tensor> params, const NAdamOptions& options = NAdamOptions());
  explicit NAdam(std::vector<ParamGroup> groups, const NAdamOptions& options = NAdamOptions());

 protected:
  void check_options(const GroupOptions& options) const override;
  // "mu_product" is a 0-dim tensor, a finite number in (0, 1].
  bool state_has_param_shape(const std::string& name) const override {
    return name != "mu_product";
  }
  void check_state(const std::string& prefix, const GroupOptions& options, const Tensor& param,
                   const ParamState& state) const override;
  void update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
              ParamState& state) override;
};

}  // namespace ember::optim
