#include "optim/adam.h"

#include <algorithm>
#include <cmath>

#include "core/ops/factory.h"
#include "optim/fused.h"

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

void check_adam_options(const char* who, const GroupOptions& o) {
  EMBER_CHECK(o.at("lr") >= 0.0, who, ": Invalid learning rate: ", o.at("lr"));
  EMBER_CHECK(o.at("eps") >= 0.0, who, ": Invalid epsilon value: ", o.at("eps"));
  EMBER_CHECK(o.at("betas0") >= 0.0 && o.at("betas0") < 1.0, who,
              ": Invalid beta parameter at index 0: ", o.at("betas0"));
  EMBER_CHECK(o.at("betas1") >= 0.0 && o.at("betas1") < 1.0, who,
              ": Invalid beta parameter at index 1: ", o.at("betas1"));
  EMBER_CHECK(o.at("weight_decay") >= 0.0, who,
              ": Invalid weight_decay value: ", o.at("weight_decay"));
}

// One Adam (decoupled = false) or AdamW (decoupled = true) update of `param`; the formulas
// are in optim/adam.h.
void adam_update(const char* who, bool decoupled, const ParamGroup& group, const Tensor& param,
                 const Tensor& grad, ParamState& state) {
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
  const bool l2 = !decoupled && weight_decay != 0.0;

  detail::fused_update(who, param, grad,
                       {state.at("exp_avg"), state.at("exp_avg_sq"),
                        amsgrad ? state.at("max_exp_avg_sq") : Tensor()},
                       [&](auto* p, const auto* g, const auto& s, int64_t begin, int64_t end) {
                         using T = std::remove_pointer_t<decltype(p)>;
                         using acc = opmath_t<T>;
                         const acc b1 = static_cast<acc>(beta1), b2 = static_cast<acc>(beta2);
                         const acc one_minus_b1 = static_cast<acc>(1.0 - beta1);
                         const acc one_minus_b2 = static_cast<acc>(1.0 - beta2);
                         const acc wd = static_cast<acc>(weight_decay);
                         const acc decay = static_cast<acc>(1.0 - lr * weight_decay);
                         const acc bc2_sqrt = static_cast<acc>(bias_correction2_sqrt);
                         const acc eps_c = static_cast<acc>(eps);
                         const acc neg_step_size = static_cast<acc>(-step_size);
                         T* m = s[0];
                         T* v = s[1];
                         T* v_max = s[2];
                         detail::static_bool(amsgrad, [&](auto use_max) {
                           for (int64_t i = begin; i < end; ++i) {
                             acc gi = static_cast<acc>(g[i]);
                             if (maximize) gi = -gi;
                             acc pi = static_cast<acc>(p[i]);
                             if (decoupled) pi = pi * decay;
                             if (l2) gi = gi + wd * pi;
                             const acc mi = static_cast<acc>(m[i]) * b1 + one_minus_b1 * gi;
                             acc vi = static_cast<acc>(v[i]) * b2 + one_minus_b2 * gi * gi;
                             m[i] = static_cast<T>(mi);
                             v[i] = static_cast<T>(vi);
                             if constexpr (decltype(use_max)::value) {
                               vi = std::max(static_cast<acc>(v_max[i]), vi);
                               v_max[i] = static_cast<T>(vi);
                             }
                             const acc denom = std::sqrt(vi) / bc2_sqrt + eps_c;
                             p[i] = static_cast<T>(pi + neg_step_size * mi / denom);
                           }
                         });
                       });
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options)
    : Adam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& options)
    : Optimizer("Adam", adam_defaults(options)) {
  check_options(defaults());
  add_param_groups(std::move(groups));
}

void Adam::check_options(const GroupOptions& options) const { check_adam_options("Adam", options); }

void Adam::update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
                  ParamState& state) {
  adam_update("Adam", /*decoupled=*/false, group, param, grad, state);
}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& options)
    : AdamW(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& options)
    : Optimizer("AdamW", adam_defaults(options)) {
  check_options(defaults());
  add_param_groups(std::move(groups));
}

void AdamW::check_options(const GroupOptions& options) const {
  check_adam_options("AdamW", options);
}

void AdamW::update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
                   ParamState& state) {
  adam_update("AdamW", /*decoupled=*/true, group, param, grad, state);
}

}  // namespace ember::optim
