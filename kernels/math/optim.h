#pragma once
// The per-element updates of the optimizers, shared by the CPU loops (kernels/cpu/optim.cpp)
// and the CUDA kernels.
//
// Each functor is one optimizer's update of one element, PyTorch 1.13's single-tensor formulas
// (optim/*.h document them). It is templated on M, the type the math runs in (opmath_t of the
// parameter's dtype: float for Half/BFloat16, else the type itself), and takes the element of
// the parameter and of each state by reference: the backend loop converts each element to M,
// applies the functor and rounds every written value back once (Note [Fused optimizer steps]
// in core/ops/optim.h). The gradient is taken by value.
//
// The coefficients are computed once per parameter in double (core/ops/optim.h's
// SgdCoefficients, AdamCoefficients, ...) and rounded to M by from(): a template on the
// coefficient struct, so that this header needs nothing of core/ops. Choices that decide which
// states are written (momentum, amsgrad, centered) are template parameters, so that the loop's
// stores are unconditional and it vectorises; the other flags are loop-invariant booleans.

#include <cmath>

#include "kernels/math/common.h"

namespace ember::kernels::math {

// SGD with momentum, dampening, Nesterov, weight decay and maximize. kMomentum: a momentum
// buffer is read (unless first) and written.
template <class M, bool kMomentum>
struct SgdStep {
  M weight_decay, momentum, one_minus_dampening, neg_lr;
  bool has_weight_decay, nesterov, maximize;
  bool first;  // the buffer is set to the first (decayed) gradient, its old value unread

  template <class Coefficients>
  static SgdStep from(const Coefficients& c) {
    return {static_cast<M>(c.weight_decay),
            static_cast<M>(c.momentum),
            static_cast<M>(1.0 - c.dampening),
            static_cast<M>(-c.lr),
            c.weight_decay != 0.0,
            c.nesterov,
            c.maximize,
            c.first};
  }

  // param, grad, momentum_buffer (unused without kMomentum)
  EMBER_HOST_DEVICE void operator()(M& p, M g, M& buf) const {
    M d = maximize ? -g : g;
    if (has_weight_decay) d = d + weight_decay * p;
    if constexpr (kMomentum) {
      const M v = first ? d : buf * momentum + one_minus_dampening * d;
      buf = v;
      d = nesterov ? d + momentum * v : v;
    }
    p = p + neg_lr * d;
  }
};

// Adam (L2 weight decay added to the gradient) and AdamW (decoupled: the parameter decays by
// 1 - lr * weight_decay first). kAmsgrad: max_exp_avg_sq is read and written.
template <class M, bool kAmsgrad>
struct AdamStep {
  M beta1, beta2, one_minus_beta1, one_minus_beta2, weight_decay, decay, bias_correction2_sqrt, eps,
      neg_step_size;
  bool decoupled, l2, maximize;

  template <class Coefficients>
  static AdamStep from(const Coefficients& c) {
    return {static_cast<M>(c.beta1),
            static_cast<M>(c.beta2),
            static_cast<M>(1.0 - c.beta1),
            static_cast<M>(1.0 - c.beta2),
            static_cast<M>(c.weight_decay),
            static_cast<M>(1.0 - c.lr * c.weight_decay),
            static_cast<M>(c.bias_correction2_sqrt),
            static_cast<M>(c.eps),
            static_cast<M>(-c.step_size),
            c.decoupled,
            !c.decoupled && c.weight_decay != 0.0,
            c.maximize};
  }

  // param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq (unused without kAmsgrad)
  EMBER_HOST_DEVICE void operator()(M& p, M g, M& m, M& v, M& v_max) const {
    if (maximize) g = -g;
    if (decoupled) p = p * decay;
    if (l2) g = g + weight_decay * p;
    m = m * beta1 + one_minus_beta1 * g;
    v = v * beta2 + one_minus_beta2 * g * g;
    M second = v;
    if constexpr (kAmsgrad) {
      v_max = v_max < v ? v : v_max;  // std::max(v_max, v)
      second = v_max;
    }
    const M denom = std::sqrt(second) / bias_correction2_sqrt + eps;
    p = p + neg_step_size * m / denom;
  }
};

// RMSprop. kCentered: grad_avg is read and written (the variance estimate subtracts its
// square); kMomentum: a momentum buffer is read and written.
template <class M, bool kCentered, bool kMomentum>
struct RmspropStep {
  M alpha, one_minus_alpha, weight_decay, eps, momentum, neg_lr;
  bool has_weight_decay, maximize;

  template <class Coefficients>
  static RmspropStep from(const Coefficients& c) {
    return {static_cast<M>(c.alpha),        static_cast<M>(1.0 - c.alpha),
            static_cast<M>(c.weight_decay), static_cast<M>(c.eps),
            static_cast<M>(c.momentum),     static_cast<M>(-c.lr),
            c.weight_decay != 0.0,          c.maximize};
  }

  // param, grad, square_avg, grad_avg (unused unless kCentered), momentum_buffer (unused
  // unless kMomentum)
  EMBER_HOST_DEVICE void operator()(M& p, M g, M& square_avg, M& grad_avg, M& buf) const {
    if (maximize) g = -g;
    if (has_weight_decay) g = g + weight_decay * p;
    square_avg = square_avg * alpha + one_minus_alpha * g * g;
    M avg;
    if constexpr (kCentered) {
      grad_avg = grad_avg * alpha + one_minus_alpha * g;
      avg = std::sqrt(square_avg + static_cast<M>(-1) * grad_avg * grad_avg);
    } else {
      avg = std::sqrt(square_avg);
    }
    avg = avg + eps;
    if constexpr (kMomentum) {
      buf = buf * momentum + g / avg;
      p = p + neg_lr * buf;
    } else {
      p = p + neg_lr * g / avg;
    }
  }
};

// Adagrad (the learning rate already decayed: clr = lr / (1 + (step - 1) * lr_decay)).
template <class M>
struct AdagradStep {
  M weight_decay, eps, neg_clr;
  bool has_weight_decay, maximize;

  template <class Coefficients>
  static AdagradStep from(const Coefficients& c) {
    return {static_cast<M>(c.weight_decay), static_cast<M>(c.eps), static_cast<M>(-c.clr),
            c.weight_decay != 0.0, c.maximize};
  }

  // param, grad, sum
  EMBER_HOST_DEVICE void operator()(M& p, M g, M& sum) const {
    if (maximize) g = -g;
    if (has_weight_decay) g = g + weight_decay * p;
    sum = sum + g * g;
    const M std_ = std::sqrt(sum) + eps;
    p = p + neg_clr * g / std_;
  }
};

}  // namespace ember::kernels::math
