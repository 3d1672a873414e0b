#pragma once
// Element types, their C++ types, PyTorch's promotion rules, and the dispatch macros that turn a
// runtime DType into a compile-time scalar_t.

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>

#include "core/error.h"
#include "core/half.h"

namespace ember {

// Note [DType values are stable]
// Int8 and Int16 came later and are appended, as PyTorch appends to ScalarType, so that the
// value of every older dtype stays what it was (tests seed their random inputs with it).
enum class DType : uint8_t {
  Bool,
  UInt8,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Int8,
  Int16
};
constexpr int kNumDTypes = 10;

// Short names for the user-facing API: ember::kFloat32 etc. (like torch::kFloat32).
constexpr DType kBool = DType::Bool;
constexpr DType kUInt8 = DType::UInt8;
constexpr DType kInt8 = DType::Int8;
constexpr DType kInt16 = DType::Int16;
constexpr DType kInt32 = DType::Int32;
constexpr DType kInt64 = DType::Int64;
constexpr DType kFloat16 = DType::Float16;
constexpr DType kBFloat16 = DType::BFloat16;
constexpr DType kFloat32 = DType::Float32;
constexpr DType kFloat64 = DType::Float64;

size_t itemsize(DType t);
const char* dtype_name(DType t);  // "float32", "int64", ... as PyTorch prints them
std::ostream& operator<<(std::ostream& os, DType t);

constexpr bool is_floating(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}
constexpr bool is_integral(DType t, bool include_bool = false) {
  return t == DType::UInt8 || t == DType::Int8 || t == DType::Int16 || t == DType::Int32 ||
         t == DType::Int64 || (include_bool && t == DType::Bool);
}

// PyTorch's promote_types over the dtypes ember has (c10/core/ScalarType.cpp's table, restricted;
// checked entry by entry against torch.promote_types: tests/golden/gen_small_int.py).
DType promote_types(DType a, DType b);

// The default float type used by factories and by int-tensor-op-float-scalar promotion.
DType default_dtype();
void set_default_dtype(DType t);  // must be a floating type

// C++ type <-> DType.
template <class T>
struct dtype_of;
template <>
struct dtype_of<bool> {
  static constexpr DType value = DType::Bool;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr DType value = DType::UInt8;
};
template <>
struct dtype_of<int8_t> {
  static constexpr DType value = DType::Int8;
};
template <>
struct dtype_of<int16_t> {
  static constexpr DType value = DType::Int16;
};
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = DType::Int32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::Int64;
};
template <>
struct dtype_of<Half> {
  static constexpr DType value = DType::Float16;
};
template <>
struct dtype_of<BFloat16> {
  static constexpr DType value = DType::BFloat16;
};
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::Float64;
};
template <class T>
constexpr DType dtype_of_v = dtype_of<T>::value;

// The type element-wise math runs in: float for the 16-bit floats, the type itself otherwise
// (PyTorch's opmath_type).
template <class T>
struct opmath {
  using type = T;
};
template <>
struct opmath<Half> {
  using type = float;
};
template <>
struct opmath<BFloat16> {
  using type = float;
};
template <class T>
using opmath_t = typename opmath<T>::type;

}  // namespace ember

// Dispatch: EMBER_DISPATCH_<SET>(dtype, "op", [&] { ... scalar_t ... });
// The lambda body is instantiated once per dtype in the set; any other dtype throws an error
// naming the op and the dtype.
#define EMBER_DISPATCH_CASE(DT, T, ...) \
  case DT: {                            \
    using scalar_t = T;                 \
    return __VA_ARGS__();               \
  }

#define EMBER_DISPATCH_SWITCH(DTYPE, NAME, ...)                              \
  [&] {                                                                      \
    const ::ember::DType _dt = (DTYPE);                                      \
    switch (_dt) {                                                           \
      __VA_ARGS__                                                            \
      default:                                                               \
        EMBER_ERROR(NAME, ": unsupported dtype ", ::ember::dtype_name(_dt)); \
    }                                                                        \
  }()

// The lambda is passed as __VA_ARGS__ so that commas inside it (captures, template arguments)
// do not split it into several macro arguments.
#define EMBER_CASES_FLOATING(...)                                          \
  EMBER_DISPATCH_CASE(::ember::DType::Float32, float, __VA_ARGS__)         \
  EMBER_DISPATCH_CASE(::ember::DType::Float64, double, __VA_ARGS__)        \
  EMBER_DISPATCH_CASE(::ember::DType::Float16, ::ember::Half, __VA_ARGS__) \
  EMBER_DISPATCH_CASE(::ember::DType::BFloat16, ::ember::BFloat16, __VA_ARGS__)

#define EMBER_CASES_INTEGRAL(...)                                  \
  EMBER_DISPATCH_CASE(::ember::DType::UInt8, uint8_t, __VA_ARGS__) \
  EMBER_DISPATCH_CASE(::ember::DType::Int8, int8_t, __VA_ARGS__)   \
  EMBER_DISPATCH_CASE(::ember::DType::Int16, int16_t, __VA_ARGS__) \
  EMBER_DISPATCH_CASE(::ember::DType::Int32, int32_t, __VA_ARGS__) \
  EMBER_DISPATCH_CASE(::ember::DType::Int64, int64_t, __VA_ARGS__)

#define EMBER_CASES_BOOL(...) EMBER_DISPATCH_CASE(::ember::DType::Bool, bool, __VA_ARGS__)

// Float types only (exp, log, softmax...).
#define EMBER_DISPATCH_FLOATING(DTYPE, NAME, ...) \
  EMBER_DISPATCH_SWITCH(DTYPE, NAME, EMBER_CASES_FLOATING(__VA_ARGS__))
// Integer types only, without bool (bitwise shifts...).
#define EMBER_DISPATCH_INTEGRAL(DTYPE, NAME, ...) \
  EMBER_DISPATCH_SWITCH(DTYPE, NAME, EMBER_CASES_INTEGRAL(__VA_ARGS__))
// Every numeric type: floats and integers, no bool (add, mul, sum...).
#define EMBER_DISPATCH_NUMERIC(DTYPE, NAME, ...) \
  EMBER_DISPATCH_SWITCH(DTYPE, NAME,             \
                        EMBER_CASES_FLOATING(__VA_ARGS__) EMBER_CASES_INTEGRAL(__VA_ARGS__))
// Every dtype (copy, fill, comparisons, where...).
#define EMBER_DISPATCH_ALL(DTYPE, NAME, ...)                                                \
  EMBER_DISPATCH_SWITCH(DTYPE, NAME,                                                        \
                        EMBER_CASES_FLOATING(__VA_ARGS__) EMBER_CASES_INTEGRAL(__VA_ARGS__) \
                            EMBER_CASES_BOOL(__VA_ARGS__))
