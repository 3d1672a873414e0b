// Public ops of the binary family (core/ops/binary.h): forward = native::, plus autograd.

#include "autograd/ops/common.h"
#include "core/ops/binary.h"

namespace ember {

namespace {
// g * alpha, skipping the multiply for alpha == 1.
Tensor scale(const Tensor& g, const Scalar& alpha) {
  return alpha.to<double>() == 1.0 ? g : mul(g, alpha);
}
}  // namespace

// d(a + alpha b) = g, alpha g. Broadcasting is undone by the engine (autograd/op.h).
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  Op op("AddBackward", a, b);
  Tensor y = op.run([&] { return native::add(a, b, alpha); });
  op.set_output(y);
  op.backward([alpha](const Saved& s, const Tensors& g) -> Tensors {
    return {g[0], s.needs_grad(1) ? scale(g[0], alpha) : Tensor()};
  });
  return y;
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return native::add(a, b, alpha);
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return native::sub(a, b, alpha);
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return native::sub(a, b, alpha);
}
// d(a b) = g b, g a: each operand is saved only when the other needs its gradient.
Tensor mul(const Tensor& a, const Tensor& b) {
  Op op("MulBackward", a, b);
  Tensor y = op.run([&] { return native::mul(a, b); });
  op.set_output(y);
  op.save(op.needs_grad(0) ? b : Tensor());
  op.save(op.needs_grad(1) ? a : Tensor());
  op.backward([](const Saved& s, const Tensors& g) -> Tensors {
    return {s.needs_grad(0) ? mul(g[0], s[0]) : Tensor(), s.needs_grad(1) ? mul(g[0], s[1]) : Tensor()};
  });
  return y;
}
Tensor mul(const Tensor& a, const Scalar& b) {
  Op op("MulBackward", a);
  Tensor y = op.run([&] { return native::mul(a, b); });
  op.set_output(y);
  op.backward([b](const Saved&, const Tensors& g) -> Tensors { return {mul(g[0], b)}; });
  return y;
}
Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode) {
  return native::div(a, b, rounding_mode);
}
Tensor div(const Tensor& a, const Scalar& b, const std::string& rounding_mode) {
  return native::div(a, b, rounding_mode);
}
Tensor remainder(const Tensor& a, const Tensor& b) {
  return native::remainder(a, b);
}
Tensor remainder(const Tensor& a, const Scalar& b) {
  return native::remainder(a, b);
}
Tensor pow(const Tensor& a, const Tensor& exponent) {
  return native::pow(a, exponent);
}
Tensor pow(const Scalar& base, const Tensor& exponent) {
  return native::pow(base, exponent);
}
Tensor maximum(const Tensor& a, const Tensor& b) {
  return native::maximum(a, b);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return native::minimum(a, b);
}
Tensor atan2(const Tensor& a, const Tensor& b) {
  return native::atan2(a, b);
}
const Tensor& add_(const Tensor& self, const Tensor& b, const Scalar& alpha) {
  return native::add_(self, b, alpha);
}
const Tensor& add_(const Tensor& self, const Scalar& b, const Scalar& alpha) {
  return native::add_(self, b, alpha);
}
const Tensor& sub_(const Tensor& self, const Tensor& b, const Scalar& alpha) {
  return native::sub_(self, b, alpha);
}
const Tensor& sub_(const Tensor& self, const Scalar& b, const Scalar& alpha) {
  return native::sub_(self, b, alpha);
}
// In place: the out-of-place op on a clone of self, rebased (Note [In-place on non-leaves]).
const Tensor& mul_(const Tensor& self, const Tensor& b) {
  return inplace_op(
      "mul_", self, [&] { native::mul_(self, b); }, [&](const Tensor& old) { return mul(old, b); },
      b);
}
const Tensor& mul_(const Tensor& self, const Scalar& b) {
  return native::mul_(self, b);
}
const Tensor& div_(const Tensor& self, const Tensor& b, const std::string& rounding_mode) {
  return native::div_(self, b, rounding_mode);
}
const Tensor& div_(const Tensor& self, const Scalar& b, const std::string& rounding_mode) {
  return native::div_(self, b, rounding_mode);
}
const Tensor& remainder_(const Tensor& self, const Tensor& b) {
  return native::remainder_(self, b);
}
const Tensor& remainder_(const Tensor& self, const Scalar& b) {
  return native::remainder_(self, b);
}
const Tensor& pow_(const Tensor& self, const Tensor& exponent) {
  return native::pow_(self, exponent);
}
const Tensor& maximum_(const Tensor& self, const Tensor& b) {
  return native::maximum_(self, b);
}
const Tensor& minimum_(const Tensor& self, const Tensor& b) {
  return native::minimum_(self, b);
}
const Tensor& atan2_(const Tensor& self, const Tensor& b) {
  return native::atan2_(self, b);
}
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  return native::where(condition, a, b);
}
Tensor where(const Tensor& condition, const Tensor& a, const Scalar& b) {
  return native::where(condition, a, b);
}
Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b) {
  return native::where(condition, a, b);
}
Tensor where(const Tensor& condition, const Scalar& a, const Scalar& b) {
  return native::where(condition, a, b);
}
Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight) {
  return native::lerp(start, end, weight);
}
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  return native::lerp(start, end, weight);
}
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Scalar& weight) {
  return native::lerp_(self, end, weight);
}
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Tensor& weight) {
  return native::lerp_(self, end, weight);
}
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  return native::addcmul(self, t1, t2, value);
}
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  return native::addcdiv(self, t1, t2, value);
}
const Tensor& addcmul_(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  return native::addcmul_(self, t1, t2, value);
}
const Tensor& addcdiv_(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  return native::addcdiv_(self, t1, t2, value);
}
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return native::masked_fill(self, mask, value);
}
const Tensor& masked_fill_(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return native::masked_fill_(self, mask, value);
}

}  // namespace ember
