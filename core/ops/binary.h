#pragma once
// Binary element-wise ops with broadcasting and PyTorch's type promotion (TensorIter).
// Each op has a functional form, an in-place form where PyTorch has one (`add_`), and a form
// with a C++ number (`add(t, 2.5)`), which promotes like a Scalar: it only changes the result
// dtype when it is of a higher category (int32 tensor * 2.5 is float32, * 2 stays int32).
//
// In-place forms write into `self`: the broadcast shape must be self's shape, the result type
// must be castable to self's dtype (no float into an integer tensor), and self's version is
// bumped. Integer division by zero (div with a rounding mode, remainder) raises
// "<op>: ZeroDivisionError" instead of trapping.
//
// Where these ops live (Note [Where an op lives] in autograd/ops/ops.h): the ops autograd
// differentiates, and every in-place op, are declared here as ember::native::<op>, the
// kernel-level function that checks, allocates and dispatches without recording; their public
// forms ember::<op> (and the Tensor methods) are in autograd/ops/binary.h. The ops autograd does
// not see are declared here as public functions and defined in core.

#include <string>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ember {

class TensorIter;

namespace native {
// ---- arithmetic ------------------------------------------------------------------------------
// a + alpha * b. bool + bool is logical or.
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
// a - alpha * b. Two bool tensors are an error (use logical_xor).
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
// rounding_mode "": true division, integers and bool promote to the default float dtype;
// "trunc": rounds toward zero, "floor": toward -inf (Python's //), both keep the promoted dtype.
Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode = "");
Tensor div(const Tensor& a, const Scalar& b, const std::string& rounding_mode = "");
// Python's modulo: the result takes the sign of the divisor.
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Scalar& b);
// a ** b in the promoted dtype; integer powers with a negative exponent truncate (2 ** -1 = 0).
// pow(Tensor, Scalar) is in core/ops/unary.h.
Tensor pow(const Tensor& a, const Tensor& exponent);
Tensor pow(const Scalar& base, const Tensor& exponent);
// Element-wise max / min; NaN in either input gives NaN.
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// atan2(a, b) = angle of the point (b, a); integers promote to the default float dtype.
Tensor atan2(const Tensor& a, const Tensor& b);

const Tensor& add_(const Tensor& self, const Tensor& b, const Scalar& alpha = 1);
const Tensor& add_(const Tensor& self, const Scalar& b, const Scalar& alpha = 1);
const Tensor& sub_(const Tensor& self, const Tensor& b, const Scalar& alpha = 1);
const Tensor& sub_(const Tensor& self, const Scalar& b, const Scalar& alpha = 1);
const Tensor& mul_(const Tensor& self, const Tensor& b);
const Tensor& mul_(const Tensor& self, const Scalar& b);
const Tensor& div_(const Tensor& self, const Tensor& b, const std::string& rounding_mode = "");
const Tensor& div_(const Tensor& self, const Scalar& b, const std::string& rounding_mode = "");
const Tensor& remainder_(const Tensor& self, const Tensor& b);
const Tensor& remainder_(const Tensor& self, const Scalar& b);
const Tensor& pow_(const Tensor& self, const Tensor& exponent);
const Tensor& maximum_(const Tensor& self, const Tensor& b);
const Tensor& minimum_(const Tensor& self, const Tensor& b);
const Tensor& atan2_(const Tensor& self, const Tensor& b);
}  // namespace native

// ---- comparisons: a bool tensor, the operands compared in their promoted dtype ------------------
Tensor eq(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Scalar& b);

// ---- logical (any dtypes, bool result; non-zero is true) ----------------------------------------
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
// In place: self keeps its dtype and holds 1 / 0.
const Tensor& logical_and_(const Tensor& self, const Tensor& b);
const Tensor& logical_or_(const Tensor& self, const Tensor& b);
const Tensor& logical_xor_(const Tensor& self, const Tensor& b);

// ---- bitwise (integer and bool tensors only) ---------------------------------------------------
Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);
const Tensor& bitwise_and_(const Tensor& self, const Tensor& b);
const Tensor& bitwise_or_(const Tensor& self, const Tensor& b);
const Tensor& bitwise_xor_(const Tensor& self, const Tensor& b);

namespace native {
// ---- selection and blends --------------------------------------------------------------------
// cond ? a : b. cond must be bool; a and b promote to their result type; all three broadcast.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b);
Tensor where(const Tensor& condition, const Scalar& a, const Scalar& b);
// start + weight * (end - start), floating tensors only.
Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight);
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Scalar& weight);
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Tensor& weight);
// self + value * t1 * t2 and self + value * t1 / t2 (all three broadcast). addcdiv of two
// integer tensors is an error, as in PyTorch; a floating value with an integer result is too.
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
const Tensor& addcmul_(const Tensor& self, const Tensor& t1, const Tensor& t2,
                       const Scalar& value = 1);
const Tensor& addcdiv_(const Tensor& self, const Tensor& t1, const Tensor& t2,
                       const Scalar& value = 1);
// value where mask is true (mask: bool). masked_fill_ needs mask to broadcast to self's shape;
// masked_fill returns the broadcast shape of self and mask. value converts to self's dtype.
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value);
const Tensor& masked_fill_(const Tensor& self, const Tensor& mask, const Scalar& value);
}  // namespace native

// ---- kernels ---------------------------------------------------------------------------------
// Operand 0 is the output, then the inputs in argument order, all in iter.common_dtype(); the
// comparisons and logical ops have a bool output, where() a bool operand 1 (the condition),
// masked_fill a bool operand 2 (the mask).
using binary_alpha_fn = void (*)(TensorIter& iter, const Scalar& alpha);
using binary_fn = void (*)(TensorIter& iter);
using binary_scalar_fn = void (*)(TensorIter& iter, const Scalar& value);
EMBER_DECLARE_DISPATCH(binary_alpha_fn, add_stub);
EMBER_DECLARE_DISPATCH(binary_fn, mul_stub);
EMBER_DECLARE_DISPATCH(binary_fn, div_true_stub);
EMBER_DECLARE_DISPATCH(binary_fn, div_trunc_stub);  // integers: raises on a zero divisor
EMBER_DECLARE_DISPATCH(binary_fn, div_floor_stub);  // integers: raises on a zero divisor
EMBER_DECLARE_DISPATCH(binary_fn, remainder_stub);  // integers: raises on a zero divisor
EMBER_DECLARE_DISPATCH(binary_fn, pow_stub);
EMBER_DECLARE_DISPATCH(binary_fn, maximum_stub);
EMBER_DECLARE_DISPATCH(binary_fn, minimum_stub);
EMBER_DECLARE_DISPATCH(binary_fn, atan2_stub);
EMBER_DECLARE_DISPATCH(binary_fn, eq_stub);
EMBER_DECLARE_DISPATCH(binary_fn, ne_stub);
EMBER_DECLARE_DISPATCH(binary_fn, lt_stub);
EMBER_DECLARE_DISPATCH(binary_fn, le_stub);
EMBER_DECLARE_DISPATCH(binary_fn, gt_stub);
EMBER_DECLARE_DISPATCH(binary_fn, ge_stub);
EMBER_DECLARE_DISPATCH(binary_fn, logical_and_stub);
EMBER_DECLARE_DISPATCH(binary_fn, logical_or_stub);
EMBER_DECLARE_DISPATCH(binary_fn, logical_xor_stub);
EMBER_DECLARE_DISPATCH(binary_fn, bitwise_and_stub);
EMBER_DECLARE_DISPATCH(binary_fn, bitwise_or_stub);
EMBER_DECLARE_DISPATCH(binary_fn, bitwise_xor_stub);
EMBER_DECLARE_DISPATCH(binary_fn, where_stub);               // (out, cond, a, b)
EMBER_DECLARE_DISPATCH(binary_scalar_fn, lerp_scalar_stub);  // (out, start, end), weight
EMBER_DECLARE_DISPATCH(binary_fn, lerp_tensor_stub);         // (out, start, end, weight)
EMBER_DECLARE_DISPATCH(binary_scalar_fn, addcmul_stub);      // (out, self, t1, t2), value
EMBER_DECLARE_DISPATCH(binary_scalar_fn, addcdiv_stub);      // (out, self, t1, t2), value
EMBER_DECLARE_DISPATCH(binary_scalar_fn, masked_fill_stub);  // (out, self, mask), value
// (out, grad, output), one floating dtype; the kernel rounds `threshold` to that dtype.
using threshold_backward_fn = void (*)(TensorIter& iter, double threshold);
EMBER_DECLARE_DISPATCH(threshold_backward_fn, threshold_backward_stub);

// Kernel-level helpers without a public twin.
namespace native {
// The gradient of relu (threshold 0) in one pass, without the bool mask and its float copy of
// the composite mul(grad, gt(output, 0)): grad where output > threshold, else 0 (PyTorch's
// threshold_backward). A kernel-level helper for backward formulas, not a differentiable op:
// autograd/ops/unary.cpp calls it when no graph is recorded (Note [ReLU backward]).
// - grad, output: the same shape and the same floating dtype (float16 and bfloat16 included),
//   any strides, one device; the result is a new tensor of that shape and dtype, laid out in
//   the inputs' memory order (TensorIter).
// - The zero is +0 whatever grad holds: where output <= threshold a negative, infinite or NaN
//   grad gives 0 (mul(grad, gt(output, 0)) gave -0 for a negative grad and NaN for inf / NaN).
//   A NaN output compares false, so its gradient is 0 too.
// - output is compared in the dtype's opmath type, to `threshold` rounded to the dtype.
Tensor threshold_backward(const Tensor& grad, const Tensor& output, double threshold);
}  // namespace native

}  // namespace ember
