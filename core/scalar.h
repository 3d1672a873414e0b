#pragma once
// Scalar: a C++ number passed to an op (`t * 2.5`, `t.add(1, alpha)`), remembering whether it was
// a bool, an integer or a floating value, because PyTorch's type promotion treats those
// differently from tensors: an int32 tensor times 2.5 is float32, times 2 stays int32.

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <type_traits>

#include "core/dtype.h"

namespace ember {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Integral, Floating };

  Scalar() : Scalar(int64_t{0}) {}
  Scalar(bool v) : kind_(Kind::Bool), i_(v) {}
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Integral), i_(static_cast<int64_t>(v)) {}
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(Kind::Floating), d_(static_cast<double>(v)) {}
  Scalar(Half v) : Scalar(static_cast<float>(v)) {}
  Scalar(BFloat16 v) : Scalar(static_cast<float>(v)) {}

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::Floating; }
  bool is_integral() const { return kind_ == Kind::Integral; }
  bool is_bool() const { return kind_ == Kind::Bool; }

  double to_double() const { return kind_ == Kind::Floating ? d_ : static_cast<double>(i_); }
  int64_t to_int64() const { return kind_ == Kind::Floating ? static_cast<int64_t>(d_) : i_; }
  bool to_bool() const { return kind_ == Kind::Floating ? d_ != 0.0 : i_ != 0; }

  // The value as T, for kernels: to<float>(), to<int32_t>(), to<Half>()...
  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) {
      return to_bool();
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(to_int64());
    } else {
      return static_cast<T>(to_double());
    }
  }

  // Whether the value may be converted to T, by PyTorch's rule (c10::overflows): for an integer
  // T it lies in [lowest, max], or for an unsigned T in [-max, max] (a negative value wraps:
  // -1 is uint8's 255); NaN and infinities never fit an integer. Floating T and bool take any
  // value. Where it does not fit, PyTorch's fill_, full and item<T> say "value cannot be
  // converted to type int8_t without overflow", and so do ember's (Note [Scalars that overflow]).
  template <class T>
  bool fits() const {
    if constexpr (std::is_same_v<T, bool> || !std::is_integral_v<T>) {
      return true;
    } else {
      const double max = static_cast<double>(std::numeric_limits<T>::max());
      const double lo = std::is_unsigned_v<T> ? -max : std::numeric_limits<T>::lowest();
      if (kind_ == Kind::Floating) {
        // int64's max is not a double: the doubles below it are those below 2^63.
        return d_ >= lo && (sizeof(T) < 8 ? d_ <= max : d_ < 9223372036854775808.0);
      }
      if constexpr (std::is_unsigned_v<T>) {
        const auto m = static_cast<int64_t>(std::numeric_limits<T>::max());
        return i_ >= -m && i_ <= m;
      } else {
        return i_ >= std::numeric_limits<T>::lowest() && i_ <= std::numeric_limits<T>::max();
      }
    }
  }

  // The dtype this number has when it takes part in type promotion as a "wrapped number":
  // bool, int64, or the default float dtype.
  DType dtype() const;

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

std::ostream& operator<<(std::ostream& os, const Scalar& s);

// Note [Scalars that overflow]
// A number that becomes one value of a tensor (fill_, full, masked_fill) or leaves one
// (item<T>) must fit the integer type it goes to: fill_ of an int8 tensor with 300 is an error,
// as in PyTorch. Arithmetic with a number wraps instead (int8 + 300 adds 300 mod 256, PyTorch
// again), and clamp's bounds saturate to the dtype's range.

// Raises "<op>: value V cannot be converted to dtype D without overflow" unless s fits dtype.
void check_fits(const Scalar& s, DType dtype, const char* op);

}  // namespace ember
