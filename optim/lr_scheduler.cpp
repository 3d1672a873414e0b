#include "optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>

#include "optim/state_checks.h"

namespace ember::optim {

namespace {

constexpr double kPi = 3.14159265358979323846;
using detail::check_count;
using detail::check_real;
using detail::check_reals;
using detail::kMaxSchedulerCount;

// Python's a // b for b > 0.
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

}  // namespace

// ---- LRScheduler -------------------------------------------------------------------------------

void LRScheduler::initialize(int64_t last_epoch) {
  check_count(name_, "last_epoch", last_epoch, -1);
  auto& groups = optimizer_->param_groups();
  if (last_epoch == -1) {
    for (ParamGroup& g : groups)
      if (!g.has("initial_lr")) g.set("initial_lr", g.lr());
  } else {
    for (size_t i = 0; i < groups.size(); ++i)
      EMBER_CHECK(groups[i].has("initial_lr"), name_,
                  ": param 'initial_lr' is not specified in param_groups[", i,
                  "] when resuming an optimizer");
  }
  base_lrs_.clear();
  for (const ParamGroup& g : groups) base_lrs_.push_back(g.get("initial_lr"));
  last_epoch_ = last_epoch;
  initial_step();
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  step();
}

void LRScheduler::step() {
  ++step_count_;
  ++last_epoch_;
  apply_lrs(get_lr());
}

void LRScheduler::step(int64_t epoch) {
  ++step_count_;
  last_epoch_ = epoch;
  auto closed = closed_form_lr();
  apply_lrs(closed ? *closed : get_lr());
}

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> lrs;
  for (const ParamGroup& g : optimizer_->param_groups()) lrs.push_back(g.lr());
  return lrs;
}

void LRScheduler::apply_lrs(const std::vector<double>& lrs) {
  auto& groups = optimizer_->param_groups();
  EMBER_CHECK(lrs.size() == groups.size(), name_, ": the optimizer has ", groups.size(),
              " parameter groups but the scheduler computed ", lrs.size(),
              " learning rates (was a group added after the scheduler was made?)");
  for (size_t i = 0; i < groups.size(); ++i) groups[i].set_lr(lrs[i]);
  last_lr_ = group_lrs();
}

void LRScheduler::describe(StateFields& fields) {
  fields.add("base_lrs", base_lrs_, num_groups());
  fields.add("last_epoch", last_epoch_);
  fields.add("_step_count", step_count_);
  fields.add("_last_lr", last_lr_, num_groups());
}

TensorDict LRScheduler::state_dict() const {
  StateFields fields;
  // describe() registers members for both saving and loading; saving only reads them.
  const_cast<LRScheduler*>(this)->describe(fields);
  return fields.save();
}

void LRScheduler::load_state_dict(const TensorDict& dict) {
  const std::string who = name_ + ".load_state_dict";
  StateFields fields;
  describe(fields);
  fields.load(dict, who, [&] {
    check_settings(who);
    check_state(who);
  });
}

void LRScheduler::check_state(const std::string& who) const {
  check_reals(who, "base_lrs", base_lrs_, 0.0);
  check_count(who, "last_epoch", last_epoch_, -1);
  check_count(who, "_step_count", step_count_, 0);
  check_reals(who, "_last_lr", last_lr_);
}

void LRScheduler::check_held(const std::string& who) const {
  check_settings(who + " (" + name_ + ")");
  check_state(who + " (" + name_ + ")");
}

// ---- StepLR ------------------------------------------------------------------------------------

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma, int64_t last_epoch)
    : LRScheduler("StepLR", optimizer), step_size_(step_size), gamma_(gamma) {
  check_settings(name_);
  initialize(last_epoch);
}

void StepLR::check_settings(const std::string& who) const {
  check_count(who, "step_size", step_size_, 1);
  check_real(who, "gamma", gamma_, 0.0);
}

std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

std::optional<std::vector<double>> StepLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base : base_lrs_)
    lrs.push_back(base * std::pow(gamma_, static_cast<double>(floor_div(last_epoch_, step_size_))));
  return lrs;
}

void StepLR::describe(StateFields& fields) {
  LRScheduler::describe(fields);
  fields.add("step_size", step_size_);
  fields.add("gamma", gamma_);
}

// ---- MultiStepLR -------------------------------------------------------------------------------

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma,
                         int64_t last_epoch)
    : LRScheduler("MultiStepLR", optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  check_settings(name_);
  initialize(last_epoch);
}

void MultiStepLR::check_settings(const std::string& who) const {
  // The constructor sorts them; a loaded list must be sorted (bisection needs it).
  EMBER_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()), who,
              ": milestones must be sorted, got ", milestones_);
  check_real(who, "gamma", gamma_, 0.0);
}

std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  const auto hits = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (hits == 0) return lrs;
  for (double& lr : lrs) lr *= std::pow(gamma_, static_cast<double>(hits));
  return lrs;
}

std::optional<std::vector<double>> MultiStepLR::closed_form_lr() const {
  // bisect_right: the milestones <= last_epoch.
  const auto passed =
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * std::pow(gamma_, static_cast<double>(passed)));
  return lrs;
}

void MultiStepLR::describe(StateFields& fields) {
  LRScheduler::describe(fields);
  fields.add("milestones", milestones_);
  fields.add("gamma", gamma_);
}

// ---- ExponentialLR -----------------------------------------------------------------------------

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma, int64_t last_epoch)
    : LRScheduler("ExponentialLR", optimizer), gamma_(gamma) {
  check_settings(name_);
  initialize(last_epoch);
}

void ExponentialLR::check_settings(const std::string& who) const {
  check_real(who, "gamma", gamma_, 0.0);
}

std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

std::optional<std::vector<double>> ExponentialLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base : base_lrs_)
    lrs.push_back(base * std::pow(gamma_, static_cast<double>(last_epoch_)));
  return lrs;
}

void ExponentialLR::describe(StateFields& fields) {
  LRScheduler::describe(fields);
  fields.add("gamma", gamma_);
}

// ---- LinearLR ----------------------------------------------------------------------------------

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor,
                   int64_t total_iters, int64_t last_epoch)
    : LRScheduler("LinearLR", optimizer),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  check_settings(name_);
  initialize(last_epoch);
}

void LinearLR::check_settings(const std::string& who) const {
  EMBER_CHECK(start_factor_ > 0.0 && start_factor_ <= 1.0, who,
              ": Starting multiplicative factor expected to be greater than 0 and less or equal "
              "to 1, got start_factor = ",
              start_factor_);
  EMBER_CHECK(end_factor_ >= 0.0 && end_factor_ <= 1.0, who,
              ": Ending multiplicative factor expected to be between 0 and 1, got end_factor = ",
              end_factor_);
  check_count(who, "total_iters", total_iters_, 1);
}

std::vector<double> LinearLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr *= start_factor_;
    return lrs;
  }
  if (last_epoch_ > total_iters_) return lrs;
  const double delta = end_factor_ - start_factor_;
  const double factor = 1.0 + delta / (static_cast<double>(total_iters_) * start_factor_ +
                                       static_cast<double>(last_epoch_ - 1) * delta);
  for (double& lr : lrs) lr *= factor;
  return lrs;
}

std::optional<std::vector<double>> LinearLR::closed_form_lr() const {
  std::vector<double> lrs;
  const double progress = static_cast<double>(std::min(total_iters_, last_epoch_));
  for (double base : base_lrs_)
    lrs.push_back(base * (start_factor_ + (end_factor_ - start_factor_) * progress /
                                              static_cast<double>(total_iters_)));
  return lrs;
}

void LinearLR::describe(StateFields& fields) {
  LRScheduler::describe(fields);
  fields.add("start_factor", start_factor_);
  fields.add("end_factor", end_factor_);
  fields.add("total_iters", total_iters_);
}

// ---- LambdaLR ----------------------------------------------------------------------------------

LambdaLR::LambdaLR(Optimizer& optimizer, const Lambda& lr_lambda, int64_t last_epoch)
    : LambdaLR(optimizer, std::vector<Lambda>(optimizer.param_groups().size(), lr_lambda),
               last_epoch) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas, int64_t last_epoch)
    : LRScheduler("LambdaLR", optimizer), lr_lambdas_(std::move(lr_lambdas)) {
  EMBER_CHECK(static_cast<int64_t>(lr_lambdas_.size()) == num_groups(), "LambdaLR: Expected ",
              num_groups(), " lr_lambdas, but got ", lr_lambdas_.size());
  for (size_t i = 0; i < lr_lambdas_.size(); ++i)
    EMBER_CHECK(static_cast<bool>(lr_lambdas_[i]), "LambdaLR: lr_lambda ", i, " is empty");
  initialize(last_epoch);
}

std::vector<double> LambdaLR::get_lr() {
  std::vector<double> lrs;
  for (size_t i = 0; i < base_lrs_.size(); ++i)
    lrs.push_back(base_lrs_[i] * lr_lambdas_[i](last_epoch_));
  return lrs;
}

// ---- CosineAnnealingLR -------------------------------------------------------------------------

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min,
                                     int64_t last_epoch)
    : LRScheduler("CosineAnnealingLR", optimizer), T_max_(T_max), eta_min_(eta_min) {
  check_settings(name_);
  initialize(last_epoch);
}

void CosineAnnealingLR::check_settings(const std::string& who) const {
  check_count(who, "T_max", T_max_, 1);
  check_real(who, "eta_min", eta_min_);
}

std::vector<double> CosineAnnealingLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  const double t = static_cast<double>(last_epoch_);
  const double T = static_cast<double>(T_max_);
  if (last_epoch_ == 0) return lrs;
  if (step_count_ == 1 && last_epoch_ > 0) {  // resuming: the closed form once
    for (size_t i = 0; i < lrs.size(); ++i)
      lrs[i] = eta_min_ + (base_lrs_[i] - eta_min_) * (1.0 + std::cos(t * kPi / T)) / 2.0;
    return lrs;
  }
  if ((last_epoch_ - 1 - T_max_) % (2 * T_max_) == 0) {  // the bottom of the cosine
    for (size_t i = 0; i < lrs.size(); ++i)
      lrs[i] = lrs[i] + (base_lrs_[i] - eta_min_) * (1.0 - std::cos(kPi / T)) / 2.0;
    return lrs;
  }
  for (double& lr : lrs)
    lr = (1.0 + std::cos(kPi * t / T)) / (1.0 + std::cos(kPi * (t - 1.0) / T)) * (lr - eta_min_) +
         eta_min_;
  return lrs;
}

std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() const {
  std::vector<double> lrs;
  const double t = static_cast<double>(last_epoch_);
  for (double base : base_lrs_)
    lrs.push_back(eta_min_ + (base - eta_min_) *
                                 (1.0 + std::cos(kPi * t / static_cast<double>(T_max_))) / 2.0);
  return lrs;
}

void CosineAnnealingLR::describe(StateFields& fields) {
  LRScheduler::describe(fields);
  fields.add("T_max", T_max_);
  fields.add("eta_min", eta_min_);
}

// ---- CosineAnnealingWarmRestarts ---------------------------------------------------------------

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0,
                                                         int64_t T_mult, double eta_min,
                                                         int64_t last_epoch)
    : LRScheduler("CosineAnnealingWarmRestarts", optimizer),
      T_0_(T_0),
      T_i_(T_0),
      T_mult_(T_mult),
      eta_min_(eta_min),
      T_cur_(static_cast<double>(last_epoch)) {
  check_settings(name_);
  initialize(last_epoch);
}

void CosineAnnealingWarmRestarts::check_settings(const std::string& who) const {
  EMBER_CHECK(T_0_ > 0, who, ": Expected positive integer T_0, but got ", T_0_);
  check_count(who, "T_0", T_0_, 1);
  EMBER_CHECK(T_mult_ >= 1, who, ": Expected integer T_mult >= 1, but got ", T_mult_);
  check_count(who, "T_mult", T_mult_, 1);
  check_real(who, "eta_min", eta_min_);
}

void CosineAnnealingWarmRestarts::check_state(const std::string& who) const {
  LRScheduler::check_state(who);
  check_count(who, "T_i", T_i_, 1);
  check_real(who, "T_cur", T_cur_, 0.0);
}

std::vector<double> CosineAnnealingWarmRestarts::get_lr() {
  std::vector<double> lrs;
  for (double base : base_lrs_)
    lrs.push_back(eta_min_ + (base - eta_min_) *
                                 (1.0 + std::cos(kPi * T_cur_ / static_cast<double>(T_i_))) / 2.0);
  return lrs;
}

void CosineAnnealingWarmRestarts::step() {
  if (last_epoch_ < 0) {  // the initial step: epoch 0
    step_fractional(0.0);
    return;
  }
  T_cur_ += 1.0;
  if (T_cur_ >= static_cast<double>(T_i_)) {
    T_cur_ -= static_cast<double>(T_i_);
    EMBER_CHECK(T_i_ <= kMaxSchedulerCount / T_mult_, name_,
                ": the next period T_i * T_mult = ", T_i_, " * ", T_mult_, " exceeds 2^53");
    T_i_ *= T_mult_;
  }
  last_epoch_ += 1;
  apply_lrs(get_lr());
}

void CosineAnnealingWarmRestarts::step_fractional(double epoch) {
  EMBER_CHECK(epoch >= 0.0, "CosineAnnealingWarmRestarts: Expected non-negative epoch, but got ",
              epoch);
  EMBER_CHECK(epoch <= static_cast<double>(kMaxSchedulerCount),
              "CosineAnnealingWarmRestarts: epoch must be at most 2^53, got ", epoch);
  const double T_0 = static_cast<double>(T_0_);
  if (epoch >= T_0) {
    if (T_mult_ == 1) {
      T_cur_ = std::fmod(epoch, T_0);
    } else {
      const double mult = static_cast<double>(T_mult_);
      const auto n =
          static_cast<int64_t>(std::log(epoch / T_0 * (mult - 1.0) + 1.0) / std::log(mult));
      const double mult_n = std::pow(mult, static_cast<double>(n));
      EMBER_CHECK(T_0 * mult_n <= static_cast<double>(kMaxSchedulerCount),
                  "CosineAnnealingWarmRestarts: the period T_0 * T_mult^", n, " at epoch ", epoch,
                  " exceeds 2^53");
      T_cur_ = epoch - T_0 * (mult_n - 1.0) / (mult - 1.0);
      T_i_ = T_0_ * static_cast<int64_t>(mult_n);
    }
  } else {
    T_i_ = T_0_;
    T_cur_ = epoch;
  }
  last_epoch_ = static_cast<int64_t>(std::floor(epoch));
  apply_lrs(get_lr());
}

void CosineAnnealingWarmRestarts::describe(StateFields& fields) {
  LRScheduler::describe(fields);
  fields.add("T_0", T_0_);
  fields.add("T_i", T_i_);
  fields.add("T_mult", T_mult_);
  fields.add("eta_min", eta_min_);
  fields.add("T_cur", T_cur_);
}

// ---- SequentialLR ------------------------------------------------------------------------------

SequentialLR::SequentialLR(Optimizer& optimizer,
                           std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones, int64_t last_epoch)
    : LRScheduler("SequentialLR", optimizer),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  EMBER_CHECK(!schedulers_.empty(), "SequentialLR: needs at least one scheduler");
  for (size_t k = 0; k < schedulers_.size(); ++k) {
    EMBER_CHECK(schedulers_[k] != nullptr, "SequentialLR: scheduler ", k, " is null");
    EMBER_CHECK(&schedulers_[k]->optimizer() == &optimizer,
                "SequentialLR: Sequential Schedulers expects all schedulers to belong to the "
                "same optimizer, but got schedulers at index ",
                k, " to be different than the optimizer passed in.");
  }
  EMBER_CHECK(milestones_.size() + 1 == schedulers_.size(),
              "SequentialLR: Sequential Schedulers expects number of schedulers provided to be "
              "one more than the number of milestone points, but got number of schedulers ",
              schedulers_.size(), " and the number of milestones to be equal to ",
              milestones_.size());
  check_count(name_, "last_epoch", last_epoch, -1);
  last_epoch_ = last_epoch + 1;
  // Back to the initial lrs, each scheduler's construction step undone, and the first one
  // started again, as PyTorch does.
  for (ParamGroup& g : optimizer.param_groups()) g.set_lr(g.get("initial_lr"));
  for (auto& s : schedulers_) s->last_epoch_ -= 1;
  schedulers_[0]->initial_step();
  base_lrs_ = schedulers_[0]->base_lrs();
  last_lr_ = schedulers_[0]->get_last_lr();
}

void SequentialLR::step() {
  ++last_epoch_;
  const size_t idx = static_cast<size_t>(
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin());
  LRScheduler& scheduler = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_)
    scheduler.step(int64_t{0});  // the next scheduler starts from epoch 0
  else
    scheduler.step();
  last_lr_ = scheduler.get_last_lr();
}

void SequentialLR::step(int64_t epoch) {
  EMBER_ERROR("SequentialLR: step(epoch) is not supported (got epoch ", epoch,
              "); call step() once per epoch");
}

void SequentialLR::check_state(const std::string& who) const {
  check_count(who, "last_epoch", last_epoch_, 0);
  check_reals(who, "_last_lr", last_lr_);
  for (size_t k = 0; k < schedulers_.size(); ++k)
    schedulers_[k]->check_held(who + ": _schedulers." + std::to_string(k));
}

void SequentialLR::describe(StateFields& fields) {
  fields.add("last_epoch", last_epoch_);
  fields.add("_milestones", milestones_, static_cast<int64_t>(schedulers_.size()) - 1);
  fields.add("_last_lr", last_lr_, num_groups());
  for (size_t k = 0; k < schedulers_.size(); ++k) {
    StateFields inner;
    schedulers_[k]->describe(inner);
    fields.add_all("_schedulers." + std::to_string(k) + ".", inner);
  }
}

// ---- OneCycleLR --------------------------------------------------------------------------------

namespace {

// One value per group: the list as given, or its one value for every group.
std::vector<double> per_group(const std::vector<double>& values, size_t groups, const char* name) {
  if (values.size() == 1) return std::vector<double>(groups, values[0]);
  EMBER_CHECK(values.size() == groups, "OneCycleLR: expected ", groups, " values for ", name,
              ", got ", values.size());
  return values;
}

}  // namespace

OneCycleLR::OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& o)
    : LRScheduler("OneCycleLR", optimizer) {
  if (o.total_steps()) {
    EMBER_CHECK(*o.total_steps() > 0, "OneCycleLR: Expected positive integer total_steps, but got ",
                *o.total_steps());
    total_steps_ = *o.total_steps();
  } else {
    EMBER_CHECK(o.epochs() && o.steps_per_epoch(),
                "OneCycleLR: You must define either total_steps OR (epochs AND steps_per_epoch)");
    EMBER_CHECK(*o.epochs() > 0, "OneCycleLR: Expected positive integer epochs, but got ",
                *o.epochs());
    EMBER_CHECK(*o.steps_per_epoch() > 0,
                "OneCycleLR: Expected positive integer steps_per_epoch, but got ",
                *o.steps_per_epoch());
    EMBER_CHECK(*o.epochs() <= kMaxSchedulerCount / *o.steps_per_epoch(),
                "OneCycleLR: epochs * steps_per_epoch = ", *o.epochs(), " * ", *o.steps_per_epoch(),
                " exceeds 2^53");
    total_steps_ = *o.epochs() * *o.steps_per_epoch();
  }
  check_settings(name_);
  const double total = static_cast<double>(total_steps_);
  if (o.three_phase()) {
    phases_ = {
        {o.pct_start() * total - 1.0, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
        {2.0 * o.pct_start() * total - 2.0, "max_lr", "initial_lr", "base_momentum",
         "max_momentum"},
        {total - 1.0, "initial_lr", "min_lr", "max_momentum", "max_momentum"},
    };
  } else {
    phases_ = {
        {o.pct_start() * total - 1.0, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
        {total - 1.0, "max_lr", "min_lr", "base_momentum", "max_momentum"},
    };
  }
  EMBER_CHECK(o.pct_start() >= 0.0 && o.pct_start() <= 1.0,
              "OneCycleLR: Expected float between 0 and 1 pct_start, but got ", o.pct_start());
  EMBER_CHECK(o.anneal_strategy() == "cos" || o.anneal_strategy() == "linear",
              "OneCycleLR: anneal_strategy must by one of 'cos' or 'linear', instead got ",
              o.anneal_strategy());
  cos_ = o.anneal_strategy() == "cos";
  check_real(name_, "div_factor", o.div_factor());
  EMBER_CHECK(o.div_factor() > 0.0, "OneCycleLR: div_factor must be positive, got ",
              o.div_factor());
  check_real(name_, "final_div_factor", o.final_div_factor());
  EMBER_CHECK(o.final_div_factor() > 0.0, "OneCycleLR: final_div_factor must be positive, got ",
              o.final_div_factor());

  auto& groups = optimizer.param_groups();
  const std::vector<double> max_lrs = per_group(o.max_lr(), groups.size(), "max_lr");
  check_reals(name_, "max_lr", max_lrs, 0.0);
  cycle_momentum_ = o.cycle_momentum();
  std::vector<double> max_momentums, base_momentums;
  if (cycle_momentum_) {
    const GroupOptions& defaults = optimizer.defaults();
    EMBER_CHECK(defaults.count("momentum") || defaults.count("betas0"),
                "OneCycleLR: optimizer must support momentum with `cycle_momentum` option "
                "enabled (",
                optimizer.name(), " has neither momentum nor betas)");
    use_beta1_ = defaults.count("betas0") != 0;
    max_momentums = per_group(o.max_momentum(), groups.size(), "max_momentum");
    base_momentums = per_group(o.base_momentum(), groups.size(), "base_momentum");
    check_reals(name_, "max_momentum", max_momentums, 0.0);
    check_reals(name_, "base_momentum", base_momentums, 0.0);
  }
  if (o.last_epoch() == -1) {
    for (size_t i = 0; i < groups.size(); ++i) {
      groups[i].set("initial_lr", max_lrs[i] / o.div_factor());
      groups[i].set("max_lr", max_lrs[i]);
      groups[i].set("min_lr", groups[i].get("initial_lr") / o.final_div_factor());
      if (cycle_momentum_) {
        groups[i].set(use_beta1_ ? "betas0" : "momentum", max_momentums[i]);
        groups[i].set("max_momentum", max_momentums[i]);
        groups[i].set("base_momentum", base_momentums[i]);
      }
    }
  }
  initialize(o.last_epoch());
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (cos_) return end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1.0);
  return (end - start) * pct + start;
}

std::vector<double> OneCycleLR::get_lr() {
  const int64_t step_num = last_epoch_;
  EMBER_CHECK(step_num <= total_steps_, "OneCycleLR: Tried to step ", step_num + 1,
              " times. The specified number of total steps is ", total_steps_);
  const double t = static_cast<double>(step_num);
  std::vector<double> lrs;
  for (ParamGroup& group : optimizer_->param_groups()) {
    double start_step = 0.0;
    double lr = 0.0, momentum = 0.0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& phase = phases_[i];
      if (t <= phase.end_step || i + 1 == phases_.size()) {
        const double pct = (t - start_step) / (phase.end_step - start_step);
        lr = anneal(group.get(phase.start_lr), group.get(phase.end_lr), pct);
        if (cycle_momentum_)
          momentum = anneal(group.get(phase.start_momentum), group.get(phase.end_momentum), pct);
        break;
      }
      start_step = phase.end_step;
    }
    lrs.push_back(lr);
    if (cycle_momentum_) group.set(use_beta1_ ? "betas0" : "momentum", momentum);
  }
  return lrs;
}

void OneCycleLR::check_settings(const std::string& who) const {
  check_count(who, "total_steps", total_steps_, 1);
}

void OneCycleLR::check_state(const std::string& who) const {
  LRScheduler::check_state(who);
  for (size_t k = 0; k < phases_.size(); ++k)
    check_real(who, "_schedule_phases." + std::to_string(k) + ".end_step", phases_[k].end_step);
  if (cycle_momentum_) {
    const char* key = use_beta1_ ? "betas0" : "momentum";
    EMBER_CHECK(optimizer_->defaults().count(key), who,
                ": cycle_momentum with use_beta1 = ", use_beta1_, " needs the optimizer's \"", key,
                "\", which ", optimizer_->name(), " has not");
  }
}

void OneCycleLR::describe(StateFields& fields) {
  LRScheduler::describe(fields);
  fields.add("total_steps", total_steps_);
  for (size_t k = 0; k < phases_.size(); ++k)
    fields.add("_schedule_phases." + std::to_string(k) + ".end_step", phases_[k].end_step);
  fields.add("cycle_momentum", cycle_momentum_);
  fields.add("use_beta1", use_beta1_);
}

}  // namespace ember::optim
