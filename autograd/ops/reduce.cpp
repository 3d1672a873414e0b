// Public ops of the reduce family (core/ops/reduce.h): forward = native::, plus autograd.
//
// The formulas follow PyTorch's (derivatives.yaml / FunctionsManual.cpp):
// - sum, mean: the gradient broadcast back over the reduced dims (/ n for mean).
// - prod: g * prod / x without zeros; with zeros, the product of the other elements from
//   exclusive cumulative products (Note [Gradient of prod with zeros]).
// - var, std: g * 2 (x - mean) / (N - correction); std divides by 2 std, 0 where std == 0.
// - amax, amin, max(), min(): the gradient split evenly among the elements equal to the result;
//   max(dim), min(dim): the whole gradient to the element the returned index names.
// - logsumexp: g * exp(x - result).
// - norm: p = 0: 0; p = 1: g sign(x); p = 2: g x / norm; p = +-inf: g sign(x) split among the
//   elements of largest (smallest) |x|; other p: g x |x|^(p-2) / norm^(p-1). A zero norm gets the
//   zero subgradient.
// - cumsum: the reversed cumulative sum of g; cumprod: Note [Gradient of cumprod].
// Every backward is written with differentiable ops, so double backward works.

#include "autograd/ops/reduce.h"

#include <cmath>

#include "autograd/ops/common.h"

namespace ember {

namespace {

// The reduced dims of a reduction over `dims` of a tensor of `in_shape` (empty = all), sorted.
Shape reduced_dims(const Shape& in_shape, const Shape& dims) {
  const int64_t n = static_cast<int64_t>(in_shape.size());
  if (n == 0) return {};  // a 0-dim tensor accepts dim 0 / -1, and has nothing to unsqueeze
  std::vector<bool> reduced(static_cast<size_t>(n), dims.empty());
  for (int64_t d : dims) reduced[static_cast<size_t>(d < 0 ? d + n : d)] = true;
  Shape out;
  for (int64_t d = 0; d < n; ++d)
    if (reduced[static_cast<size_t>(d)]) out.push_back(d);
  return out;
}

// A reduction's gradient `g` (the reduced shape) broadcast back to `in_shape`.
Tensor expand_reduced(const Tensor& g, const Shape& in_shape, const Shape& dims, bool keepdim) {
  Tensor out = g;
  if (!keepdim) {
    for (int64_t d : reduced_dims(in_shape, dims)) out = unsqueeze(out, d);
  }
  return expand(out, in_shape);
}

// The number of input elements behind each output element of a reduction.
int64_t reduced_count(const Shape& in_shape, const Shape& dims) {
  int64_t n = 1;
  for (int64_t d : reduced_dims(in_shape, dims)) n *= in_shape[static_cast<size_t>(d)];
  return n;
}

int64_t wrap_dim(int64_t dim, int64_t ndim) { return dim < 0 ? dim + ndim : dim; }

bool has_zero(const Tensor& t) { return t.numel() > 0 && eq(t, 0).any().item<bool>(); }

// 1 where `mask` (bool) holds, 0 elsewhere, in `dtype`: a constant of the backward.
Tensor as_float(const Tensor& mask, DType dtype) { return mask.to(dtype); }

// a / b where b != 0, and 0 where b == 0, without a NaN in the graph of either branch (the
// division never sees the zero divisor, so its derivative stays finite).
Tensor div_or_zero(const Tensor& a, const Tensor& b) {
  Tensor zero = eq(b, 0);
  return where(zero, Scalar(0.0), div(a, where(zero, Scalar(1.0), b)));
}

// out[i] = sum of t[j] for j >= i along dim: a differentiable op of its own, the adjoint of
// cumsum (its gradient is the cumsum of g, cumsum's is the reversed cumsum of g).
Tensor reverse_cumsum(const Tensor& t, int64_t dim) {
  Op op("ReverseCumsumBackward", t);
  Tensor y =
      op.run([&] { return native::flip(native::cumsum(native::flip(t, {dim}), dim), {dim}); });
  op.set_output(y);
  op.backward([dim](const Saved&, const Tensors& g) -> Tensors { return {cumsum(g[0], dim)}; });
  return y;
}

// Note [Gradient of prod with zeros]
// d prod / d x_i is the product of the other elements. Without zeros that is prod / x_i. With
// zeros, the reduced dims are moved to the end and flattened to one dim of size R, and the
// product of the others is (product of the elements before i) * (product of those after i):
// exclusive cumulative products from the left and from the right. Both are polynomials in x,
// so the second derivative is right at zeros too.

// prod_{j < i} t[..., j] along the last dim.
Tensor exclusive_cumprod_last(const Tensor& t) {
  const int64_t r = t.size(-1);
  Shape one_shape = t.sizes();
  one_shape.back() = 1;
  Tensor ones_col = ones(one_shape, t.options());
  if (r == 1) return ones_col;
  return cumprod(cat({ones_col, narrow(t, -1, 0, r - 1)}, -1), -1);
}

Tensor prod_backward(const Tensor& g, const Tensor& x, const Tensor& y, const Shape& dims,
                     bool keepdim) {
  const Shape& in_shape = x.sizes();
  Tensor g_in = expand_reduced(g, in_shape, dims, keepdim);
  if (x.numel() == 0) return g_in;
  if (!has_zero(x)) return g_in * div(expand_reduced(y, in_shape, dims, keepdim), x);
  if (x.dim() == 0) return g_in;  // the product of no other element
  // Move the reduced dims last: perm = kept dims, then reduced dims.
  const Shape red = reduced_dims(in_shape, dims);
  std::vector<bool> is_red(in_shape.size(), false);
  for (int64_t d : red) is_red[static_cast<size_t>(d)] = true;
  Shape perm, flat_shape;
  int64_t r = 1;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (is_red[static_cast<size_t>(d)]) continue;
    perm.push_back(d);
    flat_shape.push_back(in_shape[static_cast<size_t>(d)]);
  }
  for (int64_t d : red) {
    perm.push_back(d);
    r *= in_shape[static_cast<size_t>(d)];
  }
  flat_shape.push_back(r);
  Tensor xp = permute(x, perm);
  const Shape& permuted_shape = xp.sizes();
  Tensor flat = reshape(xp, flat_shape);
  Tensor left = exclusive_cumprod_last(flat);
  Tensor right = flip(exclusive_cumprod_last(flip(flat, {-1})), {-1});
  Tensor others = reshape(left * right, permuted_shape);
  Shape inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return g_in * permute(others, inverse);
}

// Note [Gradient of cumprod]
// y_k = prod_{j <= k} x_j, so dL/dx_i = sum_{k >= i} g_k prod_{j <= k, j != i} x_j. Without
// zeros that is reverse_cumsum(g * y)_i / x_i. With zeros (PyTorch's cumprod_backward), along
// each line with its first zero at z:
//   i < z: the same formula (every y_k with k >= z is 0);
//   i = z: sum_{k >= z} g_k cumprod(x with x_z replaced by 1)_k;
//   i > z: 0 (every product holds x_z).
// That piecewise form is exact, but its own derivative is not (it treats "i > z" as constant).
// Under create_graph, inputs with zeros therefore take an O(n^2) form that is a polynomial in x:
//   dL/dx_i = prod(x_{<i}) * sum_{k >= i} g_k prod_{i < j <= k} x_j,
// one position i at a time (PyTorch does the same).
Tensor cumprod_backward_polynomial(const Tensor& g, const Tensor& x, int64_t dim) {
  const int64_t n = x.size(dim);
  Shape one_shape = x.sizes();
  one_shape[static_cast<size_t>(dim)] = 1;
  const Tensor ones_slice = ones(one_shape, x.options());
  std::vector<Tensor> grads;
  for (int64_t i = 0; i < n; ++i) {
    // prod_{i < j <= k} x_j for k = i..n-1: 1, then the cumprod of x after i.
    Tensor after = i == n - 1
                       ? ones_slice
                       : cat({ones_slice, cumprod(narrow(x, dim, i + 1, n - i - 1), dim)}, dim);
    Tensor gi = sum(narrow(g, dim, i, n - i) * after, {dim}, /*keepdim=*/true);
    if (i > 0) gi = gi * prod(narrow(x, dim, 0, i), {dim}, /*keepdim=*/true);
    grads.push_back(gi);
  }
  return cat(grads, dim);
}

Tensor cumprod_backward(const Tensor& g, const Tensor& x, const Tensor& y, int64_t dim) {
  if (x.dim() == 0 || x.numel() == 0) return g;
  dim = wrap_dim(dim, x.dim());
  if (!has_zero(x)) return div(reverse_cumsum(g * y, dim), x);
  if (autograd::is_grad_enabled()) return cumprod_backward_polynomial(g, x, dim);
  Tensor is_zero = eq(x, 0);
  Tensor zeros_so_far = cumsum(is_zero, dim);  // int64: zeros at or before each position
  Tensor before = eq(zeros_so_far, 0);         // before the first zero of the line
  Tensor first = logical_and(is_zero, eq(zeros_so_far, 1));
  Tensor part_before =
      where(before, div(reverse_cumsum(g * y, dim), where(before, x, Scalar(1.0))), Scalar(0.0));
  Tensor x_skip = where(first, Scalar(1.0), x);
  Tensor part_first = where(first, reverse_cumsum(g * cumprod(x_skip, dim), dim), Scalar(0.0));
  return part_before + part_first;
}

// The gradient of amax / amin / max() / min(): split evenly among the elements equal to the
// result (PyTorch's evenly_distribute_backward / scale_grad_by_count).
Tensor evenly_distribute(const Tensor& g, const Tensor& x, const Tensor& y, const Shape& dims,
                         bool keepdim) {
  const Shape& in_shape = x.sizes();
  Tensor mask = as_float(eq(x, expand_reduced(y, in_shape, dims, keepdim)), g.dtype());
  Tensor count = sum(mask, dims, /*keepdim=*/true);
  return expand_reduced(g, in_shape, dims, keepdim) * div(mask, count);
}

// Records an amax-like reduction: forward `native_fn`, gradient split among the ties.
template <class F>
Tensor record_extremum(const char* name, const Tensor& self, const Shape& dims, bool keepdim,
                       F&& native_fn) {
  Op op(name, self);
  Tensor y = op.run(native_fn);
  op.set_output(y);
  if (op.recording()) {
    op.save(self);
    op.save_output(y);
    op.backward([dims, keepdim](const Saved& s, const Tensors& g) -> Tensors {
      return {evenly_distribute(g[0], s[0], s[1], dims, keepdim)};
    });
  }
  return y;
}

// The gradient of max(dim) / min(dim): g placed at the returned indices along dim, 0 elsewhere.
Tensor value_selecting_backward(const Tensor& g, const Tensor& indices, const Shape& in_shape,
                                int64_t dim, bool keepdim) {
  if (in_shape.empty()) return g;  // a 0-dim input is its own maximum
  dim = wrap_dim(dim, static_cast<int64_t>(in_shape.size()));
  Tensor g_k = keepdim ? g : unsqueeze(g, dim);
  Tensor idx = keepdim ? indices : unsqueeze(indices, dim);
  Shape pos_shape(in_shape.size(), 1);
  pos_shape[static_cast<size_t>(dim)] = in_shape[static_cast<size_t>(dim)];
  Tensor positions = arange(in_shape[static_cast<size_t>(dim)], indices.options()).view(pos_shape);
  return g_k * as_float(eq(positions, idx), g.dtype());  // broadcasts to in_shape
}

template <class F>
std::tuple<Tensor, Tensor> record_dim_extremum(const char* name, const Tensor& self, int64_t dim,
                                               bool keepdim, F&& native_fn) {
  Op op(name, self);
  auto [values, indices] = op.run(native_fn);
  op.set_output(values);  // the indices are not differentiable
  if (op.recording()) {
    op.save(indices);
    op.backward(
        [in_shape = self.sizes(), dim, keepdim](const Saved& s, const Tensors& g) -> Tensors {
          return {value_selecting_backward(g[0], s[0], in_shape, dim, keepdim)};
        });
  }
  return {values, indices};
}

Tensor norm_backward(const Tensor& g, const Tensor& x, const Tensor& y, double p, const Shape& dims,
                     bool keepdim) {
  const Shape& in_shape = x.sizes();
  Tensor g_in = expand_reduced(g, in_shape, dims, keepdim);
  if (p == 0.0) return zeros_like(x);  // a count: piecewise constant
  if (p == 1.0) return g_in * sign(x);
  Tensor y_in = expand_reduced(y, in_shape, dims, keepdim);
  if (p == 2.0) return x * div_or_zero(g_in, y_in);
  if (std::isinf(p)) {
    // Like amax (amin for -inf) of |x|: split among the elements of largest (smallest)
    // magnitude (0 when they are 0).
    Tensor mask = as_float(eq(abs(x), y_in), g.dtype());
    Tensor count = sum(mask, dims, /*keepdim=*/true);
    return sign(x) * g_in * div(mask, count);
  }
  // d ||x||_p / dx = sign(x) |x|^(p-1) / ||x||^(p-1)
  Tensor x_scaled = p < 2.0 ? sign(x) * pow(abs(x), p - 1.0) : x * pow(abs(x), p - 2.0);
  if (p < 1.0) x_scaled = where(eq(x, 0), Scalar(0.0), x_scaled);
  return x_scaled * div_or_zero(g_in, pow(y_in, p - 1.0));
}

}  // namespace

// d sum = g broadcast back over the reduced dims.
Tensor sum(const Tensor& self, const Shape& dims, bool keepdim, std::optional<DType> dtype) {
  Op op("SumBackward", self);
  Tensor y = op.run([&] { return native::sum(self, dims, keepdim, dtype); });
  op.set_output(y);
  if (op.recording()) {
    op.backward(
        [in_shape = self.sizes(), dims, keepdim](const Saved&, const Tensors& g) -> Tensors {
          return {expand_reduced(g[0], in_shape, dims, keepdim)};
        });
  }
  return y;
}
// d mean = g / n broadcast back, n the number of elements averaged.
Tensor mean(const Tensor& self, const Shape& dims, bool keepdim) {
  Op op("MeanBackward", self);
  Tensor y = op.run([&] { return native::mean(self, dims, keepdim); });
  op.set_output(y);
  if (op.recording()) {
    const int64_t n = y.numel() == 0 ? 0 : self.numel() / y.numel();
    op.backward([in_shape = self.sizes(), dims, keepdim, n](const Saved&,
                                                            const Tensors& g) -> Tensors {
      return {div(expand_reduced(g[0], in_shape, dims, keepdim), Scalar(static_cast<double>(n)))};
    });
  }
  return y;
}
Tensor prod(const Tensor& self, const Shape& dims, bool keepdim) {
  Op op("ProdBackward", self);
  Tensor y = op.run([&] { return native::prod(self, dims, keepdim); });
  op.set_output(y);
  if (op.recording()) {
    op.save(self);
    op.save_output(y);
    op.backward([dims, keepdim](const Saved& s, const Tensors& g) -> Tensors {
      return {prod_backward(g[0], s[0], s[1], dims, keepdim)};
    });
  }
  return y;
}
// d var = g * 2 (x - mean) / (N - correction).
Tensor var(const Tensor& self, const Shape& dims, int64_t correction, bool keepdim) {
  Op op("VarBackward", self);
  Tensor y = op.run([&] { return native::var(self, dims, correction, keepdim); });
  op.set_output(y);
  if (op.recording()) {
    op.save(self);
    const double scale = 2.0 / static_cast<double>(reduced_count(self.sizes(), dims) - correction);
    op.backward([dims, keepdim, scale](const Saved& s, const Tensors& g) -> Tensors {
      const Tensor x = s[0];
      Tensor centered = add(x, mean(x, dims, /*keepdim=*/true), Scalar(-1));
      return {expand_reduced(g[0], x.sizes(), dims, keepdim) * centered * Scalar(scale)};
    });
  }
  return y;
}
// d std = g (x - mean) / ((N - correction) std), 0 where std == 0 (PyTorch's subgradient).
Tensor std(const Tensor& self, const Shape& dims, int64_t correction, bool keepdim) {
  Op op("StdBackward", self);
  Tensor y = op.run([&] { return native::std(self, dims, correction, keepdim); });
  op.set_output(y);
  if (op.recording()) {
    op.save(self);
    op.save_output(y);
    const double scale = 1.0 / static_cast<double>(reduced_count(self.sizes(), dims) - correction);
    op.backward([dims, keepdim, scale](const Saved& s, const Tensors& g) -> Tensors {
      const Tensor x = s[0];
      Tensor centered = add(x, mean(x, dims, /*keepdim=*/true), Scalar(-1));
      Tensor g_over_std = expand_reduced(div_or_zero(g[0], s[1]), x.sizes(), dims, keepdim);
      return {g_over_std * centered * Scalar(scale)};
    });
  }
  return y;
}
Tensor amax(const Tensor& self, const Shape& dims, bool keepdim) {
  return record_extremum("AmaxBackward", self, dims, keepdim,
                         [&] { return native::amax(self, dims, keepdim); });
}
Tensor amin(const Tensor& self, const Shape& dims, bool keepdim) {
  return record_extremum("AminBackward", self, dims, keepdim,
                         [&] { return native::amin(self, dims, keepdim); });
}
Tensor max(const Tensor& self) {
  return record_extremum("MaxBackward", self, {}, false, [&] { return native::max(self); });
}
Tensor min(const Tensor& self) {
  return record_extremum("MinBackward", self, {}, false, [&] { return native::min(self); });
}
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim) {
  return record_dim_extremum("MaxBackward", self, dim, keepdim,
                             [&] { return native::max(self, dim, keepdim); });
}
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim) {
  return record_dim_extremum("MinBackward", self, dim, keepdim,
                             [&] { return native::min(self, dim, keepdim); });
}
// d logsumexp = g * exp(x - result).
Tensor logsumexp(const Tensor& self, const Shape& dims, bool keepdim) {
  Op op("LogsumexpBackward", self);
  Tensor y = op.run([&] { return native::logsumexp(self, dims, keepdim); });
  op.set_output(y);
  if (op.recording()) {
    op.save(self);
    op.save_output(y);
    op.backward([dims, keepdim](const Saved& s, const Tensors& g) -> Tensors {
      const Tensor x = s[0];
      const Shape& in_shape = x.sizes();
      Tensor weights = exp(add(x, expand_reduced(s[1], in_shape, dims, keepdim), Scalar(-1)));
      return {expand_reduced(g[0], in_shape, dims, keepdim) * weights};
    });
  }
  return y;
}
Tensor norm(const Tensor& self, double p, const Shape& dims, bool keepdim) {
  Op op("NormBackward", self);
  Tensor y = op.run([&] { return native::norm(self, p, dims, keepdim); });
  op.set_output(y);
  if (op.recording()) {
    op.save(self);
    op.save_output(y);
    op.backward([p, dims, keepdim](const Saved& s, const Tensors& g) -> Tensors {
      return {norm_backward(g[0], s[0], s[1], p, dims, keepdim)};
    });
  }
  return y;
}
// d cumsum = the reversed cumulative sum of g along dim.
Tensor cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  Op op("CumsumBackward", self);
  Tensor y = op.run([&] { return native::cumsum(self, dim, dtype); });
  op.set_output(y);
  if (op.recording()) {
    op.backward([dim](const Saved&, const Tensors& g) -> Tensors {
      if (g[0].dim() == 0) return {g[0]};
      return {reverse_cumsum(g[0], wrap_dim(dim, g[0].dim()))};
    });
  }
  return y;
}
Tensor cumprod(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  Op op("CumprodBackward", self);
  Tensor y = op.run([&] { return native::cumprod(self, dim, dtype); });
  op.set_output(y);
  if (op.recording()) {
    op.save(self);
    op.save_output(y);
    op.backward([dim](const Saved& s, const Tensors& g) -> Tensors {
      return {cumprod_backward(g[0], s[0], s[1], dim)};
    });
  }
  return y;
}

// ---- Tensor methods and operators (declared in core/tensor.h) ----------------------------
Tensor Tensor::sum(const Shape& dims, bool keepdim, std::optional<DType> dtype) const {
  return ember::sum(*this, dims, keepdim, dtype);
}
Tensor Tensor::mean(const Shape& dims, bool keepdim) const {
  return ember::mean(*this, dims, keepdim);
}
Tensor Tensor::prod(const Shape& dims, bool keepdim) const {
  return ember::prod(*this, dims, keepdim);
}
Tensor Tensor::var(const Shape& dims, int64_t correction, bool keepdim) const {
  return ember::var(*this, dims, correction, keepdim);
}
Tensor Tensor::std(const Shape& dims, int64_t correction, bool keepdim) const {
  return ember::std(*this, dims, correction, keepdim);
}
Tensor Tensor::amax(const Shape& dims, bool keepdim) const {
  return ember::amax(*this, dims, keepdim);
}
Tensor Tensor::amin(const Shape& dims, bool keepdim) const {
  return ember::amin(*this, dims, keepdim);
}
Tensor Tensor::max() const { return ember::max(*this); }
Tensor Tensor::min() const { return ember::min(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t d, bool keepdim) const {
  return ember::max(*this, d, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::min(int64_t d, bool keepdim) const {
  return ember::min(*this, d, keepdim);
}
Tensor Tensor::logsumexp(const Shape& dims, bool keepdim) const {
  return ember::logsumexp(*this, dims, keepdim);
}
Tensor Tensor::norm(double p, const Shape& dims, bool keepdim) const {
  return ember::norm(*this, p, dims, keepdim);
}
Tensor Tensor::cumsum(int64_t d) const { return ember::cumsum(*this, d); }
Tensor Tensor::cumprod(int64_t d) const { return ember::cumprod(*this, d); }

}  // namespace ember
