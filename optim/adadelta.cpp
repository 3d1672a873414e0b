#include "optim/adadelta.h"

#include "core/ops/binary.h"
#include "core/ops/factory.h"
#include "core/ops/unary.h"
#include "optim/step_count.h"

namespace ember::optim {

Adadelta::Adadelta(std::vector<Tensor> params, const AdadeltaOptions& options)
    : Adadelta(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

Adadelta::Adadelta(std::vector<ParamGroup> groups, const AdadeltaOptions& o)
    : Optimizer("Adadelta", {{"lr", o.lr()},
                             {"rho", o.rho()},
                             {"eps", o.eps()},
                             {"weight_decay", o.weight_decay()},
                             {"maximize", o.maximize() ? 1.0 : 0.0}}) {
  check_options(defaults());
  add_param_groups(std::move(groups));
}

void Adadelta::check_options(const GroupOptions& o) const {
  EMBER_CHECK(o.at("lr") >= 0.0, "Adadelta: Invalid learning rate: ", o.at("lr"));
  EMBER_CHECK(o.at("rho") >= 0.0 && o.at("rho") <= 1.0,
              "Adadelta: Invalid rho value: ", o.at("rho"));
  EMBER_CHECK(o.at("eps") >= 0.0, "Adadelta: Invalid epsilon value: ", o.at("eps"));
  EMBER_CHECK(o.at("weight_decay") >= 0.0,
              "Adadelta: Invalid weight_decay value: ", o.at("weight_decay"));
  check_flag(o, "maximize");
}

void Adadelta::update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
                      ParamState& state) {
  const double lr = group.get("lr");
  const double rho = group.get("rho");
  const double eps = group.get("eps");
  const double weight_decay = group.get("weight_decay");
  const bool maximize = group.get("maximize") != 0.0;

  if (state.empty()) {
    state["step"] = scalar_tensor(0, kInt64);
    state["square_avg"] = zeros_like(param);
    state["acc_delta"] = zeros_like(param);
  }
  detail::increment_step(state.at("step"));
  Tensor g = maximize ? native::neg(grad) : grad;
  if (weight_decay != 0.0) g = native::add(g, param, weight_decay);

  const Tensor& square_avg = state.at("square_avg");
  const Tensor& acc_delta = state.at("acc_delta");
  native::addcmul_(native::mul_(square_avg, rho), g, g, 1.0 - rho);
  const Tensor std_ = native::sqrt_(native::add(square_avg, eps));
  const Tensor delta = native::sqrt_(native::add(acc_delta, eps));
  native::mul_(native::div_(delta, std_), g);
  native::addcmul_(native::mul_(acc_delta, rho), delta, delta, 1.0 - rho);
  native::add_(param, delta, -lr);
}

}  // namespace ember::optim
