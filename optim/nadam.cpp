#include "optim/nadam.h"

#include <cmath>

#include "core/ops/binary.h"
#include "core/ops/factory.h"
#include "core/ops/unary.h"
#include "optim/option_checks.h"
#include "optim/step_count.h"

namespace ember::optim {

NAdam::NAdam(std::vector<Tensor> params, const NAdamOptions& options)
    : NAdam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

NAdam::NAdam(std::vector<ParamGroup> groups, const NAdamOptions& o)
    : Optimizer("NAdam", {{"lr", o.lr()},
                          {"betas0", o.betas().first},
                          {"betas1", o.betas().second},
                          {"eps", o.eps()},
                          {"weight_decay", o.weight_decay()},
                          {"momentum_decay", o.momentum_decay()}}) {
  check_options(defaults());
  add_param_groups(std::move(groups));
}

void NAdam::check_options(const GroupOptions& o) const {
  detail::check_lr_eps_betas_weight_decay("NAdam", o);
  EMBER_CHECK(o.at("momentum_decay") >= 0.0,
              "NAdam: Invalid momentum_decay value: ", o.at("momentum_decay"));
}

void NAdam::check_state(const std::string& prefix, const GroupOptions&, const Tensor&,
                        const ParamState& state) const {
  detail::check_scalar_state(prefix, state, "mu_product", 0.0, 1.0, /*lo_open=*/true);
}

void NAdam::update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
                   ParamState& state) {
  const double lr = group.get("lr");
  const double beta1 = group.get("betas0");
  const double beta2 = group.get("betas1");
  const double eps = group.get("eps");
  const double weight_decay = group.get("weight_decay");
  const double momentum_decay = group.get("momentum_decay");

  if (state.empty()) {
    state["step"] = scalar_tensor(0.0, kFloat32);
    state["mu_product"] = scalar_tensor(1.0, kFloat32);
    state["exp_avg"] = zeros_like(param);
    state["exp_avg_sq"] = zeros_like(param);
  }
  const double step = detail::increment_step(state.at("step"));
  const double bias_correction2 = 1.0 - std::pow(beta2, step);
  const Tensor g = weight_decay != 0.0 ? native::add(grad, param, weight_decay) : grad;

  const double mu = beta1 * (1.0 - 0.5 * std::pow(0.96, step * momentum_decay));
  const double mu_next = beta1 * (1.0 - 0.5 * std::pow(0.96, (step + 1.0) * momentum_decay));
  // mu_product is float32, as in PyTorch: the products round as PyTorch's do.
  const Tensor& mu_product = state.at("mu_product");
  native::mul_(mu_product, mu);
  const Tensor mu_product_next = native::mul(native::mul(mu_product, mu), mu_next);

  const Tensor& exp_avg = state.at("exp_avg");
  const Tensor& exp_avg_sq = state.at("exp_avg_sq");
  native::add_(native::mul_(exp_avg, beta1), g, 1.0 - beta1);
  native::addcmul_(native::mul_(exp_avg_sq, beta2), g, g, 1.0 - beta2);

  const Tensor denom = native::sqrt(native::div(exp_avg_sq, bias_correction2));
  native::add_(denom, eps);
  native::addcdiv_(param, g, denom, -lr * (1.0 - mu) / (1.0 - mu_product.item<double>()));
  native::addcdiv_(param, exp_avg, denom, -lr * mu_next / (1.0 - mu_product_next.item<double>()));
}

}  // namespace ember::optim
