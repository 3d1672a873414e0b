#include "optim/adagrad.h"

#include <cmath>

#include "core/ops/factory.h"
#include "core/ops/optim.h"
#include "optim/step_count.h"

namespace ember::optim {

namespace {

GroupOptions adagrad_defaults(const AdagradOptions& o) {
  return {{"lr", o.lr()},
          {"lr_decay", o.lr_decay()},
          {"weight_decay", o.weight_decay()},
          {"initial_accumulator_value", o.initial_accumulator_value()},
          {"eps", o.eps()},
          {"maximize", o.maximize() ? 1.0 : 0.0}};
}

}  // namespace

Adagrad::Adagrad(std::vector<Tensor> params, const AdagradOptions& options)
    : Adagrad(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

Adagrad::Adagrad(std::vector<ParamGroup> groups, const AdagradOptions& options)
    : Optimizer("Adagrad", adagrad_defaults(options)) {
  check_options(defaults());
  add_param_groups(std::move(groups));
}

void Adagrad::check_options(const GroupOptions& o) const {
  EMBER_CHECK(o.at("lr") >= 0.0, "Adagrad: Invalid learning rate: ", o.at("lr"));
  EMBER_CHECK(o.at("lr_decay") >= 0.0, "Adagrad: Invalid lr_decay value: ", o.at("lr_decay"));
  EMBER_CHECK(o.at("weight_decay") >= 0.0,
              "Adagrad: Invalid weight_decay value: ", o.at("weight_decay"));
  EMBER_CHECK(
      o.at("initial_accumulator_value") >= 0.0,
      "Adagrad: Invalid initial_accumulator_value value: ", o.at("initial_accumulator_value"));
  EMBER_CHECK(o.at("eps") >= 0.0, "Adagrad: Invalid epsilon value: ", o.at("eps"));
  check_flag(o, "maximize");
}

void Adagrad::init_state(const ParamGroup& group, const Tensor& param, ParamState& state) {
  state["step"] = scalar_tensor(0.0, kFloat32);
  state["sum"] = full_like(param, group.get("initial_accumulator_value"));
}

void Adagrad::update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
                     ParamState& state) {
  const double lr = group.get("lr");
  const double lr_decay = group.get("lr_decay");
  const double weight_decay = group.get("weight_decay");
  const double eps = group.get("eps");
  const bool maximize = group.get("maximize") != 0.0;

  if (state.empty()) init_state(group, param, state);  // e.g. after loading a dict without it
  const double step = detail::increment_step(state.at("step"));
  const double clr = lr / (1.0 + (step - 1.0) * lr_decay);

  native::adagrad_step_(param, grad, state.at("sum"), {clr, eps, weight_decay, maximize});
}

}  // namespace ember::optim
