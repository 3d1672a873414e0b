#include "optim/chained_scheduler.h"

#include "optim/state_checks.h"

namespace ember::optim {

namespace {

// The optimizer of the first scheduler (before the base class is constructed with it).
Optimizer& first_optimizer(const std::vector<std::shared_ptr<LRScheduler>>& schedulers) {
  EMBER_CHECK(!schedulers.empty(), "ChainedScheduler: needs at least one scheduler");
  EMBER_CHECK(schedulers[0] != nullptr, "ChainedScheduler: scheduler 0 is null");
  return schedulers[0]->optimizer();
}

}  // namespace

ChainedScheduler::ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers)
    : LRScheduler("ChainedScheduler", first_optimizer(schedulers)),
      schedulers_(std::move(schedulers)) {
  for (size_t k = 1; k < schedulers_.size(); ++k) {
    EMBER_CHECK(schedulers_[k] != nullptr, "ChainedScheduler: scheduler ", k, " is null");
    EMBER_CHECK(&schedulers_[k]->optimizer() == optimizer_,
                "ChainedScheduler: ChainedScheduler expects all schedulers to belong to the same "
                "optimizer, but got schedulers at index 0 and ",
                k, " to be different");
  }
  base_lrs_ = schedulers_[0]->base_lrs();
  last_lr_ = group_lrs();
}

void ChainedScheduler::step() {
  for (auto& s : schedulers_) s->step();
  last_lr_ = group_lrs();
}

void ChainedScheduler::step(int64_t epoch) {
  EMBER_ERROR("ChainedScheduler: step(epoch) is not supported (got epoch ", epoch,
              "); call step()");
}

void ChainedScheduler::describe(StateFields& fields) {
  fields.add("_last_lr", last_lr_, num_groups());
  for (size_t k = 0; k < schedulers_.size(); ++k) {
    StateFields inner;
    schedulers_[k]->describe(inner);
    fields.add_all("_schedulers." + std::to_string(k) + ".", inner);
  }
}

void ChainedScheduler::check_state(const std::string& who) const {
  detail::check_reals(who, "_last_lr", last_lr_);
  for (size_t k = 0; k < schedulers_.size(); ++k)
    schedulers_[k]->check_held(who + ": _schedulers." + std::to_string(k));
}

}  // namespace ember::optim
