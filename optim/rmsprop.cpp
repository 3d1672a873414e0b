#include "optim/rmsprop.h"

#include <cmath>

#include "core/ops/factory.h"
#include "core/ops/optim.h"
#include "optim/step_count.h"

namespace ember::optim {

namespace {

GroupOptions rmsprop_defaults(const RMSpropOptions& o) {
  return {{"lr", o.lr()},
          {"alpha", o.alpha()},
          {"eps", o.eps()},
          {"weight_decay", o.weight_decay()},
          {"momentum", o.momentum()},
          {"centered", o.centered() ? 1.0 : 0.0},
          {"maximize", o.maximize() ? 1.0 : 0.0}};
}

}  // namespace

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& options)
    : RMSprop(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

RMSprop::RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& options)
    : Optimizer("RMSprop", rmsprop_defaults(options)) {
  check_options(defaults());
  add_param_groups(std::move(groups));
}

void RMSprop::check_options(const GroupOptions& o) const {
  EMBER_CHECK(o.at("lr") >= 0.0, "RMSprop: Invalid learning rate: ", o.at("lr"));
  EMBER_CHECK(o.at("eps") >= 0.0, "RMSprop: Invalid epsilon value: ", o.at("eps"));
  EMBER_CHECK(o.at("momentum") >= 0.0, "RMSprop: Invalid momentum value: ", o.at("momentum"));
  EMBER_CHECK(o.at("weight_decay") >= 0.0,
              "RMSprop: Invalid weight_decay value: ", o.at("weight_decay"));
  EMBER_CHECK(o.at("alpha") >= 0.0, "RMSprop: Invalid alpha value: ", o.at("alpha"));
  check_flag(o, "centered");
  check_flag(o, "maximize");
}

void RMSprop::update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
                     ParamState& state) {
  const double lr = group.get("lr");
  const double alpha = group.get("alpha");
  const double eps = group.get("eps");
  const double weight_decay = group.get("weight_decay");
  const double momentum = group.get("momentum");
  const bool centered = group.get("centered") != 0.0;
  const bool maximize = group.get("maximize") != 0.0;

  if (state.empty()) {
    state["step"] = scalar_tensor(0, kInt64);
    state["square_avg"] = zeros_like(param);
  }
  // Made when first needed (a scheduler may turn momentum on later, e.g. OneCycleLR).
  if (momentum > 0.0 && !state.has("momentum_buffer")) state["momentum_buffer"] = zeros_like(param);
  if (centered && !state.has("grad_avg")) state["grad_avg"] = zeros_like(param);
  detail::increment_step(state.at("step"));

  native::rmsprop_step_(param, grad, state.at("square_avg"),
                        centered ? state.at("grad_avg") : Tensor(),
                        momentum > 0.0 ? state.at("momentum_buffer") : Tensor(),
                        {lr, alpha, eps, weight_decay, momentum, centered, maximize});
}

}  // namespace ember::optim
