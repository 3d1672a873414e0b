#pragma once
// Value conversion between element types, shared by the CPU and CUDA kernels.
// 16-bit floats convert through float; anything to bool is "!= 0".
//
// Note [Floats to integers]
// A float converts to an integer as PyTorch's does on x86, where the cast goes through a 32-bit
// register (a 64-bit one for int64): truncated to int32, then wrapped to a narrower type (300.0 to
// int8 is 44, -1.0 to uint8 is 255). NaN and values outside the register's range give its
// "integer indefinite", the minimum (INT32_MIN, so 0 for int8). The range is checked first: a
// direct static_cast would be undefined behaviour for every value out of range.

#include <cstdint>
#include <limits>
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
  } else if constexpr (std::is_integral_v<To> && !std::is_integral_v<opmath_t<From>>) {
    using I = std::conditional_t<(sizeof(To) <= sizeof(int32_t)), int32_t, int64_t>;
    constexpr double kLimit = sizeof(I) == 4 ? 2147483648.0 : 9223372036854775808.0;  // 2^31, 2^63
    const double d = static_cast<double>(static_cast<opmath_t<From>>(v));
    const bool in_range = d >= -kLimit && d < kLimit;  // false for NaN
    return static_cast<To>(in_range ? static_cast<I>(d) : std::numeric_limits<I>::min());
  } else {
    return static_cast<To>(static_cast<opmath_t<From>>(v));
  }
}

}  // namespace ember::kernels::math
