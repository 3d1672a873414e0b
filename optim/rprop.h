#pragma once
// Rprop: resilient backpropagation (PyTorch's torch.optim.Rprop).
//
// Each element keeps its own step size (state "step_size", starting at lr) and the previous
// gradient (state "prev"); PyTorch 1.13's single-tensor update (the state's "step" is a 0-dim
// int64 tensor, PyTorch's Python int, counted but not used):
//   g = -g if maximize
//   s = sign(g * prev)
//   step_size = clamp(step_size * (etaplus if s > 0, etaminus if s < 0, 1 if s == 0),
//                     step_size_min, step_size_max)
//   g = 0 where s < 0                                 (a sign change: no move this step)
//   p = p - sign(g) * step_size
//   prev = g
//
//   optim::Rprop opt(model->parameters(), optim::RpropOptions(1e-2).etas({0.5, 1.2}));
// Group options: "lr", "etas0" (etaminus), "etas1" (etaplus), "step_sizes0" (min),
// "step_sizes1" (max), "maximize". PyTorch checks 0 < etaminus < 1 < etaplus; ember also checks
// 0 <= step_size_min <= step_size_max, and that a loaded "step_size" is finite and >= 0.
// A chain of native ops.

#include <utility>
#include <vector>

#include "optim/optimizer.h"

namespace ember::optim {

// (etaminus, etaplus) and (step_size_min, step_size_max).
using Etas = std::pair<double, double>;
using StepSizes = std::pair<double, double>;

struct RpropOptions {
  explicit RpropOptions(double lr = 1e-2) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(Etas, etas) = {0.5, 1.2};
  EMBER_ARG(StepSizes, step_sizes) = {1e-6, 50.0};
  EMBER_ARG(bool, maximize) = false;
};

class Rprop : public Optimizer {
 public:
  explicit Rprop(std::vector<Tensor> params, const RpropOptions& options = RpropOptions());
  explicit Rprop(std::vector<ParamGroup> groups, const RpropOptions& options = RpropOptions());

 protected:
  void check_options(const GroupOptions& options) const override;
  void check_state(const std::string& prefix, const GroupOptions& options, const Tensor& param,
                   const ParamState& state) const override;
  void update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
              ParamState& state) override;
};

}  // namespace ember::optim
