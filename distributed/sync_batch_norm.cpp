#include "distributed/sync_batch_norm.h"

#include <sstream>

#include "autograd/checkpoint.h"
#include "autograd/function.h"
#include "autograd/grad_mode.h"
#include "autograd/ops/shape.h"
#include "core/ops/factory.h"
#include "nn/repr.h"

namespace ember::dist {

namespace {

constexpr const char* kName = "SyncBatchNorm";

DType compute_dtype(DType dt) { return dt == kFloat16 || dt == kBFloat16 ? kFloat32 : dt; }

// Every dim but the channel dim 1.
Shape reduce_dims(const Tensor& x) {
  Shape dims{0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  return dims;
}

// (C) -> (1, C, 1, ...) to broadcast against x.
Tensor per_channel(const Tensor& t, const Tensor& x) {
  Shape shape(static_cast<size_t>(x.dim()), 1);
  shape[1] = t.numel();
  return t.reshape(shape);
}

// The custom autograd function of Note [SyncBatchNorm statistics]: normalises with the global
// statistics; backward allreduces the two per-channel sums.
struct SyncBatchNormFunction : autograd::Function<SyncBatchNormFunction> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& input, const Tensor& weight,
                        const Tensor& bias, const Tensor& mean, const Tensor& invstd, double count,
                        std::shared_ptr<ProcessGroup> group) {
    const DType ct = compute_dtype(input.dtype());
    const Tensor x = input.to(ct);
    Tensor y = (x - per_channel(mean, x)) * per_channel(invstd, x);
    if (weight.defined()) y = y * per_channel(weight.to(ct), x);
    if (bias.defined()) y = y + per_channel(bias.to(ct), x);
    ctx->save_for_backward({input});
    ctx->saved_data["weight"] = weight;
    ctx->saved_data["mean"] = mean;
    ctx->saved_data["invstd"] = invstd;
    ctx->saved_data["count"] = count;
    ctx->saved_data["group"] = std::move(group);
    return y.to(input.dtype());
  }

  static Tensors backward(autograd::AutogradContext* ctx, const Tensors& grads) {
    EMBER_CHECK(!autograd::is_grad_enabled(),
                "SyncBatchNorm: double backward (create_graph) is not supported");
    const Tensor input = ctx->get_saved_variables()[0];
    const auto weight = std::any_cast<Tensor>(ctx->saved_data["weight"]);
    const auto mean = std::any_cast<Tensor>(ctx->saved_data["mean"]);
    const auto invstd = std::any_cast<Tensor>(ctx->saved_data["invstd"]);
    const double count = std::any_cast<double>(ctx->saved_data["count"]);
    auto group = std::any_cast<std::shared_ptr<ProcessGroup>>(ctx->saved_data["group"]);
    const DType ct = compute_dtype(input.dtype());
    const Tensor x = input.to(ct);
    const Tensor g = grads[0].to(ct);
    const Tensor xhat = (x - per_channel(mean, x)) * per_channel(invstd, x);
    const int64_t channels = mean.numel();
    const TensorOptions opts = TensorOptions(ct).device(x.device());
    const bool empty = x.numel() == 0;
    const Shape dims = reduce_dims(x);
    // Local per-channel sums of grad and grad * xhat.
    const Tensor sum_dy = empty ? ember::zeros({channels}, opts) : g.sum(dims);
    const Tensor sum_dy_xhat = empty ? ember::zeros({channels}, opts) : (g * xhat).sum(dims);
    Tensors out(5);
    if (ctx->needs_input_grad(1)) out[1] = sum_dy_xhat.to(weight.dtype());
    if (ctx->needs_input_grad(2)) out[2] = sum_dy.to(input.dtype());
    if (ctx->needs_input_grad(0)) {
      Tensor sums = ember::cat({sum_dy, sum_dy_xhat}).contiguous();
      group->allreduce(sums, ReduceOp::Sum)->wait();
      const Tensor mean_dy = sums.narrow(0, 0, channels) / count;
      const Tensor mean_dy_xhat = sums.narrow(0, channels, channels) / count;
      Tensor scale = invstd;
      if (weight.defined()) scale = scale * weight.to(ct);
      const Tensor gi = (g - per_channel(mean_dy, x) - xhat * per_channel(mean_dy_xhat, x)) *
                        per_channel(scale, x);
      out[0] = gi.to(input.dtype());
    }
    return out;
  }
};

}  // namespace

SyncBatchNorm::SyncBatchNorm(int64_t num_features_, std::shared_ptr<ProcessGroup> group,
                             double eps_, std::optional<double> momentum_, bool affine_,
                             bool track_running_stats_, DType dtype)
    : Module(kName),
      num_features(num_features_),
      eps(eps_),
      momentum(momentum_),
      affine(affine_),
      track_running_stats(track_running_stats_),
      group_(std::move(group)) {
  EMBER_CHECK(num_features > 0, kName, ": num_features must be positive, got ", num_features);
  EMBER_CHECK(is_floating(dtype), kName, ": dtype must be floating-point, got ", dtype_name(dtype));
  if (affine) {
    weight = register_parameter("weight", ones({num_features}, dtype));
    bias = register_parameter("bias", zeros({num_features}, dtype));
  }
  if (track_running_stats) {
    running_mean = register_buffer("running_mean", zeros({num_features}, dtype));
    running_var = register_buffer("running_var", ones({num_features}, dtype));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  }
}

SyncBatchNorm::SyncBatchNorm(const nn::BatchNorm& bn, std::shared_ptr<ProcessGroup> group)
    : Module(kName),
      num_features(bn.num_features),
      eps(bn.eps),
      momentum(bn.momentum),
      affine(bn.affine),
      track_running_stats(bn.track_running_stats),
      group_(std::move(group)) {
  if (affine) {
    weight = register_parameter("weight", bn.weight, bn.weight.requires_grad());
    bias = register_parameter("bias", bn.bias, bn.bias.requires_grad());
  }
  if (track_running_stats) {
    running_mean = register_buffer("running_mean", bn.running_mean);
    running_var = register_buffer("running_var", bn.running_var);
    num_batches_tracked = register_buffer("num_batches_tracked", bn.num_batches_tracked);
  }
  train(bn.is_training());
}

std::string SyncBatchNorm::extra_repr() const {
  std::ostringstream os;
  os << num_features << ", eps=" << nn::python_float(eps)
     << ", momentum=" << (momentum ? nn::python_float(*momentum) : "None")
     << ", affine=" << nn::python_bool(affine)
     << ", track_running_stats=" << nn::python_bool(track_running_stats);
  return os.str();
}

Tensor SyncBatchNorm::forward(const Tensor& input) {
  EMBER_CHECK(input.dim() >= 2, kName, ": expected an input (N, C, *) of at least 2 dims, got ",
              input.dim(), "D input of shape ", input.sizes());
  EMBER_CHECK(input.size(1) == num_features, kName, ": expected input with ", num_features,
              " channels (dim 1), got input of shape ", input.sizes());
  EMBER_CHECK(input.is_floating_point(), kName, ": expected a floating-point input, got ",
              dtype_name(input.dtype()));
  if (!is_training()) {  // Note [SyncBatchNorm statistics]: eval communicates nothing
    return nn::functional::batch_norm(input, running_mean, running_var, weight, bias,
                                      !track_running_stats, momentum, eps);
  }
  if (group_ == nullptr) {
    throw Error(ErrorKind::Usage, kName, -1, -1, -1,
                "no process group: pass one to the constructor, set_process_group or "
                "convert_sync_batchnorm");
  }
  const DType ct = compute_dtype(input.dtype());
  const TensorOptions opts = TensorOptions(ct).device(input.device());
  const int64_t channels = num_features;
  const int64_t n_local = input.numel() / channels;

  Tensor mean, invstd;
  double total = 0;
  {
    autograd::NoGradGuard no_grad;
    const Tensor x = input.to(ct);
    Tensor local_mean = ember::zeros({channels}, opts), local_var = ember::zeros({channels}, opts);
    if (n_local > 0) {
      const Shape dims = reduce_dims(x);
      local_mean = x.mean(dims);
      const Tensor centred = x - per_channel(local_mean, x);
      local_var = (centred * centred).mean(dims);
    }
    Tensor stats =
        ember::cat({local_mean, local_var, ember::full({1}, static_cast<double>(n_local), opts)})
            .contiguous();
    std::vector<Tensor> all;
    all.reserve(static_cast<size_t>(group_->size()));
    for (int r = 0; r < group_->size(); ++r) all.push_back(ember::empty({2 * channels + 1}, opts));
    group_->allgather(all, stats)->wait();
    // Combine by counts (Chan's formula).
    std::vector<double> counts;
    counts.reserve(all.size());
    for (const Tensor& s : all)
      counts.push_back(s.narrow(0, 2 * channels, 1).cpu().to(kFloat64).item<double>());
    for (double c : counts) total += c;
    if (total == 0) return input.clone();  // every rank's batch is empty
    EMBER_CHECK(total > 1, kName, ": expected more than 1 value per channel when training, got ",
                "one in the global batch (this rank's input ", input.sizes(), ")");
    mean = ember::zeros({channels}, opts);
    for (size_t r = 0; r < all.size(); ++r)
      mean = mean + all[r].narrow(0, 0, channels) * (counts[r] / total);
    Tensor var = ember::zeros({channels}, opts);
    for (size_t r = 0; r < all.size(); ++r) {
      if (counts[r] == 0) continue;
      const Tensor d = all[r].narrow(0, 0, channels) - mean;
      var = var + (all[r].narrow(0, channels, channels) + d * d) * (counts[r] / total);
    }
    invstd = (var + eps).rsqrt();
    // A checkpointed region's rerun in backward sees the same batch again: count it once.
    if (track_running_stats && !autograd::is_recomputing()) {
      num_batches_tracked.add_(1);
      const double f =
          momentum ? *momentum : 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
      running_mean.mul_(1 - f).add_((mean * f).to(running_mean.dtype()));
      running_var.mul_(1 - f).add_((var * (f * total / (total - 1))).to(running_var.dtype()));
    }
  }
  return SyncBatchNormFunction::apply(input, weight, bias, mean, invstd, total, group_);
}

std::shared_ptr<nn::Module> convert_sync_batchnorm(std::shared_ptr<nn::Module> module,
                                                   std::shared_ptr<ProcessGroup> group) {
  EMBER_CHECK(module != nullptr, "convert_sync_batchnorm: the module is null");
  const auto* bn = dynamic_cast<const nn::BatchNorm*>(module.get());
  if (bn != nullptr &&
      (module->type_name() == "BatchNorm1d" || module->type_name() == "BatchNorm2d"))
    return std::make_shared<SyncBatchNorm>(*bn, std::move(group));
  for (const auto& [name, child] : module->named_children()) {
    std::shared_ptr<nn::Module> converted = convert_sync_batchnorm(child, group);
    if (converted != child) module->replace_module(name, converted);
  }
  return module;
}

}  // namespace ember::dist
