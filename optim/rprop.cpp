#include "optim/rprop.h"

#include "core/ops/binary.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/reduce.h"
#include "core/ops/unary.h"
#include "optim/step_count.h"

namespace ember::optim {

Rprop::Rprop(std::vector<Tensor> params, const RpropOptions& options)
    : Rprop(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

Rprop::Rprop(std::vector<ParamGroup> groups, const RpropOptions& o)
    : Optimizer("Rprop", {{"lr", o.lr()},
                          {"etas0", o.etas().first},
                          {"etas1", o.etas().second},
                          {"step_sizes0", o.step_sizes().first},
                          {"step_sizes1", o.step_sizes().second},
                          {"maximize", o.maximize() ? 1.0 : 0.0}}) {
  check_options(defaults());
  add_param_groups(std::move(groups));
}

void Rprop::check_options(const GroupOptions& o) const {
  EMBER_CHECK(o.at("lr") >= 0.0, "Rprop: Invalid learning rate: ", o.at("lr"));
  EMBER_CHECK(0.0 < o.at("etas0") && o.at("etas0") < 1.0 && 1.0 < o.at("etas1"),
              "Rprop: Invalid eta values: ", o.at("etas0"), ", ", o.at("etas1"));
  EMBER_CHECK(0.0 <= o.at("step_sizes0") && o.at("step_sizes0") <= o.at("step_sizes1"),
              "Rprop: Invalid step_sizes values: ", o.at("step_sizes0"), ", ", o.at("step_sizes1"),
              " (need 0 <= min <= max)");
  check_flag(o, "maximize");
}

void Rprop::check_state(const std::string& prefix, const GroupOptions&, const Tensor&,
                        const ParamState& state) const {
  if (!state.has("step_size")) return;
  const Tensor& s = state.at("step_size");
  const bool ok = all(logical_and(isfinite(s), ge(s, 0.0))).item<bool>();
  EMBER_CHECK(ok, prefix, "step_size must be finite and >= 0 everywhere");
}

void Rprop::update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
                   ParamState& state) {
  const double etaminus = group.get("etas0");
  const double etaplus = group.get("etas1");
  const double step_size_min = group.get("step_sizes0");
  const double step_size_max = group.get("step_sizes1");
  const bool maximize = group.get("maximize") != 0.0;

  if (state.empty()) {
    state["step"] = scalar_tensor(0, kInt64);
    state["prev"] = zeros_like(param);
    state["step_size"] = full_like(param, group.get("lr"));
  }
  detail::increment_step(state.at("step"));
  const Tensor g = maximize ? native::neg(grad) : native::clone(grad);
  const Tensor& prev = state.at("prev");
  const Tensor& step_size = state.at("step_size");

  const Tensor s = native::sign(native::mul(g, prev));
  const Tensor increase = gt(s, 0.0);
  const Tensor decrease = lt(s, 0.0);
  const Tensor factor = full_like(param, 1.0);
  native::masked_fill_(factor, increase, etaplus);
  native::masked_fill_(factor, decrease, etaminus);
  native::clamp_(native::mul_(step_size, factor), step_size_min, step_size_max);

  native::masked_fill_(g, decrease, 0.0);
  native::addcmul_(param, native::sign(g), step_size, -1.0);
  native::copy_(prev, g);
}

}  // namespace ember::optim
