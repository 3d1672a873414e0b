#pragma once
// Adagrad (PyTorch's torch.optim.Adagrad).
//
// The state is made when a parameter is added: "step" (a 0-dim float32 tensor, 0) and "sum"
// (the parameter's shape, filled with initial_accumulator_value). For each parameter p with
// gradient g, PyTorch 1.13's update at step t (after incrementing "step"):
//   g = -g if maximize
//   g = g + weight_decay * p            if weight_decay != 0
//   clr = lr / (1 + (t - 1) * lr_decay)
//   sum = sum + g * g
//   p = p - clr * g / (sqrt(sum) + eps)
//
//   optim::Adagrad opt(model->parameters(), optim::AdagradOptions(1e-2).lr_decay(1e-4));
// Group options: "lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps",
// "maximize".

#include <vector>

#include "optim/optimizer.h"

namespace ember::optim {

struct AdagradOptions {
  explicit AdagradOptions(double lr = 1e-2) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(double, lr_decay) = 0.0;
  EMBER_ARG(double, weight_decay) = 0.0;
  EMBER_ARG(double, initial_accumulator_value) = 0.0;
  EMBER_ARG(double, eps) = 1e-10;
  EMBER_ARG(bool, maximize) = false;
};

class Adagrad : public Optimizer {
 public:
  explicit Adagrad(std::vector<Tensor> params, const AdagradOptions& options = AdagradOptions());
  explicit Adagrad(std::vector<ParamGroup> groups,
                   const AdagradOptions& options = AdagradOptions());

 protected:
  void check_options(const GroupOptions& options) const override;
  void init_state(const ParamGroup& group, const Tensor& param, ParamState& state) override;
  void update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
              ParamState& state) override;
};

}  // namespace ember::optim
