#pragma once
// Attention: scaled dot-product attention and multi-head attention (PyTorch's
// F.scaled_dot_product_attention, F.multi_head_attention_forward and nn.MultiheadAttention).
//
//   auto mha = std::make_shared<nn::MultiheadAttention>(/*embed_dim=*/8, /*num_heads=*/2);
//   auto [out, weights] = mha->forward(x, x, x);     // x (L, N, 8): self-attention
//   // out (L, N, 8), weights (N, L, L) averaged over the heads
//
// Both are composed of differentiable ops (matmul, softmax, linear, cat, ...), so backward and
// double backward come from the graph.
//
// Note [Attention masks]
// Two conventions meet here, each as PyTorch has it:
// - scaled_dot_product_attention (PyTorch 2's): a bool attn_mask is true where a query MAY
//   attend to a key; a floating mask is ADDED to the scores.
// - multi_head_attention_forward / MultiheadAttention (PyTorch 1.13's): a bool attn_mask or
//   key_padding_mask is true where attention is NOT allowed (that key is masked out / padding);
//   a floating mask is added to the scores.
// A bool mask becomes an additive one (0 or -inf) and the masks are summed.
//
// Note [Fully masked rows]
// A query that may attend to no key at all (its whole row of scores is -inf) gets NaN, in its
// output and its attention weights -- PyTorch 1.13's behaviour (softmax over nothing). Mask so
// that every query sees at least one key.
//
// Ops registered (family "nn_attention"): scaled_dot_product_attention, multi_head_attention.

#include <cstdint>
#include <memory>
#include <optional>
#include <tuple>

#include "core/generator.h"
#include "core/tensor.h"
#include "nn/linear.h"
#include "nn/module.h"

namespace ember::nn {
namespace functional {

// softmax(query @ key^T / sqrt(E) + mask) @ value, dropout applied to the attention weights.
//   query (*, L, E), key (*, S, E), value (*, S, Ev) -> (*, L, Ev); the batch dims * broadcast.
//   attn_mask: undefined, bool (true = may attend) or floating (added), broadcastable to
//   (*, L, S) (Note [Attention masks]).
//   is_causal: query i attends to keys 0..i only (a lower-triangular (L, S) mask, top-left
//   aligned); attn_mask must then be undefined.
//   dropout_p: probability of zeroing an attention weight (the rest scaled by 1 / (1 - p)),
//   drawn from gen (nullptr: the default generator). Pass 0 in evaluation.
// Fully masked rows give NaN (Note [Fully masked rows]).
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = {}, double dropout_p = 0.0,
                                    bool is_causal = false, Generator* gen = nullptr);

// Multi-head attention, sequence first, with PyTorch 1.13's argument order (static_k and static_v
// are not supported). Returns {output, weights}; weights is undefined without need_weights.
//
//   query (L, N, E) or unbatched (L, E); key (S, N, Ek), value (S, N, Ev) (or unbatched).
//   Projections: in_proj_weight (3E, E) and in_proj_bias (3E) (q, k, v stacked in that order),
//   or, with use_separate_proj_weight, q_proj_weight (E, E), k_proj_weight (E, Ek),
//   v_proj_weight (E, Ev) (in_proj_bias still holds the three biases). Without separate
//   weights Ek = Ev = E. The biases may be undefined.
//   bias_k, bias_v: (1, 1, E) or undefined: appended to the projected keys / values (one more
//   source position). add_zero_attn appends a zero key and value per head as well.
//   out_proj_weight (E, E), out_proj_bias (E) or undefined.
//   key_padding_mask: (N, S) (unbatched: (S)), bool (true = ignore this key) or floating
//   (added). attn_mask: (L, S) or (N * num_heads, L, S), bool (true = not allowed) or
//   floating (added) -- Note [Attention masks].
//   dropout_p applies to the attention weights when training.
//   Output (L, N, E) (unbatched (L, E)); weights (N, L, S) averaged over the heads, or
//   (N, num_heads, L, S) without average_attn_weights (unbatched: no N), where S counts the
//   appended bias / zero positions.
std::tuple<Tensor, Tensor> multi_head_attention_forward(
    const Tensor& query, const Tensor& key, const Tensor& value, int64_t embed_dim_to_check,
    int64_t num_heads, const Tensor& in_proj_weight, const Tensor& in_proj_bias,
    const Tensor& bias_k, const Tensor& bias_v, bool add_zero_attn, double dropout_p,
    const Tensor& out_proj_weight, const Tensor& out_proj_bias, bool training = true,
    const Tensor& key_padding_mask = {}, bool need_weights = true, const Tensor& attn_mask = {},
    bool use_separate_proj_weight = false, const Tensor& q_proj_weight = {},
    const Tensor& k_proj_weight = {}, const Tensor& v_proj_weight = {},
    bool average_attn_weights = true, Generator* gen = nullptr);

}  // namespace functional

// Multi-head attention (PyTorch 1.13's nn.MultiheadAttention), parameters under PyTorch's names:
//   in_proj_weight (3E, E)                                    when kdim == vdim == E
//   q_proj_weight (E, E), k_proj_weight (E, kdim), v_proj_weight (E, vdim)   otherwise
//   in_proj_bias (3E)                                         when bias
//   bias_k, bias_v (1, 1, E)                                  when add_bias_kv
//   out_proj.weight (E, E), out_proj.bias (E)                 child "out_proj", a Linear
// Initialised as PyTorch: out_proj first gets Linear's default init, then the projection weights
// xavier_uniform_, in_proj_bias and out_proj.bias zero, bias_k / bias_v xavier_normal_.
// out_proj is, as in PyTorch, a NonDynamicallyQuantizableLinear: a Linear under another name
// (PyTorch uses the name to keep quantization away from it), so the tree prints the same.
class NonDynamicallyQuantizableLinear : public Linear {
 public:
  NonDynamicallyQuantizableLinear(int64_t in_features, int64_t out_features, bool bias = true,
                                  DType dtype = kFloat32)
      : Linear("NonDynamicallyQuantizableLinear", in_features, out_features, bias, dtype) {}
};

class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout = 0.0, bool bias = true,
                     bool add_bias_kv = false, bool add_zero_attn = false,
                     std::optional<int64_t> kdim = std::nullopt,
                     std::optional<int64_t> vdim = std::nullopt, bool batch_first = false,
                     DType dtype = kFloat32);

  // query (L, N, E) / key (S, N, kdim) / value (S, N, vdim), or (N, L, E) ... with batch_first,
  // or unbatched (L, E) ... Masks and weights as multi_head_attention_forward. Returns
  // {output (like query), weights (or undefined without need_weights)}. Dropout (from gen, or
  // the default generator) only in training mode.
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = {}, bool need_weights = true,
                                     const Tensor& attn_mask = {}, bool average_attn_weights = true,
                                     Generator* gen = nullptr);
  using Module::forward;  // the one-tensor form: an error naming the module
  void reset_parameters();

  const int64_t embed_dim, kdim, vdim, num_heads, head_dim;
  const double dropout;
  const bool batch_first, add_zero_attn;
  Tensor in_proj_weight;                               // undefined with separate weights
  Tensor q_proj_weight, k_proj_weight, v_proj_weight;  // defined with separate weights
  Tensor in_proj_bias;                                 // undefined without bias
  Tensor bias_k, bias_v;                               // defined with add_bias_kv
  std::shared_ptr<Linear> out_proj;

 private:
  bool qkv_same_embed_dim() const { return kdim == embed_dim && vdim == embed_dim; }
};

}  // namespace ember::nn
