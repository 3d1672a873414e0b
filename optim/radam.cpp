#include "optim/radam.h"

#include <cmath>

#include "core/ops/binary.h"
#include "core/ops/factory.h"
#include "core/ops/unary.h"
#include "optim/option_checks.h"
#include "optim/step_count.h"

namespace ember::optim {

RAdam::RAdam(std::vector<Tensor> params, const RAdamOptions& options)
    : RAdam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

RAdam::RAdam(std::vector<ParamGroup> groups, const RAdamOptions& o)
    : Optimizer("RAdam", {{"lr", o.lr()},
                          {"betas0", o.betas().first},
                          {"betas1", o.betas().second},
                          {"eps", o.eps()},
                          {"weight_decay", o.weight_decay()}}) {
  check_options(defaults());
  add_param_groups(std::move(groups));
}

void RAdam::check_options(const GroupOptions& o) const {
  detail::check_lr_eps_betas_weight_decay("RAdam", o);
}

void RAdam::update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
                   ParamState& state) {
  const double lr = group.get("lr");
  const double beta1 = group.get("betas0");
  const double beta2 = group.get("betas1");
  const double eps = group.get("eps");
  const double weight_decay = group.get("weight_decay");

  if (state.empty()) {
    state["step"] = scalar_tensor(0.0, kFloat32);
    state["exp_avg"] = zeros_like(param);
    state["exp_avg_sq"] = zeros_like(param);
  }
  const double step = detail::increment_step(state.at("step"));
  const double bias_correction1 = 1.0 - std::pow(beta1, step);
  const double bias_correction2 = 1.0 - std::pow(beta2, step);
  const Tensor g = weight_decay != 0.0 ? native::add(grad, param, weight_decay) : grad;

  const Tensor& exp_avg = state.at("exp_avg");
  const Tensor& exp_avg_sq = state.at("exp_avg_sq");
  native::add_(native::mul_(exp_avg, beta1), g, 1.0 - beta1);
  native::addcmul_(native::mul_(exp_avg_sq, beta2), g, g, 1.0 - beta2);

  const Tensor update = native::mul(native::div(exp_avg, bias_correction1), lr);
  const double rho_inf = 2.0 / (1.0 - beta2) - 1.0;
  const double rho_t = rho_inf - 2.0 * step * std::pow(beta2, step) / bias_correction2;
  if (rho_t > 5.0) {
    const double rect = std::sqrt((rho_t - 4.0) * (rho_t - 2.0) * rho_inf /
                                  ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t));
    // sqrt(1 - beta2^t) / (sqrt(v) + eps), as PyTorch's float / tensor: reciprocal, then times.
    const Tensor adaptive_lr = native::sqrt(exp_avg_sq);
    native::mul_(native::reciprocal_(native::add_(adaptive_lr, eps)), std::sqrt(bias_correction2));
    native::mul_(native::mul_(update, adaptive_lr), rect);
  }
  native::sub_(param, update);
}

}  // namespace ember::optim
