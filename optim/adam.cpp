#include "optim/adam.h"

#include <algorithm>
#include <cmath>

#include "core/ops/factory.h"
#include "core/ops/multi_tensor.h"
#include "optim/option_checks.h"
#include "optim/step_count.h"

namespace ember::optim {

namespace {

template <class Options>
GroupOptions adam_defaults(const Options& o) {
  return {{"lr", o.lr()},
          {"betas0", o.betas().first},
          {"betas1", o.betas().second},
          {"eps", o.eps()},
          {"weight_decay", o.weight_decay()},
          {"amsgrad", o.amsgrad() ? 1.0 : 0.0},
          {"maximize", o.maximize() ? 1.0 : 0.0}};
}

// One Adam (decoupled = false) or AdamW (decoupled = true) update of `param`, queued for
// flush_updates; the formulas are in optim/adam.h. Errors name "AdamW" or "Adam"
// (native::adam_step_).
void adam_update(std::vector<AdamUpdate>& pending, bool decoupled, const ParamGroup& group,
                 const Tensor& param, const Tensor& grad, ParamState& state) {
  const double lr = group.get("lr");
  const double beta1 = group.get("betas0");
  const double beta2 = group.get("betas1");
  const double eps = group.get("eps");
  const double weight_decay = group.get("weight_decay");
  const bool amsgrad = group.get("amsgrad") != 0.0;
  const bool maximize = group.get("maximize") != 0.0;

  if (state.empty()) {
    state["step"] = scalar_tensor(0.0, kFloat32);
    state["exp_avg"] = zeros_like(param);
    state["exp_avg_sq"] = zeros_like(param);
  }
  if (amsgrad && !state.has("max_exp_avg_sq")) state["max_exp_avg_sq"] = zeros_like(param);

  const double step = detail::increment_step(state.at("step"));
  const double bias_correction1 = 1.0 - std::pow(beta1, step);
  const double bias_correction2 = 1.0 - std::pow(beta2, step);
  const double step_size = lr / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);
  AdamCoefficients c;
  c.lr = lr;
  c.beta1 = beta1;
  c.beta2 = beta2;
  c.eps = eps;
  c.weight_decay = weight_decay;
  c.step_size = step_size;
  c.bias_correction2_sqrt = bias_correction2_sqrt;
  c.decoupled = decoupled;
  c.amsgrad = amsgrad;
  c.maximize = maximize;
  pending.push_back({param, grad, state.at("exp_avg"), state.at("exp_avg_sq"),
                     amsgrad ? state.at("max_exp_avg_sq") : Tensor(), c});
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options)
    : Adam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& options)
    : Optimizer("Adam", adam_defaults(options)) {
  check_options(defaults());
  add_param_groups(std::move(groups));
}

void Adam::check_options(const GroupOptions& options) const {
  detail::check_lr_eps_betas_weight_decay("Adam", options);
  check_flag(options, "amsgrad");
  check_flag(options, "maximize");
}

void Adam::update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
                  ParamState& state) {
  adam_update(pending_, /*decoupled=*/false, group, param, grad, state);
}

void Adam::flush_updates() {
  std::vector<AdamUpdate> updates;
  updates.swap(pending_);
  native::adam_steps_(updates);
}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& options)
    : AdamW(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& options)
    : Optimizer("AdamW", adam_defaults(options)) {
  check_options(defaults());
  add_param_groups(std::move(groups));
}

void AdamW::check_options(const GroupOptions& options) const {
  detail::check_lr_eps_betas_weight_decay("AdamW", options);
  check_flag(options, "amsgrad");
  check_flag(options, "maximize");
}

void AdamW::update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
                   ParamState& state) {
  adam_update(pending_, /*decoupled=*/true, group, param, grad, state);
}

void AdamW::flush_updates() {
  std::vector<AdamUpdate> updates;
  updates.swap(pending_);
  native::adam_steps_(updates);
}

}  // namespace ember::optim
