// Public ops of the linalg family (core/ops/linalg.h): forward = native::, plus autograd.

#include "autograd/ops/common.h"
#include "core/ops/linalg.h"

namespace ember {

Tensor matmul(const Tensor& a, const Tensor& b) {
  return native::matmul(a, b);
}
Tensor mm(const Tensor& a, const Tensor& b) {
  return native::mm(a, b);
}
Tensor bmm(const Tensor& a, const Tensor& b) {
  return native::bmm(a, b);
}
Tensor addmm(const Tensor& input, const Tensor& m1, const Tensor& m2, const Scalar& beta, const Scalar& alpha) {
  return native::addmm(input, m1, m2, beta, alpha);
}
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  return native::linear(input, weight, bias);
}
Tensor dot(const Tensor& a, const Tensor& b) {
  return native::dot(a, b);
}
Tensor outer(const Tensor& a, const Tensor& b) {
  return native::outer(a, b);
}

}  // namespace ember
