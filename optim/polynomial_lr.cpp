#include "optim/polynomial_lr.h"

#include <algorithm>
#include <cmath>

#include "optim/state_checks.h"

namespace ember::optim {

PolynomialLR::PolynomialLR(Optimizer& optimizer, int64_t total_iters, double power,
                           int64_t last_epoch)
    : LRScheduler("PolynomialLR", optimizer), total_iters_(total_iters), power_(power) {
  check_settings(name_);
  initialize(last_epoch);
}

void PolynomialLR::check_settings(const std::string& who) const {
  detail::check_count(who, "total_iters", total_iters_, 1);
  detail::check_real(who, "power", power_, 0.0);
}

std::vector<double> PolynomialLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0 || last_epoch_ > total_iters_) return lrs;
  const double t = static_cast<double>(last_epoch_);
  const double T = static_cast<double>(total_iters_);
  const double decay = std::pow((1.0 - t / T) / (1.0 - (t - 1.0) / T), power_);
  for (double& lr : lrs) lr *= decay;
  return lrs;
}

std::optional<std::vector<double>> PolynomialLR::closed_form_lr() const {
  const double T = static_cast<double>(total_iters_);
  const double t = static_cast<double>(std::min(total_iters_, last_epoch_));
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * std::pow(1.0 - t / T, power_));
  return lrs;
}

void PolynomialLR::describe(StateFields& fields) {
  LRScheduler::describe(fields);
  fields.add("total_iters", total_iters_);
  fields.add("power", power_);
}

}  // namespace ember::optim
