#pragma once
// Reductions over a set of dims (sum, mean, prod, var, std, amax, amin, max, min, argmax, argmin,
// logsumexp, norm, all, any) and scans along one dim (cumsum, cumprod), with PyTorch's names,
// argument order and dtype rules:
//
// - `dims` lists the dims to reduce; an empty list means every dim. Negative dims count from the
//   end; a dim listed twice is an error. keepdim keeps each reduced dim with size 1.
// - sum / prod / cumsum / cumprod of integer or bool inputs give int64; `dtype` (sum) converts
//   the input first. mean, var, std, norm need a floating input; logsumexp computes integers in
//   the default float dtype. all / any give bool for every input dtype.
// - float16 / bfloat16 accumulate in float, float32 sums pairwise in float (accurate to a few
//   ulps for 10^7 elements), var / std use Welford's algorithm in double.
// - An empty reduction gives the op's identity: sum 0, prod 1, mean NaN, all true, any false,
//   logsumexp -inf. Ops without an identity (amax, amin, max, min, argmax, argmin) throw when a
//   reduced dim has size 0.
// - NaN propagates through max / min / amax / amin; argmax / argmin return the first NaN, and
//   otherwise the first of tied extremal elements.
//
// Every input layout works (transposed, sliced, expanded); the output is a new contiguous
// tensor. The kernels are in kernels/cpu/reduce.cpp on the engine of kernels/cpu/reduce_utils.h.
//
// Where these ops live (Note [Where an op lives] in autograd/ops/ops.h): the ops autograd
// differentiates, and every in-place op, are declared here as ember::native::<op>, the
// kernel-level function that checks, allocates and dispatches without recording; their public
// forms ember::<op> (and the Tensor methods) are in autograd/ops/reduce.h. The ops autograd does
// not see are declared here as public functions and defined in core.

#include <optional>
#include <tuple>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ember {

namespace native {
Tensor sum(const Tensor& self, const Shape& dims = {}, bool keepdim = false,
           std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& self, const Shape& dims = {}, bool keepdim = false);
Tensor prod(const Tensor& self, const Shape& dims = {}, bool keepdim = false);
// Variance with Bessel-style correction: sum((x - mean)^2) / max(0, N - correction).
Tensor var(const Tensor& self, const Shape& dims = {}, int64_t correction = 1,
           bool keepdim = false);
Tensor std(const Tensor& self, const Shape& dims = {}, int64_t correction = 1,
           bool keepdim = false);
Tensor amax(const Tensor& self, const Shape& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& self, const Shape& dims = {}, bool keepdim = false);
// Full reductions to a 0-dim tensor.
Tensor max(const Tensor& self);
Tensor min(const Tensor& self);
// Along one dim: (values, indices), indices int64.
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim = false);
}  // namespace native
// Without a dim: the index into the flattened tensor (keepdim then gives all sizes 1).
Tensor argmax(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
namespace native {
// log(sum(exp(x))) computed without overflow.
Tensor logsumexp(const Tensor& self, const Shape& dims, bool keepdim = false);
// Vector norm over dims, PyTorch's vector_norm: p = 1, 2, INFINITY (max |x|), -INFINITY (min |x|,
// an error on an empty reduction), 0 (the number of non-zero elements, NaN counting as non-zero;
// its gradient is 0), or any other finite p > 0.
Tensor norm(const Tensor& self, double p = 2, const Shape& dims = {}, bool keepdim = false);
}  // namespace native
Tensor all(const Tensor& self, const Shape& dims = {}, bool keepdim = false);
Tensor any(const Tensor& self, const Shape& dims = {}, bool keepdim = false);
namespace native {
// Inclusive scans along dim; integer and bool inputs give int64 unless dtype says otherwise.
Tensor cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor cumprod(const Tensor& self, int64_t dim, std::optional<DType> dtype = std::nullopt);
}  // namespace native

// Note [Reduce plan]
// A reduction, described once by core/ops/reduce.cpp for the kernels: output element o (in
// row-major order of the kept dims) reduces the input elements
//   input[outer_offset(o) + inner_offset(r)],  r in [0, reduce_size)
// where the offsets come from unravelling o over outer_sizes/outer_strides and r over
// inner_sizes/inner_strides (element strides into `input`, last dim fastest). Size-1 dims are
// dropped and neighbouring dims merged where the strides allow, so a contiguous row reduction is
// one inner dim. Each list holds at least one dim (size 1, stride 0 when there is nothing).
// For ops that return indices (`logical_order`), the inner dims stay in the logical order of the
// tensor, so r is the index argmax must return; otherwise they are sorted by stride so that the
// kernel walks memory in order.
struct ReducePlan {
  const char* op = "reduce";
  Tensor input;
  Tensor out;      // contiguous, num_outputs elements, in the output dtype
  Tensor indices;  // int64, like out; defined only for max(dim) / min(dim) / argmax / argmin
  Shape outer_sizes, outer_strides;
  Shape inner_sizes, inner_strides;
  int64_t num_outputs = 1;
  int64_t reduce_size = 1;
};

using reduce_fn = void (*)(const ReducePlan& plan);
// Variance (take_sqrt: standard deviation).
using var_fn = void (*)(const ReducePlan& plan, int64_t correction, bool take_sqrt);
// Values into plan.out and/or indices into plan.indices (whichever is defined).
using minmax_fn = void (*)(const ReducePlan& plan, bool is_max);
using norm_fn = void (*)(const ReducePlan& plan, double p);
using all_any_fn = void (*)(const ReducePlan& plan, bool is_all);
// out (contiguous, like input, in the result dtype) = inclusive scan of input along dim.
using scan_fn = void (*)(const Tensor& out, const Tensor& input, int64_t dim);

EMBER_DECLARE_DISPATCH(reduce_fn, sum_stub);
EMBER_DECLARE_DISPATCH(reduce_fn, mean_stub);
EMBER_DECLARE_DISPATCH(reduce_fn, prod_stub);
EMBER_DECLARE_DISPATCH(var_fn, var_stub);
EMBER_DECLARE_DISPATCH(minmax_fn, minmax_stub);
EMBER_DECLARE_DISPATCH(minmax_fn, arg_minmax_stub);
EMBER_DECLARE_DISPATCH(reduce_fn, logsumexp_stub);
EMBER_DECLARE_DISPATCH(norm_fn, norm_stub);
EMBER_DECLARE_DISPATCH(all_any_fn, all_any_stub);
EMBER_DECLARE_DISPATCH(scan_fn, cumsum_stub);
EMBER_DECLARE_DISPATCH(scan_fn, cumprod_stub);

}  // namespace ember
