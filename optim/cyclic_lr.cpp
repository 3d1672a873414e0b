#include "optim/cyclic_lr.h"

#include <cmath>

#include "optim/state_checks.h"

namespace ember::optim {

namespace {

using detail::check_count;
using detail::check_real;
using detail::check_reals;

// One value per group: the list as given, or its one value for every group.
std::vector<double> per_group(const std::vector<double>& values, size_t groups, const char* name) {
  if (values.size() == 1) return std::vector<double>(groups, values[0]);
  EMBER_CHECK(values.size() == groups, "CyclicLR: expected ", groups, " values for ", name,
              ", got ", values.size());
  return values;
}

}  // namespace

CyclicLR::CyclicLR(Optimizer& optimizer, const CyclicLROptions& o)
    : LRScheduler("CyclicLR", optimizer) {
  auto& groups = optimizer.param_groups();
  const std::vector<double> base_lrs = per_group(o.base_lr(), groups.size(), "base_lr");
  check_reals(name_, "base_lr", base_lrs, 0.0);
  max_lrs_ = per_group(o.max_lr(), groups.size(), "max_lr");
  check_count(name_, "step_size_up", o.step_size_up(), 1);
  const int64_t step_size_down = o.step_size_down().value_or(o.step_size_up());
  check_count(name_, "step_size_down", step_size_down, 0);
  total_size_ = static_cast<double>(o.step_size_up()) + static_cast<double>(step_size_down);
  step_ratio_ = static_cast<double>(o.step_size_up()) / total_size_;
  gamma_ = o.gamma();
  if (o.scale_fn()) {
    scale_fn_ = o.scale_fn();
    EMBER_CHECK(o.scale_mode() == "cycle" || o.scale_mode() == "iterations",
                "CyclicLR: scale_mode must be 'cycle' or 'iterations', got '", o.scale_mode(), "'");
    scale_by_cycle_ = o.scale_mode() == "cycle";
  } else {
    const std::string& m = o.mode();
    EMBER_CHECK(m == "triangular" || m == "triangular2" || m == "exp_range",
                "CyclicLR: mode is invalid and scale_fn is None (mode '", m,
                "'; expected 'triangular', 'triangular2' or 'exp_range')");
    mode_ = m == "triangular" ? 0 : m == "triangular2" ? 1 : 2;
    scale_by_cycle_ = mode_ != 2;  // exp_range scales by iteration
  }

  cycle_momentum_ = o.cycle_momentum();
  const bool fresh = o.last_epoch() == -1;
  std::vector<double> base_momentums;
  const char* momentum_key = "momentum";
  if (cycle_momentum_) {
    const GroupOptions& defaults = optimizer.defaults();
    EMBER_CHECK(defaults.count("momentum") || defaults.count("betas0"),
                "CyclicLR: optimizer must support momentum or beta1 with `cycle_momentum` option "
                "enabled (",
                optimizer.name(), " has neither momentum nor betas)");
    use_beta1_ = defaults.count("betas0") != 0;
    momentum_key = use_beta1_ ? "betas0" : "momentum";
    base_momentums = per_group(o.base_momentum(), groups.size(), "base_momentum");
    check_reals(name_, "base_momentum", base_momentums, 0.0);
    max_momentums_ = per_group(o.max_momentum(), groups.size(), "max_momentum");
    // Resuming, the base momenta are the groups' current ones, as PyTorch takes them.
    base_momentums_ = base_momentums;
    if (!fresh)
      for (size_t i = 0; i < groups.size(); ++i) base_momentums_[i] = groups[i].get(momentum_key);
  }
  check_settings(name_);
  check_count(name_, "last_epoch", o.last_epoch(), -1);

  // Everything checked: the groups start at base_lr (and base_momentum).
  if (fresh) {
    for (size_t i = 0; i < groups.size(); ++i) {
      groups[i].set_lr(base_lrs[i]);
      if (cycle_momentum_) groups[i].set(momentum_key, base_momentums[i]);
    }
  }
  // PyTorch's order: the initial step runs with base_lrs = the groups' "initial_lr", and
  // base_lrs become the given base_lr after it.
  initialize(o.last_epoch());
  base_lrs_ = base_lrs;
}

void CyclicLR::check_settings(const std::string& who) const {
  check_reals(who, "max_lrs", max_lrs_, 0.0);
  EMBER_CHECK(std::isfinite(total_size_) && total_size_ > 0.0, who,
              ": total_size must be finite and positive, got ", total_size_);
  EMBER_CHECK(step_ratio_ > 0.0 && step_ratio_ <= 1.0, who, ": step_ratio must be in (0, 1], got ",
              step_ratio_);
  // PyTorch asks 0 <= scale_fn(x) <= 1: exp_range's gamma^iterations stays in it.
  EMBER_CHECK(gamma_ > 0.0 && gamma_ <= 1.0, who, ": gamma must be in (0, 1], got ", gamma_);
  if (cycle_momentum_) {
    const size_t groups = optimizer_->param_groups().size();
    EMBER_CHECK(base_momentums_.size() == groups && max_momentums_.size() == groups, who,
                ": cycle_momentum is set but the scheduler has no momenta for the ", groups,
                " groups (it was made without cycle_momentum)");
    check_reals(who, "base_momentums", base_momentums_, 0.0);
    check_reals(who, "max_momentums", max_momentums_, 0.0);
  }
}

void CyclicLR::check_state(const std::string& who) const {
  LRScheduler::check_state(who);
  if (cycle_momentum_) {
    const char* key = use_beta1_ ? "betas0" : "momentum";
    EMBER_CHECK(optimizer_->defaults().count(key), who,
                ": cycle_momentum with use_beta1 = ", use_beta1_, " needs the optimizer's \"", key,
                "\", which ", optimizer_->name(), " has not");
  }
}

double CyclicLR::scale(double x) const {
  if (scale_fn_) return scale_fn_(x);
  if (mode_ == 0) return 1.0;
  if (mode_ == 1) return 1.0 / std::pow(2.0, x - 1.0);
  return std::pow(gamma_, x);
}

std::vector<double> CyclicLR::get_lr() {
  const double t = static_cast<double>(last_epoch_);
  const double cycle = std::floor(1.0 + t / total_size_);
  const double x = 1.0 + t / total_size_ - cycle;
  const double factor = x <= step_ratio_ ? x / step_ratio_ : (x - 1.0) / (step_ratio_ - 1.0);
  const double f = scale(scale_by_cycle_ ? cycle : t);
  std::vector<double> lrs;
  for (size_t i = 0; i < base_lrs_.size(); ++i) {
    const double base_height = (max_lrs_[i] - base_lrs_[i]) * factor;
    lrs.push_back(base_lrs_[i] + base_height * f);
  }
  if (cycle_momentum_) {
    auto& groups = optimizer_->param_groups();
    EMBER_CHECK(groups.size() == max_momentums_.size(), name_, ": the optimizer has ",
                groups.size(), " parameter groups but the scheduler was made for ",
                max_momentums_.size(), " (was a group added after the scheduler was made?)");
    for (size_t i = 0; i < groups.size(); ++i) {
      const double base_height = (max_momentums_[i] - base_momentums_[i]) * factor;
      groups[i].set(use_beta1_ ? "betas0" : "momentum", max_momentums_[i] - base_height * f);
    }
  }
  return lrs;
}

void CyclicLR::describe(StateFields& fields) {
  LRScheduler::describe(fields);
  fields.add("max_lrs", max_lrs_, num_groups());
  fields.add("total_size", total_size_);
  fields.add("step_ratio", step_ratio_);
  fields.add("gamma", gamma_);
  fields.add("cycle_momentum", cycle_momentum_);
  fields.add("use_beta1", use_beta1_);
  if (cycle_momentum_) {
    fields.add("base_momentums", base_momentums_, num_groups());
    fields.add("max_momentums", max_momentums_, num_groups());
  }
}

}  // namespace ember::optim
