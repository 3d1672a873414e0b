#pragma once
// CyclicLR: the cyclical learning rate policy (Smith, "Cyclical Learning Rates for Training
// Neural Networks"; PyTorch's torch.optim.lr_scheduler.CyclicLR), stepped once per batch:
//
//   optim::SGD opt(params, optim::SGDOptions(0.1).momentum(0.9));
//   optim::CyclicLR sched(opt, optim::CyclicLROptions(0.01, 0.1).step_size_up(2000));
//   for (...) { train_batch(); sched.step(); }
//
// Each cycle has total_size = step_size_up + step_size_down iterations. At iteration t (the
// scheduler's last_epoch) with cycle = floor(1 + t / total_size), x = 1 + t / total_size - cycle
// and step_ratio = step_size_up / total_size, the lr rises linearly from base_lr to the peak
// over the first step_ratio of the cycle and falls back:
//   scale = x / step_ratio                    (x <= step_ratio)
//           (x - 1) / (step_ratio - 1)        (otherwise)
//   lr = base_lr + (max_lr - base_lr) * scale * f
// where f = scale_fn(cycle) or scale_fn(t): mode "triangular" f = 1, "triangular2" f =
// 1 / 2^(cycle - 1) (the amplitude halves each cycle), "exp_range" f = gamma^t; or a custom
// scale_fn evaluated on the cycle number or the iteration (scale_mode "cycle" / "iterations"),
// which then overrides the mode. With cycle_momentum the momentum moves the opposite way,
// momentum = max_momentum - (max_momentum - base_momentum) * scale * f: the group's "momentum"
// (SGD, RMSprop) or "betas0" (Adam, AdamW; PyTorch 1.13 refuses these, ember follows 2.x).
//
// Construction (last_epoch = -1) sets each group's lr to base_lr (and momentum to
// base_momentum) before the first step, as PyTorch does. There is no closed form: step(epoch)
// evaluates the cycle at `epoch`.
//
// Checks (with PyTorch's messages where it has them): one value, or one per group, for base_lr,
// max_lr, base_momentum, max_momentum (finite, >= 0); step_size_up >= 1, step_size_down >= 0
// (PyTorch divides by zero otherwise); 0 < gamma <= 1 (PyTorch asks 0 <= scale_fn(x) <= 1, and
// gamma^iterations grows without bound otherwise); mode one of the three unless
// scale_fn is given; an optimizer with momentum or betas when cycle_momentum.
//
// state_dict keys (Note [Scheduler state_dict] in optim/state_fields.h): the common ones +
// "max_lrs", "total_size", "step_ratio", "gamma", "cycle_momentum", "use_beta1", and with
// cycle_momentum "base_momentums", "max_momentums". mode, scale_mode and scale_fn are not
// saved (they come from the constructor).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "optim/lr_scheduler.h"

namespace ember::optim {

// CyclicLR's settings (PyTorch's keyword arguments). base_lr, max_lr, base_momentum and
// max_momentum hold one value for every group or one per group.
struct CyclicLROptions {
  CyclicLROptions(double base_lr, double max_lr) : base_lr_({base_lr}), max_lr_({max_lr}) {}
  CyclicLROptions(std::vector<double> base_lr, std::vector<double> max_lr)
      : base_lr_(std::move(base_lr)), max_lr_(std::move(max_lr)) {}
  EMBER_ARG(std::vector<double>, base_lr);
  EMBER_ARG(std::vector<double>, max_lr);
  EMBER_ARG(int64_t, step_size_up) = 2000;
  EMBER_ARG(std::optional<int64_t>, step_size_down);   // unset: step_size_up
  EMBER_ARG(std::string, mode) = "triangular";         // "triangular2", "exp_range"
  EMBER_ARG(double, gamma) = 1.0;                      // exp_range's base
  EMBER_ARG(std::function<double(double)>, scale_fn);  // set: overrides mode
  EMBER_ARG(std::string, scale_mode) = "cycle";        // of scale_fn: "cycle" or "iterations"
  EMBER_ARG(bool, cycle_momentum) = true;
  EMBER_ARG(std::vector<double>, base_momentum) = {0.8};
  EMBER_ARG(std::vector<double>, max_momentum) = {0.9};
  EMBER_ARG(int64_t, last_epoch) = -1;
};

class CyclicLR : public LRScheduler {
 public:
  CyclicLR(Optimizer& optimizer, const CyclicLROptions& options);

 protected:
  std::vector<double> get_lr() override;
  void describe(StateFields& fields) override;
  void check_settings(const std::string& who) const override;
  void check_state(const std::string& who) const override;

 private:
  double scale(double x) const;

  std::vector<double> max_lrs_;
  double total_size_, step_ratio_;
  double gamma_;
  std::function<double(double)> scale_fn_;  // empty: the mode's
  int mode_ = 0;                            // 0 triangular, 1 triangular2, 2 exp_range
  bool scale_by_cycle_;
  bool cycle_momentum_;
  bool use_beta1_ = false;
  std::vector<double> base_momentums_, max_momentums_;
};

}  // namespace ember::optim
