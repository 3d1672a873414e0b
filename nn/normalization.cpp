#include "nn/normalization.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <sstream>

#include "autograd/autocast.h"
#include "autograd/checkpoint.h"
#include "autograd/grad_mode.h"
#include "autograd/op.h"
#include "autograd/ops/binary.h"
#include "autograd/ops/reduce.h"
#include "core/op_registry.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/norm.h"
#include "nn/init.h"
#include "nn/repr.h"

namespace ember::nn {
namespace {

const char* const kNormOps[] = {"batch_norm", "layer_norm", "group_norm"};
static_assert(sizeof(kNormOps) / sizeof(kNormOps[0]) == 3);
const OpFamilyRegistrar registrar("nn_norm", kNormOps);

// The dtype the statistics are computed in: float32 for float16 / bfloat16 (Note
// [Normalization as a composite]), the input's own dtype otherwise.
DType compute_dtype(DType dt) { return dt == kFloat16 || dt == kBFloat16 ? kFloat32 : dt; }

Tensor in_dtype(const Tensor& t, DType dt) {
  return !t.defined() || t.dtype() == dt ? t : t.to(dt);
}

void check_floating(const Tensor& input, const char* op) {
  EMBER_CHECK(input.is_floating_point(), op, ": expected a floating-point input, got ",
              dtype_name(input.dtype()), " of shape ", input.sizes());
}

// An optional per-channel tensor (weight, bias, running statistics) must be (C).
void check_per_channel(const Tensor& t, int64_t channels, const char* what, const char* op,
                       const Tensor& input) {
  if (!t.defined()) return;
  EMBER_CHECK(t.dim() == 1 && t.size(0) == channels, op, ": ", what, " should have shape [",
              channels, "] (one value per channel of input ", input.sizes(), "), got ", t.sizes());
  EMBER_CHECK(t.is_floating_point(), op, ": ", what, " must be floating-point, got ",
              dtype_name(t.dtype()));
}

// x * scale + shift with either factor optional, broadcasting (addcmul fuses the two).
Tensor scale_shift(const Tensor& x, const Tensor& scale, const Tensor& shift) {
  if (scale.defined() && shift.defined()) return addcmul(shift, x, scale);
  if (scale.defined()) return x * scale;
  if (shift.defined()) return x + shift;
  return x;
}

// (x - mean) and the biased variance over `dims` (kept as size-1 dims): the mean of the centred
// squares, a second pass over the data (Note [Normalization as a composite]).
struct Moments {
  Tensor mean, centred, var;
};
Moments moments(const Tensor& x, const Shape& dims) {
  Moments m;
  m.mean = x.mean(dims, /*keepdim=*/true);
  m.centred = x - m.mean;
  m.var = (m.centred * m.centred).mean(dims, /*keepdim=*/true);
  return m;
}

// Note [Fused layer_norm] in core/ops/norm.h: on the CPU and on a cuda device, when weight and
// bias (if any) have the input's dtype and device, layer_norm is one op with fused kernels.
bool fused_layer_norm_applies(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  if (!layer_norm_stub.has_kernel(input.device().type)) return false;
  for (const Tensor* p : {&weight, &bias})
    if (p->defined() && (p->dtype() != input.dtype() || p->device() != input.device()))
      return false;
  return true;
}

// layer_norm's gradients written with differentiable ops, the statistics recomputed from x, so
// that the backward of the backward works (the fused kernel records no graph). k: the number
// of normalised (trailing) dims.
autograd::Tensors layer_norm_formula(const Tensor& x, const Tensor& weight, const Tensor& g,
                                     int64_t k, double eps, bool need_x, bool need_w, bool need_b) {
  const int64_t nd = x.dim();
  Shape dims, batch;
  for (int64_t d = 0; d < nd; ++d) (d < nd - k ? batch : dims).push_back(d);
  const DType dt = compute_dtype(x.dtype());
  const Tensor xc = in_dtype(x, dt), gc = in_dtype(g, dt);
  const Moments m = moments(xc, dims);
  const Tensor rstd = (m.var + eps).rsqrt();
  const Tensor xhat = m.centred * rstd;
  Tensor gx, gw, gb;
  if (need_x) {
    const Tensor wg = weight.defined() ? gc * in_dtype(weight, dt) : gc;
    const Tensor mean_wg = wg.mean(dims, /*keepdim=*/true);
    const Tensor mean_wgx = (wg * xhat).mean(dims, /*keepdim=*/true);
    gx = rstd * (wg - mean_wg - xhat * mean_wgx);
  }
  if (need_w) gw = batch.empty() ? gc * xhat : (gc * xhat).sum(batch);
  if (need_b) gb = batch.empty() ? gc : gc.sum(batch);
  return {gx, gw, gb};
}

// The fused layer_norm (fused_layer_norm_applies): forward and, without create_graph, backward
// are one kernel each.
Tensor fused_layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                        const Tensor& bias, double eps) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  const int64_t N = shape_numel(normalized_shape);
  autograd::Op op("NativeLayerNormBackward", {input, weight, bias});
  native::LayerNormOutput out = op.run([&] {
    auto raw = [](const Tensor& t) {
      return !t.defined() || t.is_contiguous() ? t : native::contiguous(t);
    };
    return native::layer_norm(raw(input), N, raw(weight), raw(bias), eps);
  });
  op.set_output(out.y);
  op.save(input);
  op.save(weight);
  op.save(out.mean);
  op.save(out.rstd);
  const bool has_bias = bias.defined();
  op.backward([k, N, eps, has_bias, normalized_shape](
                  const autograd::Saved& s, const autograd::Tensors& g) -> autograd::Tensors {
    const Tensor x = s[0], w = s[1];
    const bool need_x = s.needs_grad(0), need_w = w.defined() && s.needs_grad(1),
               need_b = has_bias && s.needs_grad(2);
    if (autograd::is_grad_enabled())  // create_graph: a graph of the backward is recorded
      return layer_norm_formula(x, w, g[0], k, eps, need_x, need_w, need_b);
    auto raw = [](const Tensor& t) {
      return !t.defined() || t.is_contiguous() ? t : native::contiguous(t);
    };
    native::LayerNormGrads r = native::layer_norm_backward(raw(g[0]), raw(x), s[2], s[3], raw(w), N,
                                                           need_x, need_w, need_b);
    if (r.grad_weight.defined()) r.grad_weight = r.grad_weight.view(normalized_shape);
    if (r.grad_bias.defined()) r.grad_bias = r.grad_bias.view(normalized_shape);
    return {r.grad_input, r.grad_weight, r.grad_bias};
  });
  return out.y;
}

// Note [Fused layer_norm] in core/ops/norm.h, for batch_norm: on a cuda device, when every
// per-channel tensor has the input's dtype and device, contiguous, and the running statistics
// need no gradient (the fused op differentiates input, weight and bias only), batch_norm is one
// op with fused kernels.
bool fused_batch_norm_applies(const Tensor& input, std::initializer_list<const Tensor*> params) {
  if (!input.device().is_cuda() || !batch_norm_stub.has_kernel(DeviceType::CUDA)) return false;
  for (const Tensor* p : params)
    if (p->defined() &&
        (p->dtype() != input.dtype() || p->device() != input.device() || !p->is_contiguous()))
      return false;
  return true;
}
bool fused_batch_norm_applies(const Tensor& input, const Tensor& weight, const Tensor& bias,
                              const Tensor& running_mean, const Tensor& running_var) {
  if (running_mean.requires_grad() || running_var.requires_grad()) return false;
  return fused_batch_norm_applies(input, {&weight, &bias, &running_mean, &running_var});
}

// batch_norm's gradients with differentiable ops (for create_graph). training: the batch
// statistics recomputed from x; eval: mean and rstd (C) are the constants the forward used.
autograd::Tensors batch_norm_formula(const Tensor& x, const Tensor& weight, const Tensor& mean,
                                     const Tensor& rstd, const Tensor& g, bool training, double eps,
                                     bool need_x, bool need_w, bool need_b) {
  Shape dims{0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  Shape channel_shape(static_cast<size_t>(x.dim()), 1);
  channel_shape[1] = x.size(1);
  const DType dt = compute_dtype(x.dtype());
  const Tensor xc = in_dtype(x, dt), gc = in_dtype(g, dt);
  const Tensor wg = weight.defined() ? gc * in_dtype(weight, dt).view(channel_shape) : gc;
  Tensor r, xhat;
  if (training) {
    const Moments m = moments(xc, dims);
    r = (m.var + eps).rsqrt();
    xhat = m.centred * r;
  } else {
    r = in_dtype(rstd, dt).view(channel_shape);
    xhat = (xc - in_dtype(mean, dt).view(channel_shape)) * r;
  }
  Tensor gx, gw, gb;
  if (need_x) {
    gx = training ? r * (wg - wg.mean(dims, /*keepdim=*/true) -
                         xhat * (wg * xhat).mean(dims, /*keepdim=*/true))
                  : wg * r;
  }
  if (need_w) gw = (gc * xhat).sum(dims);
  if (need_b) gb = gc.sum(dims);
  return {gx, gw, gb};
}

// The fused batch_norm (fused_batch_norm_applies); running_mean / running_var: the statistics
// to update (training, f the factor) or to normalise with (eval), else undefined.
Tensor fused_batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const Tensor& running_mean, const Tensor& running_var, bool training,
                        double f, double eps) {
  auto raw = [](const Tensor& t) {
    return !t.defined() || t.is_contiguous() ? t : native::contiguous(t);
  };
  autograd::Op op("NativeBatchNormBackward", {input, weight, bias});
  native::BatchNormOutput out = op.run([&] {
    return native::batch_norm(raw(input), raw(weight), raw(bias), running_mean, running_var,
                              training, f, eps);
  });
  op.set_output(out.y);
  op.save(input);
  op.save(weight);
  op.save(out.mean);
  op.save(out.rstd);
  const bool has_bias = bias.defined();
  op.backward([training, eps, has_bias](const autograd::Saved& s,
                                        const autograd::Tensors& g) -> autograd::Tensors {
    const Tensor x = s[0], w = s[1];
    const bool need_x = s.needs_grad(0), need_w = w.defined() && s.needs_grad(1),
               need_b = has_bias && s.needs_grad(2);
    if (autograd::is_grad_enabled())  // create_graph: a graph of the backward is recorded
      return batch_norm_formula(x, w, s[2], s[3], g[0], training, eps, need_x, need_w, need_b);
    auto raw = [](const Tensor& t) {
      return !t.defined() || t.is_contiguous() ? t : native::contiguous(t);
    };
    native::LayerNormGrads r = native::batch_norm_backward(raw(g[0]), raw(x), s[2], s[3], raw(w),
                                                           training, need_x, need_w, need_b);
    return {r.grad_input, r.grad_weight, r.grad_bias};
  });
  return out.y;
}

// group_norm's gradients with differentiable ops (for create_graph), the statistics of each
// (n, group) row recomputed from x.
autograd::Tensors group_norm_formula(const Tensor& x, const Tensor& weight, const Tensor& g,
                                     int64_t groups, double eps, bool need_x, bool need_w,
                                     bool need_b) {
  const int64_t N = x.size(0), C = x.size(1);
  Shape dims{0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  Shape channel_shape(static_cast<size_t>(x.dim()), 1);
  channel_shape[1] = C;
  const DType dt = compute_dtype(x.dtype());
  const Shape rows{N, groups, -1};
  const Tensor xc = in_dtype(x, dt).reshape(rows), gc = in_dtype(g, dt);
  const Moments m = moments(xc, {2});
  const Tensor r = (m.var + eps).rsqrt();
  const Tensor xhat = m.centred * r;  // (N, G, C / G * L)
  Tensor gx, gw, gb;
  if (need_x) {
    const Tensor wg =
        (weight.defined() ? gc * in_dtype(weight, dt).view(channel_shape) : gc).reshape(rows);
    gx =
        (r * (wg - wg.mean({2}, /*keepdim=*/true) - xhat * (wg * xhat).mean({2}, /*keepdim=*/true)))
            .reshape(x.sizes());
  }
  if (need_w) gw = (gc * xhat.reshape(x.sizes())).sum(dims);
  if (need_b) gb = gc.sum(dims);
  return {gx, gw, gb};
}

// The fused group_norm (on cuda, weight and bias of the input's dtype and device).
Tensor fused_group_norm(const Tensor& input, int64_t groups, const Tensor& weight,
                        const Tensor& bias, double eps) {
  auto raw = [](const Tensor& t) {
    return !t.defined() || t.is_contiguous() ? t : native::contiguous(t);
  };
  autograd::Op op("NativeGroupNormBackward", {input, weight, bias});
  native::LayerNormOutput out =
      op.run([&] { return native::group_norm(raw(input), groups, raw(weight), raw(bias), eps); });
  op.set_output(out.y);
  op.save(input);
  op.save(weight);
  op.save(out.mean);
  op.save(out.rstd);
  const bool has_bias = bias.defined();
  op.backward([groups, eps, has_bias](const autograd::Saved& s,
                                      const autograd::Tensors& g) -> autograd::Tensors {
    const Tensor x = s[0], w = s[1];
    const bool need_x = s.needs_grad(0), need_w = w.defined() && s.needs_grad(1),
               need_b = has_bias && s.needs_grad(2);
    if (autograd::is_grad_enabled())  // create_graph: a graph of the backward is recorded
      return group_norm_formula(x, w, g[0], groups, eps, need_x, need_w, need_b);
    auto raw = [](const Tensor& t) {
      return !t.defined() || t.is_contiguous() ? t : native::contiguous(t);
    };
    native::LayerNormGrads r = native::group_norm_backward(raw(g[0]), raw(x), s[2], s[3], raw(w),
                                                           groups, need_x, need_w, need_b);
    return {r.grad_input, r.grad_weight, r.grad_bias};
  });
  return out.y;
}

}  // namespace

namespace functional {

static Tensor batch_norm_impl(const Tensor& input, const Tensor& running_mean,
                              const Tensor& running_var, const Tensor& weight, const Tensor& bias,
                              bool training, std::optional<double> momentum, double eps,
                              const Tensor& num_batches_tracked) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor input2 = autocast::cast_float32(input), weight2 = autocast::cast_float32(weight),
                 bias2 = autocast::cast_float32(bias);
    if (!autocast::same(input, input2) || !autocast::same(weight, weight2) ||
        !autocast::same(bias, bias2))
      return batch_norm_impl(input2, running_mean, running_var, weight2, bias2, training, momentum,
                             eps, num_batches_tracked);
  }
  const char* op = "batch_norm";
  EMBER_CHECK(input.dim() >= 2, op,
              ": expected input of shape (N, C, *) with at least 2 dims, got ", input.sizes());
  check_floating(input, op);
  const int64_t C = input.size(1);
  check_per_channel(weight, C, "weight", op, input);
  check_per_channel(bias, C, "bias", op, input);
  check_per_channel(running_mean, C, "running_mean", op, input);
  check_per_channel(running_var, C, "running_var", op, input);
  EMBER_CHECK(running_mean.defined() == running_var.defined(), op,
              ": running_mean and running_var must be both defined or both undefined");

  // Statistics over every dim but the channels; per-channel tensors viewed as (1, C, 1, ...).
  Shape dims{0};
  for (int64_t d = 2; d < input.dim(); ++d) dims.push_back(d);
  Shape channel_shape(static_cast<size_t>(input.dim()), 1);
  channel_shape[1] = C;
  const DType dt = compute_dtype(input.dtype());
  const Tensor x = in_dtype(input, dt);
  auto per_channel = [&](const Tensor& t) {
    return t.defined() ? in_dtype(t, dt).view(channel_shape) : t;
  };

  if (fused_batch_norm_applies(input, weight, bias, running_mean, running_var)) {
    // The composite's checks and bookkeeping below, then one fused op.
    double f = 0;
    bool update = false;
    if (training) {
      int64_t values_per_channel = input.size(0);
      for (int64_t d = 2; d < input.dim(); ++d) values_per_channel *= input.size(d);
      EMBER_CHECK(values_per_channel != 1, op,
                  ": Expected more than 1 value per channel when training, got input size ",
                  input.sizes());
      if (num_batches_tracked.defined()) {
        autograd::NoGradGuard no_grad;
        num_batches_tracked.add_(1);
      }
      if (running_mean.defined() && input.numel() > 0) {
        EMBER_CHECK(momentum.has_value() || num_batches_tracked.defined(), op,
                    ": momentum=None (a cumulative moving average) needs num_batches_tracked");
        f = momentum ? *momentum : 1.0 / num_batches_tracked.item<double>();
        update = true;
      }
    } else {
      EMBER_CHECK(running_mean.defined(), op,
                  ": running_mean and running_var are required in evaluation mode "
                  "(training=false)");
    }
    const bool pass = update || !training;
    return fused_batch_norm(input, weight, bias, pass ? running_mean : Tensor(),
                            pass ? running_var : Tensor(), training, f, eps);
  }
  Tensor centred, invstd;
  if (training) {
    int64_t values_per_channel = input.size(0);  // N * L (* H * W ...)
    for (int64_t d = 2; d < input.dim(); ++d) values_per_channel *= input.size(d);
    EMBER_CHECK(values_per_channel != 1, op,
                ": Expected more than 1 value per channel when training, got input size ",
                input.sizes());
    Moments m = moments(x, dims);
    centred = m.centred;
    invstd = (m.var + eps).rsqrt();
    if (num_batches_tracked.defined()) {
      autograd::NoGradGuard no_grad;
      num_batches_tracked.add_(1);
    }
    if (running_mean.defined() && input.numel() > 0) {
      EMBER_CHECK(momentum.has_value() || num_batches_tracked.defined(), op,
                  ": momentum=None (a cumulative moving average) needs num_batches_tracked");
      const double f = momentum ? *momentum : 1.0 / num_batches_tracked.item<double>();
      const double n = static_cast<double>(values_per_channel);
      autograd::NoGradGuard no_grad;
      Tensor batch_mean = m.mean.detach().reshape({C});
      Tensor unbiased_var = m.var.detach().reshape({C}) * (n / (n - 1.0));
      running_mean.mul_(1.0 - f).add_(in_dtype(batch_mean, running_mean.dtype()), f);
      running_var.mul_(1.0 - f).add_(in_dtype(unbiased_var, running_var.dtype()), f);
    }
  } else {
    EMBER_CHECK(running_mean.defined(), op,
                ": running_mean and running_var are required in evaluation mode (training=false)");
    centred = x - per_channel(running_mean);
    invstd = (per_channel(running_var) + eps).rsqrt();
  }
  // invstd and weight are both (1, C, 1, ...): fold them into one scale, then one fused pass.
  Tensor scale = weight.defined() ? invstd * per_channel(weight) : invstd;
  return in_dtype(scale_shift(centred, scale, per_channel(bias)), input.dtype());
}

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training,
                  std::optional<double> momentum, double eps, const Tensor& num_batches_tracked) {
  // A checkpointed region's rerun in backward (autograd/checkpoint.h) sees the same batch a
  // second time, and the forward updated the running statistics already: the rerun updates
  // copies (of the same dtypes and devices, so that it takes the forward's path).
  if (training && autograd::is_recomputing() &&
      (running_mean.defined() || num_batches_tracked.defined())) {
    auto copy = [](const Tensor& t) { return t.defined() ? t.detach().clone() : t; };
    return batch_norm_impl(input, copy(running_mean), copy(running_var), weight, bias, training,
                           momentum, eps, copy(num_batches_tracked));
  }
  return batch_norm_impl(input, running_mean, running_var, weight, bias, training, momentum, eps,
                         num_batches_tracked);
}

Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor input2 = autocast::cast_float32(input), weight2 = autocast::cast_float32(weight),
                 bias2 = autocast::cast_float32(bias);
    if (!autocast::same(input, input2) || !autocast::same(weight, weight2) ||
        !autocast::same(bias, bias2))
      return layer_norm(input2, normalized_shape, weight2, bias2, eps);
  }
  const char* op = "layer_norm";
  check_floating(input, op);
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  bool matches = k >= 1 && input.dim() >= k;
  for (int64_t i = 0; matches && i < k; ++i)
    matches = input.size(input.dim() - k + i) == normalized_shape[static_cast<size_t>(i)];
  EMBER_CHECK(
      matches, op, ": Given normalized_shape=", normalized_shape,
      ", expected input with shape [*, ",
      [&] {
        std::string s;
        for (int64_t i = 0; i < k; ++i)
          s += (i ? ", " : "") + std::to_string(normalized_shape[static_cast<size_t>(i)]);
        return s;
      }(),
      "], but got input of size ", input.sizes());
  for (const Tensor* p : {&weight, &bias}) {
    if (!p->defined()) continue;
    EMBER_CHECK(p->sizes() == normalized_shape, op, ": ", p == &weight ? "weight" : "bias",
                " should have shape normalized_shape=", normalized_shape, ", got ", p->sizes());
    EMBER_CHECK(p->is_floating_point(), op, ": ", p == &weight ? "weight" : "bias",
                " must be floating-point, got ", dtype_name(p->dtype()));
  }
  if (fused_layer_norm_applies(input, weight, bias))
    return fused_layer_norm(input, normalized_shape, weight, bias, eps);
  Shape dims;
  for (int64_t i = 0; i < k; ++i) dims.push_back(input.dim() - k + i);
  const DType dt = compute_dtype(input.dtype());
  Moments m = moments(in_dtype(input, dt), dims);
  Tensor normalized = m.centred * (m.var + eps).rsqrt();
  return in_dtype(scale_shift(normalized, in_dtype(weight, dt), in_dtype(bias, dt)), input.dtype());
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor input2 = autocast::cast_float32(input), weight2 = autocast::cast_float32(weight),
                 bias2 = autocast::cast_float32(bias);
    if (!autocast::same(input, input2) || !autocast::same(weight, weight2) ||
        !autocast::same(bias, bias2))
      return group_norm(input2, num_groups, weight2, bias2, eps);
  }
  const char* op = "group_norm";
  check_floating(input, op);
  EMBER_CHECK(input.dim() >= 2, op,
              ": expected input of shape (N, C, *) with at least 2 dims, got ", input.sizes());
  const int64_t N = input.size(0), C = input.size(1);
  EMBER_CHECK(num_groups > 0, op, ": num_groups must be positive, got ", num_groups);
  EMBER_CHECK(C % num_groups == 0, op,
              ": Expected number of channels in input to be divisible by num_groups, but got "
              "input of shape ",
              input.sizes(), " and num_groups=", num_groups);
  check_per_channel(weight, C, "weight", op, input);
  check_per_channel(bias, C, "bias", op, input);
  if (input.device().is_cuda() && group_norm_stub.has_kernel(DeviceType::CUDA) &&
      fused_batch_norm_applies(input, {&weight, &bias}))  // same dtype and device
    return fused_group_norm(input, num_groups, weight, bias, eps);
  int64_t inner = 1;  // elements per channel
  for (int64_t d = 2; d < input.dim(); ++d) inner *= input.size(d);
  const DType dt = compute_dtype(input.dtype());
  // (N, C, *) -> (N, G, C/G * inner): each group's values in one row.
  Tensor x = in_dtype(input, dt).reshape({N, num_groups, C / num_groups * inner});
  Moments m = moments(x, {2});
  Tensor normalized = (m.centred * (m.var + eps).rsqrt()).reshape(input.sizes());
  Shape channel_shape(static_cast<size_t>(input.dim()), 1);
  channel_shape[1] = C;
  auto per_channel = [&](const Tensor& t) {
    return t.defined() ? in_dtype(t, dt).view(channel_shape) : t;
  };
  return in_dtype(scale_shift(normalized, per_channel(weight), per_channel(bias)), input.dtype());
}

}  // namespace functional

// ---- BatchNorm ---------------------------------------------------------------------------------

BatchNorm::BatchNorm(const std::string& type_name, int64_t num_features_, double eps_,
                     std::optional<double> momentum_, bool affine_, bool track_running_stats_,
                     DType dtype)
    : Module(type_name),
      num_features(num_features_),
      eps(eps_),
      momentum(momentum_),
      affine(affine_),
      track_running_stats(track_running_stats_) {
  EMBER_CHECK(num_features > 0, type_name, ": num_features must be positive, got ", num_features);
  EMBER_CHECK(is_floating(dtype), type_name, ": dtype must be floating-point, got ",
              dtype_name(dtype));
  if (affine) {
    weight = register_parameter("weight", empty({num_features}, dtype));
    bias = register_parameter("bias", empty({num_features}, dtype));
  }
  if (track_running_stats) {
    running_mean = register_buffer("running_mean", zeros({num_features}, dtype));
    running_var = register_buffer("running_var", ones({num_features}, dtype));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  }
  reset_parameters();
}

void BatchNorm::reset_running_stats() {
  if (!track_running_stats) return;
  autograd::NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void BatchNorm::reset_parameters() {
  reset_running_stats();
  if (affine) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

Tensor BatchNorm::forward(const Tensor& input) {
  check_input_dim(input);
  EMBER_CHECK(input.size(1) == num_features, type_name(), ": expected input with ", num_features,
              " channels (dim 1), got input of shape ", input.sizes());
  // As PyTorch's _BatchNorm.forward: batch statistics in training, and in eval too when there
  // are no running statistics; the running ones are updated only when tracked and training.
  const bool use_batch_stats = is_training() || !track_running_stats;
  const bool pass_running = !is_training() || track_running_stats;
  return functional::batch_norm(
      input, pass_running ? running_mean : Tensor(), pass_running ? running_var : Tensor(), weight,
      bias, use_batch_stats, momentum, eps,
      is_training() && track_running_stats ? num_batches_tracked : Tensor());
}

std::string BatchNorm::extra_repr() const {
  std::ostringstream os;
  os << num_features << ", eps=" << python_float(eps)
     << ", momentum=" << (momentum ? python_float(*momentum) : "None")
     << ", affine=" << python_bool(affine)
     << ", track_running_stats=" << python_bool(track_running_stats);
  return os.str();
}

BatchNorm1d::BatchNorm1d(int64_t num_features, double eps, std::optional<double> momentum,
                         bool affine, bool track_running_stats, DType dtype)
    : BatchNorm("BatchNorm1d", num_features, eps, momentum, affine, track_running_stats, dtype) {}

void BatchNorm1d::check_input_dim(const Tensor& input) const {
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3,
              "BatchNorm1d: expected 2D or 3D input (N, C) or (N, C, L), got ", input.dim(),
              "D input of shape ", input.sizes());
}

BatchNorm2d::BatchNorm2d(int64_t num_features, double eps, std::optional<double> momentum,
                         bool affine, bool track_running_stats, DType dtype)
    : BatchNorm("BatchNorm2d", num_features, eps, momentum, affine, track_running_stats, dtype) {}

void BatchNorm2d::check_input_dim(const Tensor& input) const {
  EMBER_CHECK(input.dim() == 4, "BatchNorm2d: expected 4D input (N, C, H, W), got ", input.dim(),
              "D input of shape ", input.sizes());
}

// ---- LayerNorm ---------------------------------------------------------------------------------

LayerNorm::LayerNorm(Shape normalized_shape_, double eps_, bool elementwise_affine_, DType dtype)
    : Module("LayerNorm"),
      normalized_shape(std::move(normalized_shape_)),
      eps(eps_),
      elementwise_affine(elementwise_affine_) {
  EMBER_CHECK(!normalized_shape.empty(), "LayerNorm: normalized_shape must not be empty");
  for (int64_t s : normalized_shape)
    EMBER_CHECK(s > 0, "LayerNorm: normalized_shape ", normalized_shape,
                " must have positive sizes");
  EMBER_CHECK(is_floating(dtype), "LayerNorm: dtype must be floating-point, got ",
              dtype_name(dtype));
  if (elementwise_affine) {
    weight = register_parameter("weight", empty(normalized_shape, dtype));
    bias = register_parameter("bias", empty(normalized_shape, dtype));
  }
  reset_parameters();
}

void LayerNorm::reset_parameters() {
  if (!elementwise_affine) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor LayerNorm::forward(const Tensor& input) {
  return functional::layer_norm(input, normalized_shape, weight, bias, eps);
}

std::string LayerNorm::extra_repr() const {
  // normalized_shape prints as a Python tuple: (4,) or (3, 4).
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < normalized_shape.size(); ++i) os << (i ? ", " : "") << normalized_shape[i];
  os << (normalized_shape.size() == 1 ? ",)" : ")") << ", eps=" << python_float(eps)
     << ", elementwise_affine=" << python_bool(elementwise_affine);
  return os.str();
}

// ---- GroupNorm ---------------------------------------------------------------------------------

GroupNorm::GroupNorm(int64_t num_groups_, int64_t num_channels_, double eps_, bool affine_,
                     DType dtype)
    : Module("GroupNorm"),
      num_groups(num_groups_),
      num_channels(num_channels_),
      eps(eps_),
      affine(affine_) {
  EMBER_CHECK(num_groups > 0 && num_channels > 0,
              "GroupNorm: num_groups and num_channels must be positive, got num_groups=",
              num_groups, ", num_channels=", num_channels);
  EMBER_CHECK(num_channels % num_groups == 0,
              "GroupNorm: num_channels must be divisible by "
              "num_groups, got num_channels=",
              num_channels, ", num_groups=", num_groups);
  EMBER_CHECK(is_floating(dtype), "GroupNorm: dtype must be floating-point, got ",
              dtype_name(dtype));
  if (affine) {
    weight = register_parameter("weight", empty({num_channels}, dtype));
    bias = register_parameter("bias", empty({num_channels}, dtype));
  }
  reset_parameters();
}

void GroupNorm::reset_parameters() {
  if (!affine) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor GroupNorm::forward(const Tensor& input) {
  EMBER_CHECK(input.dim() >= 2 && input.size(1) == num_channels, "GroupNorm: expected input (N, ",
              num_channels, ", *), got input of shape ", input.sizes());
  return functional::group_norm(input, num_groups, weight, bias, eps);
}

std::string GroupNorm::extra_repr() const {
  std::ostringstream os;
  os << num_groups << ", " << num_channels << ", eps=" << python_float(eps)
     << ", affine=" << python_bool(affine);
  return os.str();
}

}  // namespace ember::nn
