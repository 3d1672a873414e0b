#pragma once
// ConstantLR: the lr times `factor` for the first total_iters epochs, then the lr itself
// (PyTorch's torch.optim.lr_scheduler.ConstantLR), a simple warmup:
//
//   optim::ConstantLR sched(opt, /*factor=*/0.5, /*total_iters=*/4);  // 0.5 lr for epochs 0-3
//
// Chainable form (PyTorch 1.13's): lr * factor at epoch 0, lr / factor at epoch total_iters,
// otherwise the lr unchanged, so it composes with other schedules (ChainedScheduler). step(epoch)
// uses the closed form base_lr * (factor if epoch < total_iters else 1). With factor 0, where
// PyTorch's lr / factor fails, the lr at total_iters is base_lr (the closed form).
// 0 <= factor <= 1, 0 <= total_iters <= 2^53. Keys: the common ones + "factor", "total_iters".

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "optim/lr_scheduler.h"

namespace ember::optim {

class ConstantLR : public LRScheduler {
 public:
  explicit ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3, int64_t total_iters = 5,
                      int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void describe(StateFields& fields) override;
  void check_settings(const std::string& who) const override;

 private:
  double factor_;
  int64_t total_iters_;
};

}  // namespace ember::optim
