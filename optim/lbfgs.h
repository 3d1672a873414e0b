#pragma once
// LBFGS: limited-memory BFGS with an optional strong Wolfe line search (PyTorch's
// torch.optim.LBFGS, PyTorch 1.13's algorithm step for step).
//
//   optim::LBFGS opt(model->parameters(),
//                    optim::LBFGSOptions(1.0).history_size(10).line_search_fn("strong_wolfe"));
//   auto closure = [&] {
//     opt.zero_grad();
//     Tensor loss = loss_fn(model->forward(x), y);
//     loss.backward();
//     return loss;
//   };
//   opt.step(closure);   // up to max_iter iterations, each evaluating the closure
//
// step(closure) runs up to max_iter iterations of L-BFGS on all the parameters seen as one
// flat vector (they must share one dtype and one device), calling the closure (with grad
// enabled) to re-evaluate the loss and gradients, at most max_eval times. It returns the
// closure's first loss. A parameter whose grad() is undefined counts as a zero gradient.
// step() without a closure is an ember::Error. Each iteration:
//   - the direction d = -H g from the two-loop recursion over the last history_size pairs
//     (s = t d, y = g_new - g_old) kept when y.s > 1e-10, with H_0 = (y.s / y.y) I;
//   - the step t: lr (on the very first iteration min(1, 1 / |g|_1) * lr), and with
//     line_search_fn "strong_wolfe" the step PyTorch's line search finds (c1 = 1e-4, c2 = 0.9,
//     at most 25 evaluations, bracketing with cubic interpolation);
//   - it stops when |g|_inf <= tolerance_grad, g.d > -tolerance_change, |t d|_inf <=
//     tolerance_change, |loss change| < tolerance_change, or max_iter / max_eval is reached.
// The scalar coefficients (t, y.s, H_diag, ...) are computed in double; the vectors are in
// the parameters' dtype, with native ops (the vectors are flat copies, so the updates are
// plain tensor ops: dot, add_, mul).
//
// LBFGS takes one parameter group, as PyTorch ("LBFGS doesn't support per-parameter options
// (parameter groups)"). Group options: "lr", "max_iter", "max_eval", "tolerance_grad",
// "tolerance_change", "history_size", "line_search_fn" (0: none, 1: strong_wolfe). PyTorch
// checks none of them; ember checks lr >= 0, tolerances >= 0, and max_iter, max_eval,
// history_size positive integers.
//
// Note [LBFGS state keys]
// The state is the optimizer's, not per parameter; it is kept (as PyTorch keeps it) as the
// state of parameter 0, so that state_dict()/load_state_dict() round-trip it through the flat
// TensorDict (Note [Optimizer state_dict keys]). N is the total number of elements of the
// parameters; lists are numbered keys, oldest first:
//   state.0.func_evals      int64 0-dim: closure evaluations so far (all steps)
//   state.0.n_iter          int64 0-dim: iterations so far (all steps)
//   state.0.d               [N] the last direction             (present after one iteration)
//   state.0.t               float64 0-dim: the last step size
//   state.0.old_dirs.<i>    [N] y_i, i = 0 .. k-1 (k <= history_size)
//   state.0.old_stps.<i>    [N] s_i
//   state.0.ro.<i>          float64 0-dim: 1 / (y_i . s_i)
//   state.0.H_diag          float64 0-dim: the initial Hessian scale y.s / y.y
//   state.0.prev_flat_grad  [N] the last flat gradient
//   state.0.prev_loss       float64 0-dim: the last loss
// The vectors have the parameters' dtype. load_state_dict checks the counters (non-negative
// integers), the scalars (finite), the vectors (floating, [N]), that the three lists have one
// length k <= history_size with keys 0 .. k-1, and that d, t, H_diag, prev_flat_grad and
// prev_loss come together. PyTorch's scratch list "al" is not kept (each iteration rewrites it).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "optim/optimizer.h"

namespace ember::optim {

struct LBFGSOptions {
  explicit LBFGSOptions(double lr = 1.0) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(int64_t, max_iter) = 20;
  EMBER_ARG(std::optional<int64_t>, max_eval) = std::nullopt;  // default max_iter * 5 / 4
  EMBER_ARG(double, tolerance_grad) = 1e-7;
  EMBER_ARG(double, tolerance_change) = 1e-9;
  EMBER_ARG(int64_t, history_size) = 100;
  EMBER_ARG(std::string, line_search_fn) = "";  // "" (none) or "strong_wolfe"
};

class LBFGS : public Optimizer {
 public:
  explicit LBFGS(std::vector<Tensor> params, const LBFGSOptions& options = LBFGSOptions());
  explicit LBFGS(std::vector<ParamGroup> groups, const LBFGSOptions& options = LBFGSOptions());

  // An error: LBFGS needs a closure to re-evaluate the loss.
  void step() override;
  Tensor step(const std::function<Tensor()>& closure) override;

 protected:
  void check_options(const GroupOptions& options) const override;
  bool state_has_param_shape(const std::string& name) const override;
  void check_state(const std::string& prefix, const GroupOptions& options, const Tensor& param,
                   const ParamState& state) const override;
  // Not used: step(closure) updates all parameters at once.
  void update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
              ParamState& state) override;

 private:
  const std::vector<Tensor>& params() const;
  int64_t numel() const;
  Tensor gather_flat_grad() const;
  void add_grad(double step_size, const Tensor& update) const;  // params += step_size * update
  std::vector<Tensor> clone_params() const;
  void set_params(const std::vector<Tensor>& values) const;
};

}  // namespace ember::optim
