#include "optim/sgd.h"

#include "core/ops/factory.h"
#include "optim/fused.h"

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
  detail::fused_update("SGD", param, grad, {buf},
                       [&](auto* p, const auto* g, const auto& s, int64_t begin, int64_t end) {
                         using T = std::remove_pointer_t<decltype(p)>;
                         using acc = opmath_t<T>;
                         const acc wd = static_cast<acc>(weight_decay);
                         const acc mom = static_cast<acc>(momentum);
                         const acc one_minus_damp = static_cast<acc>(1.0 - dampening);
                         const acc neg_lr = static_cast<acc>(-lr);
                         T* b = s[0];
                         detail::static_bool(b != nullptr, [&](auto has_momentum) {
                           for (int64_t i = begin; i < end; ++i) {
                             acc d = static_cast<acc>(g[i]);
                             if (maximize) d = -d;
                             const acc pi = static_cast<acc>(p[i]);
                             if (weight_decay != 0.0) d = d + wd * pi;
                             if constexpr (decltype(has_momentum)::value) {
                               const acc v =
                                   first ? d : static_cast<acc>(b[i]) * mom + one_minus_damp * d;
                               b[i] = static_cast<T>(v);
                               d = nesterov ? d + mom * v : v;
                             }
                             p[i] = static_cast<T>(pi + neg_lr * d);
                           }
                         });
                       });
}

}  // namespace ember::optim
