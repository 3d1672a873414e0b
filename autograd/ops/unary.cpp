// Public ops of the unary family (core/ops/unary.h): forward = native::, plus autograd.

#include "autograd/ops/common.h"
#include "core/ops/unary.h"

namespace ember {

Tensor neg(const Tensor& t) {
  return native::neg(t);
}
Tensor abs(const Tensor& t) {
  return native::abs(t);
}
Tensor sign(const Tensor& t) {
  return native::sign(t);
}
Tensor relu(const Tensor& t) {
  return native::relu(t);
}
Tensor floor(const Tensor& t) {
  return native::floor(t);
}
Tensor ceil(const Tensor& t) {
  return native::ceil(t);
}
Tensor round(const Tensor& t) {
  return native::round(t);
}
Tensor trunc(const Tensor& t) {
  return native::trunc(t);
}
const Tensor& neg_(const Tensor& self) {
  return native::neg_(self);
}
const Tensor& abs_(const Tensor& self) {
  return native::abs_(self);
}
const Tensor& sign_(const Tensor& self) {
  return native::sign_(self);
}
const Tensor& relu_(const Tensor& self) {
  return native::relu_(self);
}
const Tensor& floor_(const Tensor& self) {
  return native::floor_(self);
}
const Tensor& ceil_(const Tensor& self) {
  return native::ceil_(self);
}
const Tensor& round_(const Tensor& self) {
  return native::round_(self);
}
const Tensor& trunc_(const Tensor& self) {
  return native::trunc_(self);
}
Tensor clamp(const Tensor& t, std::optional<Scalar> min, std::optional<Scalar> max) {
  return native::clamp(t, min, max);
}
Tensor clamp_min(const Tensor& t, const Scalar& min) {
  return native::clamp_min(t, min);
}
Tensor clamp_max(const Tensor& t, const Scalar& max) {
  return native::clamp_max(t, max);
}
const Tensor& clamp_(const Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max) {
  return native::clamp_(self, min, max);
}
const Tensor& clamp_min_(const Tensor& self, const Scalar& min) {
  return native::clamp_min_(self, min);
}
const Tensor& clamp_max_(const Tensor& self, const Scalar& max) {
  return native::clamp_max_(self, max);
}
Tensor nan_to_num(const Tensor& t, std::optional<double> nan, std::optional<double> posinf, std::optional<double> neginf) {
  return native::nan_to_num(t, nan, posinf, neginf);
}
const Tensor& nan_to_num_(const Tensor& self, std::optional<double> nan, std::optional<double> posinf, std::optional<double> neginf) {
  return native::nan_to_num_(self, nan, posinf, neginf);
}
Tensor pow(const Tensor& t, const Scalar& exponent) {
  return native::pow(t, exponent);
}
const Tensor& pow_(const Tensor& self, const Scalar& exponent) {
  return native::pow_(self, exponent);
}
// d exp(x) = exp(x) g: exp saves its result, not its input (DESIGN.md "One op, one place").
Tensor exp(const Tensor& t) {
  Op op("ExpBackward", t);
  Tensor y = op.run([&] { return native::exp(t); });
  op.set_output(y);
  op.save_output(y);
  op.backward([](const Saved& s, const Tensors& g) -> Tensors { return {mul(g[0], s[0])}; });
  return y;
}
Tensor exp2(const Tensor& t) {
  return native::exp2(t);
}
Tensor expm1(const Tensor& t) {
  return native::expm1(t);
}
Tensor log(const Tensor& t) {
  return native::log(t);
}
Tensor log2(const Tensor& t) {
  return native::log2(t);
}
Tensor log1p(const Tensor& t) {
  return native::log1p(t);
}
Tensor sqrt(const Tensor& t) {
  return native::sqrt(t);
}
Tensor rsqrt(const Tensor& t) {
  return native::rsqrt(t);
}
Tensor reciprocal(const Tensor& t) {
  return native::reciprocal(t);
}
Tensor sin(const Tensor& t) {
  return native::sin(t);
}
Tensor cos(const Tensor& t) {
  return native::cos(t);
}
Tensor tan(const Tensor& t) {
  return native::tan(t);
}
Tensor tanh(const Tensor& t) {
  return native::tanh(t);
}
Tensor sigmoid(const Tensor& t) {
  return native::sigmoid(t);
}
Tensor silu(const Tensor& t) {
  return native::silu(t);
}
Tensor erf(const Tensor& t) {
  return native::erf(t);
}
const Tensor& exp_(const Tensor& self) {
  return inplace_op("exp_", self, [&] { native::exp_(self); }, [](const Tensor& old) { return exp(old); });
}
const Tensor& exp2_(const Tensor& self) {
  return native::exp2_(self);
}
const Tensor& expm1_(const Tensor& self) {
  return native::expm1_(self);
}
const Tensor& log_(const Tensor& self) {
  return native::log_(self);
}
const Tensor& log2_(const Tensor& self) {
  return native::log2_(self);
}
const Tensor& log1p_(const Tensor& self) {
  return native::log1p_(self);
}
const Tensor& sqrt_(const Tensor& self) {
  return native::sqrt_(self);
}
const Tensor& rsqrt_(const Tensor& self) {
  return native::rsqrt_(self);
}
const Tensor& reciprocal_(const Tensor& self) {
  return native::reciprocal_(self);
}
const Tensor& sin_(const Tensor& self) {
  return native::sin_(self);
}
const Tensor& cos_(const Tensor& self) {
  return native::cos_(self);
}
const Tensor& tan_(const Tensor& self) {
  return native::tan_(self);
}
const Tensor& tanh_(const Tensor& self) {
  return native::tanh_(self);
}
const Tensor& sigmoid_(const Tensor& self) {
  return native::sigmoid_(self);
}
const Tensor& silu_(const Tensor& self) {
  return native::silu_(self);
}
const Tensor& erf_(const Tensor& self) {
  return native::erf_(self);
}
Tensor gelu(const Tensor& t, const std::string& approximate) {
  return native::gelu(t, approximate);
}
Tensor softplus(const Tensor& t, const Scalar& beta, const Scalar& threshold) {
  return native::softplus(t, beta, threshold);
}

}  // namespace ember
