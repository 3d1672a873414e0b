// Dim-wise reads through an index (core/ops/index.h): index_select, gather, embedding. All
// run the gather kernel (Note [Indexed iteration]); index_select of long contiguous rows copies
// whole rows instead.

#include "core/ops/factory.h"
#include "core/ops/index.h"
#include "core/ops/index_utils.h"
#include "core/ops/view.h"
#include "core/stream.h"
#include "core/tensor_iter.h"

namespace ember {

using namespace index_detail;

namespace {

// index_select rows shorter than this (in bytes) go through the gather kernel rather than one
// memcpy each.
constexpr int64_t kMinRowBytes = 32;

// out = self.index_select(dim, index) for self with >= 1 dim and a 1-D int64 index.
Tensor index_select_impl(const Tensor& self, int64_t dim, const Tensor& index, const char* op) {
  dim = wrap_dim(dim, self.dim(), op);
  check_same_device(self, index, op, "index");
  const int64_t n = index.numel();
  const Shape out_shape = with_size(self.sizes(), dim, n);
  Tensor out = empty(out_shape, self.options());
  const IndexAxis axis{self.size(dim), byte_stride(self, dim), false, dim, op};
  if (out.numel() == 0) {
    check_index_values(index, axis);
    return out;
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= self.size(d);
  for (int64_t d = dim + 1; d < self.dim(); ++d) inner *= self.size(d);
  const int64_t row_bytes = inner * static_cast<int64_t>(self.element_size());
  if (self.is_contiguous() && index.is_contiguous() && row_bytes >= kMinRowBytes) {
    DeviceGuard guard(self.device());  // the stub sees raw pointers: this is their device
    index_select_rows_stub(self.device().type, static_cast<char*>(out.data_ptr()),
                           static_cast<const char*>(self.data_ptr()), index.data_ptr<int64_t>(), n,
                           outer, row_bytes, axis);
    return out;
  }
  // General layout: a gather whose index is the 1-D index broadcast along every other dim.
  Shape index_strides(out_shape.size(), 0);
  index_strides[dim] = index.stride(0);
  Tensor self_r = restride(self, out_shape, with_size(self.strides(), dim, 0));
  Tensor index_r = restride(index, out_shape, index_strides);
  TensorIter iter = TensorIterConfig(op)
                        .add_output(out)
                        .add_input(self_r)
                        .add_input(index_r)
                        .static_shape(out_shape)
                        .build();
  gather_stub(iter.device().type, iter, axis);
  return out;
}

}  // namespace

Tensor native::index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  const char* op = "index_select";
  check_defined(self, op, "self");
  const Tensor idx = int64_index(index, op);
  EMBER_CHECK(idx.dim() <= 1, op, ": index must be 1-D, got shape ", shape_str(index.sizes()));
  if (self.dim() == 0) {
    wrap_dim(dim, 0, op);
    return native::view(
        index_select_impl(native::view(self, {1}), 0, native::reshape(idx, {-1}), op), idx.sizes());
  }
  return index_select_impl(self, dim, native::reshape(idx, {-1}), op);
}

Tensor native::gather(const Tensor& self, int64_t dim, const Tensor& index) {
  const char* op = "gather";
  check_defined(self, op, "self");
  check_int64_index(index, op);
  check_same_device(self, index, op, "index");
  const Tensor s = at_least_1d(self), idx = at_least_1d(index);
  EMBER_CHECK(idx.dim() == s.dim(), op, ": index ", shape_str(index.sizes()),
              " must have as many dimensions as self ", shape_str(self.sizes()));
  dim = wrap_dim(dim, s.dim(), op);
  for (int64_t d = 0; d < s.dim(); ++d) {
    EMBER_CHECK(d == dim || idx.size(d) <= s.size(d), op, ": index ", shape_str(index.sizes()),
                " is larger than self ", shape_str(self.sizes()), " in dimension ", d,
                " (only dimension ", dim, " may be larger)");
  }
  Tensor out = empty(index.sizes(), self.options());
  if (out.numel() == 0) return out;
  // Note [Indexed iteration]: self is seen with index's shape and stride 0 along dim.
  Tensor self_r = restride(s, idx.sizes(), with_size(s.strides(), dim, 0));
  TensorIter iter = TensorIterConfig(op)
                        .add_output(at_least_1d(out))
                        .add_input(self_r)
                        .add_input(idx)
                        .static_shape(idx.sizes())
                        .build();
  gather_stub(iter.device().type, iter,
              IndexAxis{s.size(dim), byte_stride(s, dim), false, dim, op});
  return out;
}

Tensor native::embedding(const Tensor& weight, const Tensor& indices,
                         std::optional<int64_t> padding_idx) {
  const char* op = "embedding";
  check_defined(weight, op, "weight");
  EMBER_CHECK(weight.dim() == 2, op, ": weight must be 2-D [num_embeddings, embedding_dim], got ",
              shape_str(weight.sizes()));
  const Tensor idx = int64_index(indices, op);
  const int64_t num = weight.size(0);
  if (padding_idx) {
    EMBER_CHECK(*padding_idx >= -num && *padding_idx < num, op, ": padding_idx ", *padding_idx,
                " is out of range for ", num, " embeddings");
  }
  Shape shape = idx.sizes();
  shape.push_back(weight.size(1));
  return native::view(index_select_impl(weight, 0, native::reshape(idx, {-1}), op), shape);
}

}  // namespace ember
