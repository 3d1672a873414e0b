#pragma once
// Normalization layers (PyTorch's torch.nn.BatchNorm1d/2d, LayerNorm, GroupNorm) and their
// functional forms.
//
// Each normalises x by a mean and a biased variance taken over some of its dims, then applies an
// optional per-element affine transform:
//
//   y = (x - mean) / sqrt(var + eps) * weight + bias
//
//   batch_norm   statistics per channel (dim 1) over the batch and every spatial dim
//   layer_norm   statistics per sample over the trailing dims `normalized_shape`
//   group_norm   statistics per (sample, group of channels) over the group's channels and
//                every spatial dim; weight and bias are per channel
//
// Note [Normalization as a composite]
// The ops are composed of differentiable primitives (mean, sub, mul, rsqrt, addcmul), so their
// backward, double backward included, comes from the graph. The forward is numerically sound:
// the variance is the mean of the centred squares (x - mean)^2 -- two passes over the data --
// never E[x^2] - E[x]^2, which cancels catastrophically when |mean| >> std. float16 and
// bfloat16 inputs are normalised in float32 and the result rounded back (PyTorch's opmath):
// the statistics of thousands of half values are not computed in half.
//
// Ops registered (family "nn_norm"): batch_norm, layer_norm, group_norm.

#include <cstdint>
#include <optional>
#include <string>

#include "core/tensor.h"
#include "nn/module.h"

namespace ember::nn {
namespace functional {

// input: (N, C), (N, C, L) or (N, C, H, W) -- any dims >= 2 work, statistics are per channel
// (dim 1) over every other dim. running_mean / running_var: (C) or undefined. weight / bias: (C)
// or undefined (no scale / no shift).
//
// training = true: normalises with the batch mean and the BIASED batch variance. If the running
// statistics are defined they are updated in place, without recording a graph, with the
// UNBIASED batch variance:
//     running = (1 - f) * running + f * batch_stat
// where f = momentum, or, with momentum = std::nullopt, f = 1 / num_batches_tracked (a
// cumulative moving average; num_batches_tracked is then required). A defined
// num_batches_tracked (0-dim int64, what BatchNorm keeps) is incremented by one first, as
// PyTorch's BatchNorm does. An input with a single value per channel (N * L * H * W == 1) is an
// error, as in PyTorch; an empty input gives an empty output and leaves the statistics alone.
//
// training = false: normalises with running_mean and running_var (both required).
//
// The result has input's shape and dtype.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false,
                  std::optional<double> momentum = 0.1, double eps = 1e-5,
                  const Tensor& num_batches_tracked = {});

// input: (*, normalized_shape...), i.e. its trailing dims equal normalized_shape. Statistics
// over those trailing dims. weight / bias: normalized_shape, or undefined.
Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);

// input: (N, C, *) with C divisible by num_groups. Channels are split into num_groups
// consecutive groups; statistics per sample and group. weight / bias: (C), or undefined.
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);

}  // namespace functional

// The state shared by BatchNorm1d and BatchNorm2d (PyTorch's _BatchNorm):
//   parameters  weight (C) = 1, bias (C) = 0                      when affine
//   buffers     running_mean (C) = 0, running_var (C) = 1,
//               num_batches_tracked () int64 = 0                   when track_running_stats
// In training mode forward() normalises with the batch statistics and updates the running ones
// (momentum, or a cumulative average when momentum is std::nullopt); in eval mode it uses the
// running statistics -- or the batch statistics when track_running_stats is false.
class BatchNorm : public Module {
 public:
  Tensor forward(const Tensor& input) override;
  // "3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True", as PyTorch prints it.
  std::string extra_repr() const override;
  // running_mean = 0, running_var = 1, num_batches_tracked = 0.
  void reset_running_stats();
  // reset_running_stats(), weight = 1, bias = 0.
  void reset_parameters();

  int64_t num_features;
  double eps;
  std::optional<double> momentum;
  bool affine;
  bool track_running_stats;
  Tensor weight, bias;                                    // undefined without affine
  Tensor running_mean, running_var, num_batches_tracked;  // undefined without tracking

 protected:
  BatchNorm(const std::string& type_name, int64_t num_features, double eps,
            std::optional<double> momentum, bool affine, bool track_running_stats, DType dtype);
  // Throws when input has the wrong number of dims for this class.
  virtual void check_input_dim(const Tensor& input) const = 0;
};

// Input (N, C) or (N, C, L).
class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5,
                       std::optional<double> momentum = 0.1, bool affine = true,
                       bool track_running_stats = true, DType dtype = kFloat32);

 protected:
  void check_input_dim(const Tensor& input) const override;
};

// Input (N, C, H, W).
class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5,
                       std::optional<double> momentum = 0.1, bool affine = true,
                       bool track_running_stats = true, DType dtype = kFloat32);

 protected:
  void check_input_dim(const Tensor& input) const override;
};

// Normalises over the trailing dims normalized_shape. With elementwise_affine, parameters
// weight = 1 and bias = 0 of shape normalized_shape.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true,
                     DType dtype = kFloat32);
  Tensor forward(const Tensor& input) override;
  // "(4,), eps=1e-05, elementwise_affine=True"
  std::string extra_repr() const override;
  void reset_parameters();

  Shape normalized_shape;
  double eps;
  bool elementwise_affine;
  Tensor weight, bias;
};

// Normalises (N, C, *) over groups of C / num_groups channels. With affine, per-channel
// parameters weight = 1 and bias = 0 of shape (num_channels). num_channels must be divisible by
// num_groups.
class GroupNorm : public Module {
 public:
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true,
            DType dtype = kFloat32);
  Tensor forward(const Tensor& input) override;
  // "2, 6, eps=1e-05, affine=True"
  std::string extra_repr() const override;
  void reset_parameters();

  int64_t num_groups;
  int64_t num_channels;
  double eps;
  bool affine;
  Tensor weight, bias;
};

}  // namespace ember::nn
