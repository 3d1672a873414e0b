#include "nn/init.h"

#include <cmath>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/ops/binary.h"
#include "autograd/ops/copy.h"
#include "autograd/ops/random.h"
#include "autograd/ops/view.h"
#include "core/ops/factory.h"

namespace ember::nn::init {

double calculate_gain(const std::string& nonlinearity, double param) {
  if (nonlinearity == "linear" || nonlinearity == "conv1d" || nonlinearity == "conv2d" ||
      nonlinearity == "conv3d" || nonlinearity == "sigmoid" || nonlinearity == "identity")
    return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1.0 + param * param));
  if (nonlinearity == "selu") return 0.75;
  EMBER_ERROR("calculate_gain: unsupported nonlinearity \"", nonlinearity,
              "\" (linear, conv1d, conv2d, conv3d, sigmoid, tanh, relu, leaky_relu, selu)");
}

std::pair<int64_t, int64_t> fans(const Tensor& t) {
  EMBER_CHECK(t.dim() >= 2,
              "init: fan in and fan out cannot be computed for a tensor with fewer "
              "than 2 dimensions (got shape ",
              shape_str(t.sizes()), ")");
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

const Tensor& uniform_(const Tensor& t, double a, double b, Generator* gen) {
  autograd::NoGradGuard no_grad;
  native::uniform_(t, a, b, gen);
  return t;
}

const Tensor& normal_(const Tensor& t, double mean, double std, Generator* gen) {
  autograd::NoGradGuard no_grad;
  native::normal_(t, mean, std, gen);
  return t;
}

const Tensor& trunc_normal_(const Tensor& t, double mean, double std, double a, double b,
                            Generator* gen) {
  EMBER_CHECK(a < b, "trunc_normal_: the interval [", a, ", ", b, "] is empty");
  autograd::NoGradGuard no_grad;
  // Draw in float64, then redraw the values outside [a, b] until none is left.
  Tensor values = empty(t.sizes(), kFloat64);
  native::normal_(values, mean, std, gen);
  double* p = values.data_ptr<double>();
  const int64_t n = values.numel();
  for (int round = 0;; ++round) {
    std::vector<int64_t> outside;
    for (int64_t i = 0; i < n; ++i)
      if (p[i] < a || p[i] > b) outside.push_back(i);
    if (outside.empty()) break;
    EMBER_CHECK(round < 10000, "trunc_normal_: [", a, ", ", b, "] holds too little of Normal(",
                mean, ", ", std, ") to sample from by rejection");
    Tensor redraw = empty({static_cast<int64_t>(outside.size())}, kFloat64);
    native::normal_(redraw, mean, std, gen);
    const double* r = redraw.data_ptr<double>();
    for (size_t k = 0; k < outside.size(); ++k) p[outside[k]] = r[k];
  }
  native::copy_(t, values);
  return t;
}

const Tensor& constant_(const Tensor& t, double value) {
  autograd::NoGradGuard no_grad;
  native::fill_(t, value);
  return t;
}
const Tensor& zeros_(const Tensor& t) { return constant_(t, 0.0); }
const Tensor& ones_(const Tensor& t) { return constant_(t, 1.0); }

const Tensor& xavier_uniform_(const Tensor& t, double gain, Generator* gen) {
  auto [fan_in, fan_out] = fans(t);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  const double bound = std::sqrt(3.0) * std;
  return init::uniform_(t, -bound, bound, gen);
}

const Tensor& xavier_normal_(const Tensor& t, double gain, Generator* gen) {
  auto [fan_in, fan_out] = fans(t);
  return init::normal_(t, 0.0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)), gen);
}

namespace {
double kaiming_std(const Tensor& t, double a, const std::string& mode,
                   const std::string& nonlinearity) {
  EMBER_CHECK(mode == "fan_in" || mode == "fan_out",
              "kaiming init: mode must be \"fan_in\" or "
              "\"fan_out\", got \"",
              mode, "\"");
  auto [fan_in, fan_out] = fans(t);
  const int64_t fan = mode == "fan_in" ? fan_in : fan_out;
  EMBER_CHECK(fan > 0, "kaiming init: the ", mode, " of a tensor of shape ", shape_str(t.sizes()),
              " is 0");
  return calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
}
}  // namespace

const Tensor& kaiming_uniform_(const Tensor& t, double a, const std::string& mode,
                               const std::string& nonlinearity, Generator* gen) {
  const double bound = std::sqrt(3.0) * kaiming_std(t, a, mode, nonlinearity);
  return init::uniform_(t, -bound, bound, gen);
}

const Tensor& kaiming_normal_(const Tensor& t, double a, const std::string& mode,
                              const std::string& nonlinearity, Generator* gen) {
  return init::normal_(t, 0.0, kaiming_std(t, a, mode, nonlinearity), gen);
}

const Tensor& orthogonal_(const Tensor& t, double gain, Generator* gen) {
  EMBER_CHECK(t.dim() >= 2,
              "orthogonal_: only tensors with 2 or more dimensions are supported "
              "(got shape ",
              shape_str(t.sizes()), ")");
  const int64_t rows = t.size(0), cols = t.numel() / std::max<int64_t>(rows, 1);
  // Work on a (m, k) Gaussian matrix with m >= k (the transpose when rows < cols), make its
  // columns orthonormal by modified Gram-Schmidt (the Q of its QR, with R's diagonal positive,
  // which is the sign fix), then transpose back if needed.
  const bool flip = rows < cols;
  const int64_t m = flip ? cols : rows, k = flip ? rows : cols;
  autograd::NoGradGuard no_grad;
  Tensor g = empty({m, k}, kFloat64);
  native::normal_(g, 0.0, 1.0, gen);
  double* a = g.data_ptr<double>();  // row-major: a[i * k + j]
  for (int64_t j = 0; j < k; ++j) {
    for (int64_t p = 0; p < j; ++p) {
      double dot = 0;
      for (int64_t i = 0; i < m; ++i) dot += a[i * k + p] * a[i * k + j];
      for (int64_t i = 0; i < m; ++i) a[i * k + j] -= dot * a[i * k + p];
    }
    double norm = 0;
    for (int64_t i = 0; i < m; ++i) norm += a[i * k + j] * a[i * k + j];
    norm = std::sqrt(norm);
    EMBER_CHECK(norm > 0, "orthogonal_: degenerate random matrix; try again");
    for (int64_t i = 0; i < m; ++i) a[i * k + j] /= norm;
  }
  Tensor q = flip ? native::contiguous(native::transpose(g, 0, 1)) : g;  // (rows, cols)
  native::copy_(t, native::reshape(native::mul(q, gain), t.sizes()));
  return t;
}

}  // namespace ember::nn::init
