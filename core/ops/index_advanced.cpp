// Advanced indexing (core/ops/index.h): index, index_put_, index_put. The index tensors are
// resolved into the operands of one gather (index) or one scatter (index_put_).

#include <limits>
#include <vector>

#include "core/mem_overlap.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/index.h"
#include "core/ops/index_utils.h"
#include "core/ops/view.h"
#include "core/tensor_iter.h"

namespace ember {

using namespace index_detail;

namespace {

// Whether a tensor of shape `from` broadcasts to `to` (without changing `to`).
bool broadcastable_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  }
  return true;
}

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

}  // namespace

namespace index_detail {

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

}  // namespace index_detail

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
  check_scatter_overlap(self, Tensor(), values, op);
  for (const Tensor& index : indices) assert_no_overlap(self, index, op);
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

Tensor native::index_put(const Tensor& self, const std::vector<Tensor>& indices,
                         const Tensor& values, bool accumulate) {
  check_defined(self, "index_put", "self");
  Tensor out = native::clone(self);
  native::index_put_(out, indices, values, accumulate);
  return out;
}

}  // namespace ember
