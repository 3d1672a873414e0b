#pragma once
// Reshaping layers (PyTorch's nn.Flatten, nn.Unflatten) and their functional forms: views of
// the input (ember::flatten / unflatten) where the layout allows, copies otherwise.
//
//   auto flat = std::make_shared<nn::Flatten>();             // (N, C, H, W) -> (N, C * H * W)
//   auto unflat = std::make_shared<nn::Unflatten>(1, Shape{C, H, W});   // and back

#include <string>

#include "autograd/ops/view.h"
#include "core/tensor.h"
#include "nn/module.h"

namespace ember::nn::functional {

// flatten(input, start_dim = 0, end_dim = -1) merges dims start_dim..end_dim (negative counts
// from the end); unflatten(input, dim, sizes) splits dim into sizes (one may be -1). They ARE
// ember::flatten / ember::unflatten (core/ops/view.h): using-declarations rather than wrappers,
// so that an unqualified call inside this namespace is not ambiguous.
using ember::flatten;
using ember::unflatten;

}  // namespace ember::nn::functional

namespace ember::nn {

// Flattens dims start_dim..end_dim; the defaults keep the batch dim.
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1);
  Tensor forward(const Tensor& input) override;
  // "start_dim=1, end_dim=-1"
  std::string extra_repr() const override;

  const int64_t start_dim, end_dim;
};

// Splits dim into unflattened_size.
class Unflatten : public Module {
 public:
  Unflatten(int64_t dim, Shape unflattened_size);
  Tensor forward(const Tensor& input) override;
  // "dim=1, unflattened_size=(2, 5)"
  std::string extra_repr() const override;

  const int64_t dim;
  const Shape unflattened_size;
};

}  // namespace ember::nn
