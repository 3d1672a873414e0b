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

// Note [Integer overflow wraps]
// Integer +, - and * wrap around in two's complement, as PyTorch's do (int8 100 + 100 is -56).
// C++ leaves signed overflow undefined, so the integer kernels compute in the unsigned type of the
// same width -- at least `unsigned int`, since a uint8_t or uint16_t would be promoted to a signed
// int -- and cut the result back. Floating types and bool use the plain operators.
template <class T>
using wrapping_uint_t =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <class T>
EMBER_HOST_DEVICE constexpr T wrapping_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = wrapping_uint_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}

template <class T>
EMBER_HOST_DEVICE constexpr T wrapping_mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = wrapping_uint_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

// fn(std::true_type{}) or fn(std::false_type{}): turns a loop-invariant choice into a
// compile-time one, for loops whose stores depend on it (the compiler would otherwise leave
// them scalar; a kernel would otherwise branch per element).
template <class Fn>
void static_bool(bool flag, Fn&& fn) {
  if (flag)
    fn(std::true_type{});
  else
    fn(std::false_type{});
}

}  // namespace ember::kernels::math
