#pragma once
// The two Fashion-MNIST models of ember-train and of the benchmarks (bench/), header-only so
// that both build exactly the same network:
//
//   auto mlp = examples::make_mlp();   // input (N, 1, 28, 28) or (N, 784) -> logits (N, 10)
//   auto cnn = examples::make_cnn();   // input (N, 1, 28, 28)              -> logits (N, 10)
//
// MLP: Flatten - Linear(784, 256) - ReLU - Linear(256, 128) - ReLU - Linear(128, 10)
//      (235,146 parameters).
// CNN: Conv2d(1, 32, 3, padding 1) - ReLU - MaxPool2d(2)      (N, 32, 14, 14)
//      Conv2d(32, 64, 3, padding 1) - ReLU - MaxPool2d(2)     (N, 64, 7, 7)
//      Flatten - Linear(64 * 7 * 7, 128) - ReLU - Linear(128, 10)
//      (421,642 parameters).
// Both use PyTorch's default initialisation drawn from the default generator, so
// ember::manual_seed(s) before make_* fixes the initial weights. The MLP's Flatten is a view
// for contiguous input, so it also accepts already-flat (N, 784) batches.

#include <memory>
#include <string>

#include "core/error.h"
#include "nn/container.h"
#include "nn/functional.h"

namespace ember::examples {

inline std::shared_ptr<nn::Sequential> make_mlp() {
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(784, 256),
      std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(256, 128),
      std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(128, 10),
  });
}

inline std::shared_ptr<nn::Sequential> make_cnn() {
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(1, 32, 3, /*stride=*/1, /*padding=*/1),
      std::make_shared<nn::ReLU>(),
      std::make_shared<nn::MaxPool2d>(2),
      std::make_shared<nn::Conv2d>(32, 64, 3, /*stride=*/1, /*padding=*/1),
      std::make_shared<nn::ReLU>(),
      std::make_shared<nn::MaxPool2d>(2),
      std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(64 * 7 * 7, 128),
      std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(128, 10),
  });
}

// "mlp" or "cnn"; anything else is an error naming the choices.
inline std::shared_ptr<nn::Sequential> make_model(const std::string& name) {
  if (name == "mlp") return make_mlp();
  if (name == "cnn") return make_cnn();
  EMBER_ERROR("make_model: unknown model '", name, "' (expected mlp or cnn)");
}

}  // namespace ember::examples
