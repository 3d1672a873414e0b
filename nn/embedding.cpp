#include "nn/embedding.h"

#include "autograd/grad_mode.h"
#include "autograd/ops/index.h"
#include "core/ops/factory.h"
#include "nn/init.h"

namespace ember::nn {

Tensor functional::embedding(const Tensor& input, const Tensor& weight,
                             std::optional<int64_t> padding_idx) {
  return ember::embedding(weight, input, padding_idx);
}

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim,
                     std::optional<int64_t> padding_idx, DType dtype)
    : Module("Embedding"), num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {
  EMBER_CHECK(num_embeddings >= 0 && embedding_dim >= 0,
              "Embedding: num_embeddings and embedding_dim must be non-negative, got ",
              num_embeddings, " and ", embedding_dim);
  EMBER_CHECK(is_floating(dtype), "Embedding: expected a floating-point dtype, got ",
              dtype_name(dtype));
  if (padding_idx) {
    EMBER_CHECK(*padding_idx >= -num_embeddings && *padding_idx < num_embeddings,
                "Embedding: padding_idx must be within num_embeddings, got padding_idx=",
                *padding_idx, " for num_embeddings=", num_embeddings);
    padding_idx_ = *padding_idx < 0 ? *padding_idx + num_embeddings : *padding_idx;
  }
  weight = register_parameter("weight", empty({num_embeddings, embedding_dim}, dtype));
  init::normal_(weight);
  if (padding_idx_) {
    autograd::NoGradGuard no_grad;
    weight.select(0, *padding_idx_).fill_(0);
  }
}

Tensor Embedding::forward(const Tensor& input) {
  return functional::embedding(input, weight, padding_idx_);
}

std::string Embedding::extra_repr() const {
  std::string s = std::to_string(num_embeddings_) + ", " + std::to_string(embedding_dim_);
  if (padding_idx_) s += ", padding_idx=" + std::to_string(*padding_idx_);
  return s;
}

}  // namespace ember::nn
