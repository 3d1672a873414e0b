// Public ops of the view family (core/ops/view.h): forward = native::, plus autograd.

#include "autograd/ops/common.h"
#include "core/ops/view.h"

namespace ember {

Tensor view(const Tensor& t, const Shape& shape) {
  return native::view(t, shape);
}
Tensor reshape(const Tensor& t, const Shape& shape) {
  return native::reshape(t, shape);
}
Tensor permute(const Tensor& t, const Shape& dims) {
  return native::permute(t, dims);
}
Tensor transpose(const Tensor& t, int64_t d0, int64_t d1) {
  return native::transpose(t, d0, d1);
}
Tensor squeeze(const Tensor& t) {
  return native::squeeze(t);
}
Tensor squeeze(const Tensor& t, int64_t d) {
  return native::squeeze(t, d);
}
Tensor unsqueeze(const Tensor& t, int64_t d) {
  return native::unsqueeze(t, d);
}
Tensor expand(const Tensor& t, const Shape& shape) {
  return native::expand(t, shape);
}
Tensor flatten(const Tensor& t, int64_t start_dim, int64_t end_dim) {
  return native::flatten(t, start_dim, end_dim);
}
Tensor unflatten(const Tensor& t, int64_t d, const Shape& sizes) {
  return native::unflatten(t, d, sizes);
}
Tensor narrow(const Tensor& t, int64_t d, int64_t start, int64_t length) {
  return native::narrow(t, d, start, length);
}
Tensor slice(const Tensor& t, int64_t d, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  return native::slice(t, d, start, end, step);
}
Tensor select(const Tensor& t, int64_t d, int64_t index) {
  return native::select(t, d, index);
}
Tensor unfold(const Tensor& t, int64_t d, int64_t size, int64_t step) {
  return native::unfold(t, d, size, step);
}
Tensor diagonal(const Tensor& t, int64_t offset, int64_t d1, int64_t d2) {
  return native::diagonal(t, offset, d1, d2);
}
Tensor as_strided(const Tensor& t, const Shape& sizes, const Shape& strides, std::optional<int64_t> storage_offset) {
  return native::as_strided(t, sizes, strides, storage_offset);
}

}  // namespace ember
