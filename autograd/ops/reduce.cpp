// Public ops of the reduce family (core/ops/reduce.h): forward = native::, plus autograd.

#include "autograd/ops/common.h"
#include "core/ops/reduce.h"

namespace ember {

Tensor sum(const Tensor& self, const Shape& dims, bool keepdim, std::optional<DType> dtype) {
  return native::sum(self, dims, keepdim, dtype);
}
Tensor mean(const Tensor& self, const Shape& dims, bool keepdim) {
  return native::mean(self, dims, keepdim);
}
Tensor prod(const Tensor& self, const Shape& dims, bool keepdim) {
  return native::prod(self, dims, keepdim);
}
Tensor var(const Tensor& self, const Shape& dims, int64_t correction, bool keepdim) {
  return native::var(self, dims, correction, keepdim);
}
Tensor std(const Tensor& self, const Shape& dims, int64_t correction, bool keepdim) {
  return native::std(self, dims, correction, keepdim);
}
Tensor amax(const Tensor& self, const Shape& dims, bool keepdim) {
  return native::amax(self, dims, keepdim);
}
Tensor amin(const Tensor& self, const Shape& dims, bool keepdim) {
  return native::amin(self, dims, keepdim);
}
Tensor max(const Tensor& self) {
  return native::max(self);
}
Tensor min(const Tensor& self) {
  return native::min(self);
}
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim) {
  return native::max(self, dim, keepdim);
}
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim) {
  return native::min(self, dim, keepdim);
}
Tensor logsumexp(const Tensor& self, const Shape& dims, bool keepdim) {
  return native::logsumexp(self, dims, keepdim);
}
Tensor norm(const Tensor& self, double p, const Shape& dims, bool keepdim) {
  return native::norm(self, p, dims, keepdim);
}
Tensor cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return native::cumsum(self, dim, dtype);
}
Tensor cumprod(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return native::cumprod(self, dim, dtype);
}

}  // namespace ember
