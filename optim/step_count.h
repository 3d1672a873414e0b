#pragma once
// Internal to optim/: the step counters of Adam, RMSprop and Adagrad.

#include <cstdint>

#include "core/ops/copy.h"
#include "core/tensor.h"

namespace ember::optim::detail {

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
