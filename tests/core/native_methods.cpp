// core_tests only: the Tensor methods and operators of the differentiable ops, defined as their
// native twins. In the library these definitions are in autograd/ops/<family>.cpp, next to the
// public ops, and record the graph; core_tests links ember_core alone (no autograd), so that the
// op table's entries, which call `x.clone()`, `a + b` or `t.to(kInt64)`, run on the native layer
// exactly as they run on the public one in ember_tests (Note [Where an op lives] in
// autograd/ops/ops.h). A method missing here is a link error of core_tests, never a silent
// fallback. The free functions need no such file: op_table.h puts `ember::native` in scope.

#include "core/ops/binary.h"
#include "core/ops/conv.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/index.h"
#include "core/ops/linalg.h"
#include "core/ops/random.h"
#include "core/ops/reduce.h"
#include "core/ops/shape.h"
#include "core/ops/softmax.h"
#include "core/ops/unary.h"
#include "core/ops/view.h"
#include "core/stream.h"

namespace ember {

Tensor Tensor::add(const Tensor& o, const Scalar& al) const { return native::add(*this, o, al); }
Tensor Tensor::add(const Scalar& o, const Scalar& al) const { return native::add(*this, o, al); }
const Tensor& Tensor::add_(const Tensor& o, const Scalar& al) const {
  return native::add_(*this, o, al);
}
const Tensor& Tensor::add_(const Scalar& o, const Scalar& al) const {
  return native::add_(*this, o, al);
}
Tensor Tensor::sub(const Tensor& o, const Scalar& al) const { return native::sub(*this, o, al); }
Tensor Tensor::sub(const Scalar& o, const Scalar& al) const { return native::sub(*this, o, al); }
const Tensor& Tensor::sub_(const Tensor& o, const Scalar& al) const {
  return native::sub_(*this, o, al);
}
const Tensor& Tensor::sub_(const Scalar& o, const Scalar& al) const {
  return native::sub_(*this, o, al);
}
Tensor Tensor::mul(const Tensor& o) const { return native::mul(*this, o); }
Tensor Tensor::mul(const Scalar& o) const { return native::mul(*this, o); }
const Tensor& Tensor::mul_(const Tensor& o) const { return native::mul_(*this, o); }
const Tensor& Tensor::mul_(const Scalar& o) const { return native::mul_(*this, o); }
Tensor Tensor::div(const Tensor& o, const std::string& m) const { return native::div(*this, o, m); }
Tensor Tensor::div(const Scalar& o, const std::string& m) const { return native::div(*this, o, m); }
const Tensor& Tensor::div_(const Tensor& o, const std::string& m) const {
  return native::div_(*this, o, m);
}
const Tensor& Tensor::div_(const Scalar& o, const std::string& m) const {
  return native::div_(*this, o, m);
}
Tensor Tensor::remainder(const Tensor& o) const { return native::remainder(*this, o); }
Tensor Tensor::remainder(const Scalar& o) const { return native::remainder(*this, o); }
const Tensor& Tensor::remainder_(const Tensor& o) const { return native::remainder_(*this, o); }
const Tensor& Tensor::remainder_(const Scalar& o) const { return native::remainder_(*this, o); }
Tensor Tensor::pow(const Tensor& e) const { return native::pow(*this, e); }
const Tensor& Tensor::pow_(const Tensor& e) const { return native::pow_(*this, e); }
Tensor Tensor::maximum(const Tensor& o) const { return native::maximum(*this, o); }
Tensor Tensor::minimum(const Tensor& o) const { return native::minimum(*this, o); }
const Tensor& Tensor::maximum_(const Tensor& o) const { return native::maximum_(*this, o); }
const Tensor& Tensor::minimum_(const Tensor& o) const { return native::minimum_(*this, o); }
Tensor Tensor::atan2(const Tensor& o) const { return native::atan2(*this, o); }
const Tensor& Tensor::atan2_(const Tensor& o) const { return native::atan2_(*this, o); }
Tensor Tensor::lerp(const Tensor& e, const Scalar& w) const { return native::lerp(*this, e, w); }
Tensor Tensor::lerp(const Tensor& e, const Tensor& w) const { return native::lerp(*this, e, w); }
const Tensor& Tensor::lerp_(const Tensor& e, const Scalar& w) const {
  return native::lerp_(*this, e, w);
}
const Tensor& Tensor::lerp_(const Tensor& e, const Tensor& w) const {
  return native::lerp_(*this, e, w);
}
Tensor Tensor::addcmul(const Tensor& t1, const Tensor& t2, const Scalar& v) const {
  return native::addcmul(*this, t1, t2, v);
}
Tensor Tensor::addcdiv(const Tensor& t1, const Tensor& t2, const Scalar& v) const {
  return native::addcdiv(*this, t1, t2, v);
}
const Tensor& Tensor::addcmul_(const Tensor& t1, const Tensor& t2, const Scalar& v) const {
  return native::addcmul_(*this, t1, t2, v);
}
const Tensor& Tensor::addcdiv_(const Tensor& t1, const Tensor& t2, const Scalar& v) const {
  return native::addcdiv_(*this, t1, t2, v);
}
Tensor Tensor::where(const Tensor& cond, const Tensor& other) const {
  return native::where(cond, *this, other);
}
Tensor Tensor::masked_fill(const Tensor& m, const Scalar& v) const {
  return native::masked_fill(*this, m, v);
}
const Tensor& Tensor::masked_fill_(const Tensor& m, const Scalar& v) const {
  return native::masked_fill_(*this, m, v);
}
Tensor operator+(const Tensor& a, const Tensor& b) { return native::add(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return native::add(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return native::add(b, a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return native::sub(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return native::sub(a, b); }
Tensor operator-(const Scalar& a, const Tensor& b) {
  return native::sub(wrapped_scalar_tensor(a, b), b);
}
Tensor operator*(const Tensor& a, const Tensor& b) { return native::mul(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return native::mul(a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return native::mul(b, a); }
Tensor operator/(const Tensor& a, const Tensor& b) { return native::div(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return native::div(a, b); }
Tensor operator/(const Scalar& a, const Tensor& b) {
  return native::div(wrapped_scalar_tensor(a, b), b);
}
const Tensor& operator+=(const Tensor& a, const Tensor& b) { return a.add_(b); }
const Tensor& operator+=(const Tensor& a, const Scalar& b) { return a.add_(b); }
const Tensor& operator-=(const Tensor& a, const Tensor& b) { return a.sub_(b); }
const Tensor& operator-=(const Tensor& a, const Scalar& b) { return a.sub_(b); }
const Tensor& operator*=(const Tensor& a, const Tensor& b) { return a.mul_(b); }
const Tensor& operator*=(const Tensor& a, const Scalar& b) { return a.mul_(b); }
const Tensor& operator/=(const Tensor& a, const Tensor& b) { return a.div_(b); }
const Tensor& operator/=(const Tensor& a, const Scalar& b) { return a.div_(b); }

Tensor Tensor::contiguous() const { return native::contiguous(*this); }
Tensor Tensor::clone() const { return native::clone(*this); }
Tensor Tensor::to(DType d) const { return native::to(*this, device(), d); }
Tensor Tensor::to(Device d) const { return native::to(*this, d, dtype()); }
Tensor Tensor::to(Device d, DType t) const { return native::to(*this, d, t); }
Tensor Tensor::to(Device d, DType t, bool non_blocking) const {
  return native::to(*this, d, t, non_blocking);
}
Tensor Tensor::cuda(int index) const {
  return native::to(*this, Device::cuda(index < 0 ? current_device(DeviceType::CUDA) : index),
                    dtype());
}
Tensor Tensor::cpu() const { return native::to(*this, kCPU, dtype()); }
const Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) const {
  return native::copy_(*this, src, non_blocking);
}
const Tensor& Tensor::fill_(const Scalar& v) const { return native::fill_(*this, v); }
const Tensor& Tensor::zero_() const { return native::zero_(*this); }

Tensor Tensor::index_select(int64_t d, const Tensor& i) const {
  return native::index_select(*this, d, i);
}
Tensor Tensor::gather(int64_t d, const Tensor& i) const { return native::gather(*this, d, i); }
Tensor Tensor::scatter(int64_t d, const Tensor& i, const Tensor& src) const {
  return native::scatter(*this, d, i, src);
}
Tensor Tensor::scatter(int64_t d, const Tensor& i, const Scalar& value) const {
  return native::scatter(*this, d, i, value);
}
const Tensor& Tensor::scatter_(int64_t d, const Tensor& i, const Tensor& src) const {
  return native::scatter_(*this, d, i, src);
}
const Tensor& Tensor::scatter_(int64_t d, const Tensor& i, const Scalar& value) const {
  return native::scatter_(*this, d, i, value);
}
Tensor Tensor::scatter_add(int64_t d, const Tensor& i, const Tensor& src) const {
  return native::scatter_add(*this, d, i, src);
}
const Tensor& Tensor::scatter_add_(int64_t d, const Tensor& i, const Tensor& src) const {
  return native::scatter_add_(*this, d, i, src);
}
Tensor Tensor::scatter_reduce(int64_t d, const Tensor& i, const Tensor& src,
                              const std::string& reduce, bool include_self) const {
  return native::scatter_reduce(*this, d, i, src, reduce, include_self);
}
const Tensor& Tensor::scatter_reduce_(int64_t d, const Tensor& i, const Tensor& src,
                                      const std::string& reduce, bool include_self) const {
  return native::scatter_reduce_(*this, d, i, src, reduce, include_self);
}
Tensor Tensor::index_add(int64_t d, const Tensor& i, const Tensor& source,
                         const Scalar& alpha) const {
  return native::index_add(*this, d, i, source, alpha);
}
const Tensor& Tensor::index_add_(int64_t d, const Tensor& i, const Tensor& source,
                                 const Scalar& alpha) const {
  return native::index_add_(*this, d, i, source, alpha);
}
Tensor Tensor::index(const std::vector<Tensor>& indices) const {
  return native::index(*this, indices);
}
const Tensor& Tensor::index_put_(const std::vector<Tensor>& indices, const Tensor& values,
                                 bool accumulate) const {
  return native::index_put_(*this, indices, values, accumulate);
}
Tensor Tensor::index_put(const std::vector<Tensor>& indices, const Tensor& values,
                         bool accumulate) const {
  return native::index_put(*this, indices, values, accumulate);
}
Tensor Tensor::masked_select(const Tensor& mask) const {
  return native::masked_select(*this, mask);
}
Tensor Tensor::take(const Tensor& i) const { return native::take(*this, i); }
std::tuple<Tensor, Tensor> Tensor::sort(int64_t d, bool descending) const {
  return native::sort(*this, d, descending);
}
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t d, bool largest, bool sorted) const {
  return native::topk(*this, k, d, largest, sorted);
}

Tensor Tensor::matmul(const Tensor& other) const { return native::matmul(*this, other); }
Tensor Tensor::mm(const Tensor& other) const { return native::mm(*this, other); }
Tensor Tensor::bmm(const Tensor& other) const { return native::bmm(*this, other); }
Tensor Tensor::dot(const Tensor& other) const { return native::dot(*this, other); }
Tensor Tensor::outer(const Tensor& other) const { return native::outer(*this, other); }

const Tensor& Tensor::uniform_(double from, double to, Generator* gen) const {
  return native::uniform_(*this, from, to, gen);
}
const Tensor& Tensor::normal_(double mean, double std, Generator* gen) const {
  return native::normal_(*this, mean, std, gen);
}
const Tensor& Tensor::bernoulli_(double p, Generator* gen) const {
  return native::bernoulli_(*this, p, gen);
}

Tensor Tensor::sum(const Shape& dims, bool keepdim, std::optional<DType> dtype) const {
  return native::sum(*this, dims, keepdim, dtype);
}
Tensor Tensor::mean(const Shape& dims, bool keepdim) const {
  return native::mean(*this, dims, keepdim);
}
Tensor Tensor::prod(const Shape& dims, bool keepdim) const {
  return native::prod(*this, dims, keepdim);
}
Tensor Tensor::var(const Shape& dims, int64_t correction, bool keepdim) const {
  return native::var(*this, dims, correction, keepdim);
}
Tensor Tensor::std(const Shape& dims, int64_t correction, bool keepdim) const {
  return native::std(*this, dims, correction, keepdim);
}
Tensor Tensor::amax(const Shape& dims, bool keepdim) const {
  return native::amax(*this, dims, keepdim);
}
Tensor Tensor::amin(const Shape& dims, bool keepdim) const {
  return native::amin(*this, dims, keepdim);
}
Tensor Tensor::max() const { return native::max(*this); }
Tensor Tensor::min() const { return native::min(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t d, bool keepdim) const {
  return native::max(*this, d, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::min(int64_t d, bool keepdim) const {
  return native::min(*this, d, keepdim);
}
Tensor Tensor::logsumexp(const Shape& dims, bool keepdim) const {
  return native::logsumexp(*this, dims, keepdim);
}
Tensor Tensor::norm(double p, const Shape& dims, bool keepdim) const {
  return native::norm(*this, p, dims, keepdim);
}
Tensor Tensor::cumsum(int64_t d) const { return native::cumsum(*this, d); }
Tensor Tensor::cumprod(int64_t d) const { return native::cumprod(*this, d); }

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t d) const {
  return native::split(*this, split_size, d);
}
std::vector<Tensor> Tensor::split(const Shape& split_sizes, int64_t d) const {
  return native::split(*this, split_sizes, d);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
  return native::chunk(*this, chunks, d);
}
Tensor Tensor::repeat(const Shape& repeats) const { return native::repeat(*this, repeats); }
Tensor Tensor::tile(const Shape& reps) const { return native::tile(*this, reps); }
Tensor Tensor::flip(const Shape& dims) const { return native::flip(*this, dims); }
Tensor Tensor::roll(const Shape& shifts, const Shape& dims) const {
  return native::roll(*this, shifts, dims);
}
Tensor Tensor::tril(int64_t diagonal) const { return native::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return native::triu(*this, diagonal); }

Tensor Tensor::softmax(int64_t d) const { return native::softmax(*this, d); }
Tensor Tensor::log_softmax(int64_t d) const { return native::log_softmax(*this, d); }

#define EMBER_UNARY_METHOD(name)                              \
  Tensor Tensor::name() const { return native::name(*this); } \
  const Tensor& Tensor::name##_() const { return native::name##_(*this); }
EMBER_UNARY_METHOD(neg)
EMBER_UNARY_METHOD(abs)
EMBER_UNARY_METHOD(sign)
EMBER_UNARY_METHOD(exp)
EMBER_UNARY_METHOD(exp2)
EMBER_UNARY_METHOD(expm1)
EMBER_UNARY_METHOD(log)
EMBER_UNARY_METHOD(log2)
EMBER_UNARY_METHOD(log1p)
EMBER_UNARY_METHOD(sqrt)
EMBER_UNARY_METHOD(rsqrt)
EMBER_UNARY_METHOD(reciprocal)
EMBER_UNARY_METHOD(sin)
EMBER_UNARY_METHOD(cos)
EMBER_UNARY_METHOD(tan)
EMBER_UNARY_METHOD(tanh)
EMBER_UNARY_METHOD(sigmoid)
EMBER_UNARY_METHOD(relu)
EMBER_UNARY_METHOD(silu)
EMBER_UNARY_METHOD(erf)
EMBER_UNARY_METHOD(floor)
EMBER_UNARY_METHOD(ceil)
EMBER_UNARY_METHOD(round)
EMBER_UNARY_METHOD(trunc)
#undef EMBER_UNARY_METHOD
Tensor Tensor::gelu(const std::string& approximate) const {
  return native::gelu(*this, approximate);
}
Tensor Tensor::softplus(const Scalar& beta, const Scalar& threshold) const {
  return native::softplus(*this, beta, threshold);
}
Tensor Tensor::pow(const Scalar& exponent) const { return native::pow(*this, exponent); }
const Tensor& Tensor::pow_(const Scalar& exponent) const { return native::pow_(*this, exponent); }
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return native::clamp(*this, min, max);
}
const Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return native::clamp_(*this, min, max);
}
Tensor Tensor::clamp_min(const Scalar& min) const { return native::clamp_min(*this, min); }
Tensor Tensor::clamp_max(const Scalar& max) const { return native::clamp_max(*this, max); }
const Tensor& Tensor::clamp_min_(const Scalar& min) const { return native::clamp_min_(*this, min); }
const Tensor& Tensor::clamp_max_(const Scalar& max) const { return native::clamp_max_(*this, max); }
Tensor Tensor::nan_to_num(std::optional<double> nan, std::optional<double> posinf,
                          std::optional<double> neginf) const {
  return native::nan_to_num(*this, nan, posinf, neginf);
}
const Tensor& Tensor::nan_to_num_(std::optional<double> nan, std::optional<double> posinf,
                                  std::optional<double> neginf) const {
  return native::nan_to_num_(*this, nan, posinf, neginf);
}
Tensor operator-(const Tensor& a) { return native::neg(a); }

Tensor Tensor::view(const Shape& s) const { return native::view(*this, s); }
Tensor Tensor::reshape(const Shape& s) const { return native::reshape(*this, s); }
Tensor Tensor::permute(const Shape& d) const { return native::permute(*this, d); }
Tensor Tensor::transpose(int64_t a, int64_t b) const { return native::transpose(*this, a, b); }
Tensor Tensor::t() const {
  EMBER_CHECK(dim() <= 2, "t: expects a tensor with <= 2 dimensions, but self is ", dim(), "D");
  return dim() < 2 ? native::transpose(*this, 0, 0) : native::transpose(*this, 0, 1);
}
Tensor Tensor::squeeze() const { return native::squeeze(*this); }
Tensor Tensor::squeeze(int64_t d) const { return native::squeeze(*this, d); }
Tensor Tensor::unsqueeze(int64_t d) const { return native::unsqueeze(*this, d); }
Tensor Tensor::expand(const Shape& s) const { return native::expand(*this, s); }
Tensor Tensor::expand_as(const Tensor& o) const { return native::expand(*this, o.sizes()); }
Tensor Tensor::flatten(int64_t s, int64_t e) const { return native::flatten(*this, s, e); }
Tensor Tensor::unflatten(int64_t d, const Shape& s) const { return native::unflatten(*this, d, s); }
Tensor Tensor::narrow(int64_t d, int64_t s, int64_t l) const {
  return native::narrow(*this, d, s, l);
}
Tensor Tensor::slice(int64_t d, std::optional<int64_t> s, std::optional<int64_t> e,
                     int64_t st) const {
  return native::slice(*this, d, s, e, st);
}
Tensor Tensor::select(int64_t d, int64_t i) const { return native::select(*this, d, i); }
Tensor Tensor::unfold(int64_t d, int64_t s, int64_t st) const {
  return native::unfold(*this, d, s, st);
}
Tensor Tensor::diagonal(int64_t o, int64_t a, int64_t b) const {
  return native::diagonal(*this, o, a, b);
}
Tensor Tensor::as_strided(const Shape& s, const Shape& st, std::optional<int64_t> o) const {
  return native::as_strided(*this, s, st, o);
}

}  // namespace ember
