#pragma once
// Binary element-wise math shared by the CPU loops and the CUDA kernels. Each functor computes
// in opmath_t (float for Half/BFloat16) and returns the storage type.

#include "core/dtype.h"

namespace ember::kernels::math {

// out = a + alpha * b (sub is add with -alpha).
template <class T>
struct AddOp {
  opmath_t<T> alpha;
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    using M = opmath_t<T>;
    return static_cast<T>(static_cast<M>(a) + alpha * static_cast<M>(b));
  }
};

template <class T>
struct MulOp {
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    using M = opmath_t<T>;
    return static_cast<T>(static_cast<M>(a) * static_cast<M>(b));
  }
};

}  // namespace ember::kernels::math
