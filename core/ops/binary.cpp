#include "core/ops/binary.h"

#include "core/op_registry.h"
#include "core/tensor_iter.h"

namespace ember {

EMBER_DEFINE_DISPATCH(add_stub);
EMBER_DEFINE_DISPATCH(mul_stub);

namespace {
constexpr const char* kBinaryOps[] = {"add", "sub", "mul"};
static_assert(sizeof(kBinaryOps) / sizeof(kBinaryOps[0]) == 3);
const OpFamilyRegistrar registrar("binary", kBinaryOps);

// out = a + alpha * b into `out` (undefined: allocated).
Tensor add_out(Tensor out, const Tensor& a, const Tensor& b, const Scalar& alpha, const char* op) {
  TensorIter iter = TensorIter::binary_op(out, a, b, op);
  EMBER_CHECK(!(alpha.is_floating() && !is_floating(iter.common_dtype())), op,
              ": for integral input tensors, argument alpha must not be a floating point number");
  add_stub(iter.device().type, iter, alpha);
  iter.cast_outputs();
  return out;
}

Tensor mul_out(Tensor out, const Tensor& a, const Tensor& b, const char* op) {
  TensorIter iter = TensorIter::binary_op(out, a, b, op);
  mul_stub(iter.device().type, iter);
  iter.cast_outputs();
  return out;
}

Scalar negate(const Scalar& s) {
  if (s.is_floating()) return Scalar(-s.to_double());
  return Scalar(-s.to_int64());
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return add_out(Tensor(), a, b, alpha, "add");
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return add_out(Tensor(), a, wrapped_scalar_tensor(b), alpha, "add");
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  EMBER_CHECK(a.dtype() != kBool || b.dtype() != kBool,
              "sub: subtraction with two bool tensors is not supported; use logical_xor");
  return add_out(Tensor(), a, b, negate(alpha), "sub");
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return sub(a, wrapped_scalar_tensor(b), alpha);
}
Tensor mul(const Tensor& a, const Tensor& b) { return mul_out(Tensor(), a, b, "mul"); }
Tensor mul(const Tensor& a, const Scalar& b) {
  return mul_out(Tensor(), a, wrapped_scalar_tensor(b), "mul");
}

const Tensor& add_(const Tensor& self, const Tensor& b, const Scalar& alpha) {
  self.bump_version();
  add_out(self, self, b, alpha, "add_");
  return self;
}
const Tensor& sub_(const Tensor& self, const Tensor& b, const Scalar& alpha) {
  self.bump_version();
  add_out(self, self, b, negate(alpha), "sub_");
  return self;
}
const Tensor& mul_(const Tensor& self, const Tensor& b) {
  self.bump_version();
  mul_out(self, self, b, "mul_");
  return self;
}

// ---- Tensor methods and operators ----
Tensor Tensor::add(const Tensor& o, const Scalar& al) const { return ember::add(*this, o, al); }
Tensor Tensor::add(const Scalar& o, const Scalar& al) const { return ember::add(*this, o, al); }
const Tensor& Tensor::add_(const Tensor& o, const Scalar& al) const { return ember::add_(*this, o, al); }
const Tensor& Tensor::add_(const Scalar& o, const Scalar& al) const {
  return ember::add_(*this, wrapped_scalar_tensor(o), al);
}
Tensor Tensor::sub(const Tensor& o, const Scalar& al) const { return ember::sub(*this, o, al); }
Tensor Tensor::sub(const Scalar& o, const Scalar& al) const { return ember::sub(*this, o, al); }
const Tensor& Tensor::sub_(const Tensor& o, const Scalar& al) const { return ember::sub_(*this, o, al); }
const Tensor& Tensor::sub_(const Scalar& o, const Scalar& al) const {
  return ember::sub_(*this, wrapped_scalar_tensor(o), al);
}
Tensor Tensor::mul(const Tensor& o) const { return ember::mul(*this, o); }
Tensor Tensor::mul(const Scalar& o) const { return ember::mul(*this, o); }
const Tensor& Tensor::mul_(const Tensor& o) const { return ember::mul_(*this, o); }
const Tensor& Tensor::mul_(const Scalar& o) const { return ember::mul_(*this, wrapped_scalar_tensor(o)); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
const Tensor& operator+=(const Tensor& a, const Tensor& b) { return a.add_(b); }
const Tensor& operator+=(const Tensor& a, const Scalar& b) { return a.add_(b); }
const Tensor& operator-=(const Tensor& a, const Tensor& b) { return a.sub_(b); }
const Tensor& operator-=(const Tensor& a, const Scalar& b) { return a.sub_(b); }
const Tensor& operator*=(const Tensor& a, const Tensor& b) { return a.mul_(b); }
const Tensor& operator*=(const Tensor& a, const Scalar& b) { return a.mul_(b); }

}  // namespace ember
