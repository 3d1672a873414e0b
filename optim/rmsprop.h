#pragma once
// RMSprop (PyTorch's torch.optim.RMSprop).
//
// For each parameter p with gradient g, PyTorch 1.13's update:
//   g = -g if maximize
//   g = g + weight_decay * p                    if weight_decay != 0
//   v = alpha * v + (1 - alpha) * g * g         (state "square_avg")
//   centered: a = alpha * a + (1 - alpha) * g   (state "grad_avg"), avg = sqrt(v - a * a)
//   otherwise avg = sqrt(v)
//   avg = avg + eps
//   momentum > 0: buf = momentum * buf + g / avg (state "momentum_buffer"), p = p - lr * buf
//   otherwise:    p = p - lr * g / avg
// The state's "step" counts the updates (a 0-dim int64 tensor; PyTorch keeps a Python int).
//
//   optim::RMSprop opt(model->parameters(), optim::RMSpropOptions(1e-3).momentum(0.9));
// Group options: "lr", "alpha", "eps", "weight_decay", "momentum", "centered", "maximize".

#include <vector>

#include "optim/optimizer.h"

namespace ember::optim {

struct RMSpropOptions {
  explicit RMSpropOptions(double lr = 1e-2) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(double, alpha) = 0.99;
  EMBER_ARG(double, eps) = 1e-8;
  EMBER_ARG(double, weight_decay) = 0.0;
  EMBER_ARG(double, momentum) = 0.0;
  EMBER_ARG(bool, centered) = false;
  EMBER_ARG(bool, maximize) = false;
};

class RMSprop : public Optimizer {
 public:
  explicit RMSprop(std::vector<Tensor> params, const RMSpropOptions& options = RMSpropOptions());
  explicit RMSprop(std::vector<ParamGroup> groups,
                   const RMSpropOptions& options = RMSpropOptions());

 protected:
  void check_options(const GroupOptions& options) const override;
  void update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
              ParamState& state) override;
};

}  // namespace ember::optim
