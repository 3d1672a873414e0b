#include "optim/reduce_lr_on_plateau.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "optim/state_checks.h"

namespace ember::optim {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& o)
    : optimizer_(&optimizer),
      factor_(o.factor()),
      patience_(o.patience()),
      threshold_(o.threshold()),
      cooldown_(o.cooldown()),
      eps_(o.eps()) {
  const size_t groups = optimizer.param_groups().size();
  if (o.min_lr().size() == 1) {
    min_lrs_.assign(groups, o.min_lr()[0]);
  } else {
    EMBER_CHECK(o.min_lr().size() == groups, "ReduceLROnPlateau: expected ", groups,
                " min_lrs, got ", o.min_lr().size());
    min_lrs_ = o.min_lr();
  }
  EMBER_CHECK(o.mode() == "min" || o.mode() == "max", "ReduceLROnPlateau: mode ", o.mode(),
              " is unknown!");
  EMBER_CHECK(o.threshold_mode() == "rel" || o.threshold_mode() == "abs",
              "ReduceLROnPlateau: threshold mode ", o.threshold_mode(), " is unknown!");
  mode_max_ = o.mode() == "max";
  threshold_abs_ = o.threshold_mode() == "abs";
  mode_worse_ = mode_max_ ? -kInf : kInf;
  best_ = mode_worse_;
  for (const ParamGroup& g : optimizer.param_groups()) last_lr_.push_back(g.lr());
  check_settings("ReduceLROnPlateau");
}

void ReduceLROnPlateau::check_settings(const std::string& who) const {
  EMBER_CHECK(factor_ >= 0.0 && factor_ < 1.0, who,
              ": Factor should be < 1.0. (factor must be in [0, 1), got ", factor_, ")");
  detail::check_reals(who, "min_lrs", min_lrs_, 0.0);
  detail::check_count(who, "patience", patience_, 0);
  detail::check_count(who, "cooldown", cooldown_, 0);
  detail::check_real(who, "threshold", threshold_, 0.0);
  detail::check_real(who, "eps", eps_, 0.0);
}

void ReduceLROnPlateau::check_state(const std::string& who) const {
  detail::check_count(who, "cooldown_counter", cooldown_counter_, 0);
  EMBER_CHECK(!std::isnan(best_), who, ": best must not be NaN");
  detail::check_count(who, "num_bad_epochs", num_bad_epochs_, 0);
  detail::check_count(who, "last_epoch", last_epoch_, 0);
  detail::check_reals(who, "_last_lr", last_lr_);
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
  if (!mode_max_) return threshold_abs_ ? a < best - threshold_ : a < best * (1.0 - threshold_);
  return threshold_abs_ ? a > best + threshold_ : a > best * (threshold_ + 1.0);
}

void ReduceLROnPlateau::step(double metric) {
  last_epoch_ += 1;
  if (is_better(metric, best_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    num_bad_epochs_ += 1;
  }
  if (in_cooldown()) {
    cooldown_counter_ -= 1;
    num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
  }
  if (num_bad_epochs_ > patience_) {
    reduce_lr();
    cooldown_counter_ = cooldown_;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (const ParamGroup& g : optimizer_->param_groups()) last_lr_.push_back(g.lr());
}

void ReduceLROnPlateau::reduce_lr() {
  auto& groups = optimizer_->param_groups();
  EMBER_CHECK(groups.size() == min_lrs_.size(), "ReduceLROnPlateau: the optimizer has ",
              groups.size(), " parameter groups but min_lrs has ", min_lrs_.size(), " values");
  for (size_t i = 0; i < groups.size(); ++i) {
    const double old_lr = groups[i].lr();
    const double new_lr = std::max(old_lr * factor_, min_lrs_[i]);
    if (old_lr - new_lr > eps_) groups[i].set_lr(new_lr);
  }
}

void ReduceLROnPlateau::describe(StateFields& fields) {
  const auto groups = static_cast<int64_t>(optimizer_->param_groups().size());
  fields.add("factor", factor_);
  fields.add("min_lrs", min_lrs_, groups);
  fields.add("patience", patience_);
  fields.add("cooldown", cooldown_);
  fields.add("cooldown_counter", cooldown_counter_);
  fields.add("threshold", threshold_);
  fields.add("best", best_);
  fields.add("num_bad_epochs", num_bad_epochs_);
  fields.add("mode_worse", mode_worse_);
  fields.add("eps", eps_);
  fields.add("last_epoch", last_epoch_);
  fields.add("_last_lr", last_lr_, groups);
}

TensorDict ReduceLROnPlateau::state_dict() const {
  StateFields fields;
  // describe() registers members for both saving and loading; saving only reads them.
  const_cast<ReduceLROnPlateau*>(this)->describe(fields);
  return fields.save();
}

void ReduceLROnPlateau::load_state_dict(const TensorDict& dict) {
  const std::string who = "ReduceLROnPlateau.load_state_dict";
  StateFields fields;
  describe(fields);
  fields.load(dict, who, [&] {
    check_settings(who);
    check_state(who);
  });
  mode_worse_ = mode_max_ ? -kInf : kInf;  // PyTorch re-derives it from the mode
}

}  // namespace ember::optim
