// Public ops of the index family (core/ops/index.h): forward = native::, plus autograd.

#include "autograd/ops/common.h"
#include "core/ops/index.h"

namespace ember {

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  return native::index_select(self, dim, index);
}
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index) {
  return native::gather(self, dim, index);
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return native::scatter(self, dim, index, src);
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return native::scatter(self, dim, index, value);
}
const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return native::scatter_(self, dim, index, src);
}
const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return native::scatter_(self, dim, index, value);
}
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return native::scatter_add(self, dim, index, src);
}
const Tensor& scatter_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return native::scatter_add_(self, dim, index, src);
}
Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce, bool include_self) {
  return native::scatter_reduce(self, dim, index, src, reduce, include_self);
}
const Tensor& scatter_reduce_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce, bool include_self) {
  return native::scatter_reduce_(self, dim, index, src, reduce, include_self);
}
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  return native::index_add(self, dim, index, source, alpha);
}
const Tensor& index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  return native::index_add_(self, dim, index, source, alpha);
}
Tensor index(const Tensor& self, const std::vector<Tensor>& indices) {
  return native::index(self, indices);
}
const Tensor& index_put_(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
  return native::index_put_(self, indices, values, accumulate);
}
Tensor index_put(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
  return native::index_put(self, indices, values, accumulate);
}
Tensor masked_select(const Tensor& self, const Tensor& mask) {
  return native::masked_select(self, mask);
}
Tensor take(const Tensor& self, const Tensor& index) {
  return native::take(self, index);
}
Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  return native::embedding(weight, indices, padding_idx);
}
std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending, bool stable) {
  return native::sort(self, dim, descending, stable);
}
std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
  return native::topk(self, k, dim, largest, sorted);
}

}  // namespace ember
