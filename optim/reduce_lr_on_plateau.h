#pragma once
// ReduceLROnPlateau: lowers the lr when a metric stops improving (PyTorch's
// torch.optim.lr_scheduler.ReduceLROnPlateau). Unlike the epoch schedules it is stepped with
// the metric:
//
//   optim::ReduceLROnPlateau sched(opt, optim::ReduceLROnPlateauOptions().patience(2));
//   for (...) { train(); sched.step(validation_loss); }
//
// Each step compares the metric with the best so far. "Better" is, for mode "min" and
// threshold_mode "rel", metric < best * (1 - threshold) ("abs": metric < best - threshold;
// mode "max" mirrors them). After more than `patience` steps without improvement, each group's
// lr becomes max(lr * factor, min_lr) (a change smaller than eps is skipped), and `cooldown`
// steps follow in which bad steps are not counted.
//
// state_dict keys (Note [Scheduler state_dict] in optim/state_fields.h): "factor", "min_lrs",
// "patience", "cooldown", "cooldown_counter", "threshold", "best", "num_bad_epochs",
// "mode_worse", "eps", "last_epoch", "_last_lr". mode and threshold_mode are not saved (nor is
// mode_worse used: it is derived from the mode). The constructor's checks (0 <= factor < 1,
// min_lrs finite and >= 0, patience and cooldown >= 0, threshold and eps finite and >= 0) and
// those of the state (counters >= 0, best not NaN) run on a loaded state too (Note [Scheduler
// state checks] in optim/state_checks.h): a bad value is an ember::Error naming the field, and
// the scheduler stays as it was.

#include <cstdint>
#include <string>
#include <vector>

#include "optim/optimizer.h"
#include "optim/state_fields.h"

namespace ember::optim {

struct ReduceLROnPlateauOptions {
  EMBER_ARG(std::string, mode) = "min";  // "min" or "max"
  EMBER_ARG(double, factor) = 0.1;       // < 1
  EMBER_ARG(int64_t, patience) = 10;
  EMBER_ARG(double, threshold) = 1e-4;
  EMBER_ARG(std::string, threshold_mode) = "rel";  // "rel" or "abs"
  EMBER_ARG(int64_t, cooldown) = 0;
  EMBER_ARG(std::vector<double>, min_lr) = {0.0};  // one for every group, or one per group
  EMBER_ARG(double, eps) = 1e-8;
};

class ReduceLROnPlateau {
 public:
  explicit ReduceLROnPlateau(Optimizer& optimizer,
                             const ReduceLROnPlateauOptions& options = ReduceLROnPlateauOptions());

  void step(double metric);
  void step(const Tensor& metric) { step(metric.item<double>()); }

  // The groups' lrs after the last step (before the first: their lrs at construction).
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  bool in_cooldown() const { return cooldown_counter_ > 0; }
  Optimizer& optimizer() const { return *optimizer_; }

  TensorDict state_dict() const;
  void load_state_dict(const TensorDict& dict);

 private:
  bool is_better(double a, double best) const;
  void reduce_lr();
  void describe(StateFields& fields);
  void check_settings(const std::string& who) const;
  void check_state(const std::string& who) const;

  Optimizer* optimizer_;
  bool mode_max_;
  bool threshold_abs_;
  double factor_;
  std::vector<double> min_lrs_;
  int64_t patience_;
  double threshold_;
  int64_t cooldown_;
  int64_t cooldown_counter_ = 0;
  double best_;
  double mode_worse_;
  int64_t num_bad_epochs_ = 0;
  double eps_;
  int64_t last_epoch_ = 0;
  std::vector<double> last_lr_;
};

}  // namespace ember::optim
