#pragma once
// Learning-rate schedules (PyTorch's torch.optim.lr_scheduler).
//
//   optim::SGD opt(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
//   optim::StepLR sched(opt, /*step_size=*/30, /*gamma=*/0.1);
//   for (int epoch = 0; epoch < 100; ++epoch) {
//     train_one_epoch(opt);     // opt.step() for each batch
//     sched.step();             // after the optimizer's steps, as in PyTorch >= 1.1
//   }
//
// A scheduler holds a reference to its optimizer (which must outlive it) and writes each
// parameter group's "lr". Construction takes the initial step (epoch 0) already, as PyTorch's
// does. With last_epoch = -1 (a fresh start) each group's "initial_lr" is set to its lr if it
// has none; with last_epoch >= 0 (resuming) every group must have "initial_lr". base_lrs() are
// the groups' "initial_lr".
//
// The schedules are PyTorch 1.13's chainable (recursive) forms, e.g. CosineAnnealingLR's
// lr_t = (1 + cos(pi t / T)) / (1 + cos(pi (t-1) / T)) * (lr_{t-1} - eta_min) + eta_min, so
// that the trajectories follow PyTorch's step for step and compose with other changes to the
// lr. step(epoch) jumps to an epoch with the closed form where PyTorch has one
// (deprecated in PyTorch; SequentialLR uses it at its milestones).
//
// state_dict() / load_state_dict(): Note [Scheduler state_dict] in optim/state_fields.h.
// Common keys: "base_lrs", "last_epoch", "_step_count", "_last_lr"; plus each schedule's own
// (listed with each class below). A loaded state goes through the constructor's checks and
// more (Note [Scheduler state checks] in optim/state_checks.h): a bad value is an ember::Error
// naming the scheduler and the field ("StepLR.load_state_dict: step_size must be positive, got
// 0") and leaves the scheduler unchanged. Counts of epochs or steps (last_epoch, T_max, ...)
// are at most 2^53.
//
// More schedules: optim/constant_lr.h, polynomial_lr.h, cyclic_lr.h, chained_scheduler.h.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "optim/optimizer.h"
#include "optim/state_fields.h"

namespace ember::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // Advances one epoch (or one batch, for per-batch schedules) and sets the groups' lr.
  virtual void step();
  // Jumps to `epoch` (PyTorch's deprecated step(epoch)): the closed form where the schedule
  // has one, otherwise the chainable form evaluated at that epoch.
  virtual void step(int64_t epoch);

  // The lr of each group after the last step.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return *optimizer_; }
  const std::string& name() const { return name_; }

  TensorDict state_dict() const;
  void load_state_dict(const TensorDict& dict);

 protected:
  LRScheduler(std::string name, Optimizer& optimizer)
      : name_(std::move(name)), optimizer_(&optimizer) {}

  // The end of every concrete constructor (a virtual step cannot run in the base constructor):
  // sets "initial_lr" / base_lrs from last_epoch as described above, then takes the initial
  // step.
  void initialize(int64_t last_epoch);
  // PyTorch's _initial_step: the step count restarts and one step is taken.
  void initial_step();

  // The chainable form: the lrs for last_epoch_ (already advanced), from the groups' current lrs.
  virtual std::vector<double> get_lr() = 0;
  // The closed form for last_epoch_, if the schedule has one.
  virtual std::optional<std::vector<double>> closed_form_lr() const { return std::nullopt; }
  // The fields state_dict saves (Note [Scheduler state_dict]); overrides call the base first.
  virtual void describe(StateFields& fields);
  // Note [Scheduler state checks]: the settings' checks, run by the constructor (who = name())
  // and on a loaded state (who = "<name>.load_state_dict"); and the checks of the fields only
  // a state has (the base checks the common ones; overrides call it).
  virtual void check_settings(const std::string& who) const { (void)who; }
  virtual void check_state(const std::string& who) const;
  // Both, for a scheduler held by another one (SequentialLR, ChainedScheduler): `who` names
  // the holder and the position ("SequentialLR.load_state_dict: _schedulers.1").
  void check_held(const std::string& who) const;

  // Writes lrs into the groups and remembers them as the last lrs.
  void apply_lrs(const std::vector<double>& lrs);
  // The groups' current lrs.
  std::vector<double> group_lrs() const;
  int64_t num_groups() const { return static_cast<int64_t>(optimizer_->param_groups().size()); }

  std::string name_;
  Optimizer* optimizer_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;

  friend class SequentialLR;  // rewinds and restarts the schedulers it holds
  friend class ChainedScheduler;
};

// lr * gamma every step_size epochs. Keys: + "step_size", "gamma".
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void describe(StateFields& fields) override;
  void check_settings(const std::string& who) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr * gamma at each milestone epoch (a milestone listed twice multiplies by gamma^2).
// Keys: + "milestones" (sorted, repeats kept), "gamma".
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1,
              int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void describe(StateFields& fields) override;
  void check_settings(const std::string& who) const override;

 private:
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

// lr * gamma every epoch. Keys: + "gamma".
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void describe(StateFields& fields) override;
  void check_settings(const std::string& who) const override;

 private:
  double gamma_;
};

// The factor on base_lr goes linearly from start_factor (epoch 0) to end_factor (epoch
// total_iters) and stays there. 0 < start_factor <= 1, 0 <= end_factor <= 1.
// Keys: + "start_factor", "end_factor", "total_iters".
class LinearLR : public LRScheduler {
 public:
  explicit LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
                    int64_t total_iters = 5, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void describe(StateFields& fields) override;
  void check_settings(const std::string& who) const override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

// base_lr * lr_lambda(epoch): one function for every group, or one per group. The functions
// are not saved in state_dict (as PyTorch does not save lambdas): give the same ones when
// loading. Keys: the common ones.
class LambdaLR : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t)>;
  LambdaLR(Optimizer& optimizer, const Lambda& lr_lambda, int64_t last_epoch = -1);
  LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;

 private:
  std::vector<Lambda> lr_lambdas_;
};

// Cosine annealing from base_lr down to eta_min over T_max epochs (then back up, the cosine
// continuing), in PyTorch's recursive form. Keys: + "T_max", "eta_min".
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0,
                    int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void describe(StateFields& fields) override;
  void check_settings(const std::string& who) const override;

 private:
  int64_t T_max_;
  double eta_min_;
};

// SGDR: cosine annealing restarted every T_i epochs, T_0 first, each period T_mult times
// longer: lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2.
// step_fractional(epoch) accepts fractional epochs (epoch + batch / batches), PyTorch's
// step(epoch) with a float. Keys: + "T_0", "T_i", "T_mult", "eta_min", "T_cur".
class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult = 1,
                              double eta_min = 0.0, int64_t last_epoch = -1);
  void step() override;
  void step(int64_t epoch) override { step_fractional(static_cast<double>(epoch)); }
  void step_fractional(double epoch);

 protected:
  std::vector<double> get_lr() override;
  void describe(StateFields& fields) override;
  void check_settings(const std::string& who) const override;
  void check_state(const std::string& who) const override;

 private:
  int64_t T_0_, T_i_, T_mult_;
  double eta_min_;
  double T_cur_;
};

// Runs schedulers one after another: schedulers[k] from milestones[k-1] on (restarted at
// epoch 0 there). The usual warmup then decay:
//   auto warmup = std::make_shared<optim::LinearLR>(opt, 0.1, 1.0, 5);
//   auto decay = std::make_shared<optim::CosineAnnealingLR>(opt, 95);
//   optim::SequentialLR sched(opt, {warmup, decay}, {5});
// Keys (PyTorch's SequentialLR has no base_lrs or _step_count): "last_epoch", "_milestones",
// "_last_lr", and each scheduler's as "_schedulers.<k>.<key>".
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones, int64_t last_epoch = -1);
  void step() override;
  // Not available (PyTorch's SequentialLR.step takes no epoch either): an error.
  void step(int64_t epoch) override;

 protected:
  std::vector<double> get_lr() override { return group_lrs(); }
  void describe(StateFields& fields) override;
  void check_state(const std::string& who) const override;

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

// OneCycleLR's settings (PyTorch's keyword arguments). max_lr, base_momentum and
// max_momentum hold one value for every group or one per group. Either total_steps or both
// epochs and steps_per_epoch (total_steps = epochs * steps_per_epoch) must be given.
struct OneCycleLROptions {
  explicit OneCycleLROptions(double max_lr) : max_lr_({max_lr}) {}
  explicit OneCycleLROptions(std::vector<double> max_lr) : max_lr_(std::move(max_lr)) {}
  EMBER_ARG(std::vector<double>, max_lr);
  EMBER_ARG(std::optional<int64_t>, total_steps);
  EMBER_ARG(std::optional<int64_t>, epochs);
  EMBER_ARG(std::optional<int64_t>, steps_per_epoch);
  EMBER_ARG(double, pct_start) = 0.3;
  EMBER_ARG(std::string, anneal_strategy) = "cos";  // "cos" or "linear"
  EMBER_ARG(bool, cycle_momentum) = true;
  EMBER_ARG(std::vector<double>, base_momentum) = {0.85};
  EMBER_ARG(std::vector<double>, max_momentum) = {0.95};
  EMBER_ARG(double, div_factor) = 25.0;
  EMBER_ARG(double, final_div_factor) = 1e4;
  EMBER_ARG(bool, three_phase) = false;
  EMBER_ARG(int64_t, last_epoch) = -1;
};

// The 1cycle policy, stepped once per batch: the lr goes from max_lr / div_factor up to max_lr
// (the first pct_start of the steps) and down to initial_lr / final_div_factor, annealed by
// cosine or linearly; with three_phase, up, back down to the initial lr symmetrically, then
// down to the minimum. With cycle_momentum the momentum (SGD, RMSprop: "momentum"; Adam,
// AdamW: "betas0", as PyTorch picks by the optimizer's defaults) moves the opposite way between
// max_momentum and base_momentum. The groups get "initial_lr", "max_lr", "min_lr" and
// "max_momentum", "base_momentum" (saved with the optimizer's state). Stepping past total_steps
// is an error. Keys: + "total_steps", "_schedule_phases.<k>.end_step", "cycle_momentum",
// "use_beta1".
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& options);

 protected:
  std::vector<double> get_lr() override;
  void describe(StateFields& fields) override;
  void check_settings(const std::string& who) const override;
  void check_state(const std::string& who) const override;

 private:
  struct Phase {
    double end_step;
    const char* start_lr;  // group option names
    const char* end_lr;
    const char* start_momentum;
    const char* end_momentum;
  };
  double anneal(double start, double end, double pct) const;

  int64_t total_steps_;
  std::vector<Phase> phases_;
  bool cos_;
  bool cycle_momentum_;
  bool use_beta1_ = false;
};

}  // namespace ember::optim
