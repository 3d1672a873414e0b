#pragma once
// Scalar: a C++ number passed to an op (`t * 2.5`, `t.add(1, alpha)`), remembering whether it was
// a bool, an integer or a floating value, because PyTorch's type promotion treats those
// differently from tensors: an int32 tensor times 2.5 is float32, times 2 stays int32.

#include <cstdint>
#include <iosfwd>
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

}  // namespace ember
