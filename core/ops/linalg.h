#pragma once
// Matrix products with PyTorch's names and shape rules.
//
// matmul(a, b):
//   1-D . 1-D  -> 0-dim dot product
//   2-D . 2-D  -> matrix product                       (m, k) . (k, n) -> (m, n)
//   1-D . 2-D  -> (k) . (k, n) -> (n)                  (a gets a leading 1, removed after)
//   2-D . 1-D  -> (m, k) . (k) -> (m)                  (b gets a trailing 1, removed after)
//   N-D        -> batched: the last two dims multiply, the leading (batch) dims broadcast;
//                 (j, 1, m, k) . (l, k, n) -> (j, l, m, n); a 1-D operand is promoted as above.
// mm (2-D only), bmm (3-D with equal batch), addmm(input, m1, m2, beta, alpha) =
// beta * input + alpha * m1 @ m2 (input broadcasts to (m, n); beta == 0 ignores it, NaN included),
// linear(input (*, in), weight (out, in), bias (out) optional) = input @ weight^T + bias,
// dot (1-D . 1-D), outer (m) x (n) -> (m, n).
//
// Both operands must have the same dtype: float32 and float64 (a packed GEMM with AVX-512 / AVX2
// micro-kernels for float32, Eigen for float64), float16 / bfloat16 (computed in float32),
// and the integer types (exact int64 accumulation, wrapping to the dtype like PyTorch). Any
// layout works: transposed operands are read in place, expanded batch dims are never copied.
// Shape errors read "matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)".
//
// Where these ops live (Note [Where an op lives] in autograd/ops/ops.h): the ops autograd
// differentiates, and every in-place op, are declared here as ember::native::<op>, the
// kernel-level function that checks, allocates and dispatches without recording; their public
// forms ember::<op> (and the Tensor methods) are in autograd/ops/linalg.h. The ops autograd does
// not see are declared here as public functions and defined in core.

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ember {

namespace native {
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor addmm(const Tensor& input, const Tensor& m1, const Tensor& m2, const Scalar& beta = 1,
             const Scalar& alpha = 1);
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});
Tensor dot(const Tensor& a, const Tensor& b);
Tensor outer(const Tensor& a, const Tensor& b);
}  // namespace native

// The batched product every op above reduces to:
//   out[i] = alpha * a[i] @ b[i] + beta * out[i]     for every batch index i
// a: (*, m, k), b: (*, k, n), out: (*, m, n), one dtype, the same batch shape (a and b may be
// expanded views with stride-0 batch dims). beta == 0 does not read out.
using batched_gemm_fn = void (*)(const Tensor& out, const Tensor& a, const Tensor& b,
                                 const Scalar& alpha, const Scalar& beta);
EMBER_DECLARE_DISPATCH(batched_gemm_fn, batched_gemm_stub);

}  // namespace ember
