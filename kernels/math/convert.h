#pragma once
// Value conversion between element types, shared by the CPU and CUDA kernels.
// 16-bit floats convert through float; anything to bool is "!= 0".
//
// Note [Floats to narrow integers]
// A float converts to int8, int16 or uint8 through int64, then wraps to the narrow type: 300.0
// to int8 is 44 and -1.0 to uint8 is 255, as PyTorch gives on x86 (its cast goes through a 32-bit
// register). A direct static_cast would be undefined behaviour for any value out of range.

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
  } else if constexpr (std::is_integral_v<To> && sizeof(To) < sizeof(int32_t) &&
                       !std::is_integral_v<opmath_t<From>>) {
    return static_cast<To>(static_cast<int64_t>(static_cast<opmath_t<From>>(v)));
  } else {
    return static_cast<To>(static_cast<opmath_t<From>>(v));
  }
}

}  // namespace ember::kernels::math
