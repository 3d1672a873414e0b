// Public ops of the copy family (core/ops/copy.h): forward = native::, plus autograd.

#include "autograd/ops/common.h"
#include "core/ops/copy.h"

namespace ember {

const Tensor& copy_(const Tensor& dst, const Tensor& src) {
  return native::copy_(dst, src);
}
const Tensor& fill_(const Tensor& t, const Scalar& value) {
  return native::fill_(t, value);
}
const Tensor& zero_(const Tensor& t) {
  return native::zero_(t);
}
Tensor contiguous(const Tensor& t) {
  return native::contiguous(t);
}
Tensor clone(const Tensor& t) {
  return native::clone(t);
}
Tensor to(const Tensor& t, Device device, DType dtype) {
  return native::to(t, device, dtype);
}

}  // namespace ember
