#include "optim/rmsprop.h"

#include <cmath>

#include "core/ops/factory.h"
#include "optim/fused.h"

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

  detail::fused_update(
      "RMSprop", param, grad,
      {state.at("square_avg"), centered ? state.at("grad_avg") : Tensor(),
       momentum > 0.0 ? state.at("momentum_buffer") : Tensor()},
      [&](auto* p, const auto* g, const auto& s, int64_t begin, int64_t end) {
        using T = std::remove_pointer_t<decltype(p)>;
        using acc = opmath_t<T>;
        const acc a = static_cast<acc>(alpha);
        const acc one_minus_a = static_cast<acc>(1.0 - alpha);
        const acc wd = static_cast<acc>(weight_decay);
        const acc eps_c = static_cast<acc>(eps);
        const acc mom = static_cast<acc>(momentum);
        const acc neg_lr = static_cast<acc>(-lr);
        T* square_avg = s[0];
        T* grad_avg = s[1];
        T* buf = s[2];
        detail::static_bool(centered, [&](auto is_centered) {
          detail::static_bool(momentum > 0.0, [&](auto has_momentum) {
            for (int64_t i = begin; i < end; ++i) {
              acc gi = static_cast<acc>(g[i]);
              if (maximize) gi = -gi;
              const acc pi = static_cast<acc>(p[i]);
              if (weight_decay != 0.0) gi = gi + wd * pi;
              const acc v = static_cast<acc>(square_avg[i]) * a + one_minus_a * gi * gi;
              square_avg[i] = static_cast<T>(v);
              acc avg;
              if constexpr (decltype(is_centered)::value) {
                const acc ga = static_cast<acc>(grad_avg[i]) * a + one_minus_a * gi;
                grad_avg[i] = static_cast<T>(ga);
                avg = std::sqrt(v + static_cast<acc>(-1) * ga * ga);
              } else {
                avg = std::sqrt(v);
              }
              avg = avg + eps_c;
              if constexpr (decltype(has_momentum)::value) {
                const acc b = static_cast<acc>(buf[i]) * mom + gi / avg;
                buf[i] = static_cast<T>(b);
                p[i] = static_cast<T>(pi + neg_lr * b);
              } else {
                p[i] = static_cast<T>(pi + neg_lr * gi / avg);
              }
            }
          });
        });
      });
}

}  // namespace ember::optim
