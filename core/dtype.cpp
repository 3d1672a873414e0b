#include "core/dtype.h"

#include <ostream>

namespace ember {

namespace {
struct DTypeInfo {
  DType dtype;
  const char* name;
  size_t size;
};
constexpr DTypeInfo kDTypeInfo[] = {
    {DType::Bool, "bool", 1},       {DType::UInt8, "uint8", 1},
    {DType::Int32, "int32", 4},     {DType::Int64, "int64", 8},
    {DType::Float16, "float16", 2}, {DType::BFloat16, "bfloat16", 2},
    {DType::Float32, "float32", 4}, {DType::Float64, "float64", 8},
    {DType::Int8, "int8", 1},       {DType::Int16, "int16", 2},
};
static_assert(sizeof(kDTypeInfo) / sizeof(kDTypeInfo[0]) == kNumDTypes,
              "every DType needs a row in kDTypeInfo");
constexpr bool rows_in_enum_order() {
  for (int i = 0; i < kNumDTypes; ++i)
    if (static_cast<int>(kDTypeInfo[i].dtype) != i) return false;
  return true;
}
static_assert(rows_in_enum_order(), "kDTypeInfo is indexed by the DType's value");

DType g_default_dtype = DType::Float32;
}  // namespace

size_t itemsize(DType t) { return kDTypeInfo[static_cast<int>(t)].size; }
const char* dtype_name(DType t) { return kDTypeInfo[static_cast<int>(t)].name; }
std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // Order of the enum: Bool, UInt8, Int32, Int64, Float16, BFloat16, Float32, Float64, Int8,
  // Int16 (Note [DType values are stable]); each short name is its kind and its size in bytes.
  constexpr DType b1 = DType::Bool, u1 = DType::UInt8, i4 = DType::Int32, i8 = DType::Int64,
                  f2 = DType::Float16, bf = DType::BFloat16, f4 = DType::Float32,
                  f8 = DType::Float64, i1 = DType::Int8, i2 = DType::Int16;
  // uint8 with int8 is int16, the smallest type holding both ranges (as PyTorch).
  static constexpr DType table[kNumDTypes][kNumDTypes] = {
      /*        b1  u1  i4  i8  f2  bf  f4  f8  i1  i2 */
      /* b1 */ {b1, u1, i4, i8, f2, bf, f4, f8, i1, i2},
      /* u1 */ {u1, u1, i4, i8, f2, bf, f4, f8, i2, i2},
      /* i4 */ {i4, i4, i4, i8, f2, bf, f4, f8, i4, i4},
      /* i8 */ {i8, i8, i8, i8, f2, bf, f4, f8, i8, i8},
      /* f2 */ {f2, f2, f2, f2, f2, f4, f4, f8, f2, f2},
      /* bf */ {bf, bf, bf, bf, f4, bf, f4, f8, bf, bf},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f8, f4, f4},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
      /* i1 */ {i1, i2, i4, i8, f2, bf, f4, f8, i1, i2},
      /* i2 */ {i2, i2, i4, i8, f2, bf, f4, f8, i2, i2},
  };
  return table[static_cast<int>(a)][static_cast<int>(b)];
}

DType default_dtype() { return g_default_dtype; }
void set_default_dtype(DType t) {
  EMBER_CHECK(t == DType::Float32 || t == DType::Float64,
              "set_default_dtype: only float32 and float64 may be the default, got ",
              dtype_name(t));
  g_default_dtype = t;
}

std::ostream& operator<<(std::ostream& os, Half h) { return os << static_cast<float>(h); }
std::ostream& operator<<(std::ostream& os, BFloat16 h) { return os << static_cast<float>(h); }

}  // namespace ember
