#include "optim/sgd.h"

#include "core/ops/factory.h"
#include "core/ops/multi_tensor.h"

namespace ember::optim {

namespace {

GroupOptions sgd_defaults(const SGDOptions& o) {
  return {{"lr", o.lr()},
          {"momentum", o.momentum()},
          {"dampening", o.dampening()},
          {"weight_decay", o.weight_decay()},
          {"nesterov", o.nesterov() ? 1.0 : 0.0},
          {"maximize", o.maximize() ? 1.0 : 0.0}};
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : SGD(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& options)
    : Optimizer("SGD", sgd_defaults(options)) {
  check_options(defaults());
  add_param_groups(std::move(groups));
}

void SGD::check_options(const GroupOptions& o) const {
  check_flag(o, "nesterov");
  check_flag(o, "maximize");
  EMBER_CHECK(o.at("lr") >= 0.0, "SGD: Invalid learning rate: ", o.at("lr"));
  EMBER_CHECK(o.at("momentum") >= 0.0, "SGD: Invalid momentum value: ", o.at("momentum"));
  EMBER_CHECK(o.at("weight_decay") >= 0.0,
              "SGD: Invalid weight_decay value: ", o.at("weight_decay"));
  EMBER_CHECK(o.at("nesterov") == 0.0 || (o.at("momentum") > 0.0 && o.at("dampening") == 0.0),
              "SGD: Nesterov momentum requires a momentum and zero dampening");
}

void SGD::update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
                 ParamState& state) {
  const double lr = group.get("lr");
  const double momentum = group.get("momentum");
  const double dampening = group.get("dampening");
  const double weight_decay = group.get("weight_decay");
  const bool nesterov = group.get("nesterov") != 0.0;
  const bool maximize = group.get("maximize") != 0.0;

  // The momentum buffer starts as a copy of the first (decayed) gradient.
  Tensor buf;
  bool first = false;
  if (momentum != 0.0) {
    first = !state.has("momentum_buffer") || !state["momentum_buffer"].defined();
    if (first) state["momentum_buffer"] = empty_like(param);
    buf = state.at("momentum_buffer");
  }
  pending_.push_back(
      {param, grad, buf, {lr, momentum, dampening, weight_decay, nesterov, maximize, first}});
}

void SGD::flush_updates() {
  std::vector<SgdUpdate> updates;
  updates.swap(pending_);
  native::sgd_steps_(updates);
}

}  // namespace ember::optim
