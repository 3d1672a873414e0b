// Public ops of the reduce family (core/ops/reduce.h): forward = native::, plus autograd.

#include "autograd/ops/common.h"
#include "core/ops/reduce.h"

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

}  // namespace

// d sum = g broadcast back over the reduced dims.
Tensor sum(const Tensor& self, const Shape& dims, bool keepdim, std::optional<DType> dtype) {
  Op op("SumBackward", self);
  Tensor y = op.run([&] { return native::sum(self, dims, keepdim, dtype); });
  op.set_output(y);
  if (op.recording()) {
    op.backward([in_shape = self.sizes(), dims, keepdim](const Saved&, const Tensors& g) -> Tensors {
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
    op.backward([in_shape = self.sizes(), dims, keepdim, n](const Saved&, const Tensors& g) -> Tensors {
      return {div(expand_reduced(g[0], in_shape, dims, keepdim), Scalar(static_cast<double>(n)))};
    });
  }
  return y;
}
Tensor prod(const Tensor& self, const Shape& dims, bool keepdim) {
  return native::prod(self, dims, keepdim);
}
Tensor var(const Tensor& self, const Shape& dims, int64_t correction, bool keepdim) {
  return native::var(self, dims, correction, keepdim);
}
Tensor std(const Tensor& self, const Shape& dims, int64_t correction, bool keepdim) {
  return native::std(self, dims, correction, keepdim);
}
Tensor amax(const Tensor& self, const Shape& dims, bool keepdim) {
  return native::amax(self, dims, keepdim);
}
Tensor amin(const Tensor& self, const Shape& dims, bool keepdim) {
  return native::amin(self, dims, keepdim);
}
Tensor max(const Tensor& self) {
  return native::max(self);
}
Tensor min(const Tensor& self) {
  return native::min(self);
}
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim) {
  return native::max(self, dim, keepdim);
}
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim) {
  return native::min(self, dim, keepdim);
}
Tensor logsumexp(const Tensor& self, const Shape& dims, bool keepdim) {
  return native::logsumexp(self, dims, keepdim);
}
Tensor norm(const Tensor& self, double p, const Shape& dims, bool keepdim) {
  return native::norm(self, p, dims, keepdim);
}
Tensor cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return native::cumsum(self, dim, dtype);
}
Tensor cumprod(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return native::cumprod(self, dim, dtype);
}

}  // namespace ember
