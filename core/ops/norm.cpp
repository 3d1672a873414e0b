#include "core/ops/norm.h"

#include "core/ops/factory.h"

namespace ember {

namespace {

DType stats_dtype(DType dt) { return dt == kFloat16 || dt == kBFloat16 ? kFloat32 : dt; }

void check_param(const Tensor& t, const Tensor& x, int64_t N, const char* what,
                 const char* op = "layer_norm") {
  if (!t.defined()) return;
  EMBER_CHECK(
      t.numel() == N && t.dtype() == x.dtype() && t.device() == x.device() && t.is_contiguous(), op,
      ": the ", what, " must be contiguous with ", N, " elements of dtype ", dtype_name(x.dtype()),
      " on ", x.device(), ", got ", dtype_name(t.dtype()), " ", t.sizes(), " on ", t.device());
}

}  // namespace

native::LayerNormOutput native::layer_norm(const Tensor& x, int64_t N, const Tensor& weight,
                                           const Tensor& bias, double eps) {
  EMBER_CHECK(is_floating(x.dtype()) && x.is_contiguous(),
              "layer_norm: expected a contiguous floating-point input, got ", dtype_name(x.dtype()),
              " ", x.sizes());
  EMBER_CHECK(N > 0 && x.numel() % N == 0, "layer_norm: ", x.numel(),
              " elements are not rows of N=", N);
  check_param(weight, x, N, "weight");
  check_param(bias, x, N, "bias");
  const int64_t M = x.numel() / N;
  const TensorOptions stats = TensorOptions(stats_dtype(x.dtype())).device(x.device());
  LayerNormOutput out{empty(x.sizes(), x.options()), empty({M}, stats), empty({M}, stats)};
  if (M > 0)
    layer_norm_stub(x.device().type, out.y, out.mean, out.rstd, x, weight, bias, M, N, eps);
  return out;
}

native::LayerNormGrads native::layer_norm_backward(const Tensor& grad_out, const Tensor& x,
                                                   const Tensor& mean, const Tensor& rstd,
                                                   const Tensor& weight, int64_t N, bool need_input,
                                                   bool need_weight, bool need_bias) {
  EMBER_CHECK(grad_out.sizes() == x.sizes() && grad_out.dtype() == x.dtype() &&
                  grad_out.device() == x.device() && grad_out.is_contiguous() && x.is_contiguous(),
              "layer_norm_backward: grad_out ", dtype_name(grad_out.dtype()), " ", grad_out.sizes(),
              " must be contiguous like the input ", dtype_name(x.dtype()), " ", x.sizes());
  check_param(weight, x, N, "weight");
  const int64_t M = x.numel() / N;
  EMBER_CHECK(mean.numel() == M && rstd.numel() == M, "layer_norm_backward: ", M,
              " rows but mean has ", mean.numel(), " and rstd ", rstd.numel(), " elements");
  LayerNormGrads g;
  if (need_input) g.grad_input = empty(x.sizes(), x.options());
  if (need_weight) g.grad_weight = empty({N}, x.options());
  if (need_bias) g.grad_bias = empty({N}, x.options());
  if (M == 0) {
    if (need_weight) g.grad_weight = zeros({N}, x.options());
    if (need_bias) g.grad_bias = zeros({N}, x.options());
    return g;
  }
  layer_norm_backward_stub(x.device().type, g.grad_input, g.grad_weight, g.grad_bias, grad_out, x,
                           mean, rstd, weight, M, N);
  return g;
}

namespace {

// (N, C, L) of a contiguous (N, C, *) input.
void channel_shape(const Tensor& x, const char* op, int64_t& N, int64_t& C, int64_t& L) {
  EMBER_CHECK(is_floating(x.dtype()) && x.is_contiguous() && x.dim() >= 2, op,
              ": expected a contiguous floating-point (N, C, *) input, got ", dtype_name(x.dtype()),
              " ", x.sizes());
  N = x.size(0);
  C = x.size(1);
  L = 1;
  for (int64_t d = 2; d < x.dim(); ++d) L *= x.size(d);
}

}  // namespace

native::BatchNormOutput native::batch_norm(const Tensor& x, const Tensor& weight,
                                           const Tensor& bias, const Tensor& running_mean,
                                           const Tensor& running_var, bool training,
                                           double momentum_factor, double eps) {
  int64_t N, C, L;
  channel_shape(x, "batch_norm", N, C, L);
  check_param(weight, x, C, "weight", "batch_norm");
  check_param(bias, x, C, "bias", "batch_norm");
  check_param(running_mean, x, C, "running_mean", "batch_norm");
  check_param(running_var, x, C, "running_var", "batch_norm");
  EMBER_CHECK(
      running_mean.defined() == running_var.defined() && (training || running_mean.defined()),
      "batch_norm: running_mean and running_var must be both defined (always in eval) "
      "or both undefined");
  const TensorOptions stats = TensorOptions(stats_dtype(x.dtype())).device(x.device());
  BatchNormOutput out{empty(x.sizes(), x.options()), empty({C}, stats), empty({C}, stats)};
  if (C == 0 || (training && N * L == 0)) return out;
  batch_norm_stub(x.device().type, out.y, out.mean, out.rstd, x, weight, bias, running_mean,
                  running_var, N, C, L, training, momentum_factor, eps);
  if (training && running_mean.defined()) {
    running_mean.bump_version();
    running_var.bump_version();
  }
  return out;
}

native::LayerNormGrads native::batch_norm_backward(const Tensor& grad_out, const Tensor& x,
                                                   const Tensor& mean, const Tensor& rstd,
                                                   const Tensor& weight, bool training,
                                                   bool need_input, bool need_weight,
                                                   bool need_bias) {
  int64_t N, C, L;
  channel_shape(x, "batch_norm_backward", N, C, L);
  EMBER_CHECK(grad_out.sizes() == x.sizes() && grad_out.dtype() == x.dtype() &&
                  grad_out.device() == x.device() && grad_out.is_contiguous(),
              "batch_norm_backward: grad_out ", dtype_name(grad_out.dtype()), " ", grad_out.sizes(),
              " must be contiguous like the input ", dtype_name(x.dtype()), " ", x.sizes());
  check_param(weight, x, C, "weight", "batch_norm_backward");
  EMBER_CHECK(mean.numel() == C && rstd.numel() == C, "batch_norm_backward: ", C,
              " channels but mean has ", mean.numel(), " and rstd ", rstd.numel(), " elements");
  LayerNormGrads g;
  if (need_input) g.grad_input = empty(x.sizes(), x.options());
  if (need_weight) g.grad_weight = empty({C}, x.options());
  if (need_bias) g.grad_bias = empty({C}, x.options());
  if (C > 0)
    batch_norm_backward_stub(x.device().type, g.grad_input, g.grad_weight, g.grad_bias, grad_out, x,
                             mean, rstd, weight, N, C, L, training);
  return g;
}

native::LayerNormOutput native::group_norm(const Tensor& x, int64_t groups, const Tensor& weight,
                                           const Tensor& bias, double eps) {
  int64_t N, C, L;
  channel_shape(x, "group_norm", N, C, L);
  EMBER_CHECK(groups > 0 && C % groups == 0, "group_norm: ", C,
              " channels are not divisible into num_groups=", groups);
  check_param(weight, x, C, "weight", "group_norm");
  check_param(bias, x, C, "bias", "group_norm");
  const TensorOptions stats = TensorOptions(stats_dtype(x.dtype())).device(x.device());
  LayerNormOutput out{empty(x.sizes(), x.options()), empty({N * groups}, stats),
                      empty({N * groups}, stats)};
  if (N > 0 && C * L > 0)
    group_norm_stub(x.device().type, out.y, out.mean, out.rstd, x, weight, bias, N, C, L, groups,
                    eps);
  return out;
}

native::LayerNormGrads native::group_norm_backward(const Tensor& grad_out, const Tensor& x,
                                                   const Tensor& mean, const Tensor& rstd,
                                                   const Tensor& weight, int64_t groups,
                                                   bool need_input, bool need_weight,
                                                   bool need_bias) {
  int64_t N, C, L;
  channel_shape(x, "group_norm_backward", N, C, L);
  EMBER_CHECK(grad_out.sizes() == x.sizes() && grad_out.dtype() == x.dtype() &&
                  grad_out.device() == x.device() && grad_out.is_contiguous(),
              "group_norm_backward: grad_out ", dtype_name(grad_out.dtype()), " ", grad_out.sizes(),
              " must be contiguous like the input ", dtype_name(x.dtype()), " ", x.sizes());
  check_param(weight, x, C, "weight", "group_norm_backward");
  EMBER_CHECK(
      groups > 0 && C % groups == 0 && mean.numel() == N * groups && rstd.numel() == N * groups,
      "group_norm_backward: ", N * groups, " rows but mean has ", mean.numel(), " and rstd ",
      rstd.numel(), " elements");
  LayerNormGrads g;
  if (need_input) g.grad_input = empty(x.sizes(), x.options());
  if (need_weight) g.grad_weight = zeros({C}, x.options());
  if (need_bias) g.grad_bias = zeros({C}, x.options());
  if (N > 0 && C * L > 0)
    group_norm_backward_stub(x.device().type, g.grad_input, g.grad_weight, g.grad_bias, grad_out, x,
                             mean, rstd, weight, N, C, L, groups);
  return g;
}

}  // namespace ember
