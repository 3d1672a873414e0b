#pragma once
// Activations (PyTorch's torch.nn activation layers and their torch.nn.functional forms).
//
//   namespace F = ember::nn::functional;
//   Tensor h = F::leaky_relu(x, 0.2);                    // functional
//   auto act = std::make_shared<nn::GELU>("tanh");       // module: (*act)(x)
//
// Every function keeps the input's shape and dtype and works on floating inputs of any layout
// (relu takes integers too, as in PyTorch). Most wrap an existing differentiable op of core;
// leaky_relu is the one new op (registered as "leaky_relu", family "nn_activation"):
//   leaky_relu(x) = x where x > 0, negative_slope * x elsewhere
// so its gradient at 0 is negative_slope, as in PyTorch. The `inplace` forms overwrite the input
// (and bump its version), as PyTorch's do; a leaf that requires grad cannot be modified in place.
//
// The modules hold no parameters; their extra_repr() prints what PyTorch prints
// ("negative_slope=0.01", "approximate='none'", "dim=1").

#include <cstdint>
#include <optional>
#include <string>

#include "core/tensor.h"
#include "nn/module.h"

namespace ember::nn {

namespace functional {

Tensor relu(const Tensor& input, bool inplace = false);
Tensor leaky_relu(const Tensor& input, double negative_slope = 0.01, bool inplace = false);
// approximate: "none" (x * Phi(x), with the exact normal CDF) or "tanh" (the tanh formula).
Tensor gelu(const Tensor& input, const std::string& approximate = "none");
// x * sigmoid(x).
Tensor silu(const Tensor& input, bool inplace = false);
Tensor tanh(const Tensor& input);
Tensor sigmoid(const Tensor& input);
// Along `dim` (negative counts from the end). With `dtype`, the input is converted first (the
// way PyTorch's dtype argument avoids overflow in half precision).
Tensor softmax(const Tensor& input, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& input, int64_t dim, std::optional<DType> dtype = std::nullopt);

}  // namespace functional

class ReLU : public Module {
 public:
  explicit ReLU(bool inplace = false) : Module("ReLU"), inplace_(inplace) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;  // "inplace=True" or ""

 private:
  bool inplace_;
};

class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01, bool inplace = false)
      : Module("LeakyReLU"), negative_slope_(negative_slope), inplace_(inplace) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;  // "negative_slope=0.01[, inplace=True]"
  double negative_slope() const { return negative_slope_; }

 private:
  double negative_slope_;
  bool inplace_;
};

class GELU : public Module {
 public:
  // approximate: "none" or "tanh" (anything else is an error).
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;  // "approximate='none'"
  const std::string& approximate() const { return approximate_; }

 private:
  std::string approximate_;
};

class SiLU : public Module {
 public:
  explicit SiLU(bool inplace = false) : Module("SiLU"), inplace_(inplace) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;  // "inplace=True" or ""

 private:
  bool inplace_;
};

class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& input) override;
};

class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& input) override;
};

class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim) : Module("Softmax"), dim_(dim) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;  // "dim=1"
  int64_t dim() const { return dim_; }

 private:
  int64_t dim_;
};

class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(int64_t dim) : Module("LogSoftmax"), dim_(dim) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;  // "dim=1"
  int64_t dim() const { return dim_; }

 private:
  int64_t dim_;
};

}  // namespace ember::nn
