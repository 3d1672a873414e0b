// Public ops of the shape family (core/ops/shape.h): forward = native::, plus autograd.

#include "autograd/ops/common.h"
#include "core/ops/shape.h"

namespace ember {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  return native::cat(tensors, dim);
}
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  return native::stack(tensors, dim);
}
std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim) {
  return native::split(self, split_size, dim);
}
std::vector<Tensor> split(const Tensor& self, const Shape& split_sizes, int64_t dim) {
  return native::split(self, split_sizes, dim);
}
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  return native::chunk(self, chunks, dim);
}
Tensor repeat(const Tensor& self, const Shape& repeats) {
  return native::repeat(self, repeats);
}
Tensor tile(const Tensor& self, const Shape& reps) {
  return native::tile(self, reps);
}
Tensor flip(const Tensor& self, const Shape& dims) {
  return native::flip(self, dims);
}
Tensor roll(const Tensor& self, const Shape& shifts, const Shape& dims) {
  return native::roll(self, shifts, dims);
}
Tensor pad(const Tensor& self, const Shape& pad, const std::string& mode, const Scalar& value) {
  return native::pad(self, pad, mode, value);
}
Tensor tril(const Tensor& self, int64_t diagonal) {
  return native::tril(self, diagonal);
}
Tensor triu(const Tensor& self, int64_t diagonal) {
  return native::triu(self, diagonal);
}

}  // namespace ember
