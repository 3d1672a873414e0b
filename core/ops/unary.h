#pragma once
// Unary element-wise ops. Each has a functional form (ember::exp(t)), a Tensor method (t.exp())
// and, where PyTorch has one, an in-place form (exp_) that writes into `self`, bumps its version
// and refuses a result type that `self` cannot hold (exp_ on an int tensor is an error).
//
// Result dtypes follow PyTorch:
// - floating math (exp ... erf, sigmoid, gelu, silu, softplus) computes in floating point:
//   bool and integer inputs give the default float dtype (TensorIter::unary_float_op);
// - neg, abs, relu, floor, ceil, round, trunc, clamp, nan_to_num keep the dtype (floor etc. are
//   the identity on integers; neg is an error on bool); sign and bitwise_not also take bool;
// - isnan, isinf, isfinite and logical_not give bool for any input;
// - pow(t, exponent) computes in result_type(t, exponent): int32 ** 2 is int32, ** 2.5 float.
// Any shape, any strides; the output is a new contiguous tensor of the input's shape.
//
// Where these ops live (Note [Where an op lives] in autograd/ops/ops.h): the ops autograd
// differentiates, and every in-place op, are declared here as ember::native::<op>, the
// kernel-level function that checks, allocates and dispatches without recording; their public
// forms ember::<op> (and the Tensor methods) are in autograd/ops/unary.h. The ops autograd does
// not see are declared here as public functions and defined in core.

#include <optional>
#include <string>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ember {

class TensorIter;

namespace native {
// ---- dtype-preserving ----------------------------------------------------------------------
Tensor neg(const Tensor& t);  // numeric dtypes; uint8 wraps around
Tensor abs(const Tensor& t);
Tensor sign(const Tensor& t);  // -1, 0 or 1; sign(NaN) = 0; bool is its own sign
Tensor relu(const Tensor& t);
Tensor floor(const Tensor& t);
Tensor ceil(const Tensor& t);
Tensor round(const Tensor& t);  // half to even: round(2.5) = 2, round(-0.5) = -0
Tensor trunc(const Tensor& t);
// PyTorch's round(decimals=): decimals > 0 computes round(x * 10^decimals) / 10^decimals,
// decimals < 0 round(x / 10^-decimals) * 10^-decimals, in float32 for the 16-bit floats and in
// the tensor's dtype otherwise (half to even, as round). decimals = 0 is round; floating only.
Tensor round(const Tensor& t, int64_t decimals);
const Tensor& round_(const Tensor& self, int64_t decimals);
const Tensor& neg_(const Tensor& self);
const Tensor& abs_(const Tensor& self);
const Tensor& sign_(const Tensor& self);
const Tensor& relu_(const Tensor& self);
const Tensor& floor_(const Tensor& self);
const Tensor& ceil_(const Tensor& self);
const Tensor& round_(const Tensor& self);
const Tensor& trunc_(const Tensor& self);

// min(max(t, min), max), each bound optional (at least one given). The bounds convert to t's
// dtype; on integer tensors a floating bound rounds inward (clamp_min(0.5) is clamp_min(1)).
// NaN stays NaN.
Tensor clamp(const Tensor& t, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
Tensor clamp_min(const Tensor& t, const Scalar& min);
Tensor clamp_max(const Tensor& t, const Scalar& max);
const Tensor& clamp_(const Tensor& self, std::optional<Scalar> min,
                     std::optional<Scalar> max = std::nullopt);
const Tensor& clamp_min_(const Tensor& self, const Scalar& min);
const Tensor& clamp_max_(const Tensor& self, const Scalar& max);

// min(max(t, min_val), max_val): clamp with both bounds, as torch.nn.functional.hardtanh. Same
// dtypes and bound conversion as clamp (bool is an error); min_val > max_val is an error.
// NaN stays NaN. Its derivative differs from clamp's at the bounds: 0 at x == min_val or
// x == max_val (autograd/ops/unary.cpp).
Tensor hardtanh(const Tensor& t, const Scalar& min_val = -1, const Scalar& max_val = 1);
const Tensor& hardtanh_(const Tensor& self, const Scalar& min_val = -1, const Scalar& max_val = 1);

// Replaces NaN by `nan`, +inf by `posinf` and -inf by `neginf`; unset infinities become the
// largest / lowest finite value of the dtype. Integer and bool tensors are returned as a copy.
Tensor nan_to_num(const Tensor& t, std::optional<double> nan = 0.0,
                  std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);
const Tensor& nan_to_num_(const Tensor& self, std::optional<double> nan = 0.0,
                          std::optional<double> posinf = std::nullopt,
                          std::optional<double> neginf = std::nullopt);

// t ** exponent, in result_type(t, exponent). Integer tensors reject negative integer exponents
// ("Integers to negative integer powers are not allowed"). pow(Tensor, Tensor) and
// pow(Scalar, Tensor) are in core/ops/binary.h.
Tensor pow(const Tensor& t, const Scalar& exponent);
const Tensor& pow_(const Tensor& self, const Scalar& exponent);

// ---- floating math (integer inputs promote to the default float dtype) --------------------------
Tensor exp(const Tensor& t);
Tensor exp2(const Tensor& t);
Tensor expm1(const Tensor& t);
Tensor log(const Tensor& t);
Tensor log2(const Tensor& t);
Tensor log1p(const Tensor& t);
Tensor sqrt(const Tensor& t);
Tensor rsqrt(const Tensor& t);
Tensor reciprocal(const Tensor& t);
Tensor sin(const Tensor& t);
Tensor cos(const Tensor& t);
Tensor tan(const Tensor& t);
Tensor tanh(const Tensor& t);
Tensor sigmoid(const Tensor& t);
Tensor silu(const Tensor& t);  // x * sigmoid(x)
Tensor erf(const Tensor& t);
const Tensor& exp_(const Tensor& self);
const Tensor& exp2_(const Tensor& self);
const Tensor& expm1_(const Tensor& self);
const Tensor& log_(const Tensor& self);
const Tensor& log2_(const Tensor& self);
const Tensor& log1p_(const Tensor& self);
const Tensor& sqrt_(const Tensor& self);
const Tensor& rsqrt_(const Tensor& self);
const Tensor& reciprocal_(const Tensor& self);
const Tensor& sin_(const Tensor& self);
const Tensor& cos_(const Tensor& self);
const Tensor& tan_(const Tensor& self);
const Tensor& tanh_(const Tensor& self);
const Tensor& sigmoid_(const Tensor& self);
const Tensor& silu_(const Tensor& self);
const Tensor& erf_(const Tensor& self);

// approximate = "none": x * Phi(x) with the exact erf; "tanh": the tanh approximation
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Tensor gelu(const Tensor& t, const std::string& approximate = "none");
// log(1 + exp(beta x)) / beta, and x where beta x > threshold.
Tensor softplus(const Tensor& t, const Scalar& beta = 1, const Scalar& threshold = 20);
}  // namespace native

// ---- bool results ---------------------------------------------------------------------------
Tensor isnan(const Tensor& t);
Tensor isinf(const Tensor& t);
Tensor isfinite(const Tensor& t);
Tensor logical_not(const Tensor& t);
// In place: self keeps its dtype and holds 1 / 0 (true / false).
const Tensor& logical_not_(const Tensor& self);

// ---- integers and bool ------------------------------------------------------------------------
Tensor bitwise_not(const Tensor& t);  // ~x; logical not on bool; a float input is an error
const Tensor& bitwise_not_(const Tensor& self);

// ---- kernels ---------------------------------------------------------------------------------
// Every stub gets an iterator with the output as operand 0 and the input as operand 1, both in
// the computing dtype (iter.common_dtype()), except the bool-output ops (isnan, isinf, isfinite,
// logical_not), whose input keeps its dtype (iter.dtype(1)).
using unary_fn = void (*)(TensorIter& iter);
EMBER_DECLARE_DISPATCH(unary_fn, neg_stub);
EMBER_DECLARE_DISPATCH(unary_fn, abs_stub);
EMBER_DECLARE_DISPATCH(unary_fn, sign_stub);
EMBER_DECLARE_DISPATCH(unary_fn, relu_stub);
EMBER_DECLARE_DISPATCH(unary_fn, floor_stub);
EMBER_DECLARE_DISPATCH(unary_fn, ceil_stub);
EMBER_DECLARE_DISPATCH(unary_fn, round_stub);
EMBER_DECLARE_DISPATCH(unary_fn, trunc_stub);
EMBER_DECLARE_DISPATCH(unary_fn, exp_stub);
EMBER_DECLARE_DISPATCH(unary_fn, exp2_stub);
EMBER_DECLARE_DISPATCH(unary_fn, expm1_stub);
EMBER_DECLARE_DISPATCH(unary_fn, log_stub);
EMBER_DECLARE_DISPATCH(unary_fn, log2_stub);
EMBER_DECLARE_DISPATCH(unary_fn, log1p_stub);
EMBER_DECLARE_DISPATCH(unary_fn, sqrt_stub);
EMBER_DECLARE_DISPATCH(unary_fn, rsqrt_stub);
EMBER_DECLARE_DISPATCH(unary_fn, reciprocal_stub);
EMBER_DECLARE_DISPATCH(unary_fn, sin_stub);
EMBER_DECLARE_DISPATCH(unary_fn, cos_stub);
EMBER_DECLARE_DISPATCH(unary_fn, tan_stub);
EMBER_DECLARE_DISPATCH(unary_fn, tanh_stub);
EMBER_DECLARE_DISPATCH(unary_fn, sigmoid_stub);
EMBER_DECLARE_DISPATCH(unary_fn, silu_stub);
EMBER_DECLARE_DISPATCH(unary_fn, erf_stub);
EMBER_DECLARE_DISPATCH(unary_fn, isnan_stub);
EMBER_DECLARE_DISPATCH(unary_fn, isinf_stub);
EMBER_DECLARE_DISPATCH(unary_fn, isfinite_stub);
EMBER_DECLARE_DISPATCH(unary_fn, logical_not_stub);
EMBER_DECLARE_DISPATCH(unary_fn, bitwise_not_stub);

enum class GeluApproximation { None, Tanh };
using gelu_fn = void (*)(TensorIter& iter, GeluApproximation approximate);
EMBER_DECLARE_DISPATCH(gelu_fn, gelu_stub);

using softplus_fn = void (*)(TensorIter& iter, const Scalar& beta, const Scalar& threshold);
EMBER_DECLARE_DISPATCH(softplus_fn, softplus_stub);

// Unset bounds mean no bound. On integer dtypes a floating bound rounds inward.
using clamp_fn = void (*)(TensorIter& iter, const std::optional<Scalar>& min,
                          const std::optional<Scalar>& max);
EMBER_DECLARE_DISPATCH(clamp_fn, clamp_stub);

// Both bounds set, min_val <= max_val; converted as clamp converts them.
using hardtanh_fn = void (*)(TensorIter& iter, const Scalar& min_val, const Scalar& max_val);
EMBER_DECLARE_DISPATCH(hardtanh_fn, hardtanh_stub);

// Unset infinities mean the dtype's largest / lowest finite value.
using nan_to_num_fn = void (*)(TensorIter& iter, double nan, std::optional<double> posinf,
                               std::optional<double> neginf);
EMBER_DECLARE_DISPATCH(nan_to_num_fn, nan_to_num_stub);

// iter.common_dtype() is result_type(t, exponent); an integer dtype gets an integral exponent
// >= 0.
using pow_scalar_fn = void (*)(TensorIter& iter, const Scalar& exponent);
EMBER_DECLARE_DISPATCH(pow_scalar_fn, pow_scalar_stub);

}  // namespace ember
