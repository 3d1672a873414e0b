#pragma once
// The fused cross-entropy kernels: logits -> per-row loss, and its backward, without storing the
// probabilities. nn::functional::cross_entropy calls them for class-index targets.
//
// Note [Fused cross-entropy]
// The composite (log_softmax, gather, where, index_select, the smoothing sum: a pass or more
// each, and log_softmax's (N, C) result kept for backward) becomes one pass over each row of
// logits: an online max and sum of exp (Note [Online softmax] in kernels/cuda/softmax.cu) give
// lse = log(sum(exp(x))); the row's loss is
//   (1 - e) (-w[t] (x[t] - lse)) + (e / C) (-sum_c w[c] (x[c] - lse)),   0 where t == ignore,
// the second term read in a second pass only when label smoothing e > 0. Only lse (one value a
// row) is kept for the backward, which rebuilds p = exp(x - lse) on the fly:
//   dx[c] = s (( 1 - e) w[t] (p[c] - [c == t]) + (e / C) (p[c] sum(w) - w[c])),   0 if ignored,
// s being the row's share of the incoming gradient (nn divides by the weight sum for "mean").
// The CPU and CUDA kernels compute in opmath_t (float for float16 / bfloat16; the CPU sums in
// double). nn keeps the composite for probability targets, for class weights that require grad,
// and for double backward (create_graph), where it writes the same gradient with
// differentiable ops.

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ember {

namespace native {

struct CrossEntropyRows {
  Tensor loss;    // (M), opmath dtype: each row's loss (0 where ignored)
  Tensor weight;  // (M), opmath dtype: w[t] (1 without class weights), 0 where ignored
  Tensor lse;     // (M), opmath dtype: log(sum(exp(x))) of each row
  // (2, M): loss and weight are its two rows, so that the weighted mean takes both sums in one
  // reduction (sum(1)) -- on a GPU, one launch or two fewer per call.
  Tensor loss_and_weight;
};
// logits: (M, C) contiguous floating; target: (M) int64 contiguous, each in [0, C) or
// ignore_index (on the CPU checked by the caller; the CUDA kernel checks them and raises
// "cross_entropy: target 7 is out of bounds for C=5 classes"); weight: (C) of the logits' dtype,
// or undefined.
CrossEntropyRows cross_entropy_rows(const Tensor& logits, const Tensor& target,
                                    const Tensor& weight, int64_t ignore_index,
                                    double label_smoothing);
// grad_rows: (M), opmath dtype, each row's incoming gradient. Returns dlogits (M, C).
Tensor cross_entropy_rows_backward(const Tensor& grad_rows, const Tensor& logits,
                                   const Tensor& target, const Tensor& weight, const Tensor& lse,
                                   int64_t ignore_index, double label_smoothing);
}  // namespace native

// Kernels: every tensor contiguous on one device; weight may be undefined.
using cross_entropy_fn = void (*)(const native::CrossEntropyRows& out, const Tensor& logits,
                                  const Tensor& target, const Tensor& weight, int64_t ignore_index,
                                  double label_smoothing);
using cross_entropy_backward_fn = void (*)(const Tensor& grad_logits, const Tensor& grad_rows,
                                           const Tensor& logits, const Tensor& target,
                                           const Tensor& weight, const Tensor& lse,
                                           int64_t ignore_index, double label_smoothing);
EMBER_DECLARE_DISPATCH(cross_entropy_fn, cross_entropy_stub);
EMBER_DECLARE_DISPATCH(cross_entropy_backward_fn, cross_entropy_backward_stub);

}  // namespace ember
