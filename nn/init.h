#pragma once
// Parameter initialisation (PyTorch's torch.nn.init). Each function fills `t` in place under
// no_grad (so it works on parameters, which are leaves that require grad), draws from `gen`
// (nullptr: the default generator of t's device) and returns t.
//
// fan_in / fan_out of a weight of shape (out, in, k1, k2, ...) are in * k1 * k2 * ... and
// out * k1 * k2 * ...; tensors with fewer than 2 dims have no fans (an error for the fan-based
// initialisers).

#include <string>
#include <utility>

#include "core/generator.h"
#include "core/tensor.h"

namespace ember::nn::init {

// The recommended gain for a nonlinearity: "linear", "conv1d", "conv2d", "sigmoid" -> 1,
// "tanh" -> 5/3, "relu" -> sqrt(2), "leaky_relu" -> sqrt(2 / (1 + slope^2)) (slope `param`,
// default 0.01), "selu" -> 3/4. Unknown names are an error.
double calculate_gain(const std::string& nonlinearity, double param = 0.01);
// {fan_in, fan_out}.
std::pair<int64_t, int64_t> fans(const Tensor& t);

const Tensor& uniform_(const Tensor& t, double a = 0.0, double b = 1.0, Generator* gen = nullptr);
const Tensor& normal_(const Tensor& t, double mean = 0.0, double std = 1.0,
                      Generator* gen = nullptr);
// Normal(mean, std) restricted to [a, b] (values outside are drawn again).
const Tensor& trunc_normal_(const Tensor& t, double mean = 0.0, double std = 1.0, double a = -2.0,
                            double b = 2.0, Generator* gen = nullptr);
const Tensor& constant_(const Tensor& t, double value);
const Tensor& zeros_(const Tensor& t);
const Tensor& ones_(const Tensor& t);

// Glorot: std = gain * sqrt(2 / (fan_in + fan_out)); uniform bound sqrt(3) * std.
const Tensor& xavier_uniform_(const Tensor& t, double gain = 1.0, Generator* gen = nullptr);
const Tensor& xavier_normal_(const Tensor& t, double gain = 1.0, Generator* gen = nullptr);

// He: std = calculate_gain(nonlinearity, a) / sqrt(fan), fan = fan_in or fan_out by `mode`;
// uniform bound sqrt(3) * std. PyTorch's Linear and Conv use kaiming_uniform_(w, sqrt(5)).
const Tensor& kaiming_uniform_(const Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                               const std::string& nonlinearity = "leaky_relu",
                               Generator* gen = nullptr);
const Tensor& kaiming_normal_(const Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                              const std::string& nonlinearity = "leaky_relu",
                              Generator* gen = nullptr);

// A (semi-)orthogonal matrix, scaled by `gain`: t viewed as (size(0), numel / size(0)) has
// orthonormal rows or columns, whichever are fewer (QR of a Gaussian matrix, signs fixed so the
// result is uniformly distributed).
const Tensor& orthogonal_(const Tensor& t, double gain = 1.0, Generator* gen = nullptr);

}  // namespace ember::nn::init
