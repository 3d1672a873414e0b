#pragma once
// The values of the filling factories (arange, linspace), element i of n, shared by the CPU
// loops (kernels/cpu/factory.cpp) and the CUDA kernels. Each computes in double (or int64 for
// an integer arange) and rounds once to the output type T.

#include <cstdint>

#include "kernels/math/common.h"
#include "kernels/math/convert.h"

namespace ember::kernels::math {

// arange with a floating start, end or step: start + i * step in double.
template <class T>
struct ArangeOp {
  double start, step;
  EMBER_HOST_DEVICE T operator()(int64_t i) const {
    return convert<T>(start + static_cast<double>(i) * step);  // Note [Floats to integers]
  }
};

// arange of integers: start + i * step in int64.
template <class T>
struct ArangeIntOp {
  int64_t start, step;
  EMBER_HOST_DEVICE T operator()(int64_t i) const { return static_cast<T>(start + i * step); }
};

// linspace of `steps` values: filled from both ends, as PyTorch does, so that the first value
// is exactly `start` and the last exactly `end` (step = (end - start) / (steps - 1)). One step
// is just `start`, as in PyTorch and NumPy.
template <class T>
struct LinspaceOp {
  double start, end, step;
  int64_t steps;

  static LinspaceOp make(double start, double end, int64_t steps) {
    return {start, end, steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0, steps};
  }

  EMBER_HOST_DEVICE T operator()(int64_t i) const {
    const int64_t half = steps / 2;
    const double v = steps == 1 || i < half ? start + step * static_cast<double>(i)
                                            : end - step * static_cast<double>(steps - 1 - i);
    return convert<T>(v);  // Note [Floats to integers]: defined for every value
  }
};

}  // namespace ember::kernels::math
