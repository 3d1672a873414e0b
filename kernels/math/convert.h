#pragma once
// Value conversion between element types, shared by the CPU and CUDA kernels.
// 16-bit floats convert through float; anything to bool is "!= 0".

#include <type_traits>

#include "core/dtype.h"

namespace ember::kernels::math {

template <class To, class From>
EMBER_HOST_DEVICE inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<opmath_t<From>>(v) != static_cast<opmath_t<From>>(0);
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(static_cast<opmath_t<From>>(v)));
  } else {
    return static_cast<To>(static_cast<opmath_t<From>>(v));
  }
}

}  // namespace ember::kernels::math
