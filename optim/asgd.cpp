#include "optim/asgd.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/ops/binary.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/unary.h"
#include "optim/option_checks.h"
#include "optim/step_count.h"

namespace ember::optim {

ASGD::ASGD(std::vector<Tensor> params, const ASGDOptions& options)
    : ASGD(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

ASGD::ASGD(std::vector<ParamGroup> groups, const ASGDOptions& o)
    : Optimizer("ASGD", {{"lr", o.lr()},
                         {"lambd", o.lambd()},
                         {"alpha", o.alpha()},
                         {"t0", o.t0()},
                         {"weight_decay", o.weight_decay()},
                         {"maximize", o.maximize() ? 1.0 : 0.0}}) {
  check_options(defaults());
  add_param_groups(std::move(groups));
}

void ASGD::check_options(const GroupOptions& o) const {
  EMBER_CHECK(o.at("lr") >= 0.0, "ASGD: Invalid learning rate: ", o.at("lr"));
  EMBER_CHECK(o.at("weight_decay") >= 0.0,
              "ASGD: Invalid weight_decay value: ", o.at("weight_decay"));
  check_flag(o, "maximize");
}

void ASGD::check_state(const std::string& prefix, const GroupOptions&, const Tensor&,
                       const ParamState& state) const {
  detail::check_scalar_state(prefix, state, "eta", 0.0, std::numeric_limits<double>::max(),
                             /*lo_open=*/false);
  detail::check_scalar_state(prefix, state, "mu", 0.0, 1.0, /*lo_open=*/true);
}

void ASGD::update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
                  ParamState& state) {
  const double lr = group.get("lr");
  const double lambd = group.get("lambd");
  const double alpha = group.get("alpha");
  const double t0 = group.get("t0");
  const double weight_decay = group.get("weight_decay");
  const bool maximize = group.get("maximize") != 0.0;

  if (state.empty()) {
    state["step"] = scalar_tensor(0.0, kFloat32);
    state["eta"] = scalar_tensor(lr, kFloat32);
    state["mu"] = scalar_tensor(1.0, kFloat32);
    state["ax"] = zeros_like(param);
  }
  Tensor g = maximize ? native::neg(grad) : grad;
  const double step = detail::increment_step(state.at("step"));
  if (weight_decay != 0.0) g = native::add(g, param, weight_decay);

  const double eta = state.at("eta").item<double>();
  const double mu = state.at("mu").item<double>();
  native::mul_(param, 1.0 - lambd * eta);
  native::add_(param, g, -eta);
  const Tensor& ax = state.at("ax");
  if (mu != 1.0)
    native::add_(ax, native::mul(native::sub(param, ax), mu));
  else
    native::copy_(ax, param);
  // float32 state, rounded as PyTorch's torch.tensor(value) rounds.
  native::fill_(state.at("eta"), lr / std::pow(1.0 + lambd * lr * step, alpha));
  native::fill_(state.at("mu"), 1.0 / std::max(1.0, step - t0));
}

}  // namespace ember::optim
