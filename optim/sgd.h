#pragma once
// SGD: stochastic gradient descent with optional momentum, dampening, Nesterov momentum and L2
// weight decay (PyTorch's torch.optim.SGD).
//
// For each parameter p with gradient g (PyTorch 1.13's update):
//   g = -g if maximize
//   g = g + weight_decay * p                      if weight_decay != 0
//   if momentum != 0:
//     buf = g                                     on the first step (state "momentum_buffer")
//     buf = momentum * buf + (1 - dampening) * g  afterwards
//     g = g + momentum * buf if nesterov, else g = buf
//   p = p - lr * g
//
//   optim::SGD opt(model->parameters(), optim::SGDOptions(0.1).momentum(0.9).nesterov(true));

#include <vector>

#include "core/ops/multi_tensor.h"
#include "optim/optimizer.h"

namespace ember::optim {

struct SGDOptions {
  // lr has no default, as in PyTorch.
  explicit SGDOptions(double lr) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(double, momentum) = 0.0;
  EMBER_ARG(double, dampening) = 0.0;
  EMBER_ARG(double, weight_decay) = 0.0;
  EMBER_ARG(bool, nesterov) = false;  // needs momentum > 0 and dampening 0
  EMBER_ARG(bool, maximize) = false;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& options);
  SGD(std::vector<ParamGroup> groups, const SGDOptions& options);

 protected:
  void check_options(const GroupOptions& options) const override;
  void update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
              ParamState& state) override;
  void flush_updates() override;

 private:
  std::vector<SgdUpdate> pending_;  // this step's updates, run by flush_updates()
};

}  // namespace ember::optim
