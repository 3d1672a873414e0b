#pragma once
// Fused normalisation kernels: the statistics and the normalised output in one op, and its
// backward in one op. layer_norm works on a row-major view (M rows of N elements, N = the numel
// of normalized_shape), batch_norm on (N, C, L) with statistics per channel, group_norm on
// N * G rows with per-channel affine. nn::functional's layer_norm, batch_norm and group_norm
// call them for cuda inputs.
//
// Note [Fused layer_norm]
// nn/normalization.cpp composes layer_norm from element-wise ops and reductions (mean, x - mean,
// the mean of the squares, rsqrt, addcmul: five passes or so, each a kernel) and gets its
// derivatives for free. On a cuda device it calls these instead: the forward reads a row once for
// its Welford statistics (mean and the sum of squared deviations, merged across threads with
// warp shuffles and a block reduction) and once to write y = (x - mean) rstd w + b, computing in
// opmath_t; the backward reads x, g once for the row sums of w g and w g xhat, once to write dx,
// and reduces g xhat and g over the rows for dw and db. layer_norm takes its fused kernels on
// the CPU too (Note [layer_norm on the CPU] in kernels/cpu/norm.cpp: about 2x the composite's
// speed); batch_norm and group_norm keep the composite there, their CPU kernels plain loops that
// the tests use as a reference for the CUDA ones.
// The fused backward records no graph, so nn uses it only when no double backward is being
// recorded (grad mode off in the backward); otherwise it evaluates the same formula with
// differentiable ops, statistics recomputed from x, so create_graph works.

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ember {

namespace native {

struct LayerNormOutput {
  Tensor y;     // x's shape and dtype
  Tensor mean;  // (M), opmath dtype (float32 for float16 / bfloat16)
  Tensor rstd;  // (M), 1 / sqrt(var + eps), the biased variance
};
// x: contiguous, floating, numel M * N (N > 0); weight, bias: optional, N elements of x's
// dtype and device.
LayerNormOutput layer_norm(const Tensor& x, int64_t N, const Tensor& weight, const Tensor& bias,
                           double eps);

struct LayerNormGrads {
  Tensor grad_input, grad_weight, grad_bias;  // undefined where not asked for
};
// grad_out: x's shape and dtype; mean, rstd: layer_norm's. need: {input, weight, bias}.
LayerNormGrads layer_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& mean,
                                   const Tensor& rstd, const Tensor& weight, int64_t N,
                                   bool need_input, bool need_weight, bool need_bias);

// batch_norm (Note [Fused layer_norm] applies alike: one block per channel reads the channel's
// N * L values for its Welford statistics, updates the running ones and writes the output; the
// backward is one block per channel too: the sums of g and g xhat, then dx).
struct BatchNormOutput {
  Tensor y;     // x's shape and dtype
  Tensor mean;  // (C), opmath dtype: the batch mean (training) or the running mean (eval)
  Tensor rstd;  // (C), opmath dtype: 1 / sqrt(var + eps), var the biased batch variance or
                // the running variance
};
// x: contiguous (N, C, *), floating; weight, bias, running_mean, running_var: optional, (C) of
// x's dtype and device. training: batch statistics, and when running_mean / running_var are
// defined they become (1 - f) running + f batch (the unbiased variance for running_var);
// otherwise the running statistics normalise.
BatchNormOutput batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                           const Tensor& running_mean, const Tensor& running_var, bool training,
                           double momentum_factor, double eps);
// grad_out: x's shape; mean, rstd: batch_norm's; training as in the forward (in eval the
// statistics are constants: dx = g w rstd).
LayerNormGrads batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& mean,
                                   const Tensor& rstd, const Tensor& weight, bool training,
                                   bool need_input, bool need_weight, bool need_bias);

// group_norm: x (N, C, *) contiguous as N * G rows of C / G * L elements (layer_norm's kernels),
// weight and bias optional, (C) of x's dtype and device. mean, rstd: (N * G).
LayerNormOutput group_norm(const Tensor& x, int64_t groups, const Tensor& weight,
                           const Tensor& bias, double eps);
LayerNormGrads group_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& mean,
                                   const Tensor& rstd, const Tensor& weight, int64_t groups,
                                   bool need_input, bool need_weight, bool need_bias);
}  // namespace native

// Kernels: every tensor contiguous on one device; optional ones undefined.
using layer_norm_fn = void (*)(const Tensor& y, const Tensor& mean, const Tensor& rstd,
                               const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t M,
                               int64_t N, double eps);
// Writes each defined gradient tensor.
using layer_norm_backward_fn = void (*)(const Tensor& grad_input, const Tensor& grad_weight,
                                        const Tensor& grad_bias, const Tensor& grad_out,
                                        const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                        const Tensor& weight, int64_t M, int64_t N);
// x: (N, C, L).
using batch_norm_fn = void (*)(const Tensor& y, const Tensor& mean, const Tensor& rstd,
                               const Tensor& x, const Tensor& weight, const Tensor& bias,
                               const Tensor& running_mean, const Tensor& running_var, int64_t N,
                               int64_t C, int64_t L, bool training, double momentum_factor,
                               double eps);
using batch_norm_backward_fn = void (*)(const Tensor& grad_input, const Tensor& grad_weight,
                                        const Tensor& grad_bias, const Tensor& grad_out,
                                        const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                        const Tensor& weight, int64_t N, int64_t C, int64_t L,
                                        bool training);
// x: (N, C, L) in G groups.
using group_norm_fn = void (*)(const Tensor& y, const Tensor& mean, const Tensor& rstd,
                               const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t N,
                               int64_t C, int64_t L, int64_t G, double eps);
using group_norm_backward_fn = void (*)(const Tensor& grad_input, const Tensor& grad_weight,
                                        const Tensor& grad_bias, const Tensor& grad_out,
                                        const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                        const Tensor& weight, int64_t N, int64_t C, int64_t L,
                                        int64_t G);
EMBER_DECLARE_DISPATCH(group_norm_fn, group_norm_stub);
EMBER_DECLARE_DISPATCH(group_norm_backward_fn, group_norm_backward_stub);
EMBER_DECLARE_DISPATCH(layer_norm_fn, layer_norm_stub);
EMBER_DECLARE_DISPATCH(batch_norm_fn, batch_norm_stub);
EMBER_DECLARE_DISPATCH(batch_norm_backward_fn, batch_norm_backward_stub);
EMBER_DECLARE_DISPATCH(layer_norm_backward_fn, layer_norm_backward_stub);

}  // namespace ember
