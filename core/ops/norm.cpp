#include "core/ops/norm.h"

#include "core/ops/factory.h"

namespace ember {

namespace {

DType stats_dtype(DType dt) { return dt == kFloat16 || dt == kBFloat16 ? kFloat32 : dt; }

void check_param(const Tensor& t, const Tensor& x, int64_t N, const char* what) {
  if (!t.defined()) return;
  EMBER_CHECK(
      t.numel() == N && t.dtype() == x.dtype() && t.device() == x.device() && t.is_contiguous(),
      "layer_norm: the ", what, " must be contiguous with ", N, " elements of dtype ",
      dtype_name(x.dtype()), " on ", x.device(), ", got ", dtype_name(t.dtype()), " ", t.sizes(),
      " on ", t.device());
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

}  // namespace ember
