#pragma once
// Internal to optim/: the one element loop every optimizer's update runs.
//
// Note [Fused optimizer steps]
// PyTorch's single-tensor path updates a parameter with a chain of tensor ops (Adam: mul_,
// add_, mul_, addcmul_, sqrt, div, add_, addcdiv_), each one a pass over the whole tensor.
// ember runs the same formula as one pass: each element of the parameter, its gradient and its
// state is read once, updated in registers and written once. The pass works on raw contiguous
// CPU data of the parameter's dtype (float32 and float64 compute in their own type, the 16-bit
// floats in float, as opmath_t says) and is split over the thread pool (parallel_for) for large
// tensors. The coefficients are computed once per parameter in double, as PyTorch does in
// Python, then rounded to the computing type.
//
// A parameter, gradient or state tensor that is not contiguous or not on the CPU is staged: a
// contiguous CPU copy is updated and copied back (a rare case: parameters are made contiguous,
// states are made like their parameter), so every layout takes the same formula.

#include <array>
#include <cmath>
#include <initializer_list>
#include <type_traits>

#include "core/dtype.h"
#include "autograd/ops/copy.h"
#include "core/ops/factory.h"
#include "core/parallel.h"
#include "core/tensor.h"

namespace ember::optim::detail {

// `t` itself when it is a contiguous CPU tensor, else a contiguous CPU copy.
inline Tensor staged(const Tensor& t) {
  if (!t.defined() || (t.is_cpu() && t.is_contiguous())) return t;
  return t.to(kCPU).contiguous();
}

// Runs fn(p, g, s, begin, end) over the elements [0, numel) of `param` in chunks on the thread
// pool: p is scalar_t* (the parameter), g is const scalar_t* (its gradient) and s a
// std::array<scalar_t*, 3> with one pointer per entry of `state` (nullptr for an undefined
// tensor: a state the update does not use). Writes the parameter and the state back (bumping
// their versions, as an in-place op would). `who` names the optimizer in errors.
template <class Fn>
void fused_update(const char* who, const Tensor& param, const Tensor& grad,
                  std::initializer_list<Tensor> state, Fn&& fn) {
  constexpr size_t kMaxState = 3;
  EMBER_INTERNAL_ASSERT(state.size() <= kMaxState, "fused_update: too many state tensors");
  std::array<Tensor, kMaxState> original{}, work{};
  size_t n_state = 0;
  for (const Tensor& s : state) {
    if (s.defined()) {
      EMBER_CHECK(s.dtype() == param.dtype() && s.sizes() == param.sizes(), who,
                  ": a state tensor has dtype ", dtype_name(s.dtype()), " and shape ", s.sizes(),
                  " but its parameter has dtype ", dtype_name(param.dtype()), " and shape ",
                  param.sizes(), " (was the parameter converted after the optimizer stepped?)");
    }
    original[n_state] = s;
    work[n_state] = staged(s);
    ++n_state;
  }
  const Tensor p = staged(param);
  const Tensor g = staged(grad);
  const int64_t n = p.numel();
  EMBER_DISPATCH_FLOATING(p.dtype(), who, [&] {
    scalar_t* pp = p.data_ptr<scalar_t>();
    const scalar_t* gp = g.data_ptr<scalar_t>();
    std::array<scalar_t*, kMaxState> sp{};
    for (size_t k = 0; k < n_state; ++k)
      sp[k] = work[k].defined() ? work[k].data_ptr<scalar_t>() : nullptr;
    parallel_for(0, n, kGrainSize, [&](int64_t begin, int64_t end) { fn(pp, gp, sp, begin, end); });
  });
  for (size_t k = 0; k < n_state; ++k) {
    if (!original[k].defined()) continue;
    if (work[k].is_same(original[k]))
      original[k].bump_version();
    else
      native::copy_(original[k], work[k]);
  }
  if (p.is_same(param))
    param.bump_version();
  else
    native::copy_(param, p);
}

// fn(std::true_type{}) or fn(std::false_type{}): turns a loop-invariant choice into a
// compile-time one (`if constexpr (decltype(flag)::value)`), for loops whose stores depend on
// it, which the compiler would otherwise leave scalar.
template <class Fn>
void static_bool(bool flag, Fn&& fn) {
  if (flag)
    fn(std::true_type{});
  else
    fn(std::false_type{});
}

// Adds one to a step counter (a one-element tensor) and returns the new count.
inline double increment_step(const Tensor& step) {
  if (step.is_cpu() && step.dtype() == kFloat32) {
    float* s = step.data_ptr<float>();
    *s += 1.0f;
    return static_cast<double>(*s);
  }
  if (step.is_cpu() && step.dtype() == kInt64) {
    int64_t* s = step.data_ptr<int64_t>();
    *s += 1;
    return static_cast<double>(*s);
  }
  const double next = step.item<double>() + 1.0;
  native::fill_(step, next);
  return step.item<double>();
}

}  // namespace ember::optim::detail
