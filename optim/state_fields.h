#pragma once
// StateFields: the numbers an LR scheduler saves in its state_dict, by PyTorch's attribute
// names, so that one description serves both saving and loading.
//
// Note [Scheduler state_dict]
// PyTorch's scheduler state_dict is the scheduler's __dict__ without the optimizer. ember's is a
// flat TensorDict (writable with safetensors) of the same entries that are numbers:
//   integers -> 0-dim int64, reals -> 0-dim float64, flags -> 0-dim bool,
//   lists of reals -> 1-D float64, lists of integers -> 1-D int64,
// e.g. "last_epoch", "_step_count", "base_lrs", "_last_lr", "gamma", "T_max"; a scheduler
// holding others (SequentialLR) nests theirs as "_schedulers.<k>.<key>". Strings and
// functions (ReduceLROnPlateau's mode, OneCycleLR's anneal_strategy, LambdaLR's lambdas) are
// not saved: they come from the constructor, as PyTorch does not save LambdaLR's lambdas.
// Loading needs every key and no other, each of its kind (and lists of per-group values one
// per group); otherwise an ember::Error names the key and nothing changes. The loaded values
// then go through the scheduler's checks (Note [Scheduler state checks] in
// optim/state_checks.h).

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/tensor_dict.h"

namespace ember::optim {

class StateFields {
 public:
  void add(const std::string& name, int64_t& value);
  void add(const std::string& name, double& value);
  void add(const std::string& name, bool& value);
  // `length` >= 0: loading requires a list of exactly that length.
  void add(const std::string& name, std::vector<double>& values, int64_t length = -1);
  void add(const std::string& name, std::vector<int64_t>& values, int64_t length = -1);
  // Every field of `other`, its name prefixed by `prefix` (e.g. "_schedulers.0.").
  void add_all(const std::string& prefix, const StateFields& other);

  TensorDict save() const;
  // `who` names the scheduler in errors ("StepLR.load_state_dict").
  void load(const TensorDict& dict, const std::string& who) const;
  // load(), then `check()` on the loaded values: if it throws, the previous values are put
  // back and the error is rethrown, so that a refused dict changes nothing.
  void load(const TensorDict& dict, const std::string& who,
            const std::function<void()>& check) const;

 private:
  template <class T>
  struct List {
    std::vector<T>* values;
    int64_t length;
  };
  using Ref = std::variant<int64_t*, double*, bool*, List<double>, List<int64_t>>;
  std::vector<std::pair<std::string, Ref>> fields_;
};

}  // namespace ember::optim
