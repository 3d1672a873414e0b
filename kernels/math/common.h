#pragma once
// Small helpers every family of kernel math uses (CPU and CUDA alike).

#include <type_traits>

#include "core/macros.h"

namespace ember::kernels::math {

// x != x for floating types; false for integers and bool (folds away).
template <class T>
EMBER_HOST_DEVICE constexpr bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return x != x;
  } else {
    (void)x;
    return false;
  }
}

}  // namespace ember::kernels::math
