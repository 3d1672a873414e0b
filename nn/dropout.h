#pragma once
// Dropout and Dropout2d (PyTorch's torch.nn.Dropout / Dropout2d and F.dropout / F.dropout2d).
//
// In training, dropout zeroes each element with probability p and scales the kept ones by
// 1 / (1 - p), so the expected output is the input; dropout2d does the same to whole channels
// (every (n, c) plane of an (N, C, H, W) input, every c plane of a (C, H, W) one). Outside
// training (training = false, or a module after eval()) both are the identity and return the
// input itself, as do p = 0 and an empty input; p = 1 gives zeros. p outside [0, 1] is an error.
// Floating inputs only; the output has the input's shape and dtype.
//
// The mask is drawn with bernoulli_(1 - p) from `gen` (nullptr: the default generator), one
// draw per element (dropout) or per channel (dropout2d) in row-major order -- Note [Philox
// streams] in core/generator.h -- so a seeded Generator reproduces the same mask. The result is
// input * mask / (1 - p): the gradient is grad * mask / (1 - p), double backward included.
// Registered as ops "dropout" and "dropout2d" (family "nn_activation").
//
//   ember::Generator g(0);
//   Tensor y = F::dropout(x, 0.1, /*training=*/true, &g);
//   auto drop = std::make_shared<nn::Dropout>(0.1);  // drop->eval() makes it the identity

#include "core/generator.h"
#include "core/tensor.h"
#include "nn/module.h"

namespace ember::nn {

namespace functional {

// inplace: multiplies the input by the mask in place and returns it.
Tensor dropout(const Tensor& input, double p = 0.5, bool training = true, Generator* gen = nullptr,
               bool inplace = false);
// input: (N, C, H, W) or (C, H, W).
Tensor dropout2d(const Tensor& input, double p = 0.5, bool training = true,
                 Generator* gen = nullptr, bool inplace = false);

}  // namespace functional

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, bool inplace = false);
  // Draws from the default generator (PyTorch's modules do too).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;  // "p=0.5, inplace=False"
  double p() const { return p_; }

 private:
  double p_;
  bool inplace_;
};

class Dropout2d : public Module {
 public:
  explicit Dropout2d(double p = 0.5, bool inplace = false);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;  // "p=0.5, inplace=False"
  double p() const { return p_; }

 private:
  double p_;
  bool inplace_;
};

}  // namespace ember::nn
