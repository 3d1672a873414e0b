#include "core/ops/binary.h"

#include "core/op_registry.h"
#include "core/ops/copy.h"
#include "core/tensor_iter.h"

namespace ember {

namespace {

// "div" is true division; "div_trunc" and "div_floor" are div with a rounding mode (their
// result dtypes differ, so each has its own op-table entry). "pow" covers pow(Tensor, Tensor)
// and pow(Scalar, Tensor); the comparisons cover their Scalar forms.
constexpr const char* kBinaryOps[] = {
    "add",        "sub",         "mul",         "div",        "div_trunc",   "div_floor",
    "remainder",  "pow",         "maximum",     "minimum",    "atan2",       "eq",
    "ne",         "lt",          "le",          "gt",         "ge",          "logical_and",
    "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "where",
    "lerp",       "addcmul",     "addcdiv",     "masked_fill"};
static_assert(sizeof(kBinaryOps) / sizeof(kBinaryOps[0]) == 28);
const OpFamilyRegistrar registrar("binary", kBinaryOps);

// t in dtype dt, staying a wrapped number if it was one.
Tensor to_dtype(const Tensor& t, DType dt) {
  if (t.dtype() == dt) return t;
  Tensor r = native::to(t, dt);
  r.impl().is_wrapped_number = t.unsafe_impl()->is_wrapped_number;
  return r;
}

Scalar negate(const Scalar& s) {
  if (s.is_floating()) return Scalar(-s.to_double());
  return Scalar(-s.to_int64());
}

// out = a + alpha * b into `out` (undefined: allocated).
Tensor add_out(Tensor out, const Tensor& a, const Tensor& b, const Scalar& alpha, const char* op) {
  TensorIter iter = TensorIter::binary_op(out, a, b, op);
  EMBER_CHECK(!(alpha.is_floating() && !is_floating(iter.common_dtype())), op,
              ": for integral input tensors, argument alpha must not be a floating point number");
  add_stub(iter.device().type, iter, alpha);
  iter.cast_outputs();
  return out;
}

Tensor sub_out(Tensor out, const Tensor& a, const Tensor& b, const Scalar& alpha, const char* op) {
  EMBER_CHECK(a.dtype() != kBool || b.dtype() != kBool, op,
              ": subtraction with two bool tensors is not supported; use logical_xor");
  return add_out(std::move(out), a, b, negate(alpha), op);
}

// out = f(a, b) in the promoted dtype of a and b.
Tensor binary_out(Tensor out, const Tensor& a, const Tensor& b, const char* op,
                  const DispatchStub<binary_fn>& stub) {
  TensorIter iter = TensorIter::binary_op(out, a, b, op);
  stub(iter.device().type, iter);
  iter.cast_outputs();
  return out;
}

// Like binary_out, with integer and bool inputs promoted to the default float dtype.
Tensor binary_float_out(Tensor out, const Tensor& a, const Tensor& b, const char* op,
                        const DispatchStub<binary_fn>& stub) {
  TensorIter iter = TensorIter::binary_float_op(out, a, b, op);
  stub(iter.device().type, iter);
  iter.cast_outputs();
  return out;
}

// out (bool; in place: self's dtype, holding 1 / 0) = f(a, b) in their promoted dtype.
Tensor bool_out(Tensor out, const Tensor& a, const Tensor& b, const char* op,
                const DispatchStub<binary_fn>& stub) {
  TensorIter iter = TensorIter::comparison_op(out, a, b, op);
  stub(iter.device().type, iter);
  iter.cast_outputs();
  return out;
}

enum class RoundingMode { None, Trunc, Floor };

RoundingMode parse_rounding_mode(const std::string& mode, const char* op) {
  if (mode.empty()) return RoundingMode::None;
  if (mode == "trunc") return RoundingMode::Trunc;
  if (mode == "floor") return RoundingMode::Floor;
  EMBER_ERROR(op,
              ": expected rounding_mode to be \"\" (true division), \"trunc\" or \"floor\", "
              "but found \"",
              mode, "\"");
}

Tensor div_out(Tensor out, const Tensor& a, const Tensor& b, const std::string& mode,
               const char* op) {
  switch (parse_rounding_mode(mode, op)) {
    case RoundingMode::Trunc:
      return binary_out(std::move(out), a, b, op, div_trunc_stub);
    case RoundingMode::Floor:
      return binary_out(std::move(out), a, b, op, div_floor_stub);
    default:
      return binary_float_out(std::move(out), a, b, op, div_true_stub);
  }
}

void check_bitwise(const Tensor& a, const Tensor& b, const char* op) {
  for (const Tensor* t : {&a, &b}) {
    EMBER_CHECK(is_integral(t->dtype(), /*include_bool=*/true), op,
                ": expected integer or bool tensors, got a tensor with dtype ",
                dtype_name(t->dtype()), " (bitwise ops are not defined for floating types)");
  }
}

Tensor where_out(const Tensor& cond, const Tensor& a, const Tensor& b) {
  EMBER_CHECK(cond.dtype() == kBool,
              "where: expected condition to be a bool tensor, but got a tensor with dtype ",
              dtype_name(cond.dtype()));
  // The result type of a and b alone: the condition takes no part in promotion.
  const DType dt = result_type({a, b});
  Tensor out;
  TensorIter iter = TensorIterConfig("where")
                        .add_output(out)
                        .add_input(cond)
                        .add_input(to_dtype(a, dt))
                        .add_input(to_dtype(b, dt))
                        .output_dtype(dt)
                        .allow_cpu_scalars()
                        .build();
  where_stub(iter.device().type, iter);
  return iter.output();
}

void check_lerp(const Tensor& start, const Tensor& end, const Tensor* weight, const char* op) {
  EMBER_CHECK(is_floating(start.dtype()) && is_floating(end.dtype()) &&
                  (weight == nullptr || is_floating(weight->dtype())),
              op, ": expected floating point tensors, got ", dtype_name(start.dtype()), " and ",
              dtype_name(end.dtype()),
              weight ? std::string(" with weight ") + dtype_name(weight->dtype()) : std::string());
}

Tensor lerp_out(Tensor out, const Tensor& start, const Tensor& end, const Scalar& weight,
                const char* op) {
  check_lerp(start, end, nullptr, op);
  TensorIter iter = TensorIter::binary_op(out, start, end, op);
  lerp_scalar_stub(iter.device().type, iter, weight);
  iter.cast_outputs();
  return out;
}

Tensor lerp_out(const Tensor& out, const Tensor& start, const Tensor& end, const Tensor& weight,
                const char* op) {
  check_lerp(start, end, &weight, op);
  TensorIter iter = TensorIterConfig(op)
                        .add_output(out)
                        .add_input(start)
                        .add_input(end)
                        .add_input(weight)
                        .promote_inputs_to_common_dtype()
                        .build();
  lerp_tensor_stub(iter.device().type, iter);
  iter.cast_outputs();
  return iter.output();
}

// self + value * t1 (* or /) t2; `is_div` selects addcdiv.
Tensor addc_out(const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
                const Scalar& value, bool is_div, const char* op) {
  if (is_div) {
    EMBER_CHECK(!(is_integral(t1.dtype(), true) && is_integral(t2.dtype(), true)), op,
                ": integer division of tensor1 (", dtype_name(t1.dtype()), ") by tensor2 (",
                dtype_name(t2.dtype()),
                ") is not supported; convert them to a floating dtype, or use div with a "
                "rounding mode");
  }
  TensorIter iter = TensorIterConfig(op)
                        .add_output(out)
                        .add_input(self)
                        .add_input(t1)
                        .add_input(t2)
                        .promote_inputs_to_common_dtype()
                        .build();
  EMBER_CHECK(!(value.is_floating() && !is_floating(iter.common_dtype())), op,
              ": for integral input tensors, argument value must not be a floating point number");
  (is_div ? addcdiv_stub : addcmul_stub)(iter.device().type, iter, value);
  iter.cast_outputs();
  return iter.output();
}

void check_mask(const Tensor& mask, const char* op) {
  EMBER_CHECK(mask.dtype() == kBool, op, ": expected a bool mask, got a mask with dtype ",
              dtype_name(mask.dtype()));
}

// Runs an in-place op (`f` writes into self), then bumps self's version.
template <class F>
const Tensor& in_place(const Tensor& self, F f) {
  f();
  self.bump_version();
  return self;
}

}  // namespace

// ---- arithmetic ------------------------------------------------------------------------------

Tensor native::add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return add_out(Tensor(), a, b, alpha, "add");
}
Tensor native::add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return add_out(Tensor(), a, wrapped_scalar_tensor(b, a), alpha, "add");
}
Tensor native::sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return sub_out(Tensor(), a, b, alpha, "sub");
}
Tensor native::sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return sub_out(Tensor(), a, wrapped_scalar_tensor(b, a), alpha, "sub");
}
Tensor native::mul(const Tensor& a, const Tensor& b) {
  return binary_out(Tensor(), a, b, "mul", mul_stub);
}
Tensor native::mul(const Tensor& a, const Scalar& b) {
  return binary_out(Tensor(), a, wrapped_scalar_tensor(b, a), "mul", mul_stub);
}
Tensor native::div(const Tensor& a, const Tensor& b, const std::string& mode) {
  return div_out(Tensor(), a, b, mode, "div");
}
Tensor native::div(const Tensor& a, const Scalar& b, const std::string& mode) {
  return div_out(Tensor(), a, wrapped_scalar_tensor(b, a), mode, "div");
}
Tensor native::remainder(const Tensor& a, const Tensor& b) {
  return binary_out(Tensor(), a, b, "remainder", remainder_stub);
}
Tensor native::remainder(const Tensor& a, const Scalar& b) {
  return binary_out(Tensor(), a, wrapped_scalar_tensor(b, a), "remainder", remainder_stub);
}
Tensor native::pow(const Tensor& a, const Tensor& exponent) {
  return binary_out(Tensor(), a, exponent, "pow", pow_stub);
}
Tensor native::pow(const Scalar& base, const Tensor& exponent) {
  return binary_out(Tensor(), wrapped_scalar_tensor(base, exponent), exponent, "pow", pow_stub);
}
Tensor native::maximum(const Tensor& a, const Tensor& b) {
  return binary_out(Tensor(), a, b, "maximum", maximum_stub);
}
Tensor native::minimum(const Tensor& a, const Tensor& b) {
  return binary_out(Tensor(), a, b, "minimum", minimum_stub);
}
Tensor native::atan2(const Tensor& a, const Tensor& b) {
  return binary_float_out(Tensor(), a, b, "atan2", atan2_stub);
}

const Tensor& native::add_(const Tensor& self, const Tensor& b, const Scalar& alpha) {
  return in_place(self, [&] { add_out(self, self, b, alpha, "add_"); });
}
const Tensor& native::add_(const Tensor& self, const Scalar& b, const Scalar& alpha) {
  return in_place(self,
                  [&] { add_out(self, self, wrapped_scalar_tensor(b, self), alpha, "add_"); });
}
const Tensor& native::sub_(const Tensor& self, const Tensor& b, const Scalar& alpha) {
  return in_place(self, [&] { sub_out(self, self, b, alpha, "sub_"); });
}
const Tensor& native::sub_(const Tensor& self, const Scalar& b, const Scalar& alpha) {
  return in_place(self,
                  [&] { sub_out(self, self, wrapped_scalar_tensor(b, self), alpha, "sub_"); });
}
const Tensor& native::mul_(const Tensor& self, const Tensor& b) {
  return in_place(self, [&] { binary_out(self, self, b, "mul_", mul_stub); });
}
const Tensor& native::mul_(const Tensor& self, const Scalar& b) {
  return in_place(
      self, [&] { binary_out(self, self, wrapped_scalar_tensor(b, self), "mul_", mul_stub); });
}
const Tensor& native::div_(const Tensor& self, const Tensor& b, const std::string& mode) {
  return in_place(self, [&] { div_out(self, self, b, mode, "div_"); });
}
const Tensor& native::div_(const Tensor& self, const Scalar& b, const std::string& mode) {
  return in_place(self, [&] { div_out(self, self, wrapped_scalar_tensor(b, self), mode, "div_"); });
}
const Tensor& native::remainder_(const Tensor& self, const Tensor& b) {
  return in_place(self, [&] { binary_out(self, self, b, "remainder_", remainder_stub); });
}
const Tensor& native::remainder_(const Tensor& self, const Scalar& b) {
  return in_place(self, [&] {
    binary_out(self, self, wrapped_scalar_tensor(b, self), "remainder_", remainder_stub);
  });
}
const Tensor& native::pow_(const Tensor& self, const Tensor& exponent) {
  return in_place(self, [&] { binary_out(self, self, exponent, "pow_", pow_stub); });
}
const Tensor& native::maximum_(const Tensor& self, const Tensor& b) {
  return in_place(self, [&] { binary_out(self, self, b, "maximum_", maximum_stub); });
}
const Tensor& native::minimum_(const Tensor& self, const Tensor& b) {
  return in_place(self, [&] { binary_out(self, self, b, "minimum_", minimum_stub); });
}
const Tensor& native::atan2_(const Tensor& self, const Tensor& b) {
  return in_place(self, [&] { binary_float_out(self, self, b, "atan2_", atan2_stub); });
}

// ---- comparisons and logical ops --------------------------------------------------------------

#define EMBER_COMPARISON(name)                                                     \
  Tensor name(const Tensor& a, const Tensor& b) {                                  \
    return bool_out(Tensor(), a, b, #name, name##_stub);                           \
  }                                                                                \
  Tensor name(const Tensor& a, const Scalar& b) {                                  \
    return bool_out(Tensor(), a, wrapped_scalar_tensor(b, a), #name, name##_stub); \
  }                                                                                \
  Tensor Tensor::name(const Tensor& o) const { return ember::name(*this, o); }     \
  Tensor Tensor::name(const Scalar& o) const { return ember::name(*this, o); }
EMBER_COMPARISON(eq)
EMBER_COMPARISON(ne)
EMBER_COMPARISON(lt)
EMBER_COMPARISON(le)
EMBER_COMPARISON(gt)
EMBER_COMPARISON(ge)
#undef EMBER_COMPARISON

#define EMBER_LOGICAL(name)                                                          \
  Tensor name(const Tensor& a, const Tensor& b) {                                    \
    return bool_out(Tensor(), a, b, #name, name##_stub);                             \
  }                                                                                  \
  const Tensor& name##_(const Tensor& self, const Tensor& b) {                       \
    return in_place(self, [&] { bool_out(self, self, b, #name "_", name##_stub); }); \
  }                                                                                  \
  Tensor Tensor::name(const Tensor& o) const { return ember::name(*this, o); }       \
  const Tensor& Tensor::name##_(const Tensor& o) const { return ember::name##_(*this, o); }
EMBER_LOGICAL(logical_and)
EMBER_LOGICAL(logical_or)
EMBER_LOGICAL(logical_xor)
#undef EMBER_LOGICAL

#define EMBER_BITWISE(name)                                                            \
  Tensor name(const Tensor& a, const Tensor& b) {                                      \
    check_bitwise(a, b, #name);                                                        \
    return binary_out(Tensor(), a, b, #name, name##_stub);                             \
  }                                                                                    \
  const Tensor& name##_(const Tensor& self, const Tensor& b) {                         \
    check_bitwise(self, b, #name "_");                                                 \
    return in_place(self, [&] { binary_out(self, self, b, #name "_", name##_stub); }); \
  }                                                                                    \
  Tensor Tensor::name(const Tensor& o) const { return ember::name(*this, o); }         \
  const Tensor& Tensor::name##_(const Tensor& o) const { return ember::name##_(*this, o); }
EMBER_BITWISE(bitwise_and)
EMBER_BITWISE(bitwise_or)
EMBER_BITWISE(bitwise_xor)
#undef EMBER_BITWISE

// ---- selection and blends --------------------------------------------------------------------

Tensor native::where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  return where_out(condition, a, b);
}
Tensor native::where(const Tensor& condition, const Tensor& a, const Scalar& b) {
  return where_out(condition, a, wrapped_scalar_tensor(b, a));
}
Tensor native::where(const Tensor& condition, const Scalar& a, const Tensor& b) {
  return where_out(condition, wrapped_scalar_tensor(a, b), b);
}
Tensor native::where(const Tensor& condition, const Scalar& a, const Scalar& b) {
  Tensor wa = scalar_tensor(a), wb = scalar_tensor(b);
  wa.impl().is_wrapped_number = wb.impl().is_wrapped_number = true;
  return where_out(condition, wa, wb);
}

Tensor native::lerp(const Tensor& start, const Tensor& end, const Scalar& weight) {
  return lerp_out(Tensor(), start, end, weight, "lerp");
}
Tensor native::lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  return lerp_out(Tensor(), start, end, weight, "lerp");
}
const Tensor& native::lerp_(const Tensor& self, const Tensor& end, const Scalar& weight) {
  return in_place(self, [&] { lerp_out(self, self, end, weight, "lerp_"); });
}
const Tensor& native::lerp_(const Tensor& self, const Tensor& end, const Tensor& weight) {
  return in_place(self, [&] { lerp_out(self, self, end, weight, "lerp_"); });
}

Tensor native::addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2,
                       const Scalar& value) {
  return addc_out(Tensor(), self, t1, t2, value, /*is_div=*/false, "addcmul");
}
Tensor native::addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2,
                       const Scalar& value) {
  return addc_out(Tensor(), self, t1, t2, value, /*is_div=*/true, "addcdiv");
}
const Tensor& native::addcmul_(const Tensor& self, const Tensor& t1, const Tensor& t2,
                               const Scalar& value) {
  return in_place(self, [&] { addc_out(self, self, t1, t2, value, false, "addcmul_"); });
}
const Tensor& native::addcdiv_(const Tensor& self, const Tensor& t1, const Tensor& t2,
                               const Scalar& value) {
  return in_place(self, [&] { addc_out(self, self, t1, t2, value, true, "addcdiv_"); });
}

Tensor native::masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  check_mask(mask, "masked_fill");
  check_fits(value, self.dtype(), "masked_fill");  // Note [Scalars that overflow]
  // The output takes the broadcast shape of self and mask, in self's dtype.
  TensorIter iter =
      TensorIterConfig("masked_fill").add_output(Tensor()).add_input(self).add_input(mask).build();
  masked_fill_stub(iter.device().type, iter, value);
  return iter.output();
}
const Tensor& native::masked_fill_(const Tensor& self, const Tensor& mask, const Scalar& value) {
  check_mask(mask, "masked_fill_");
  check_fits(value, self.dtype(), "masked_fill_");
  return in_place(self, [&] {
    TensorIter iter = TensorIterConfig("masked_fill_")
                          .add_output(self)
                          .add_input(self)
                          .add_input(mask)
                          .static_shape(self.sizes())
                          .build();
    masked_fill_stub(iter.device().type, iter, value);
  });
}

// Not a registered op: a kernel-level helper for backward formulas (core/ops/binary.h).
Tensor native::threshold_backward(const Tensor& grad, const Tensor& output, double threshold) {
  EMBER_CHECK(grad.sizes() == output.sizes(), "threshold_backward: grad of shape ", grad.sizes(),
              " and output of shape ", output.sizes(), " must have the same shape");
  EMBER_CHECK(grad.dtype() == output.dtype() && is_floating(grad.dtype()),
              "threshold_backward: expected grad and output of one floating dtype, got ",
              dtype_name(grad.dtype()), " and ", dtype_name(output.dtype()));
  TensorIter iter = TensorIterConfig("threshold_backward")
                        .add_output(Tensor())
                        .add_input(grad)
                        .add_input(output)
                        .build();
  threshold_backward_stub(iter.device().type, iter, threshold);
  return iter.output();
}

// ---- Tensor methods and operators -------------------------------------------------------------

Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, b); }
Tensor operator&(const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }
Tensor operator|(const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }
Tensor operator^(const Tensor& a, const Tensor& b) { return bitwise_xor(a, b); }

}  // namespace ember
