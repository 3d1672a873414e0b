#pragma once
// ASGD: averaged stochastic gradient descent (PyTorch's torch.optim.ASGD).
//
// For each parameter p with gradient g at step t (PyTorch 1.13's single-tensor update; the
// state's "step", "eta" and "mu" are 0-dim float32 tensors, as PyTorch keeps them):
//   g = -g if maximize
//   g = g + weight_decay * p                          if weight_decay != 0
//   p = p * (1 - lambd * eta)
//   p = p - eta * g
//   ax = ax + mu * (p - ax) if mu != 1, else ax = p   (state "ax": the running average of p)
//   eta = lr / (1 + lambd * lr * t)^alpha             (state "eta", starts at lr)
//   mu = 1 / max(1, t - t0)                           (state "mu", starts at 1)
//
//   optim::ASGD opt(model->parameters(), optim::ASGDOptions(1e-2).t0(100));
// Group options: "lr", "lambd", "alpha", "t0", "weight_decay", "maximize". PyTorch checks only
// lr and weight_decay; a loaded "eta" must be finite and >= 0, "mu" in (0, 1]. A chain of native
// ops.

#include <vector>

#include "optim/optimizer.h"

namespace ember::optim {

struct ASGDOptions {
  explicit ASGDOptions(double lr = 1e-2) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(double, lambd) = 1e-4;
  EMBER_ARG(double, alpha) = 0.75;
  EMBER_ARG(double, t0) = 1e6;
  EMBER_ARG(double, weight_decay) = 0.0;
  EMBER_ARG(bool, maximize) = false;
};

class ASGD : public Optimizer {
 public:
  explicit ASGD(std::vector<Tensor> params, const ASGDOptions& options = ASGDOptions());
  explicit ASGD(std::vector<ParamGroup> groups, const ASGDOptions& options = ASGDOptions());

 protected:
  void check_options(const GroupOptions& options) const override;
  // "eta" and "mu" are 0-dim tensors.
  bool state_has_param_shape(const std::string& name) const override {
    return name != "eta" && name != "mu";
  }
  void check_state(const std::string& prefix, const GroupOptions& options, const Tensor& param,
                   const ParamState& state) const override;
  void update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
              ParamState& state) override;
};

}  // namespace ember::optim
