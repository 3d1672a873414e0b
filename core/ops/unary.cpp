#include "core/ops/unary.h"

#include <cmath>

#include "core/op_registry.h"
#include "core/ops/binary.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/tensor_iter.h"

namespace ember {

namespace {

// "pow_scalar" is pow(Tensor, Scalar); pow(Tensor, Tensor) is "pow" in the binary family.
// "clamp" covers clamp, clamp_min and clamp_max; "gelu" both approximations.
constexpr const char* kUnaryOps[] = {
    "neg",      "abs",        "sign",    "exp",   "exp2",       "expm1",       "log",
    "log2",     "log1p",      "sqrt",    "rsqrt", "reciprocal", "sin",         "cos",
    "tan",      "tanh",       "sigmoid", "relu",  "gelu",       "silu",        "softplus",
    "erf",      "floor",      "ceil",    "round", "trunc",      "pow_scalar",  "clamp",
    "hardtanh", "nan_to_num", "isnan",   "isinf", "isfinite",   "logical_not", "bitwise_not"};
static_assert(sizeof(kUnaryOps) / sizeof(kUnaryOps[0]) == 35);
const OpFamilyRegistrar registrar("unary", kUnaryOps);

// out = f(a) in a's dtype; `out` undefined: allocated, else written (in place: out is a).
Tensor same_dtype_out(Tensor out, const Tensor& a, const char* op,
                      const DispatchStub<unary_fn>& stub) {
  TensorIter iter = TensorIter::unary_op(out, a, op);
  stub(iter.device().type, iter);
  iter.cast_outputs();
  return out;
}

// out = f(a) in floating point (integer and bool inputs promote to the default dtype).
Tensor float_out(Tensor out, const Tensor& a, const char* op, const DispatchStub<unary_fn>& stub) {
  TensorIter iter = TensorIter::unary_float_op(out, a, op);
  stub(iter.device().type, iter);
  iter.cast_outputs();
  return out;
}

// out (bool) = f(a), a in its own dtype. In place, `out` keeps its dtype and receives 1 / 0.
Tensor bool_out(Tensor out, const Tensor& a, const char* op, const DispatchStub<unary_fn>& stub) {
  TensorIter iter = TensorIterConfig(op).add_output(out).add_input(a).output_dtype(kBool).build();
  if (!out.defined()) out = iter.output();
  stub(iter.device().type, iter);
  iter.cast_outputs();
  return out;
}

// floor, ceil, round, trunc: the identity on integers (PyTorch returns a copy); bool is an error.
Tensor rounding_out(Tensor out, const Tensor& a, const char* op,
                    const DispatchStub<unary_fn>& stub) {
  EMBER_CHECK(a.dtype() != kBool, op, ": unsupported dtype bool");
  if (is_integral(a.dtype())) {
    if (!out.defined()) return native::clone(a);
    if (!out.is_same(a)) native::copy_(out, a);
    return out;
  }
  return same_dtype_out(std::move(out), a, op, stub);
}

TensorIter clamp_iter(Tensor& out, const Tensor& a, const std::optional<Scalar>& min,
                      const std::optional<Scalar>& max, const char* op) {
  EMBER_CHECK(min.has_value() || max.has_value(), op,
              ": at least one of 'min' or 'max' must not be None");
  EMBER_CHECK(a.dtype() != kBool, op, ": unsupported dtype bool");
  return TensorIter::unary_op(out, a, op);
}

TensorIter hardtanh_iter(Tensor& out, const Tensor& a, const Scalar& min_val, const Scalar& max_val,
                         const char* op) {
  const bool greater = min_val.is_floating() || max_val.is_floating()
                           ? min_val.to_double() > max_val.to_double()
                           : min_val.to_int64() > max_val.to_int64();
  EMBER_CHECK(!greater, op, ": min_val cannot be greater than max_val (got min_val ", min_val,
              ", max_val ", max_val, ")");
  EMBER_CHECK(a.dtype() != kBool, op, ": unsupported dtype bool");
  return TensorIter::unary_op(out, a, op);
}

// The dtype pow(a, exponent) computes in, after checking integer exponents.
DType pow_scalar_dtype(const Tensor& a, const Scalar& exponent, const char* op) {
  DType dt = result_type(a, exponent);
  EMBER_CHECK(is_floating(dt) || !(exponent.is_integral() && exponent.to_int64() < 0), op,
              ": Integers to negative integer powers are not allowed (", dtype_name(a.dtype()),
              " tensor to the power ", exponent, ")");
  return dt;
}

GeluApproximation parse_gelu_approximation(const std::string& approximate) {
  if (approximate == "none") return GeluApproximation::None;
  if (approximate == "tanh") return GeluApproximation::Tanh;
  EMBER_ERROR("gelu: approximate must be \"none\" or \"tanh\", got \"", approximate, "\"");
}

}  // namespace

// ---- dtype-preserving ----------------------------------------------------------------------

Tensor native::neg(const Tensor& t) {
  EMBER_CHECK(t.dtype() != kBool,
              "neg: negation, the `-` operator, on a bool tensor is not "
              "supported; use logical_not() instead");
  return same_dtype_out(Tensor(), t, "neg", neg_stub);
}
const Tensor& native::neg_(const Tensor& self) {
  EMBER_CHECK(self.dtype() != kBool,
              "neg_: negation, the `-` operator, on a bool tensor is not "
              "supported; use logical_not_() instead");
  same_dtype_out(self, self, "neg_", neg_stub);
  self.bump_version();
  return self;
}

#define EMBER_SAME_DTYPE_UNARY(name)                                                               \
  Tensor native::name(const Tensor& t) { return same_dtype_out(Tensor(), t, #name, name##_stub); } \
  const Tensor& native::name##_(const Tensor& self) {                                              \
    same_dtype_out(self, self, #name "_", name##_stub);                                            \
    self.bump_version();                                                                           \
    return self;                                                                                   \
  }
EMBER_SAME_DTYPE_UNARY(abs)
EMBER_SAME_DTYPE_UNARY(sign)
EMBER_SAME_DTYPE_UNARY(relu)
#undef EMBER_SAME_DTYPE_UNARY

#define EMBER_ROUNDING_UNARY(name)                                                               \
  Tensor native::name(const Tensor& t) { return rounding_out(Tensor(), t, #name, name##_stub); } \
  const Tensor& native::name##_(const Tensor& self) {                                            \
    rounding_out(self, self, #name "_", name##_stub);                                            \
    self.bump_version();                                                                         \
    return self;                                                                                 \
  }
EMBER_ROUNDING_UNARY(floor)
EMBER_ROUNDING_UNARY(ceil)
EMBER_ROUNDING_UNARY(round)

Tensor native::round(const Tensor& t, int64_t decimals) {
  if (decimals == 0) return native::round(t);
  EMBER_CHECK(t.defined() && is_floating(t.dtype()), "round: decimals=", decimals,
              " needs a floating-point tensor, got ",
              t.defined() ? dtype_name(t.dtype()) : "an undefined tensor");
  EMBER_CHECK(decimals >= -400 && decimals <= 400, "round: decimals must be in [-400, 400], got ",
              decimals);  // 10^400 is inf in double already: every answer is then 0 or x
  const bool narrow = t.dtype() == kFloat16 || t.dtype() == kBFloat16;
  const Tensor x = narrow ? native::to(t, kFloat32) : t;
  // The power of ten is a wrapped number, so it is rounded to x's dtype first, as PyTorch's
  // kernel rounds it to its opmath type.
  const double ten_pow = std::pow(10.0, static_cast<double>(decimals < 0 ? -decimals : decimals));
  Tensor y = decimals > 0 ? native::div(native::round(native::mul(x, ten_pow)), ten_pow)
                          : native::mul(native::round(native::div(x, ten_pow)), ten_pow);
  return narrow ? native::to(y, t.dtype()) : y;
}

const Tensor& native::round_(const Tensor& self, int64_t decimals) {
  Tensor r = native::round(self, decimals);
  native::copy_(self, r);
  return self;
}
EMBER_ROUNDING_UNARY(trunc)
#undef EMBER_ROUNDING_UNARY

Tensor native::clamp(const Tensor& t, std::optional<Scalar> min, std::optional<Scalar> max) {
  Tensor out;
  TensorIter iter = clamp_iter(out, t, min, max, "clamp");
  clamp_stub(iter.device().type, iter, min, max);
  iter.cast_outputs();
  return out;
}
Tensor native::clamp_min(const Tensor& t, const Scalar& min) {
  return native::clamp(t, min, std::nullopt);
}
Tensor native::clamp_max(const Tensor& t, const Scalar& max) {
  return native::clamp(t, std::nullopt, max);
}
const Tensor& native::clamp_(const Tensor& self, std::optional<Scalar> min,
                             std::optional<Scalar> max) {
  Tensor out = self;
  TensorIter iter = clamp_iter(out, self, min, max, "clamp_");
  clamp_stub(iter.device().type, iter, min, max);
  iter.cast_outputs();
  self.bump_version();
  return self;
}
const Tensor& native::clamp_min_(const Tensor& self, const Scalar& min) {
  return native::clamp_(self, min, std::nullopt);
}
const Tensor& native::clamp_max_(const Tensor& self, const Scalar& max) {
  return native::clamp_(self, std::nullopt, max);
}

Tensor native::hardtanh(const Tensor& t, const Scalar& min_val, const Scalar& max_val) {
  Tensor out;
  TensorIter iter = hardtanh_iter(out, t, min_val, max_val, "hardtanh");
  hardtanh_stub(iter.device().type, iter, min_val, max_val);
  iter.cast_outputs();
  return out;
}
const Tensor& native::hardtanh_(const Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  Tensor out = self;
  TensorIter iter = hardtanh_iter(out, self, min_val, max_val, "hardtanh_");
  hardtanh_stub(iter.device().type, iter, min_val, max_val);
  iter.cast_outputs();
  self.bump_version();
  return self;
}

Tensor native::nan_to_num(const Tensor& t, std::optional<double> nan, std::optional<double> posinf,
                          std::optional<double> neginf) {
  if (!is_floating(t.dtype())) return native::clone(t);
  Tensor out;
  TensorIter iter = TensorIter::unary_op(out, t, "nan_to_num");
  nan_to_num_stub(iter.device().type, iter, nan.value_or(0.0), posinf, neginf);
  iter.cast_outputs();
  return out;
}
const Tensor& native::nan_to_num_(const Tensor& self, std::optional<double> nan,
                                  std::optional<double> posinf, std::optional<double> neginf) {
  if (is_floating(self.dtype())) {
    Tensor out = self;
    TensorIter iter = TensorIter::unary_op(out, self, "nan_to_num_");
    nan_to_num_stub(iter.device().type, iter, nan.value_or(0.0), posinf, neginf);
    iter.cast_outputs();
  }
  self.bump_version();
  return self;
}

Tensor native::pow(const Tensor& t, const Scalar& exponent) {
  DType dt = pow_scalar_dtype(t, exponent, "pow");
  Tensor out;
  TensorIter iter = TensorIter::unary_op(out, native::to(t, dt), "pow");
  pow_scalar_stub(iter.device().type, iter, exponent);
  iter.cast_outputs();
  return out;
}
const Tensor& native::pow_(const Tensor& self, const Scalar& exponent) {
  DType dt = pow_scalar_dtype(self, exponent, "pow_");
  EMBER_CHECK(dt == self.dtype(), "pow_: result type ", dtype_name(dt),
              " can't be cast to the desired output type ", dtype_name(self.dtype()));
  Tensor out = self;
  TensorIter iter = TensorIter::unary_op(out, self, "pow_");
  pow_scalar_stub(iter.device().type, iter, exponent);
  iter.cast_outputs();
  self.bump_version();
  return self;
}

// ---- floating math --------------------------------------------------------------------------

#define EMBER_FLOAT_UNARY(name)                                                               \
  Tensor native::name(const Tensor& t) { return float_out(Tensor(), t, #name, name##_stub); } \
  const Tensor& native::name##_(const Tensor& self) {                                         \
    float_out(self, self, #name "_", name##_stub);                                            \
    self.bump_version();                                                                      \
    return self;                                                                              \
  }
EMBER_FLOAT_UNARY(exp)
EMBER_FLOAT_UNARY(exp2)
EMBER_FLOAT_UNARY(expm1)
EMBER_FLOAT_UNARY(log)
EMBER_FLOAT_UNARY(log2)
EMBER_FLOAT_UNARY(log1p)
EMBER_FLOAT_UNARY(sqrt)
EMBER_FLOAT_UNARY(rsqrt)
EMBER_FLOAT_UNARY(reciprocal)
EMBER_FLOAT_UNARY(sin)
EMBER_FLOAT_UNARY(cos)
EMBER_FLOAT_UNARY(tan)
EMBER_FLOAT_UNARY(tanh)
EMBER_FLOAT_UNARY(sigmoid)
EMBER_FLOAT_UNARY(silu)
EMBER_FLOAT_UNARY(erf)
#undef EMBER_FLOAT_UNARY

Tensor native::gelu(const Tensor& t, const std::string& approximate) {
  GeluApproximation approx = parse_gelu_approximation(approximate);
  Tensor out;
  TensorIter iter = TensorIter::unary_float_op(out, t, "gelu");
  gelu_stub(iter.device().type, iter, approx);
  iter.cast_outputs();
  return out;
}

Tensor native::softplus(const Tensor& t, const Scalar& beta, const Scalar& threshold) {
  EMBER_CHECK(beta.to_double() != 0.0, "softplus: beta must not be 0");
  Tensor out;
  TensorIter iter = TensorIter::unary_float_op(out, t, "softplus");
  softplus_stub(iter.device().type, iter, beta, threshold);
  iter.cast_outputs();
  return out;
}

// ---- bool results ---------------------------------------------------------------------------

Tensor isnan(const Tensor& t) {
  if (!is_floating(t.dtype())) return zeros(t.sizes(), TensorOptions(kBool).device(t.device()));
  return bool_out(Tensor(), t, "isnan", isnan_stub);
}
Tensor isinf(const Tensor& t) {
  if (!is_floating(t.dtype())) return zeros(t.sizes(), TensorOptions(kBool).device(t.device()));
  return bool_out(Tensor(), t, "isinf", isinf_stub);
}
Tensor isfinite(const Tensor& t) {
  if (!is_floating(t.dtype())) return ones(t.sizes(), TensorOptions(kBool).device(t.device()));
  return bool_out(Tensor(), t, "isfinite", isfinite_stub);
}
Tensor logical_not(const Tensor& t) {
  return bool_out(Tensor(), t, "logical_not", logical_not_stub);
}
const Tensor& logical_not_(const Tensor& self) {
  bool_out(self, self, "logical_not_", logical_not_stub);
  self.bump_version();
  return self;
}

// ---- integers and bool ------------------------------------------------------------------------

Tensor bitwise_not(const Tensor& t) {
  EMBER_CHECK(is_integral(t.dtype(), /*include_bool=*/true),
              "bitwise_not: expected an integer or bool tensor, got ", dtype_name(t.dtype()));
  return same_dtype_out(Tensor(), t, "bitwise_not", bitwise_not_stub);
}
const Tensor& bitwise_not_(const Tensor& self) {
  EMBER_CHECK(is_integral(self.dtype(), /*include_bool=*/true),
              "bitwise_not_: expected an integer or bool tensor, got ", dtype_name(self.dtype()));
  same_dtype_out(self, self, "bitwise_not_", bitwise_not_stub);
  self.bump_version();
  return self;
}

// ---- Tensor methods and operators of the ops above ----------------------------------------------

Tensor Tensor::logical_not() const { return ember::logical_not(*this); }
const Tensor& Tensor::logical_not_() const { return ember::logical_not_(*this); }
Tensor Tensor::bitwise_not() const { return ember::bitwise_not(*this); }
const Tensor& Tensor::bitwise_not_() const { return ember::bitwise_not_(*this); }

Tensor Tensor::isnan() const { return ember::isnan(*this); }
Tensor Tensor::isinf() const { return ember::isinf(*this); }
Tensor Tensor::isfinite() const { return ember::isfinite(*this); }

Tensor operator~(const Tensor& a) { return bitwise_not(a); }

}  // namespace ember
