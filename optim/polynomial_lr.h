#pragma once
// PolynomialLR: decays the lr polynomially to 0 over total_iters epochs and keeps it there
// (PyTorch's torch.optim.lr_scheduler.PolynomialLR):
//   lr_t = base_lr * (1 - min(t, total_iters) / total_iters) ^ power
//
//   optim::PolynomialLR sched(opt, /*total_iters=*/100, /*power=*/2.0);
//
// step() uses PyTorch 1.13's chainable form, lr_t = lr_{t-1} * ((1 - t/T) / (1 - (t-1)/T))^power
// for 0 < t <= T (the lr unchanged otherwise); step(epoch) the closed form above.
// 1 <= total_iters <= 2^53, power finite and >= 0 (PyTorch checks neither; 0 divides by zero,
// a negative power sends the lr to infinity). Keys: the common ones + "total_iters", "power".

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "optim/lr_scheduler.h"

namespace ember::optim {

class PolynomialLR : public LRScheduler {
 public:
  explicit PolynomialLR(Optimizer& optimizer, int64_t total_iters = 5, double power = 1.0,
                        int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void describe(StateFields& fields) override;
  void check_settings(const std::string& who) const override;

 private:
  int64_t total_iters_;
  double power_;
};

}  // namespace ember::optim
