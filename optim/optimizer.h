#pragma once
// Optimizer: the base of every optimizer (ember::optim), PyTorch's torch.optim.Optimizer.
//
//   auto opt = optim::Adam(model->parameters(), optim::AdamOptions(1e-3).weight_decay(1e-4));
//   for (...) {
//     opt.zero_grad();
//     loss_fn(model->forward(x), y).backward();
//     opt.step();
//   }
//
// Parameter groups: the parameters are split into groups, each with its own hyperparameters
// (a ParamGroup: its tensors and a name -> value map, PyTorch's names: "lr", "momentum",
// "weight_decay", ...). A group's options start from the optimizer's defaults (its Options
// struct); keys the group gives override them:
//
//   optim::SGD opt({optim::ParamGroup(backbone->parameters(), {{"lr", 1e-3}}),
//                   optim::ParamGroup(head->parameters())},          // the default lr
//                  optim::SGDOptions(1e-2).momentum(0.9));
//
// Everything is a double: Adam's betas are "betas0" and "betas1", flags ("amsgrad",
// "nesterov", "maximize") are 0 or 1. LR schedulers read and write "lr" and add their own
// entries ("initial_lr", "max_lr", ...), which are saved with the rest. A group may carry keys the
// optimizer does not read, as in PyTorch.
//
// Per-parameter state (ParamState): named tensors ("exp_avg", "step", ...) made on the first
// step() that sees the parameter's gradient (Adagrad: when the parameter is added).
//
// step() runs under NoGradGuard and skips parameters whose grad() is undefined. The update is
// one fused pass over each parameter's data, a dispatched kernel (native::adam_step_ ...,
// Note [Fused optimizer steps] in core/ops/optim.h), with PyTorch 1.13's formulas (its
// single-tensor path); NAdam, RAdam, Adamax, Adadelta, ASGD and Rprop run that path's chain of
// native ops instead, and LBFGS (optim/lbfgs.h) overrides step(closure) with its own loop.
//
// Note [zero_grad sets to None]
// zero_grad() defaults to set_to_none = true, PyTorch 2.x's default; PyTorch 1.13 (Python and
// C++) defaults to false. The two differ for a parameter that gets no gradient in a step: with
// set_to_none = true its grad() is undefined, so step() skips it entirely (no update, no
// momentum, its "step" count unchanged); with false its grad() is a tensor of zeros, so step()
// updates it with a zero gradient: SGD with momentum keeps moving it by lr * momentum^k * buf,
// Adam by its decaying exp_avg, weight decay shrinks it, and its step count advances. Code
// ported from PyTorch 1.13 that relies on the zeroed gradient must call zero_grad(false).
//
// Note [Optimizer state_dict keys]
// state_dict() is one flat TensorDict, so that a checkpoint can be written with safetensors
// next to the model's (issue 5). Parameters are numbered 0, 1, 2, ... across the groups in
// order, as PyTorch numbers them:
//   "state.<i>.<name>"           the state tensor <name> of parameter i, e.g. "state.0.exp_avg",
//                                "state.0.step", "state.3.momentum_buffer". Its dtype and shape
//                                are the state's own (a parameter's dtype and shape; Adam's and
//                                Adagrad's "step" a 0-dim float32, RMSprop's a 0-dim int64, as
//                                PyTorch keeps them). A parameter with no state has no keys.
//   "param_groups.<g>.<option>"  each option of group g as a 0-dim float64 tensor, e.g.
//                                "param_groups.0.lr", "param_groups.1.betas0",
//                                "param_groups.0.amsgrad" (0 or 1), "param_groups.0.initial_lr".
//   "param_groups.<g>.params"    int64 [n]: the numbers i of the group's n parameters.
// The state entries come first (by parameter, each in the order the optimizer made them),
// then the groups. The tensors are copies: the dict stays as it was while training goes on.
// load_state_dict(dict) checks that the dict has as many groups as the optimizer, each with as
// many parameters, that every option the optimizer needs is present and that every state
// tensor has its parameter's shape; then it replaces the groups' options and the state (state
// tensors converted to their parameter's dtype and device, "step" kept as saved). Any problem
// is an ember::Error naming the key, and leaves the optimizer unchanged.
//
// Note [Validating loaded state]
// A state dict is input from a file, so load_state_dict checks it as the constructor checks its
// options: every loaded group option goes through check_options (the constructor's checks, with
// PyTorch's messages), and an option that is NaN, or a flag ("amsgrad", "maximize", ...) that is
// not 0 or 1, is refused; the error names the key ("Adam.load_state_dict: param_groups.0.lr:
// Adam: Invalid learning rate: nan"). Every "step" must be a finite, non-negative integer. An
// optimizer with further scalar state (NAdam's "mu_product", ASGD's "eta" and "mu", LBFGS's
// counters and history) checks it in check_state. The checks are written so that NaN fails
// them (`x >= 0` is false for NaN; a check is never a negated `x < 0`).

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "core/tensor_dict.h"

// EMBER_ARG(T, name) = default; declares an option of an options struct: a chainable setter
// `name(value)` returning the struct, a getter `name()`, and the member `name_` (libtorch's
// TORCH_ARG), so that `AdamOptions(1e-3).betas({0.9, 0.99}).amsgrad(true)` reads as PyTorch's
// keyword arguments.
#define EMBER_ARG(T, name)                  \
 public:                                    \
  auto& name(const T& new_value) {          \
    this->name##_ = new_value;              \
    return *this;                           \
  }                                         \
  const T& name() const { return name##_; } \
                                            \
 private:                                   \
  T name##_

namespace ember::optim {

// A group's hyperparameters by name (ordered by name).
using GroupOptions = std::map<std::string, double>;

struct ParamGroup {
  ParamGroup(std::vector<Tensor> params, GroupOptions options = {})
      : params(std::move(params)), options(std::move(options)) {}

  std::vector<Tensor> params;
  GroupOptions options;

  bool has(const std::string& name) const { return options.count(name) != 0; }
  // The option's value; an error listing the group's options when it has none by that name.
  double get(const std::string& name) const;
  void set(const std::string& name, double value) { options[name] = value; }
  double lr() const { return get("lr"); }
  void set_lr(double lr) { set("lr", lr); }
};

// One parameter's state: named tensors in insertion order.
class ParamState {
 public:
  bool empty() const { return entries_.empty(); }
  bool has(const std::string& name) const;
  // The entry `name`, added (undefined) if missing.
  Tensor& operator[](const std::string& name);
  // The entry `name`; an error listing the entries when it is missing.
  const Tensor& at(const std::string& name) const;
  const TensorDict& entries() const { return entries_; }
  void clear() { entries_.clear(); }

 private:
  TensorDict entries_;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // PyTorch's class name ("Adam"), used in error messages.
  const std::string& name() const { return name_; }
  // The options every new group starts from.
  const GroupOptions& defaults() const { return defaults_; }
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }

  // Adds a group; options it lacks are taken from defaults(). The parameters must be
  // floating-point leaves, not already in a group, and the options valid for this optimizer
  // ("Adam: Invalid learning rate: -1").
  void add_param_group(ParamGroup group);

  // Drops (set_to_none) or zeroes every parameter's gradient. The default is PyTorch 2.x's
  // (true), not 1.13's (false): Note [zero_grad sets to None] above.
  void zero_grad(bool set_to_none = true);

  // One update of every parameter that has a gradient.
  virtual void step();
  // Evaluates `closure` (with grad enabled; it typically zeroes the gradients, computes the
  // loss and calls backward), then steps. Returns the closure's loss.
  virtual Tensor step(const std::function<Tensor()>& closure);

  // The state of `param` (an error if it is not optimized here).
  ParamState& state(const Tensor& param);
  const ParamState& state(const Tensor& param) const;

  // Note [Optimizer state_dict keys] above.
  TensorDict state_dict() const;
  void load_state_dict(const TensorDict& dict);

 protected:
  Optimizer(std::string name, GroupOptions defaults)
      : name_(std::move(name)),
        step_range_("Optimizer.step#" + name_),
        zero_grad_range_("Optimizer.zero_grad#" + name_),
        defaults_(std::move(defaults)) {}

  // For constructors: at least one parameter, then add_param_group for each group.
  void add_param_groups(std::vector<ParamGroup> groups);

  // Checks a group's options (defaults filled in) with PyTorch's messages. Every check must
  // refuse NaN (Note [Validating loaded state]).
  virtual void check_options(const GroupOptions& options) const = 0;
  // For check_options: `key` is 0 or 1 ("Adam: amsgrad must be 0 or 1 (false or true), got 2").
  void check_flag(const GroupOptions& options, const std::string& key) const;
  // Whether the state entry `name` has its parameter's shape and dtype (load_state_dict checks
  // the shape and converts it); false for LBFGS's flat vectors and scalars, which check_state
  // checks instead.
  virtual bool state_has_param_shape(const std::string& name) const {
    (void)name;
    return true;
  }
  // Checks a loaded parameter's state (already checked: "step", and the shapes above) before
  // load_state_dict replaces anything; errors name "<prefix><entry>", prefix "state.<i>.".
  virtual void check_state(const std::string& prefix, const GroupOptions& options,
                           const Tensor& param, const ParamState& state) const {
    (void)prefix, (void)options, (void)param, (void)state;
  }
  // Called for each parameter when its group is added (Adagrad makes its state there).
  virtual void init_state(const ParamGroup& group, const Tensor& param, ParamState& state) {
    (void)group, (void)param, (void)state;
  }
  // Updates one parameter: `grad` has the parameter's shape and dtype (checked). Runs under
  // NoGradGuard.
  virtual void update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
                      ParamState& state) = 0;
  // Called by step() after the step's last update() (also when one throws): an optimizer that
  // queues its updates runs them here, all at once (SGD, Adam and AdamW: Note [Multi-tensor
  // optimizer steps] in core/ops/multi_tensor.h).
  virtual void flush_updates() {}

 private:
  // step()'s loop: update() for every parameter with a gradient.
  void update_all();
  // (group, position) of `param`; an error if it is not optimized here.
  std::pair<size_t, size_t> locate(const Tensor& param) const;

  std::string name_;
  // The profiler's names for step() and zero_grad() ("Optimizer.step#Adam", as torch's).
  std::string step_range_, zero_grad_range_;
  GroupOptions defaults_;
  std::vector<ParamGroup> groups_;
  std::vector<std::vector<ParamState>> state_;  // state_[g][j]: groups_[g].params[j]
};

}  // namespace ember::optim
