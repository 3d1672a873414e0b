#include "optim/constant_lr.h"

#include "optim/state_checks.h"

namespace ember::optim {

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters, int64_t last_epoch)
    : LRScheduler("ConstantLR", optimizer), factor_(factor), total_iters_(total_iters) {
  check_settings(name_);
  initialize(last_epoch);
}

void ConstantLR::check_settings(const std::string& who) const {
  EMBER_CHECK(
      factor_ >= 0.0 && factor_ <= 1.0, who,
      ": Constant multiplicative factor expected to be between 0 and 1, got factor = ", factor_);
  detail::check_count(who, "total_iters", total_iters_, 0);
}

std::vector<double> ConstantLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr *= factor_;
    return lrs;
  }
  if (last_epoch_ != total_iters_) return lrs;
  if (factor_ == 0.0) return *closed_form_lr();
  for (double& lr : lrs) lr *= 1.0 / factor_;
  return lrs;
}

std::optional<std::vector<double>> ConstantLR::closed_form_lr() const {
  std::vector<double> lrs;
  const double done = last_epoch_ >= total_iters_ ? 1.0 : 0.0;
  for (double base : base_lrs_) lrs.push_back(base * (factor_ + done * (1.0 - factor_)));
  return lrs;
}

void ConstantLR::describe(StateFields& fields) {
  LRScheduler::describe(fields);
  fields.add("factor", factor_);
  fields.add("total_iters", total_iters_);
}

}  // namespace ember::optim
