#pragma once
// RAdam: Adam with a rectified adaptive learning rate (PyTorch's torch.optim.RAdam).
//
// For each parameter p with gradient g at step t (state "step", a 0-dim float32 tensor),
// PyTorch 1.13's single-tensor update:
//   g = g + weight_decay * p                         if weight_decay != 0
//   m = beta1 * m + (1 - beta1) * g                  (state "exp_avg")
//   v = beta2 * v + (1 - beta2) * g * g              (state "exp_avg_sq")
//   m_hat = m / (1 - beta1^t)
//   rho_inf = 2 / (1 - beta2) - 1
//   rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
//   if rho_t > 5:
//     rect = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
//     p = p - m_hat * lr * (sqrt(1 - beta2^t) / (sqrt(v) + eps)) * rect
//   else:
//     p = p - m_hat * lr                              (the un-adapted first steps)
// RAdam has no maximize in 1.13.
//
//   optim::RAdam opt(model->parameters(), optim::RAdamOptions(1e-3));
// Group options: "lr", "betas0", "betas1", "eps", "weight_decay". A chain of native ops.

#include <vector>

#include "optim/adam.h"
#include "optim/optimizer.h"

namespace ember::optim {

struct RAdamOptions {
  explicit RAdamOptions(double lr = 1e-3) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(Betas, betas) = {0.9, 0.999};
  EMBER_ARG(double, eps) = 1e-8;
  EMBER_ARG(double, weight_decay) = 0.0;
};

class RAdam : public Optimizer {
 public:
  explicit RAdam(std::vector<Tensor> params, const RAdamOptions& options = RAdamOptions());
  explicit RAdam(std::vector<ParamGroup> groups, const RAdamOptions& options = RAdamOptions());

 protected:
  void check_options(const GroupOptions& options) const override;
  void update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
              ParamState& state) override;
};

}  // namespace ember::optim
