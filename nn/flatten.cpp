#include "nn/flatten.h"

#include "autograd/ops/view.h"

namespace ember::nn {

Flatten::Flatten(int64_t start_dim, int64_t end_dim)
    : Module("Flatten"), start_dim(start_dim), end_dim(end_dim) {}

Tensor Flatten::forward(const Tensor& input) { return ember::flatten(input, start_dim, end_dim); }

std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

Unflatten::Unflatten(int64_t dim, Shape unflattened_size)
    : Module("Unflatten"), dim(dim), unflattened_size(std::move(unflattened_size)) {
  EMBER_CHECK(!this->unflattened_size.empty(), "Unflatten: unflattened_size must not be empty");
}

Tensor Unflatten::forward(const Tensor& input) {
  return ember::unflatten(input, dim, unflattened_size);
}

std::string Unflatten::extra_repr() const {
  // As Python prints the tuple: "(2, 5)", "(5,)".
  std::string s = "dim=" + std::to_string(dim) + ", unflattened_size=(";
  for (size_t i = 0; i < unflattened_size.size(); ++i)
    s += (i ? ", " : "") + std::to_string(unflattened_size[i]);
  return s + (unflattened_size.size() == 1 ? ",)" : ")");
}

}  // namespace ember::nn
