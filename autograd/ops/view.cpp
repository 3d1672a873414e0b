// Public ops of the view family (core/ops/view.h): forward = native::, plus autograd.
//
// A view's backward puts the gradient back where the view took it from: shape-only views
// (view, reshape, flatten, squeeze...) reshape it, permute/transpose permute it back, expand
// sums it, and views that pick a region (narrow, slice, select, diagonal, unfold, as_strided)
// place it into zeros of the input's shape (autograd::view_backward). Every result is tracked
// as a view of its base (Note [View tracking] in autograd/meta.h).

#include "autograd/ops/view.h"

#include "autograd/ops/common.h"

namespace ember {

using autograd::Geometry;

namespace {

// The view op pattern: run `forward`, record `name` with `backward`, track the view.
template <class F, class B>
Tensor record_view(const char* name, const Tensor& t, F&& forward, B&& backward) {
  Op op(name, t);
  Tensor y = op.run(forward);
  op.set_output(y);
  if (op.recording()) op.backward(std::forward<B>(backward));
  if (y.is_alias_of(t)) autograd::track_view(y, t);
  return y;
}

// Backward of a shape-only view: the gradient reshaped to the input's shape.
struct ReshapeBack {
  Shape in_shape;
  Tensors operator()(const Saved&, const Tensors& g) const { return {reshape(g[0], in_shape)}; }
};
ReshapeBack reshape_back(const Tensor& t) { return ReshapeBack{t.sizes()}; }

// Backward of a region view: the gradient placed where the view reads the input.
autograd::BackwardFn region_back(const Tensor& input, const Tensor& view) {
  return [in = Geometry::of(input), out = Geometry::of(view)](const Saved&,
                                                              const Tensors& g) -> Tensors {
    return {autograd::view_backward(g[0], in, out)};
  };
}

// region views record after the forward, as the backward needs the view's geometry.
template <class F>
Tensor record_region_view(const char* name, const Tensor& t, F&& forward) {
  Op op(name, t);
  Tensor y = op.run(forward);
  op.set_output(y);
  if (op.recording()) op.backward(region_back(t, y));
  if (y.is_alias_of(t)) autograd::track_view(y, t);
  return y;
}

}  // namespace

Tensor view(const Tensor& t, const Shape& shape) {
  return record_view(
      "ViewBackward", t, [&] { return native::view(t, shape); }, reshape_back(t));
}
Tensor reshape(const Tensor& t, const Shape& shape) {
  // reshape is a view when one exists, else a copy; the gradient is the same.
  return record_view(
      "ReshapeBackward", t, [&] { return native::reshape(t, shape); }, reshape_back(t));
}
Tensor flatten(const Tensor& t, int64_t start_dim, int64_t end_dim) {
  return record_view(
      "FlattenBackward", t, [&] { return native::flatten(t, start_dim, end_dim); },
      reshape_back(t));
}
Tensor unflatten(const Tensor& t, int64_t d, const Shape& sizes) {
  return record_view(
      "UnflattenBackward", t, [&] { return native::unflatten(t, d, sizes); }, reshape_back(t));
}
Tensor squeeze(const Tensor& t) {
  return record_view(
      "SqueezeBackward", t, [&] { return native::squeeze(t); }, reshape_back(t));
}
Tensor squeeze(const Tensor& t, int64_t d) {
  return record_view(
      "SqueezeBackward", t, [&] { return native::squeeze(t, d); }, reshape_back(t));
}
Tensor unsqueeze(const Tensor& t, int64_t d) {
  return record_view(
      "UnsqueezeBackward", t, [&] { return native::unsqueeze(t, d); }, reshape_back(t));
}

Tensor permute(const Tensor& t, const Shape& dims) {
  return record_view(
      "PermuteBackward", t, [&] { return native::permute(t, dims); },
      [dims](const Saved&, const Tensors& g) -> Tensors {
        // The inverse permutation: inverse[dims[i]] = i.
        Shape inverse(dims.size());
        const int64_t n = static_cast<int64_t>(dims.size());
        for (int64_t i = 0; i < n; ++i) {
          inverse[static_cast<size_t>(dims[i] < 0 ? dims[i] + n : dims[i])] = i;
        }
        return {permute(g[0], inverse)};
      });
}
Tensor transpose(const Tensor& t, int64_t d0, int64_t d1) {
  return record_view(
      "TransposeBackward", t, [&] { return native::transpose(t, d0, d1); },
      [d0, d1](const Saved&, const Tensors& g) -> Tensors { return {transpose(g[0], d0, d1)}; });
}
Tensor expand(const Tensor& t, const Shape& shape) {
  return record_view(
      "ExpandBackward", t, [&] { return native::expand(t, shape); },
      [in_shape = t.sizes()](const Saved&, const Tensors& g) -> Tensors {
        return {autograd::sum_to(g[0], in_shape)};
      });
}

Tensor narrow(const Tensor& t, int64_t d, int64_t start, int64_t length) {
  return record_region_view("NarrowBackward", t,
                            [&] { return native::narrow(t, d, start, length); });
}
Tensor slice(const Tensor& t, int64_t d, std::optional<int64_t> start, std::optional<int64_t> end,
             int64_t step) {
  return record_region_view("SliceBackward", t,
                            [&] { return native::slice(t, d, start, end, step); });
}
Tensor select(const Tensor& t, int64_t d, int64_t index) {
  return record_region_view("SelectBackward", t, [&] { return native::select(t, d, index); });
}
Tensor unfold(const Tensor& t, int64_t d, int64_t size, int64_t step) {
  return record_region_view("UnfoldBackward", t, [&] { return native::unfold(t, d, size, step); });
}
Tensor diagonal(const Tensor& t, int64_t offset, int64_t d1, int64_t d2) {
  return record_region_view("DiagonalBackward", t,
                            [&] { return native::diagonal(t, offset, d1, d2); });
}
Tensor as_strided(const Tensor& t, const Shape& sizes, const Shape& strides,
                  std::optional<int64_t> storage_offset) {
  return record_region_view("AsStridedBackward", t,
                            [&] { return native::as_strided(t, sizes, strides, storage_offset); });
}

// ---- Tensor methods and operators (declared in core/tensor.h) ----------------------------
Tensor Tensor::view(const Shape& s) const { return ember::view(*this, s); }
Tensor Tensor::reshape(const Shape& s) const { return ember::reshape(*this, s); }
Tensor Tensor::permute(const Shape& d) const { return ember::permute(*this, d); }
Tensor Tensor::transpose(int64_t a, int64_t b) const { return ember::transpose(*this, a, b); }
Tensor Tensor::t() const {
  EMBER_CHECK(dim() <= 2, "t: expects a tensor with <= 2 dimensions, but self is ", dim(), "D");
  return dim() < 2 ? ember::transpose(*this, 0, 0) : ember::transpose(*this, 0, 1);
}
Tensor Tensor::squeeze() const { return ember::squeeze(*this); }
Tensor Tensor::squeeze(int64_t d) const { return ember::squeeze(*this, d); }
Tensor Tensor::unsqueeze(int64_t d) const { return ember::unsqueeze(*this, d); }
Tensor Tensor::expand(const Shape& s) const { return ember::expand(*this, s); }
Tensor Tensor::expand_as(const Tensor& o) const { return ember::expand(*this, o.sizes()); }
Tensor Tensor::flatten(int64_t s, int64_t e) const { return ember::flatten(*this, s, e); }
Tensor Tensor::unflatten(int64_t d, const Shape& s) const { return ember::unflatten(*this, d, s); }
Tensor Tensor::narrow(int64_t d, int64_t s, int64_t l) const {
  return ember::narrow(*this, d, s, l);
}
Tensor Tensor::slice(int64_t d, std::optional<int64_t> s, std::optional<int64_t> e,
                     int64_t st) const {
  return ember::slice(*this, d, s, e, st);
}
Tensor Tensor::select(int64_t d, int64_t i) const { return ember::select(*this, d, i); }
Tensor Tensor::unfold(int64_t d, int64_t s, int64_t st) const {
  return ember::unfold(*this, d, s, st);
}
Tensor Tensor::diagonal(int64_t o, int64_t a, int64_t b) const {
  return ember::diagonal(*this, o, a, b);
}
Tensor Tensor::as_strided(const Shape& s, const Shape& st, std::optional<int64_t> o) const {
  return ember::as_strided(*this, s, st, o);
}

}  // namespace ember
