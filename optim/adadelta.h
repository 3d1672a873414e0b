#pragma once
// Adadelta (PyTorch's torch.optim.Adadelta).
//
// For each parameter p with gradient g (PyTorch 1.13's single-tensor update; the state's "step"
// is a 0-dim int64 tensor, PyTorch's Python int, counted but not used):
//   g = -g if maximize
//   g = g + weight_decay * p                          if weight_decay != 0
//   v = rho * v + (1 - rho) * g * g                   (state "square_avg")
//   delta = sqrt(u + eps) / sqrt(v + eps) * g
//   u = rho * u + (1 - rho) * delta * delta           (state "acc_delta")
//   p = p - lr * delta
//
//   optim::Adadelta opt(model->parameters(), optim::AdadeltaOptions(1.0).rho(0.9));
// Group options: "lr", "rho", "eps", "weight_decay", "maximize". A chain of native ops.

#include <vector>

#include "optim/optimizer.h"

namespace ember::optim {

struct AdadeltaOptions {
  explicit AdadeltaOptions(double lr = 1.0) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(double, rho) = 0.9;
  EMBER_ARG(double, eps) = 1e-6;
  EMBER_ARG(double, weight_decay) = 0.0;
  EMBER_ARG(bool, maximize) = false;
};

class Adadelta : public Optimizer {
 public:
  explicit Adadelta(std::vector<Tensor> params, const AdadeltaOptions& options = AdadeltaOptions());
  explicit Adadelta(std::vector<ParamGroup> groups,
                    const AdadeltaOptions& options = AdadeltaOptions());

 protected:
  void check_options(const GroupOptions& options) const override;
  void update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
              ParamState& state) override;
};

}  // namespace ember::optim
