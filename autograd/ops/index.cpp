// Public ops of the index family (core/ops/index.h): forward = native::, plus autograd.
//
// The derivatives pair up: what one op picks, its partner puts back.
//   index_select <-> index_add      gather / sort / topk <-> scatter_add
//   index / take / masked_select / embedding <-> index_put (accumulate)
// so the backward of each is the other (and the backward of that backward is the first again),
// which keeps double backward exact. Index tensors get no gradient. Formulas follow PyTorch's
// derivatives.yaml / FunctionsManual.cpp, with two corrections that make them exact where
// PyTorch's are not: scatter's src gets gradient only where its element won a duplicate index,
// and a src larger than index gets zeros (not a shape error) beyond index's extent.

#include "autograd/ops/index.h"

#include "autograd/ops/common.h"

namespace ember {

namespace {

// `g` (the shape of the index that selected it) placed at the front of zeros of `shape`: the
// gradient of a src that may be larger than its index (scatter ops read only the index's extent).
Tensor pad_to(const Tensor& g, const Shape& shape) {
  if (g.sizes() == shape) return g;
  if (g.dim() == 0) return reshape(g, Shape(shape.size(), 1));  // a 0-dim index, a [1] src
  Shape pads;  // (before, after) pairs from the last dim, as pad() takes them
  for (int64_t d = g.dim() - 1; d >= 0; --d) {
    pads.push_back(0);
    pads.push_back(shape[static_cast<size_t>(d)] - g.size(d));
  }
  return pad(g, pads, "constant", 0);
}

// The part of src a scatter reads: src narrowed to index's shape.
Tensor narrow_to(const Tensor& src, const Tensor& index) {
  Tensor out = src;
  if (index.dim() == 0 || src.sizes() == index.sizes()) return out;
  for (int64_t d = 0; d < index.dim(); ++d) {
    if (out.size(d) != index.size(d)) out = narrow(out, d, 0, index.size(d));
  }
  return out;
}

// A bool mask as 0/1 in `dtype`, to multiply a gradient by.
Tensor as_float(const Tensor& mask, DType dtype) { return mask.to(dtype); }

// For a scatter into a tensor of `self_shape`: true (index's shape) where src's element is the
// one that ends up in self, false where a later duplicate index overwrote it (the last wins).
Tensor scatter_winners(const Shape& self_shape, int64_t dim, const Tensor& index) {
  Tensor ids = reshape(arange(0, index.numel(), 1, TensorOptions(kInt64).device(index.device())),
                       index.sizes());
  Tensor owner =
      scatter(full(self_shape, -1, TensorOptions(kInt64).device(index.device())), dim, index, ids);
  return eq(gather(owner, dim, index), ids);
}

// The gradient of ops that pick values along dim by `index` (gather, sort, topk): each value's
// gradient added back where it came from.
Tensor gather_backward(const Tensor& g, const Shape& self_shape, int64_t dim, const Tensor& index) {
  return scatter_add(zeros(self_shape, g.options()), dim, index, g);
}

}  // namespace

// ---- dim-wise indexing ---------------------------------------------------------------------

// d self = g added back at the selected positions (duplicates accumulate).
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  Op op("IndexSelectBackward", self);
  Tensor y = op.run([&] { return native::index_select(self, dim, index); });
  op.set_output(y);
  if (op.recording()) {
    op.save(index);
    op.backward([shape = self.sizes(), dim](const Saved& s, const Tensors& g) -> Tensors {
      return {index_add(zeros(shape, g[0].options()), dim, s[0], g[0])};
    });
  }
  return y;
}

// d self = g scatter-added back along dim.
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index) {
  Op op("GatherBackward", self);
  Tensor y = op.run([&] { return native::gather(self, dim, index); });
  op.set_output(y);
  if (op.recording()) {
    op.save(index);
    op.backward([shape = self.sizes(), dim](const Saved& s, const Tensors& g) -> Tensors {
      return {gather_backward(g[0], shape, dim, s[0])};
    });
  }
  return y;
}

// d self = g with the written positions zeroed; d src = g gathered at the positions each src
// element was written to, for the elements that won their position (the last of duplicates).
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  Op op("ScatterBackward", self, src);
  Tensor y = op.run([&] { return native::scatter(self, dim, index, src); });
  op.set_output(y);
  if (op.recording()) {
    op.save(index);
    op.backward([self_shape = self.sizes(), src_shape = src.sizes(), dim](
                    const Saved& s, const Tensors& g) -> Tensors {
      const Tensor index = s[0];
      Tensor grad_self, grad_src;
      if (s.needs_grad(0)) grad_self = scatter(g[0], dim, index, Scalar(0));
      if (s.needs_grad(1)) {
        Tensor won = as_float(scatter_winners(self_shape, dim, index), g[0].dtype());
        grad_src = pad_to(mul(gather(g[0], dim, index), won), src_shape);
      }
      return {grad_self, grad_src};
    });
  }
  return y;
}

// d self = g with the written positions zeroed (the value is a constant).
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  Op op("ScatterBackward", self);
  Tensor y = op.run([&] { return native::scatter(self, dim, index, value); });
  op.set_output(y);
  if (op.recording()) {
    op.save(index);
    op.backward([dim](const Saved& s, const Tensors& g) -> Tensors {
      return {scatter(g[0], dim, s[0], Scalar(0))};
    });
  }
  return y;
}

const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return inplace_op(
      "scatter_", self, [&] { native::scatter_(self, dim, index, src); },
      [&](const Tensor& old) { return scatter(old, dim, index, src); }, src);
}
const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return inplace_op(
      "scatter_", self, [&] { native::scatter_(self, dim, index, value); },
      [&](const Tensor& old) { return scatter(old, dim, index, value); });
}

// d self = g; d src = g gathered at the positions src was added to.
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  Op op("ScatterAddBackward", self, src);
  Tensor y = op.run([&] { return native::scatter_add(self, dim, index, src); });
  op.set_output(y);
  if (op.recording()) {
    op.save(index);
    op.backward([src_shape = src.sizes(), dim](const Saved& s, const Tensors& g) -> Tensors {
      Tensor grad_src;
      if (s.needs_grad(1)) grad_src = pad_to(gather(g[0], dim, s[0]), src_shape);
      return {g[0], grad_src};
    });
  }
  return y;
}
const Tensor& scatter_add_(const Tensor& self, int64_t dim, const Tensor& index,
                           const Tensor& src) {
  return inplace_op(
      "scatter_add_", self, [&] { native::scatter_add_(self, dim, index, src); },
      [&](const Tensor& old) { return scatter_add(old, dim, index, src); }, src);
}

namespace {

// The gradients {self, src} of scatter_reduce, PyTorch's scatter_reduce_backward:
//   sum   g to self, g gathered to src.
//   mean  both divided by the number of values averaged into their position.
//   prod  g * (product of the others), computed without dividing by a zero factor: self's zeros
//         are replaced by 1 and the product redone; a src element that is the only zero of its
//         position gets g * the product with it replaced by 1.
//   amax/amin  g split evenly among the values equal to the result (ties share).
// With include_self=false, self's elements at scattered positions took no part: no gradient.
// `self`, `src` and `result` are only defined for prod, amax and amin.
Tensors scatter_reduce_backward(const Tensor& g, int64_t dim, const Tensor& index,
                                const std::string& reduce, bool include_self, const Tensor& self,
                                const Tensor& src_full, const Tensor& result,
                                const Shape& self_shape, const Shape& src_shape) {
  Tensor grad_self, grad_src;
  if (reduce == "sum") {
    grad_self = g;
    grad_src = gather(g, dim, index);
  } else if (reduce == "mean") {
    Tensor n = include_self ? ones(self_shape, g.options()) : zeros(self_shape, g.options());
    n = scatter_add(n, dim, index, ones(index.sizes(), g.options()));
    Tensor inv_n = reciprocal(masked_fill(n, eq(n, 0), 1));  // a constant: no graph
    grad_self = mul(g, inv_n);
    grad_src = mul(gather(g, dim, index), gather(inv_n, dim, index));
  } else if (reduce == "prod") {
    const Tensor src = narrow_to(src_full, index);
    Tensor masked_self = masked_fill(self, eq(self, 0), 1);
    Tensor masked_self_result = scatter_reduce(masked_self, dim, index, src, reduce, include_self);
    grad_self = div(mul(g, masked_self_result), masked_self);
    Tensor src_zero = eq(src, 0);
    Tensor zeros_at =
        scatter_add(zeros(self_shape, g.options()), dim, index, as_float(src_zero, g.dtype()));
    Tensor single_zero = logical_and(src_zero, eq(gather(zeros_at, dim, index), 1));
    Tensor masked_src_result =
        scatter_reduce(self, dim, index, masked_fill(src, single_zero, 1), reduce, include_self);
    grad_src = where(single_zero, gather(mul(g, masked_src_result), dim, index),
                     div(gather(mul(g, result), dim, index), masked_fill(src, src_zero, 1)));
  } else {  // amax, amin
    const Tensor src = narrow_to(src_full, index);
    Tensor value = gather(result, dim, index);
    Tensor self_is = as_float(eq(self, result), g.dtype());
    if (!include_self) self_is = scatter(self_is, dim, index, Scalar(0));
    Tensor src_is = as_float(eq(src, value), g.dtype());
    Tensor share = reciprocal(scatter_add(self_is, dim, index, src_is));  // a constant: no graph
    Tensor g_share = mul(g, share);
    grad_self = mul(g_share, self_is);
    grad_src = mul(gather(g_share, dim, index), src_is);
  }
  if (!include_self) grad_self = scatter(grad_self, dim, index, Scalar(0));
  return {grad_self, pad_to(grad_src, src_shape)};
}

}  // namespace

Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self) {
  Op op("ScatterReduceBackward", self, src);
  Tensor y =
      op.run([&] { return native::scatter_reduce(self, dim, index, src, reduce, include_self); });
  op.set_output(y);
  if (op.recording()) {
    const bool needs_values = reduce != "sum" && reduce != "mean";
    op.save(index);
    op.save(needs_values ? self : Tensor());
    op.save(needs_values ? src : Tensor());
    if (needs_values) op.save_output(y);
    op.backward([dim, reduce, include_self, needs_values, self_shape = self.sizes(),
                 src_shape = src.sizes()](const Saved& s, const Tensors& g) -> Tensors {
      return scatter_reduce_backward(g[0], dim, s[0], reduce, include_self, s[1], s[2],
                                     needs_values ? s[3] : Tensor(), self_shape, src_shape);
    });
  }
  return y;
}
const Tensor& scatter_reduce_(const Tensor& self, int64_t dim, const Tensor& index,
                              const Tensor& src, const std::string& reduce, bool include_self) {
  return inplace_op(
      "scatter_reduce_", self,
      [&] { native::scatter_reduce_(self, dim, index, src, reduce, include_self); },
      [&](const Tensor& old) { return scatter_reduce(old, dim, index, src, reduce, include_self); },
      src);
}

// d self = g; d source = alpha * g at the rows source was added to. The view family's backward
// (autograd::view_backward) is an index_add, so this is also the second derivative of views.
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha) {
  Op op("IndexAddBackward", self, source);
  Tensor y = op.run([&] { return native::index_add(self, dim, index, source, alpha); });
  op.set_output(y);
  if (op.recording()) {
    op.save(index);
    op.backward(
        [source_shape = source.sizes(), dim, alpha](const Saved& s, const Tensors& g) -> Tensors {
          Tensor grad_source;
          if (s.needs_grad(1)) {
            grad_source = reshape(index_select(g[0], dim, s[0]), source_shape);  // 0-dim self
            if (alpha.to_double() != 1.0) grad_source = mul(grad_source, alpha);
          }
          return {g[0], grad_source};
        });
  }
  return y;
}
const Tensor& index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                         const Scalar& alpha) {
  return inplace_op(
      "index_add_", self, [&] { native::index_add_(self, dim, index, source, alpha); },
      [&](const Tensor& old) { return index_add(old, dim, index, source, alpha); }, source);
}

// ---- advanced indexing --------------------------------------------------------------------

namespace {
// The saved index list of index / index_put (undefined entries are saved as undefined).
std::vector<Tensor> saved_indices(const Saved& s, size_t n) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < n; ++i) out.push_back(s[i]);
  return out;
}
}  // namespace

// d self = g accumulated back at the indexed positions (duplicates add up).
Tensor index(const Tensor& self, const std::vector<Tensor>& indices) {
  Op op("IndexBackward", self);
  Tensor y = op.run([&] { return native::index(self, indices); });
  op.set_output(y);
  if (op.recording()) {
    for (const Tensor& i : indices) op.save(i);
    op.backward(
        [shape = self.sizes(), n = indices.size()](const Saved& s, const Tensors& g) -> Tensors {
          return {index_put(zeros(shape, g[0].options()), saved_indices(s, n), g[0], true)};
        });
  }
  return y;
}

// d self = g, with the written positions zeroed unless accumulating; d values = g at the
// indexed positions (summed down to values' shape by the engine when values broadcast).
Tensor index_put(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values,
                 bool accumulate) {
  Op op("IndexPutBackward", self, values);
  Tensor y = op.run([&] { return native::index_put(self, indices, values, accumulate); });
  op.set_output(y);
  if (op.recording()) {
    for (const Tensor& i : indices) op.save(i);
    op.backward([n = indices.size(), accumulate](const Saved& s, const Tensors& g) -> Tensors {
      const std::vector<Tensor> idx = saved_indices(s, n);
      Tensor grad_self, grad_values;
      if (s.needs_grad(0)) {
        grad_self = accumulate ? g[0] : index_put(g[0], idx, zeros({}, g[0].options()), false);
      }
      if (s.needs_grad(1)) grad_values = index(g[0], idx);
      return {grad_self, grad_values};
    });
  }
  return y;
}
const Tensor& index_put_(const Tensor& self, const std::vector<Tensor>& indices,
                         const Tensor& values, bool accumulate) {
  return inplace_op(
      "index_put_", self, [&] { native::index_put_(self, indices, values, accumulate); },
      [&](const Tensor& old) { return index_put(old, indices, values, accumulate); }, values);
}

// d self = g put back where mask (broadcast with self) is true; the engine sums it down to
// self's shape when self was broadcast.
Tensor masked_select(const Tensor& self, const Tensor& mask) {
  Op op("MaskedSelectBackward", self);
  Tensor y = op.run([&] { return native::masked_select(self, mask); });
  op.set_output(y);
  if (op.recording()) {
    op.save(mask);
    const Shape shape = broadcast_shapes(self.sizes(), mask.sizes(), "masked_select");
    op.backward([shape](const Saved& s, const Tensors& g) -> Tensors {
      int64_t numel = 1;
      for (int64_t d : shape) numel *= d;
      // Flattened, so that a 0-dim mask needs no special case.
      Tensor flat_mask = reshape(expand(s[0], shape), {-1});
      Tensor flat = index_put(zeros({numel}, g[0].options()), {flat_mask}, g[0], false);
      return {reshape(flat, shape)};
    });
  }
  return y;
}

// d self = g accumulated at the taken (flat) positions.
Tensor take(const Tensor& self, const Tensor& index) {
  Op op("TakeBackward", self);
  Tensor y = op.run([&] { return native::take(self, index); });
  op.set_output(y);
  if (op.recording()) {
    op.save(index);
    op.backward(
        [shape = self.sizes(), numel = self.numel()](const Saved& s, const Tensors& g) -> Tensors {
          Tensor flat = index_put(zeros({numel}, g[0].options()), {reshape(s[0], {-1})},
                                  reshape(g[0], {-1}), true);
          return {reshape(flat, shape)};
        });
  }
  return y;
}

// d weight = the gradient rows added into the rows they were read from; the padding_idx row
// gets none (as in PyTorch: a padding row stays fixed in training).
Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  Op op("EmbeddingBackward", weight);
  Tensor y = op.run([&] { return native::embedding(weight, indices, padding_idx); });
  op.set_output(y);
  if (op.recording()) {
    op.save(indices);
    std::optional<int64_t> pad = padding_idx;
    if (pad && *pad < 0) pad = *pad + weight.size(0);
    op.backward([shape = weight.sizes(), pad](const Saved& s, const Tensors& g) -> Tensors {
      const Tensor rows_index = reshape(s[0], {-1});
      const Tensor rows = reshape(g[0], {rows_index.numel(), shape[1]});
      Tensor grad = index_add(zeros(shape, g[0].options()), 0, rows_index, rows);
      if (pad) {
        grad = index_put(grad, {full({1}, *pad, TensorOptions(kInt64).device(grad.device()))},
                         zeros({}, grad.options()), false);
      }
      return {grad};
    });
  }
  return y;
}

// ---- ordering ------------------------------------------------------------------------------
// values = self.gather(dim, indices): d self = g scattered back by indices. Indices get none.

namespace {
// The ordering ops' one pattern: run `forward` (values, indices), record `name` over values.
template <class F>
std::tuple<Tensor, Tensor> values_by_indices(const char* name, const Tensor& self, int64_t dim,
                                             F&& forward) {
  Op op(name, self);
  auto [values, indices] = op.run(forward);
  op.set_output(values);
  if (op.recording()) {
    op.save(indices);
    op.backward([shape = self.sizes(), dim](const Saved& s, const Tensors& g) -> Tensors {
      return {gather_backward(g[0], shape, dim, s[0])};
    });
  }
  return {values, indices};
}
}  // namespace

std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending, bool stable) {
  return values_by_indices("SortBackward", self, dim,
                           [&] { return native::sort(self, dim, descending, stable); });
}

std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim, bool largest,
                                bool sorted) {
  return values_by_indices("TopkBackward", self, dim,
                           [&] { return native::topk(self, k, dim, largest, sorted); });
}

// ---- Tensor methods and operators (declared in core/tensor.h) ----------------------------
Tensor Tensor::index_select(int64_t d, const Tensor& i) const {
  return ember::index_select(*this, d, i);
}
Tensor Tensor::gather(int64_t d, const Tensor& i) const { return ember::gather(*this, d, i); }
Tensor Tensor::scatter(int64_t d, const Tensor& i, const Tensor& src) const {
  return ember::scatter(*this, d, i, src);
}
Tensor Tensor::scatter(int64_t d, const Tensor& i, const Scalar& value) const {
  return ember::scatter(*this, d, i, value);
}
const Tensor& Tensor::scatter_(int64_t d, const Tensor& i, const Tensor& src) const {
  return ember::scatter_(*this, d, i, src);
}
const Tensor& Tensor::scatter_(int64_t d, const Tensor& i, const Scalar& value) const {
  return ember::scatter_(*this, d, i, value);
}
Tensor Tensor::scatter_add(int64_t d, const Tensor& i, const Tensor& src) const {
  return ember::scatter_add(*this, d, i, src);
}
const Tensor& Tensor::scatter_add_(int64_t d, const Tensor& i, const Tensor& src) const {
  return ember::scatter_add_(*this, d, i, src);
}
Tensor Tensor::scatter_reduce(int64_t d, const Tensor& i, const Tensor& src,
                              const std::string& reduce, bool include_self) const {
  return ember::scatter_reduce(*this, d, i, src, reduce, include_self);
}
const Tensor& Tensor::scatter_reduce_(int64_t d, const Tensor& i, const Tensor& src,
                                      const std::string& reduce, bool include_self) const {
  return ember::scatter_reduce_(*this, d, i, src, reduce, include_self);
}
Tensor Tensor::index_add(int64_t d, const Tensor& i, const Tensor& source,
                         const Scalar& alpha) const {
  return ember::index_add(*this, d, i, source, alpha);
}
const Tensor& Tensor::index_add_(int64_t d, const Tensor& i, const Tensor& source,
                                 const Scalar& alpha) const {
  return ember::index_add_(*this, d, i, source, alpha);
}
Tensor Tensor::index(const std::vector<Tensor>& indices) const {
  return ember::index(*this, indices);
}
const Tensor& Tensor::index_put_(const std::vector<Tensor>& indices, const Tensor& values,
                                 bool accumulate) const {
  return ember::index_put_(*this, indices, values, accumulate);
}
Tensor Tensor::index_put(const std::vector<Tensor>& indices, const Tensor& values,
                         bool accumulate) const {
  return ember::index_put(*this, indices, values, accumulate);
}
Tensor Tensor::masked_select(const Tensor& mask) const { return ember::masked_select(*this, mask); }
Tensor Tensor::take(const Tensor& i) const { return ember::take(*this, i); }
std::tuple<Tensor, Tensor> Tensor::sort(int64_t d, bool descending) const {
  return ember::sort(*this, d, descending);
}
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t d, bool largest, bool sorted) const {
  return ember::topk(*this, k, d, largest, sorted);
}

}  // namespace ember
