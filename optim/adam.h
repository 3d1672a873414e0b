#pragma once
// Adam and AdamW (PyTorch's torch.optim.Adam, torch.optim.AdamW).
//
// For each parameter p with gradient g, at step t (the state's "step", counted per parameter,
// kept as a 0-dim float32 tensor as PyTorch keeps it), PyTorch 1.13's update:
//   g = -g if maximize
//   Adam:  g = g + weight_decay * p           (L2 penalty in the gradient) if weight_decay != 0
//   AdamW: p = p * (1 - lr * weight_decay)    (decoupled weight decay)
//   m = beta1 * m + (1 - beta1) * g           (state "exp_avg")
//   v = beta2 * v + (1 - beta2) * g * g       (state "exp_avg_sq")
//   amsgrad: v_max = max(v_max, v), used instead of v below (state "max_exp_avg_sq")
//   denom = sqrt(v) / sqrt(1 - beta2^t) + eps
//   p = p - lr / (1 - beta1^t) * m / denom
//
//   optim::Adam opt(model->parameters(), optim::AdamOptions(1e-3).betas({0.9, 0.99}));
// Group options: "lr", "betas0", "betas1", "eps", "weight_decay", "amsgrad", "maximize".

#include <utility>
#include <vector>

#include "core/ops/multi_tensor.h"
#include "optim/optimizer.h"

namespace ember::optim {

// (beta1, beta2): the decay rates of the first and second moment averages.
using Betas = std::pair<double, double>;

struct AdamOptions {
  explicit AdamOptions(double lr = 1e-3) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(Betas, betas) = {0.9, 0.999};
  EMBER_ARG(double, eps) = 1e-8;
  EMBER_ARG(double, weight_decay) = 0.0;
  EMBER_ARG(bool, amsgrad) = false;
  EMBER_ARG(bool, maximize) = false;
};

// AdamW's options: Adam's, with weight decay 1e-2 by default.
struct AdamWOptions {
  explicit AdamWOptions(double lr = 1e-3) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(Betas, betas) = {0.9, 0.999};
  EMBER_ARG(double, eps) = 1e-8;
  EMBER_ARG(double, weight_decay) = 1e-2;
  EMBER_ARG(bool, amsgrad) = false;
  EMBER_ARG(bool, maximize) = false;
};

class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<Tensor> params, const AdamOptions& options = AdamOptions());
  explicit Adam(std::vector<ParamGroup> groups, const AdamOptions& options = AdamOptions());

 protected:
  void check_options(const GroupOptions& options) const override;
  void update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
              ParamState& state) override;
  void flush_updates() override;

 private:
  std::vector<AdamUpdate> pending_;  // this step's updates, run by flush_updates()
};

class AdamW : public Optimizer {
 public:
  explicit AdamW(std::vector<Tensor> params, const AdamWOptions& options = AdamWOptions());
  explicit AdamW(std::vector<ParamGroup> groups, const AdamWOptions& options = AdamWOptions());

 protected:
  void check_options(const GroupOptions& options) const override;
  void update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
              ParamState& state) override;
  void flush_updates() override;

 private:
  std::vector<AdamUpdate> pending_;  // this step's updates, run by flush_updates()
};

}  // namespace ember::optim
