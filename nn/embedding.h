#pragma once
// Embedding: a lookup table of num_embeddings vectors of embedding_dim (PyTorch's
// torch.nn.Embedding and F.embedding).
//
//   auto emb = std::make_shared<nn::Embedding>(10, 3, /*padding_idx=*/0);
//   Tensor y = (*emb)(tensor<int64_t>({1, 0, 4}));   // (3, 3): rows 1, 0 and 4 of emb->weight
//
// indices: int64 (or int32) of any shape (*), every value in [0, num_embeddings);
// weight: (num_embeddings, embedding_dim); output: (*, embedding_dim).
// padding_idx (negative counts from the end) names a row that gets no gradient: its output
// vectors are whatever the row holds (Embedding initialises it to zeros), and backward leaves
// it alone. Only padding_idx of PyTorch's options is supported (no max_norm,
// scale_grad_by_freq or sparse gradients).

#include <cstdint>
#include <optional>

#include "core/tensor.h"
#include "nn/module.h"

namespace ember::nn {

namespace functional {
// PyTorch's argument order: indices first (ember::embedding takes the weight first).
Tensor embedding(const Tensor& input, const Tensor& weight,
                 std::optional<int64_t> padding_idx = std::nullopt);
}  // namespace functional

class Embedding : public Module {
 public:
  // weight ~ N(0, 1) from the default generator, with the padding row zeroed (PyTorch's
  // reset_parameters). Parameter "weight": (num_embeddings, embedding_dim).
  Embedding(int64_t num_embeddings, int64_t embedding_dim,
            std::optional<int64_t> padding_idx = std::nullopt, DType dtype = kFloat32);
  Tensor forward(const Tensor& input) override;
  // "10, 3" or "10, 3, padding_idx=0"
  std::string extra_repr() const override;

  int64_t num_embeddings() const { return num_embeddings_; }
  int64_t embedding_dim() const { return embedding_dim_; }
  // Wrapped into [0, num_embeddings) when given negative.
  std::optional<int64_t> padding_idx() const { return padding_idx_; }

  Tensor weight;

 private:
  int64_t num_embeddings_, embedding_dim_;
  std::optional<int64_t> padding_idx_;
};

}  // namespace ember::nn
