#pragma once
// Internal to optim/: the option checks the Adam family shares (NAdam, RAdam, Adamax), with
// PyTorch 1.13's messages. Each comparison is false for NaN, so NaN is refused (Note
// [Validating loaded state] in optim/optimizer.h).

#include <string>

#include "core/error.h"
#include "optim/optimizer.h"

namespace ember::optim::detail {

// "lr" >= 0, "eps" >= 0, 0 <= "betas0", "betas1" < 1, "weight_decay" >= 0.
inline void check_lr_eps_betas_weight_decay(const char* who, const GroupOptions& o) {
  EMBER_CHECK(o.at("lr") >= 0.0, who, ": Invalid learning rate: ", o.at("lr"));
  EMBER_CHECK(o.at("eps") >= 0.0, who, ": Invalid epsilon value: ", o.at("eps"));
  EMBER_CHECK(o.at("betas0") >= 0.0 && o.at("betas0") < 1.0, who,
              ": Invalid beta parameter at index 0: ", o.at("betas0"));
  EMBER_CHECK(o.at("betas1") >= 0.0 && o.at("betas1") < 1.0, who,
              ": Invalid beta parameter at index 1: ", o.at("betas1"));
  EMBER_CHECK(o.at("weight_decay") >= 0.0, who,
              ": Invalid weight_decay value: ", o.at("weight_decay"));
}

// The 0-dim state tensor `name` of a loaded state, if present: one finite number in [lo, hi]
// (lo excluded when lo_open). Errors name "<prefix><name>".
inline void check_scalar_state(const std::string& prefix, const ParamState& state,
                               const std::string& name, double lo, double hi, bool lo_open) {
  if (!state.has(name)) return;
  const Tensor& t = state.at(name);
  EMBER_CHECK(t.numel() == 1 && t.dtype() != kBool, prefix, name,
              " must hold one number, got shape ", t.sizes());
  const double v = t.item<double>();
  EMBER_CHECK((lo_open ? v > lo : v >= lo) && v <= hi, prefix, name, " must be in ",
              lo_open ? "(" : "[", lo, ", ", hi, "], got ", v);
}

}  // namespace ember::optim::detail
