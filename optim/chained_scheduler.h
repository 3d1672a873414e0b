#pragma once
// ChainedScheduler: steps several schedulers of one optimizer together, each applying its
// chainable form to the lr the one before it left (PyTorch's
// torch.optim.lr_scheduler.ChainedScheduler):
//
//   auto warmup = std::make_shared<optim::ConstantLR>(opt, 0.1, 2);
//   auto decay = std::make_shared<optim::ExponentialLR>(opt, 0.9);
//   optim::ChainedScheduler sched({warmup, decay});  // lr 0.09, 0.081, 0.729, 0.6561, ...
//
// The schedulers are made first (each takes its initial step then, as in PyTorch); the chain
// takes no step of its own when made. step(epoch) is an error (PyTorch's ChainedScheduler.step
// takes no epoch). As in PyTorch it has no last_epoch or base_lrs of its own: last_epoch()
// stays -1 and base_lrs() are the first scheduler's.
//
// state_dict keys (Note [Scheduler state_dict] in optim/state_fields.h): "_last_lr" and each
// scheduler's as "_schedulers.<k>.<key>". Loading checks every scheduler's fields as its own
// load_state_dict does ("ChainedScheduler.load_state_dict: _schedulers.1 (StepLR): step_size
// must be positive, got 0").

#include <memory>
#include <string>
#include <vector>

#include "optim/lr_scheduler.h"

namespace ember::optim {

class ChainedScheduler : public LRScheduler {
 public:
  explicit ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers);
  void step() override;
  // Not available: an error.
  void step(int64_t epoch) override;

  const std::vector<std::shared_ptr<LRScheduler>>& schedulers() const { return schedulers_; }

 protected:
  std::vector<double> get_lr() override { return group_lrs(); }
  void describe(StateFields& fields) override;
  void check_state(const std::string& who) const override;

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
};

}  // namespace ember::optim
