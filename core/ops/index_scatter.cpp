// Dim-wise writes through an index (core/ops/index.h): scatter, scatter_add, scatter_reduce,
// index_add. All run the scatter kernel (Note [Indexed iteration]) through run_scatter.

#include <limits>
#include <string>

#include "core/mem_overlap.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/index.h"
#include "core/ops/index_utils.h"
#include "core/ops/view.h"
#include "core/tensor_iter.h"

namespace ember {

using namespace index_detail;

namespace index_detail {

void run_scatter(const Tensor& self, const Tensor& src, const Tensor& index, const Shape& shape,
                 const IndexAxis& axis, const ScatterLoop& loop, ScatterReduce reduce,
                 const Scalar& alpha, const char* op) {
  // self is a restrided view (stride 0 along the walked dim), so the overlap checks are the
  // callers': check_scatter_overlap on the user's tensors.
  TensorIter iter = TensorIterConfig(op)
                        .add_output(self)
                        .add_input(src)
                        .add_input(index)
                        .static_shape(shape)
                        .check_mem_overlap(false)
                        .build();
  scatter_stub(iter.device().type, iter, axis, loop, reduce, alpha);
}

void check_scatter_overlap(const Tensor& self, const Tensor& index, const Tensor& src,
                           const char* op) {
  // Note [Writes over overlapping memory] in core/mem_overlap.h: a scatter writes self at
  // positions it reads from index and src, so neither may share any memory with it.
  assert_no_internal_overlap(self, op);
  assert_no_overlap(self, index, op);
  assert_no_overlap(self, src, op);
}

}  // namespace index_detail

namespace {

// Checks self/index/src for scatter (src: self's dtype, or a value expanded to index's shape).
void check_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                   const char* op) {
  check_defined(self, op, "self");
  check_int64_index(index, op);
  check_defined(src, op, "src");
  check_same_device(self, index, op, "index");
  check_same_device(self, src, op, "src");
  EMBER_CHECK(src.dtype() == self.dtype(), op, ": expected src to have the dtype of self (",
              dtype_name(self.dtype()), "), got ", dtype_name(src.dtype()));
  const Tensor s = at_least_1d(self), idx = at_least_1d(index), sr = at_least_1d(src);
  EMBER_CHECK(idx.dim() == s.dim() && sr.dim() == s.dim(), op,
              ": index and src must have as many dimensions as self, got self ",
              shape_str(self.sizes()), ", index ", shape_str(index.sizes()), ", src ",
              shape_str(src.sizes()));
  dim = wrap_dim(dim, s.dim(), op);
  for (int64_t d = 0; d < s.dim(); ++d) {
    EMBER_CHECK(idx.size(d) <= sr.size(d), op, ": index ", shape_str(index.sizes()),
                " is larger than src ", shape_str(src.sizes()), " in dimension ", d);
    EMBER_CHECK(d == dim || idx.size(d) <= s.size(d), op, ": index ", shape_str(index.sizes()),
                " is larger than self ", shape_str(self.sizes()), " in dimension ", d,
                " (only dimension ", dim, " may be larger)");
  }
}

void scatter_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                  ScatterReduce reduce, const Scalar& alpha, const char* op) {
  check_scatter(self, dim, index, src, op);
  check_scatter_overlap(self, index, src, op);
  const Tensor s = at_least_1d(self), idx = at_least_1d(index), sr = at_least_1d(src);
  dim = wrap_dim(dim, s.dim(), op);
  if (idx.numel() == 0) return;
  // Note [Indexed iteration]: iterate over index's shape with dim collapsed to 1; the kernel
  // walks dim.
  const Shape shape = with_size(idx.sizes(), dim, 1);
  Tensor self_r = restride(s, shape, s.strides());
  Tensor src_r = restride(sr, shape, sr.strides());
  Tensor index_r = restride(idx, shape, idx.strides());
  const IndexAxis axis{s.size(dim), byte_stride(s, dim), false, dim, op};
  const int64_t steps = idx.size(dim);
  const ScatterLoop loop{steps, byte_stride(sr, dim), byte_stride(idx, dim),
                         std::max<int64_t>(1, kGrainSize / steps)};
  run_scatter(self_r, src_r, index_r, shape, axis, loop, reduce, alpha, op);
}

// A Scalar as a src tensor of index's shape (stride 0 everywhere).
Tensor value_as_src(const Tensor& self, const Tensor& index, const Scalar& value) {
  return native::expand(full({}, value, self.options()), index.sizes());
}

// The value that leaves every element unchanged under a reduction (for include_self=false).
Scalar reduce_identity(ScatterReduce reduce, DType dtype) {
  if (reduce == ScatterReduce::Prod) return Scalar(1);
  if (reduce != ScatterReduce::Max && reduce != ScatterReduce::Min) return Scalar(0);
  const bool max = reduce == ScatterReduce::Max;
  if (dtype == kBool) return Scalar(!max);
  if (is_floating(dtype)) {
    const double inf = std::numeric_limits<double>::infinity();
    return Scalar(max ? -inf : inf);
  }
  return EMBER_DISPATCH_INTEGRAL(dtype, "scatter_reduce", [&]() -> Scalar {
    using limits = std::numeric_limits<scalar_t>;
    return Scalar(static_cast<int64_t>(max ? limits::lowest() : limits::max()));
  });
}

void check_alpha(const Tensor& self, const Scalar& alpha, const char* op) {
  EMBER_CHECK(!(alpha.is_floating() && !is_floating(self.dtype())), op,
              ": for integral input tensors, argument alpha must not be a floating point number");
}

}  // namespace

const Tensor& native::scatter_(const Tensor& self, int64_t dim, const Tensor& index,
                               const Tensor& src) {
  check_defined(self, "scatter_", "self");
  self.bump_version();
  scatter_impl(self, dim, index, src, ScatterReduce::Assign, 1, "scatter_");
  return self;
}
const Tensor& native::scatter_(const Tensor& self, int64_t dim, const Tensor& index,
                               const Scalar& value) {
  check_defined(self, "scatter_", "self");
  check_int64_index(index, "scatter_");
  self.bump_version();
  scatter_impl(self, dim, index, value_as_src(self, index, value), ScatterReduce::Assign, 1,
               "scatter_");
  return self;
}
Tensor native::scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  check_defined(self, "scatter", "self");
  Tensor out = native::clone(self);
  scatter_impl(out, dim, index, src, ScatterReduce::Assign, 1, "scatter");
  return out;
}
Tensor native::scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  check_defined(self, "scatter", "self");
  check_int64_index(index, "scatter");
  Tensor out = native::clone(self);
  scatter_impl(out, dim, index, value_as_src(self, index, value), ScatterReduce::Assign, 1,
               "scatter");
  return out;
}

const Tensor& native::scatter_add_(const Tensor& self, int64_t dim, const Tensor& index,
                                   const Tensor& src) {
  check_defined(self, "scatter_add_", "self");
  self.bump_version();
  scatter_impl(self, dim, index, src, ScatterReduce::Sum, 1, "scatter_add_");
  return self;
}
Tensor native::scatter_add(const Tensor& self, int64_t dim, const Tensor& index,
                           const Tensor& src) {
  check_defined(self, "scatter_add", "self");
  Tensor out = native::clone(self);
  scatter_impl(out, dim, index, src, ScatterReduce::Sum, 1, "scatter_add");
  return out;
}

namespace {
const Tensor& scatter_reduce_impl(const Tensor& self, int64_t dim, const Tensor& index,
                                  const Tensor& src, const std::string& reduce, bool include_self,
                                  const char* op) {
  check_defined(self, op, "self");
  check_defined(src, op, "src");
  ScatterReduce mode;
  if (reduce == "sum" || reduce == "mean") {
    mode = ScatterReduce::Sum;
  } else if (reduce == "prod") {
    mode = ScatterReduce::Prod;
  } else if (reduce == "amax") {
    mode = ScatterReduce::Max;
  } else if (reduce == "amin") {
    mode = ScatterReduce::Min;
  } else {
    EMBER_ERROR(op, ": reduce must be one of 'sum', 'prod', 'mean', 'amax', 'amin', got '", reduce,
                "'");
  }
  const bool mean = reduce == "mean";
  EMBER_CHECK(!(mean && self.dtype() == kBool), op, ": reduce='mean' is not supported for bool");
  check_scatter(self, dim, index, src, op);  // before anything is written
  if (!include_self) {
    // Scattered positions start from the identity, so only src values reduce into them.
    scatter_impl(self, dim, index, value_as_src(self, index, reduce_identity(mode, self.dtype())),
                 ScatterReduce::Assign, 1, op);
  }
  scatter_impl(self, dim, index, src, mode, 1, op);
  if (mean) {
    // Count what reduced into each element, then divide.
    const TensorOptions long_opts = TensorOptions(kInt64).device(self.device());
    Tensor counts = full(self.sizes(), include_self ? 1 : 0, long_opts);
    scatter_impl(counts, dim, index, native::expand(full({}, 1, long_opts), index.sizes()),
                 ScatterReduce::Sum, 1, op);
    TensorIter iter =
        TensorIterConfig(op).add_output(self).add_input(self).add_input(counts).build();
    scatter_mean_stub(iter.device().type, iter);
  }
  return self;
}
}  // namespace

const Tensor& native::scatter_reduce_(const Tensor& self, int64_t dim, const Tensor& index,
                                      const Tensor& src, const std::string& reduce,
                                      bool include_self) {
  check_defined(self, "scatter_reduce_", "self");
  self.bump_version();
  return scatter_reduce_impl(self, dim, index, src, reduce, include_self, "scatter_reduce_");
}
Tensor native::scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index,
                              const Tensor& src, const std::string& reduce, bool include_self) {
  check_defined(self, "scatter_reduce", "self");
  Tensor out = native::clone(self);
  scatter_reduce_impl(out, dim, index, src, reduce, include_self, "scatter_reduce");
  return out;
}

namespace {
void index_add_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                    const Scalar& alpha, const char* op) {
  check_defined(self, op, "self");
  check_defined(source, op, "source");
  const Tensor idx = int64_index(index, op);
  EMBER_CHECK(idx.dim() <= 1, op, ": index must be 1-D, got shape ", shape_str(index.sizes()));
  check_same_device(self, idx, op, "index");
  check_same_device(self, source, op, "source");
  EMBER_CHECK(source.dtype() == self.dtype(), op, ": expected source to have the dtype of self (",
              dtype_name(self.dtype()), "), got ", dtype_name(source.dtype()));
  check_alpha(self, alpha, op);
  check_scatter_overlap(self, idx, source, op);
  const Tensor s = at_least_1d(self), src = at_least_1d(source), idx1 = native::reshape(idx, {-1});
  dim = wrap_dim(dim, s.dim(), op);
  EMBER_CHECK(src.dim() == s.dim(), op, ": source ", shape_str(source.sizes()),
              " must have as many dimensions as self ", shape_str(self.sizes()));
  for (int64_t d = 0; d < s.dim(); ++d) {
    if (d == dim) {
      EMBER_CHECK(src.size(d) == idx1.numel(), op, ": source ", shape_str(source.sizes()),
                  " must have ", idx1.numel(), " elements (one per index) in dimension ", d);
    } else {
      EMBER_CHECK(src.size(d) == s.size(d), op, ": source ", shape_str(source.sizes()),
                  " must match self ", shape_str(self.sizes()), " in dimension ", d);
    }
  }
  const IndexAxis axis{s.size(dim), byte_stride(s, dim), false, dim, op};
  if (src.numel() == 0) {
    check_index_values(idx1, axis);
    return;
  }
  // A scatter over source's shape whose index is the 1-D index, broadcast along other dims.
  const Shape shape = with_size(src.sizes(), dim, 1);
  Tensor self_r = restride(s, shape, s.strides());
  Tensor src_r = restride(src, shape, src.strides());
  Tensor index_r = restride(idx1, shape, Shape(shape.size(), 0));
  const int64_t steps = idx1.numel();
  const ScatterLoop loop{steps, byte_stride(src, dim), byte_stride(idx1, 0),
                         std::max<int64_t>(1, kGrainSize / steps)};
  run_scatter(self_r, src_r, index_r, shape, axis, loop, ScatterReduce::Sum, alpha, op);
}
}  // namespace

const Tensor& native::index_add_(const Tensor& self, int64_t dim, const Tensor& index,
                                 const Tensor& source, const Scalar& alpha) {
  check_defined(self, "index_add_", "self");
  self.bump_version();
  index_add_impl(self, dim, index, source, alpha, "index_add_");
  return self;
}
Tensor native::index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                         const Scalar& alpha) {
  check_defined(self, "index_add", "self");
  Tensor out = native::clone(self);
  index_add_impl(out, dim, index, source, alpha, "index_add");
  return out;
}

}  // namespace ember
