#include "core/ops/index.h"

#include <limits>

#include "core/op_registry.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/view.h"
#include "core/tensor_iter.h"

namespace ember {

namespace {
constexpr const char* kIndexOps[] = {"index_select",   "gather",    "scatter", "scatter_add",
                                     "scatter_reduce", "index_add", "index",   "index_put_",
                                     "masked_select",  "take",      "nonzero", "embedding",
                                     "sort",           "argsort",   "topk"};
static_assert(sizeof(kIndexOps) / sizeof(kIndexOps[0]) == 15);
const OpFamilyRegistrar registrar("index", kIndexOps);

// index_select rows shorter than this (in bytes) go through the gather kernel rather than one
// memcpy each.
constexpr int64_t kMinRowBytes = 32;

// The same memory seen with other sizes and strides (a stride may be 0). Only used for the
// operands of one kernel, always within the bounds of the original view (Note [Indexed
// iteration] in core/ops/index.h).
Tensor restride(const Tensor& t, Shape sizes, Shape strides) {
  return make_tensor(t.storage(), std::move(sizes), std::move(strides), t.storage_offset(),
                     t.dtype());
}

Shape with_size(Shape s, int64_t d, int64_t v) {
  s[d] = v;
  return s;
}

// 0-dim tensors take part in dim-wise ops as 1-D tensors of one element, as in PyTorch.
Tensor at_least_1d(const Tensor& t) { return t.dim() == 0 ? native::view(t, {1}) : t; }

void check_defined(const Tensor& t, const char* op, const char* what) {
  EMBER_CHECK(t.defined(), op, ": ", what, " is an undefined tensor");
}

void check_same_device(const Tensor& self, const Tensor& other, const char* op, const char* what) {
  EMBER_CHECK(self.device() == other.device(), op, ": expected ", what, " on ", self.device(),
              " (the device of self), got ", other.device());
}

// gather and the scatters take int64 indices only, as PyTorch does.
void check_int64_index(const Tensor& index, const char* op) {
  check_defined(index, op, "index");
  EMBER_CHECK(index.dtype() == kInt64, op, ": expected an int64 index tensor, got ",
              dtype_name(index.dtype()));
}

// index_select, index_add and embedding accept int32 indices too; kernels see int64.
Tensor int64_index(const Tensor& index, const char* op) {
  check_defined(index, op, "index");
  EMBER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, op,
              ": expected an int64 or int32 index tensor, got ", dtype_name(index.dtype()));
  return native::to(index, kInt64);
}

int64_t byte_stride(const Tensor& t, int64_t d) {
  return t.stride(d) * static_cast<int64_t>(t.element_size());
}

// Checks every value of an int64 index against axis. For results with no elements, where the
// kernels would not look at the index, so that a bad index is an error whatever the shapes.
void check_index_values(const Tensor& index, const IndexAxis& axis) {
  if (index.numel() == 0) return;
  Tensor scratch = empty(index.sizes(), index.options());
  TensorIter iter = TensorIterConfig(axis.op)
                        .add_output(scratch)
                        .add_input(zeros({}, index.options()))
                        .add_input(index)
                        .build();
  index_offsets_stub(iter.device().type, iter,
                     IndexAxis{axis.size, 0, axis.wrap_negative, axis.dim, axis.op});
}

// ---- gather / index_select ----------------------------------------------------------------------

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

// ---- scatter family -------------------------------------------------------------------------

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

// Runs scatter_stub, writing into self. Every scatter with a per-element index ends here.
// Runs the scatter kernel: for every position of `shape`, the loop walks `loop.steps` source
// elements of `src` and writes each into `self` at the position its `index` entry names along
// `axis` (scatter, scatter_add/reduce, index_add and index_put_ all come down to this).
void run_scatter(const Tensor& self, const Tensor& src, const Tensor& index, const Shape& shape,
                 const IndexAxis& axis, const ScatterLoop& loop, ScatterReduce reduce,
                 const Scalar& alpha, const char* op) {
  TensorIter iter = TensorIterConfig(op)
                        .add_output(self)
                        .add_input(src)
                        .add_input(index)
                        .static_shape(shape)
                        .build();
  scatter_stub(iter.device().type, iter, axis, loop, reduce, alpha);
}

void scatter_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                  ScatterReduce reduce, const Scalar& alpha, const char* op) {
  check_scatter(self, dim, index, src, op);
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

// Whether a tensor of shape `from` broadcasts to `to` (without changing `to`).
bool broadcastable_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  }
  return true;
}

void check_alpha(const Tensor& self, const Scalar& alpha, const char* op) {
  EMBER_CHECK(!(alpha.is_floating() && !is_floating(self.dtype())), op,
              ": for integral input tensors, argument alpha must not be a floating point number");
}

// ---- advanced indexing ------------------------------------------------------------------------

// Advanced indexing resolved into the operands of one gather (index) or scatter (index_put_):
// out[e] = src[e] + index[e] * axis.stride, over `shape` (Note [Indexed iteration]).
struct AdvancedIndex {
  Tensor src;    // self (dims permuted if needed), restrided to `shape`, stride 0 over B
  Tensor index;  // int64 restrided to `shape`: an element index, or a byte offset
  IndexAxis axis;
  Shape shape;       // the result shape
  Tensor unchecked;  // the index values not yet checked (one index tensor), for empty results
};

AdvancedIndex make_advanced_index(const Tensor& self, const std::vector<Tensor>& indices,
                                  const char* op) {
  check_defined(self, op, "self");
  // 1. One entry per dim of src: bool masks become the int64 coordinates of their true elements.
  Tensor src = self;
  std::vector<Tensor> per_dim;
  for (size_t k = 0; k < indices.size(); ++k) {
    const Tensor& t = indices[k];
    if (!t.defined()) {
      per_dim.push_back(Tensor());
      continue;
    }
    check_same_device(self, t, op, "index tensors");
    if (t.dtype() == kBool) {
      const int64_t d0 = static_cast<int64_t>(per_dim.size());
      if (t.dim() == 0) {
        // x[True] / x[False]: a new dim of size 1 (or 0) at this position.
        EMBER_CHECK(d0 <= src.dim(), op, ": too many indices for a tensor of dimension ",
                    self.dim());
        src = native::unsqueeze(src, d0);
        per_dim.push_back(native::select(nonzero(native::view(t, {1})), 1, 0));
        continue;
      }
      EMBER_CHECK(d0 + t.dim() <= src.dim(), op, ": too many indices for a tensor of dimension ",
                  self.dim(), " (the mask at position ", k, " has ", t.dim(), " dims)");
      for (int64_t j = 0; j < t.dim(); ++j) {
        EMBER_CHECK(t.size(j) == src.size(d0 + j), op, ": the shape of the mask ",
                    shape_str(t.sizes()), " at position ", k,
                    " does not match the shape of the indexed tensor ", shape_str(self.sizes()),
                    " at dimension ", d0 + j);
      }
      const Tensor coords = nonzero(t);
      for (int64_t j = 0; j < t.dim(); ++j) per_dim.push_back(native::select(coords, 1, j));
    } else {
      EMBER_CHECK(t.dtype() == kInt64 || t.dtype() == kInt32, op,
                  ": tensors used as indices must be int64, int32 or bool, got ",
                  dtype_name(t.dtype()), " at position ", k);
      per_dim.push_back(native::to(t, kInt64));
    }
  }
  EMBER_CHECK(static_cast<int64_t>(per_dim.size()) <= src.dim(), op,
              ": too many indices for a tensor of dimension ", self.dim(), " (got ", per_dim.size(),
              ")");
  per_dim.resize(static_cast<size_t>(src.dim()));

  // 2. The indexed dims and the broadcast shape B of their index tensors.
  std::vector<int64_t> dims;
  Shape bshape;
  for (int64_t d = 0; d < src.dim(); ++d) {
    if (!per_dim[d].defined()) continue;
    if (dims.empty()) {
      bshape = per_dim[d].sizes();
    } else {
      bshape = broadcast_shapes(bshape, per_dim[d].sizes(), op);
    }
    dims.push_back(d);
  }
  EMBER_CHECK(!dims.empty(), op,
              ": expected at least one index tensor (an undefined tensor is a full slice)");

  // 3. NumPy's rule: indexed dims that are not adjacent move to the front (B goes first).
  std::vector<int64_t> orig_dim(static_cast<size_t>(src.dim()));
  for (int64_t d = 0; d < src.dim(); ++d) orig_dim[d] = d;
  const bool adjacent = dims.back() - dims.front() + 1 == static_cast<int64_t>(dims.size());
  if (!adjacent) {
    Shape perm(dims.begin(), dims.end());
    for (int64_t d = 0; d < src.dim(); ++d)
      if (!per_dim[d].defined()) perm.push_back(d);
    src = native::permute(src, perm);
    std::vector<Tensor> reordered;
    for (int64_t d : perm) reordered.push_back(per_dim[d]);
    per_dim = std::move(reordered);
    orig_dim.assign(perm.begin(), perm.end());
    for (size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<int64_t>(i);
  }
  const int64_t first = dims.front(), last = dims.back();

  // 4. Result shape: src's dims before the indexed ones, B, src's dims after.
  AdvancedIndex ai;
  Shape src_strides;
  for (int64_t d = 0; d < first; ++d) {
    ai.shape.push_back(src.size(d));
    src_strides.push_back(src.stride(d));
  }
  for (int64_t s : bshape) {
    ai.shape.push_back(s);
    src_strides.push_back(0);
  }
  for (int64_t d = last + 1; d < src.dim(); ++d) {
    ai.shape.push_back(src.size(d));
    src_strides.push_back(src.stride(d));
  }
  ai.src = restride(src, ai.shape, src_strides);
  // An int64 tensor of shape B placed into the result shape (stride 0 elsewhere).
  auto to_result = [&](const Tensor& b) {
    Shape strides(static_cast<size_t>(first), 0);
    strides.insert(strides.end(), b.strides().begin(), b.strides().end());
    strides.resize(ai.shape.size(), 0);
    return restride(b, ai.shape, strides);
  };

  if (dims.size() == 1) {
    ai.unchecked = per_dim[first];
    ai.index = to_result(native::expand(per_dim[first], bshape));
    ai.axis = IndexAxis{src.size(first), byte_stride(src, first), true, orig_dim[first], op};
    return ai;
  }
  // 5. Several index tensors: sum their checked contributions into byte offsets first.
  Tensor offsets = zeros(bshape, TensorOptions(kInt64).device(self.device()));
  for (int64_t d : dims) {
    TensorIter iter = TensorIterConfig(op)
                          .add_output(offsets)
                          .add_input(offsets)
                          .add_input(per_dim[d])
                          .static_shape(bshape)
                          .build();
    index_offsets_stub(iter.device().type, iter,
                       IndexAxis{src.size(d), byte_stride(src, d), true, orig_dim[d], op});
  }
  ai.index = to_result(offsets);
  ai.axis = IndexAxis{std::numeric_limits<int64_t>::max(), 1, false, 0, op};
  return ai;
}

Tensor index_impl(const Tensor& self, const std::vector<Tensor>& indices, const char* op) {
  AdvancedIndex ai = make_advanced_index(self, indices, op);
  Tensor out = empty(ai.shape, self.options());
  if (out.numel() == 0) {
    if (ai.unchecked.defined()) check_index_values(ai.unchecked, ai.axis);
    return out;
  }
  TensorIter iter = TensorIterConfig(op)
                        .add_output(out)
                        .add_input(ai.src)
                        .add_input(ai.index)
                        .static_shape(ai.shape)
                        .build();
  gather_stub(iter.device().type, iter, ai.axis);
  return out;
}

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

// ---- dim-wise indexing ---------------------------------------------------------------------

Tensor native::index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  const char* op = "index_select";
  check_defined(self, op, "self");
  const Tensor idx = int64_index(index, op);
  EMBER_CHECK(idx.dim() <= 1, op, ": index must be 1-D, got shape ", shape_str(index.sizes()));
  if (self.dim() == 0) {
    wrap_dim(dim, 0, op);
    return native::view(index_select_impl(native::view(self, {1}), 0, native::reshape(idx, {-1}), op), idx.sizes());
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

const Tensor& native::scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  check_defined(self, "scatter_", "self");
  self.bump_version();
  scatter_impl(self, dim, index, src, ScatterReduce::Assign, 1, "scatter_");
  return self;
}
const Tensor& native::scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
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
Tensor native::scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
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
                              const Tensor& src, const std::string& reduce, bool include_self) {
  check_defined(self, "scatter_reduce_", "self");
  self.bump_version();
  return scatter_reduce_impl(self, dim, index, src, reduce, include_self, "scatter_reduce_");
}
Tensor native::scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self) {
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

const Tensor& native::index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                         const Scalar& alpha) {
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

// ---- advanced indexing ------------------------------------------------------------------------

Tensor native::index(const Tensor& self, const std::vector<Tensor>& indices) {
  return index_impl(self, indices, "index");
}

const Tensor& native::index_put_(const Tensor& self, const std::vector<Tensor>& indices,
                         const Tensor& values, bool accumulate) {
  const char* op = "index_put_";
  check_defined(self, op, "self");
  check_defined(values, op, "values");
  check_same_device(self, values, op, "values");
  EMBER_CHECK(values.dtype() == self.dtype(), op, ": expected values to have the dtype of self (",
              dtype_name(self.dtype()), "), got ", dtype_name(values.dtype()));
  AdvancedIndex ai = make_advanced_index(self, indices, op);
  EMBER_CHECK(broadcastable_to(values.sizes(), ai.shape), op, ": values of shape ",
              shape_str(values.sizes()), " cannot be broadcast to the indexed shape ",
              shape_str(ai.shape));
  self.bump_version();
  if (shape_numel(ai.shape) == 0) {
    if (ai.unchecked.defined()) check_index_values(ai.unchecked, ai.axis);
    return self;
  }
  // Accumulation runs serially (duplicate indices must not race); plain writes run in parallel
  // and one of the duplicates wins, as in PyTorch.
  const ScatterLoop loop{1, 0, 0, accumulate ? std::numeric_limits<int64_t>::max() : kGrainSize};
  run_scatter(ai.src, values, ai.index, ai.shape, ai.axis, loop,
              accumulate ? ScatterReduce::Sum : ScatterReduce::Assign, 1, op);
  return self;
}

Tensor native::index_put(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values,
                 bool accumulate) {
  check_defined(self, "index_put", "self");
  Tensor out = native::clone(self);
  native::index_put_(out, indices, values, accumulate);
  return out;
}

Tensor native::masked_select(const Tensor& self, const Tensor& mask) {
  const char* op = "masked_select";
  check_defined(self, op, "self");
  check_defined(mask, op, "mask");
  EMBER_CHECK(mask.dtype() == kBool, op, ": expected a bool mask, got ", dtype_name(mask.dtype()));
  const Shape shape = broadcast_shapes(self.sizes(), mask.sizes(), op);
  Tensor s = native::expand(self, shape), m = native::expand(mask, shape);
  if (shape.empty()) {
    s = native::view(s, {1});
    m = native::view(m, {1});
  }
  return index_impl(s, {m}, op);
}

Tensor native::take(const Tensor& self, const Tensor& index) {
  const char* op = "take";
  check_defined(self, op, "self");
  check_int64_index(index, op);
  check_same_device(self, index, op, "index");
  Tensor out = empty(index.sizes(), self.options());
  if (out.numel() == 0) return out;
  const Tensor flat = native::reshape(self, {-1});
  const Tensor flat_r = restride(flat, index.sizes(), Shape(index.sizes().size(), 0));
  TensorIter iter = TensorIterConfig(op)
                        .add_output(out)
                        .add_input(flat_r)
                        .add_input(index)
                        .static_shape(index.sizes())
                        .build();
  gather_stub(iter.device().type, iter, IndexAxis{flat.numel(), byte_stride(flat, 0), true, 0, op});
  return out;
}

Tensor nonzero(const Tensor& self) {
  check_defined(self, "nonzero", "self");
  const Tensor c = native::contiguous(self);
  Tensor out;
  nonzero_stub(c.device().type, c, out);
  return out;
}

Tensor native::embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
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

// ---- ordering -------------------------------------------------------------------------------

std::tuple<Tensor, Tensor> native::sort(const Tensor& self, int64_t dim, bool descending, bool stable) {
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
Tensor Tensor::nonzero() const { return ember::nonzero(*this); }
Tensor Tensor::argsort(int64_t d, bool descending) const {
  return ember::argsort(*this, d, descending);
}

}  // namespace ember
