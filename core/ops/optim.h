#pragma once
// The optimizers' update kernels: one fused in-place pass per parameter (SGD, Adam/AdamW,
// RMSprop, Adagrad). optim/*.cpp computes the coefficients of a step from its group's options
// and calls the native function here; the per-element math is kernels/math/optim.h.
//
// Note [Fused optimizer steps]
// PyTorch's single-tensor path updates a parameter with a chain of tensor ops (Adam: mul_,
// add_, mul_, addcmul_, sqrt, div, add_, addcdiv_), each one a pass over the whole tensor.
// ember runs the same formula as one pass: each element of the parameter, its gradient and its
// state is read once, updated in registers and written once. The pass works on contiguous data
// of the parameter's dtype (float32 and float64 compute in their own type, the 16-bit floats in
// float, as opmath_t says); the CPU kernel splits it over the thread pool (parallel_for) for
// large tensors. The coefficients are computed once per parameter in double, as PyTorch does in
// Python, then rounded to the computing type (the functors' from()).
//
// A parameter, gradient or state tensor that is not contiguous is staged: a contiguous copy on
// the same device is updated and copied back (a rare case: parameters are made contiguous,
// states are made like their parameter), so every layout takes the same formula. The parameter
// and the states are bumped one version, as an in-place op would. The gradient and every state
// must have the parameter's dtype, shape and device; otherwise an ember::Error names the
// optimizer.

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ember {

// SGD (optim/sgd.h). The buffer is written only when momentum != 0.
struct SgdCoefficients {
  double lr = 0.0;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  bool maximize = false;
  bool first = false;  // the first step with this buffer: it becomes the (decayed) gradient
};

// Adam and AdamW (optim/adam.h) at step t (1, 2, ...).
struct AdamCoefficients {
  double lr = 0.0;
  double beta1 = 0.0;
  double beta2 = 0.0;
  double eps = 0.0;
  double weight_decay = 0.0;
  double step_size = 0.0;              // lr / (1 - beta1^t)
  double bias_correction2_sqrt = 0.0;  // sqrt(1 - beta2^t)
  bool decoupled = false;              // AdamW: p *= 1 - lr * weight_decay; Adam: g += wd * p
  bool amsgrad = false;
  bool maximize = false;
};

// RMSprop (optim/rmsprop.h).
struct RmspropCoefficients {
  double lr = 0.0;
  double alpha = 0.0;
  double eps = 0.0;
  double weight_decay = 0.0;
  double momentum = 0.0;  // > 0: a momentum buffer is used
  bool centered = false;
  bool maximize = false;
};

// Adagrad (optim/adagrad.h) at step t.
struct AdagradCoefficients {
  double clr = 0.0;  // lr / (1 + (t - 1) * lr_decay)
  double eps = 0.0;
  double weight_decay = 0.0;
  bool maximize = false;
};

// Kernels: every tensor is contiguous, on one device, of the parameter's dtype and shape; an
// optional state is an undefined Tensor when the update does not use it.
using sgd_step_fn = void (*)(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                             const SgdCoefficients& c);
using adam_step_fn = void (*)(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                              const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq,
                              const AdamCoefficients& c);
using rmsprop_step_fn = void (*)(const Tensor& param, const Tensor& grad, const Tensor& square_avg,
                                 const Tensor& grad_avg, const Tensor& momentum_buffer,
                                 const RmspropCoefficients& c);
using adagrad_step_fn = void (*)(const Tensor& param, const Tensor& grad, const Tensor& sum,
                                 const AdagradCoefficients& c);
EMBER_DECLARE_DISPATCH(sgd_step_fn, sgd_step_stub);
EMBER_DECLARE_DISPATCH(adam_step_fn, adam_step_stub);
EMBER_DECLARE_DISPATCH(rmsprop_step_fn, rmsprop_step_stub);
EMBER_DECLARE_DISPATCH(adagrad_step_fn, adagrad_step_stub);

// ---- kernel-level entry points (no autograd) ---------------------------------------------
// In place on the parameter and its states (Note [Fused optimizer steps]); any layout.
namespace native {
// momentum_buffer: defined iff c.momentum != 0.
void sgd_step_(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
               const SgdCoefficients& c);
// max_exp_avg_sq: defined iff c.amsgrad. Errors name "AdamW" when c.decoupled, else "Adam".
void adam_step_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, const AdamCoefficients& c);
// grad_avg: defined iff c.centered; momentum_buffer: defined iff c.momentum > 0.
void rmsprop_step_(const Tensor& param, const Tensor& grad, const Tensor& square_avg,
                   const Tensor& grad_avg, const Tensor& momentum_buffer,
                   const RmspropCoefficients& c);
void adagrad_step_(const Tensor& param, const Tensor& grad, const Tensor& sum,
                   const AdagradCoefficients& c);
}  // namespace native

}  // namespace ember
