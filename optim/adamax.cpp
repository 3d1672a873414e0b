#include "optim/adamax.h"

#include <cmath>

#include "core/ops/binary.h"
#include "core/ops/factory.h"
#include "core/ops/unary.h"
#include "optim/option_checks.h"
#include "optim/step_count.h"

namespace ember::optim {

Adamax::Adamax(std::vector<Tensor> params, const AdamaxOptions& options)
    : Adamax(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

Adamax::Adamax(std::vector<ParamGroup> groups, const AdamaxOptions& o)
    : Optimizer("Adamax", {{"lr", o.lr()},
                           {"betas0", o.betas().first},
                           {"betas1", o.betas().second},
                           {"eps", o.eps()},
                           {"weight_decay", o.weight_decay()},
                           {"maximize", o.maximize() ? 1.0 : 0.0}}) {
  check_options(defaults());
  add_param_groups(std::move(groups));
}

void Adamax::check_options(const GroupOptions& o) const {
  detail::check_lr_eps_betas_weight_decay("Adamax", o);
  check_flag(o, "maximize");
}

void Adamax::update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
                    ParamState& state) {
  const double lr = group.get("lr");
  const double beta1 = group.get("betas0");
  const double beta2 = group.get("betas1");
  const double eps = group.get("eps");
  const double weight_decay = group.get("weight_decay");
  const bool maximize = group.get("maximize") != 0.0;

  if (state.empty()) {
    state["step"] = scalar_tensor(0.0, kFloat32);
    state["exp_avg"] = zeros_like(param);
    state["exp_inf"] = zeros_like(param);
  }
  const double step = detail::increment_step(state.at("step"));
  Tensor g = maximize ? native::neg(grad) : grad;
  if (weight_decay != 0.0) g = native::add(g, param, weight_decay);

  const Tensor& exp_avg = state.at("exp_avg");
  const Tensor& exp_inf = state.at("exp_inf");
  native::add_(native::mul_(exp_avg, beta1), g, 1.0 - beta1);
  native::maximum_(native::mul_(exp_inf, beta2), native::add_(native::abs(g), eps));
  const double clr = lr / (1.0 - std::pow(beta1, step));
  native::addcdiv_(param, exp_avg, exp_inf, -clr);
}

}  // namespace ember::optim
