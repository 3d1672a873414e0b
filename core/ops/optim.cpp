#include "core/ops/optim.h"

#include <array>
#include <cstring>

#include "core/mem_overlap.h"
#include "core/ops/copy.h"

namespace ember {

namespace {

// A tensor the kernel updates: the contiguous `work` tensor, copied back into `original` when
// it is a staged copy (Note [Fused optimizer steps]).
struct Operand {
  Tensor original;
  Tensor work;
};

// The parameter, its gradient and up to three states of one update, checked and staged.
class StagedUpdate {
 public:
  StagedUpdate(const char* who, const Tensor& param, const Tensor& grad) : who_(who) {
    EMBER_CHECK(param.defined() && grad.defined(), who, ": undefined parameter or gradient");
    check_like(param, grad, "gradient");
    // Note [Writes over overlapping memory] in core/mem_overlap.h: the parameter is written in
    // one pass that also reads the gradient.
    assert_no_internal_overlap(param, who);
    assert_no_partial_overlap(param, grad, who);
    param_ = stage(param);
    grad_ = stage(grad).work;
    grad_original_ = grad;
  }

  // Checks and stages a state; `used`: whether the update reads it (else it must be undefined).
  const Tensor& state(const Tensor& s, bool used, const char* what) {
    EMBER_CHECK(s.defined() == used, who_, ": the ", what, " must be ",
                used ? "given" : "undefined", " for these options");
    EMBER_INTERNAL_ASSERT(n_state_ < state_.size(), "StagedUpdate: too many states");
    Operand& op = state_[n_state_++];
    if (used) {
      check_like(param_.original, s, what);
      // A state is written too: it may share memory with nothing else the update touches.
      assert_no_internal_overlap(s, who_);
      assert_no_overlap(s, param_.original, who_);
      assert_no_overlap(s, grad_original_, who_);
      for (size_t k = 0; k + 1 < n_state_; ++k) assert_no_overlap(s, state_[k].original, who_);
      op = stage(s);
    }
    return op.work;
  }

  const Tensor& param() const { return param_.work; }
  const Tensor& grad() const { return grad_; }
  DeviceType device() const { return param_.original.device().type; }

  // Writes the staged copies back; bumps the versions of the tensors updated directly.
  void finish() const {
    for (size_t k = 0; k < n_state_; ++k) write_back(state_[k]);
    write_back(param_);
  }

 private:
  // `what` names t in errors: "gradient" or a state's name ("exp_avg").
  void check_like(const Tensor& param, const Tensor& t, const char* what) const {
    const bool is_grad = std::strcmp(what, "gradient") == 0;
    EMBER_CHECK(t.dtype() == param.dtype() && t.sizes() == param.sizes(), who_,
                is_grad ? ": the gradient" : ": a state tensor", " has dtype ",
                dtype_name(t.dtype()), " and shape ", t.sizes(), " but its parameter has dtype ",
                dtype_name(param.dtype()), " and shape ", param.sizes(), " (", is_grad ? "" : what,
                is_grad ? "" : "; ", "was the parameter converted after the optimizer stepped?)");
    EMBER_CHECK(t.device() == param.device(), who_, ": the ", what, " is on ", t.device(),
                " but its parameter is on ", param.device());
  }

  static Operand stage(const Tensor& t) {
    return {t, t.is_contiguous() ? t : native::contiguous(t)};
  }

  static void write_back(const Operand& op) {
    if (!op.original.defined()) return;
    if (op.work.is_same(op.original))
      op.original.bump_version();
    else
      native::copy_(op.original, op.work);
  }

  const char* who_;
  Operand param_;
  Tensor grad_, grad_original_;
  std::array<Operand, 3> state_{};
  size_t n_state_ = 0;
};

}  // namespace

void native::sgd_step_(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                       const SgdCoefficients& c) {
  StagedUpdate u("SGD", param, grad);
  const Tensor& buf = u.state(momentum_buffer, c.momentum != 0.0, "momentum_buffer");
  sgd_step_stub(u.device(), u.param(), u.grad(), buf, c);
  u.finish();
}

void native::adam_step_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                        const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq,
                        const AdamCoefficients& c) {
  StagedUpdate u(c.decoupled ? "AdamW" : "Adam", param, grad);
  const Tensor& m = u.state(exp_avg, true, "exp_avg");
  const Tensor& v = u.state(exp_avg_sq, true, "exp_avg_sq");
  const Tensor& v_max = u.state(max_exp_avg_sq, c.amsgrad, "max_exp_avg_sq");
  adam_step_stub(u.device(), u.param(), u.grad(), m, v, v_max, c);
  u.finish();
}

void native::rmsprop_step_(const Tensor& param, const Tensor& grad, const Tensor& square_avg,
                           const Tensor& grad_avg, const Tensor& momentum_buffer,
                           const RmspropCoefficients& c) {
  StagedUpdate u("RMSprop", param, grad);
  const Tensor& sq = u.state(square_avg, true, "square_avg");
  const Tensor& ga = u.state(grad_avg, c.centered, "grad_avg");
  const Tensor& buf = u.state(momentum_buffer, c.momentum > 0.0, "momentum_buffer");
  rmsprop_step_stub(u.device(), u.param(), u.grad(), sq, ga, buf, c);
  u.finish();
}

void native::adagrad_step_(const Tensor& param, const Tensor& grad, const Tensor& sum,
                           const AdagradCoefficients& c) {
  StagedUpdate u("Adagrad", param, grad);
  const Tensor& s = u.state(sum, true, "sum");
  adagrad_step_stub(u.device(), u.param(), u.grad(), s, c);
  u.finish();
}

}  // namespace ember
