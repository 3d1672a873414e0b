// Ordering along a dim (core/ops/index.h): sort, argsort, topk (kernels in kernels/cpu/sort.cpp).

#include <tuple>

#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/index.h"
#include "core/ops/index_utils.h"
#include "core/tensor_iter.h"

namespace ember {

using namespace index_detail;

namespace {

// Sort-like ops iterate over every dim but `dim` (collapsed to 1); the kernel walks dim.
TensorIter slice_iter(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t dim,
                      const char* op) {
  const Shape shape = with_size(self.sizes(), dim, 1);
  return TensorIterConfig(op)
      .add_output(restride(values, shape, values.strides()))
      .add_output(restride(indices, shape, indices.strides()))
      .add_input(restride(self, shape, self.strides()))
      .static_shape(shape)
      .build();
}

}  // namespace

std::tuple<Tensor, Tensor> native::sort(const Tensor& self, int64_t dim, bool descending,
                                        bool stable) {
  (void)stable;  // always stable
  const char* op = "sort";
  check_defined(self, op, "self");
  dim = wrap_dim(dim, self.dim(), op);
  Tensor values = empty(self.sizes(), self.options());
  Tensor indices = empty(self.sizes(), TensorOptions(kInt64).device(self.device()));
  if (self.dim() == 0) {
    native::copy_(values, self);
    native::zero_(indices);
    return {values, indices};
  }
  if (self.numel() == 0) return {values, indices};
  const int64_t n = self.size(dim);
  TensorIter iter = slice_iter(values, indices, self, dim, op);
  sort_stub(
      iter.device().type, iter,
      SortLoop{n, n, byte_stride(self, dim), byte_stride(values, dim), byte_stride(indices, dim)},
      descending);
  return {values, indices};
}

Tensor argsort(const Tensor& self, int64_t dim, bool descending) {
  return std::get<1>(native::sort(self, dim, descending));
}

std::tuple<Tensor, Tensor> native::topk(const Tensor& self, int64_t k, int64_t dim, bool largest,
                                        bool sorted) {
  const char* op = "topk";
  check_defined(self, op, "self");
  const Tensor s = at_least_1d(self);
  dim = wrap_dim(dim, s.dim(), op);
  const int64_t n = s.size(dim);
  EMBER_CHECK(k >= 0 && k <= n, op, ": k (", k, ") is out of range for dimension ", dim,
              " with size ", n);
  const Shape shape = with_size(s.sizes(), dim, k);
  Tensor values = empty(shape, s.options());
  Tensor indices = empty(shape, TensorOptions(kInt64).device(s.device()));
  if (values.numel() > 0) {
    TensorIter iter = slice_iter(values, indices, s, dim, op);
    topk_stub(
        iter.device().type, iter,
        SortLoop{n, k, byte_stride(s, dim), byte_stride(values, dim), byte_stride(indices, dim)},
        largest, sorted);
  }
  if (self.dim() == 0) return {native::view(values, {}), native::view(indices, {})};
  return {values, indices};
}

// ---- Tensor methods ---------------------------------------------------------------------------
Tensor Tensor::argsort(int64_t d, bool descending) const {
  return ember::argsort(*this, d, descending);
}

}  // namespace ember
