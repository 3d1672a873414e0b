#include "nn/attention.h"

#include <cmath>
#include <limits>

#include "autograd/grad_mode.h"
#include "autograd/ops/binary.h"
#include "autograd/ops/linalg.h"
#include "autograd/ops/random.h"
#include "autograd/ops/shape.h"
#include "autograd/ops/softmax.h"
#include "autograd/ops/unary.h"
#include "core/op_registry.h"
#include "core/ops/factory.h"
#include "nn/init.h"

namespace ember::nn {
namespace {

const char* const kAttentionOps[] = {"scaled_dot_product_attention", "multi_head_attention"};
static_assert(sizeof(kAttentionOps) / sizeof(kAttentionOps[0]) == 2);
const OpFamilyRegistrar registrar("nn_attention", kAttentionOps);

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// A bool mask as an additive one of dtype dt: -inf where `blocked` is true, 0 elsewhere.
Tensor additive_mask(const Tensor& blocked, DType dt) {
  return ember::zeros(blocked.sizes(), TensorOptions(dt).device(blocked.device()))
      .masked_fill_(blocked, kNegInf);
}

// A mask argument (bool or floating) as an additive mask of dtype dt. `true_blocks` says what a
// true bool value means (Note [Attention masks]).
Tensor as_additive(const Tensor& mask, DType dt, bool true_blocks, const char* op,
                   const char* what) {
  if (!mask.defined()) return mask;
  if (mask.dtype() == kBool) return additive_mask(true_blocks ? mask : mask.logical_not(), dt);
  EMBER_CHECK(mask.is_floating_point(), op, ": ", what, " must be bool or floating-point, got ",
              dtype_name(mask.dtype()));
  return mask.dtype() == dt ? mask : mask.to(dt);
}

// Zeroes each element of p with probability p_drop and scales the rest by 1 / (1 - p_drop).
Tensor attention_dropout(const Tensor& p, double p_drop, Generator* gen, const char* op) {
  EMBER_CHECK(p_drop >= 0.0 && p_drop <= 1.0, op, ": dropout probability must be in [0, 1], got ",
              p_drop);
  if (p_drop == 0.0) return p;
  if (p_drop == 1.0) return p * 0.0;
  Tensor keep = empty(p.sizes(), p.options());
  keep.bernoulli_(1.0 - p_drop, gen);
  keep.mul_(1.0 / (1.0 - p_drop));
  return p * keep;
}

// The shared core: {softmax(q / sqrt(E) @ k^T + mask) (dropped out) @ v, the weights}.
// q (*, L, E), k (*, S, E), v (*, S, Ev); mask additive (or undefined), broadcastable to
// (*, L, S). Dividing q (not the scores) by sqrt(E) is what PyTorch 1.13 does.
std::tuple<Tensor, Tensor> attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                     const Tensor& mask, double dropout_p, Generator* gen,
                                     const char* op) {
  const double scale = std::sqrt(static_cast<double>(q.size(-1)));
  Tensor scores = (q / scale).matmul(k.transpose(-2, -1));
  if (mask.defined()) scores = scores + mask;
  Tensor weights = attention_dropout(scores.softmax(-1), dropout_p, gen, op);
  return {weights.matmul(v), weights};
}

}  // namespace

namespace functional {

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    Generator* gen) {
  const char* op = "scaled_dot_product_attention";
  EMBER_CHECK(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2, op,
              ": query, key and value need at least 2 dims (*, L, E), got ", query.sizes(), ", ",
              key.sizes(), ", ", value.sizes());
  EMBER_CHECK(
      query.is_floating_point() && key.dtype() == query.dtype() && value.dtype() == query.dtype(),
      op, ": query, key and value must have the same floating dtype, got ",
      dtype_name(query.dtype()), ", ", dtype_name(key.dtype()), ", ", dtype_name(value.dtype()));
  EMBER_CHECK(query.size(-1) == key.size(-1), op, ": query ", query.sizes(), " and key ",
              key.sizes(), " must have the same embedding size (last dim)");
  EMBER_CHECK(key.size(-2) == value.size(-2), op, ": key ", key.sizes(), " and value ",
              value.sizes(), " must have the same sequence length (dim -2)");
  const int64_t L = query.size(-2), S = key.size(-2);
  Tensor mask = as_additive(attn_mask, query.dtype(), /*true_blocks=*/false, op, "attn_mask");
  if (is_causal) {
    EMBER_CHECK(!attn_mask.defined(), op,
                ": attn_mask must be undefined when is_causal is true (the causal mask is built)");
    Tensor rows = ember::arange(L, TensorOptions(kInt64).device(query.device())).unsqueeze(1);
    Tensor cols = ember::arange(S, TensorOptions(kInt64).device(query.device())).unsqueeze(0);
    mask = additive_mask(cols > rows, query.dtype());  // key j after query i is blocked
  }
  if (mask.defined()) {
    // The scores are (*, L, S), * the broadcast of query's and key's batch dims.
    Shape scores = broadcast_shapes(Shape(query.sizes().begin(), query.sizes().end() - 2),
                                    Shape(key.sizes().begin(), key.sizes().end() - 2), op);
    scores.push_back(L);
    scores.push_back(S);
    bool fits = mask.dim() <= static_cast<int64_t>(scores.size());
    for (int64_t d = 1; fits && d <= mask.dim(); ++d)
      fits = mask.size(-d) == 1 || mask.size(-d) == scores[scores.size() - static_cast<size_t>(d)];
    EMBER_CHECK(fits, op, ": attn_mask of shape ", mask.sizes(),
                " does not broadcast to the scores' shape ", scores);
  }
  return std::get<0>(attention(query, key, value, mask, dropout_p, gen, op));
}

std::tuple<Tensor, Tensor> multi_head_attention_forward(
    const Tensor& query_in, const Tensor& key_in, const Tensor& value_in,
    int64_t embed_dim_to_check, int64_t num_heads, const Tensor& in_proj_weight,
    const Tensor& in_proj_bias, const Tensor& bias_k, const Tensor& bias_v, bool add_zero_attn,
    double dropout_p, const Tensor& out_proj_weight, const Tensor& out_proj_bias, bool training,
    const Tensor& key_padding_mask_in, bool need_weights, const Tensor& attn_mask_in,
    bool use_separate_proj_weight, const Tensor& q_proj_weight, const Tensor& k_proj_weight,
    const Tensor& v_proj_weight, bool average_attn_weights, Generator* gen) {
  const char* op = "multi_head_attention";
  // ---- shapes: batched (L, N, E) or unbatched (L, E), made batched with N = 1 --------------
  const bool batched = query_in.dim() == 3;
  EMBER_CHECK(query_in.dim() == 2 || query_in.dim() == 3, op,
              ": query should be unbatched 2-D (L, E) or batched 3-D (L, N, E), got shape ",
              query_in.sizes());
  EMBER_CHECK(key_in.dim() == query_in.dim() && value_in.dim() == query_in.dim(), op, ": for ",
              query_in.dim(), "-D query ", query_in.sizes(), ", expected ", query_in.dim(),
              "-D key and value, got ", key_in.sizes(), " and ", value_in.sizes());
  EMBER_CHECK(query_in.is_floating_point() && key_in.dtype() == query_in.dtype() &&
                  value_in.dtype() == query_in.dtype(),
              op, ": query, key and value must have the same floating dtype, got ",
              dtype_name(query_in.dtype()), ", ", dtype_name(key_in.dtype()), ", ",
              dtype_name(value_in.dtype()));
  if (key_padding_mask_in.defined())
    EMBER_CHECK(key_padding_mask_in.dim() == (batched ? 2 : 1), op, ": for ", query_in.dim(),
                "-D query, expected key_padding_mask to be ", batched ? "2-D (N, S)" : "1-D (S)",
                ", got shape ", key_padding_mask_in.sizes());
  Tensor query = batched ? query_in : query_in.unsqueeze(1);
  Tensor key = batched ? key_in : key_in.unsqueeze(1);
  Tensor value = batched ? value_in : value_in.unsqueeze(1);
  Tensor key_padding_mask = key_padding_mask_in.defined() && !batched
                                ? key_padding_mask_in.unsqueeze(0)
                                : key_padding_mask_in;
  const int64_t L = query.size(0), N = query.size(1), E = query.size(2);
  int64_t S = key.size(0);
  EMBER_CHECK(E == embed_dim_to_check, op, ": was expecting embedding dimension of ",
              embed_dim_to_check, ", but got query of shape ", query_in.sizes());
  EMBER_CHECK(num_heads > 0 && E % num_heads == 0, op, ": embed_dim ", E,
              " not divisible by num_heads ", num_heads);
  const int64_t head_dim = E / num_heads;
  EMBER_CHECK(key.size(1) == N && value.size(1) == N && value.size(0) == S, op, ": key ",
              key_in.sizes(), " and value ", value_in.sizes(),
              " must have the sequence length and batch size of each other and batch size of "
              "query ",
              query_in.sizes());

  // ---- in-projection ---------------------------------------------------------------------------
  Tensor w_q, w_k, w_v, b_q, b_k, b_v;
  if (use_separate_proj_weight) {
    EMBER_CHECK(q_proj_weight.defined() && k_proj_weight.defined() && v_proj_weight.defined(), op,
                ": use_separate_proj_weight needs q_proj_weight, k_proj_weight and v_proj_weight");
    w_q = q_proj_weight, w_k = k_proj_weight, w_v = v_proj_weight;
    EMBER_CHECK(w_q.sizes() == Shape({E, E}) && w_k.sizes() == Shape({E, key.size(2)}) &&
                    w_v.sizes() == Shape({E, value.size(2)}),
                op, ": expected q/k/v_proj_weight of shapes ", Shape({E, E}), ", ",
                Shape({E, key.size(2)}), ", ", Shape({E, value.size(2)}), ", got ", w_q.sizes(),
                ", ", w_k.sizes(), ", ", w_v.sizes());
  } else {
    EMBER_CHECK(in_proj_weight.defined(), op,
                ": in_proj_weight is required without use_separate_proj_weight");
    EMBER_CHECK(in_proj_weight.sizes() == Shape({3 * E, E}), op, ": expected in_proj_weight of ",
                "shape ", Shape({3 * E, E}), ", got ", in_proj_weight.sizes());
    EMBER_CHECK(key.sizes() == value.sizes() && key.size(2) == E, op, ": key ", key_in.sizes(),
                " and value ", value_in.sizes(),
                " must have the query's shape but for the sequence length (use separate "
                "projection weights for other embedding sizes)");
    std::vector<Tensor> w = in_proj_weight.chunk(3, 0);
    w_q = w[0], w_k = w[1], w_v = w[2];
  }
  if (in_proj_bias.defined()) {
    EMBER_CHECK(in_proj_bias.sizes() == Shape({3 * E}), op, ": expected in_proj_bias of shape ",
                Shape({3 * E}), ", got ", in_proj_bias.sizes());
    std::vector<Tensor> b = in_proj_bias.chunk(3, 0);
    b_q = b[0], b_k = b[1], b_v = b[2];
  }
  EMBER_CHECK(out_proj_weight.defined() && out_proj_weight.sizes() == Shape({E, E}), op,
              ": expected out_proj_weight of shape ", Shape({E, E}), ", got ",
              out_proj_weight.defined() ? out_proj_weight.sizes() : Shape{});
  Tensor q = ember::linear(query, w_q, b_q);  // (L, N, E)
  Tensor k = ember::linear(key, w_k, b_k);    // (S, N, E)
  Tensor v = ember::linear(value, w_v, b_v);  // (S, N, E)

  // ---- masks, as additive float masks: attn (1 or N*H, L, S), padding (N, S) -----------------
  const DType dt = query.dtype();
  Tensor attn_mask = as_additive(attn_mask_in, dt, /*true_blocks=*/true, op, "attn_mask");
  if (attn_mask.defined()) {
    if (attn_mask.dim() == 2) {
      EMBER_CHECK(attn_mask.sizes() == Shape({L, S}), op, ": The shape of the 2D attn_mask is ",
                  attn_mask.sizes(), ", but should be ", Shape({L, S}));
      attn_mask = attn_mask.unsqueeze(0);
    } else {
      EMBER_CHECK(attn_mask.dim() == 3 && attn_mask.sizes() == Shape({N * num_heads, L, S}), op,
                  ": attn_mask should be (L, S) = ", Shape({L, S}),
                  " or (N * num_heads, L, S) = ", Shape({N * num_heads, L, S}), ", got ",
                  attn_mask.sizes());
    }
  }
  Tensor padding = as_additive(key_padding_mask, dt, /*true_blocks=*/true, op, "key_padding_mask");
  if (padding.defined())
    EMBER_CHECK(padding.sizes() == Shape({N, S}), op, ": expecting key_padding_mask shape of ",
                Shape({N, S}), ", but got ", key_padding_mask_in.sizes());
  // One more source position (bias_k / the zero key) is visible to every query: pad with 0.
  auto extend_masks = [&] {
    if (attn_mask.defined()) attn_mask = ember::pad(attn_mask, {0, 1});
    if (padding.defined()) padding = ember::pad(padding, {0, 1});
    ++S;
  };
  if (bias_k.defined() || bias_v.defined()) {
    EMBER_CHECK(bias_k.defined() && bias_v.defined() && bias_k.sizes() == Shape({1, 1, E}) &&
                    bias_v.sizes() == Shape({1, 1, E}),
                op, ": bias_k and bias_v must both be (1, 1, ", E, ")");
    k = ember::cat({k, bias_k.expand({1, N, E})}, 0);
    v = ember::cat({v, bias_v.expand({1, N, E})}, 0);
    extend_masks();
  }

  // ---- heads: (seq, N, E) -> (N * H, seq, head_dim) -------------------------------------------
  q = q.reshape({L, N * num_heads, head_dim}).transpose(0, 1);
  k = k.reshape({S, N * num_heads, head_dim}).transpose(0, 1);
  v = v.reshape({S, N * num_heads, head_dim}).transpose(0, 1);
  if (add_zero_attn) {
    Tensor zero = ember::zeros({N * num_heads, 1, head_dim}, TensorOptions(dt).device(q.device()));
    k = ember::cat({k, zero}, 1);
    v = ember::cat({v, zero}, 1);
    extend_masks();
  }
  Tensor mask = attn_mask;
  if (padding.defined()) {
    // (N, S) -> (N * H, 1, S): the same padding for every head of a sample.
    Tensor per_head =
        padding.view({N, 1, 1, S}).expand({N, num_heads, 1, S}).reshape({N * num_heads, 1, S});
    mask = mask.defined() ? mask + per_head : per_head;
  }

  // ---- attention and out-projection -------------------------------------------------------------
  auto [heads_out, weights] =
      attention(q, k, v, mask, training ? dropout_p : 0.0, gen, op);  // (N*H, L, hd), (N*H, L, S)
  Tensor out = heads_out.transpose(0, 1).reshape({L * N, E});
  out = ember::linear(out, out_proj_weight, out_proj_bias).view({L, N, E});
  if (!batched) out = out.squeeze(1);
  if (!need_weights) return {out, Tensor()};
  weights = weights.view({N, num_heads, L, S});
  if (average_attn_weights) weights = weights.sum({1}) / static_cast<double>(num_heads);
  if (!batched) weights = weights.squeeze(0);
  return {out, weights};
}

}  // namespace functional

// ---- MultiheadAttention ------------------------------------------------------------------------

MultiheadAttention::MultiheadAttention(int64_t embed_dim_, int64_t num_heads_, double dropout_,
                                       bool bias, bool add_bias_kv, bool add_zero_attn_,
                                       std::optional<int64_t> kdim_, std::optional<int64_t> vdim_,
                                       bool batch_first_, DType dtype)
    : Module("MultiheadAttention"),
      embed_dim(embed_dim_),
      kdim(kdim_.value_or(embed_dim_)),
      vdim(vdim_.value_or(embed_dim_)),
      num_heads(num_heads_),
      head_dim(num_heads_ > 0 ? embed_dim_ / num_heads_ : 0),
      dropout(dropout_),
      batch_first(batch_first_),
      add_zero_attn(add_zero_attn_) {
  EMBER_CHECK(embed_dim > 0 && num_heads > 0 && kdim > 0 && vdim > 0,
              "MultiheadAttention: embed_dim, num_heads, kdim and vdim must be positive, got ",
              embed_dim, ", ", num_heads, ", ", kdim, ", ", vdim);
  EMBER_CHECK(head_dim * num_heads == embed_dim, "MultiheadAttention: embed_dim ", embed_dim,
              " must be divisible by num_heads ", num_heads);
  EMBER_CHECK(dropout >= 0.0 && dropout <= 1.0,
              "MultiheadAttention: dropout must be in [0, 1], got ", dropout);
  EMBER_CHECK(is_floating(dtype), "MultiheadAttention: dtype must be floating-point, got ",
              dtype_name(dtype));
  // Registration order (and so state_dict order) as PyTorch's __init__.
  if (qkv_same_embed_dim()) {
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * embed_dim, embed_dim}, dtype));
  } else {
    q_proj_weight = register_parameter("q_proj_weight", empty({embed_dim, embed_dim}, dtype));
    k_proj_weight = register_parameter("k_proj_weight", empty({embed_dim, kdim}, dtype));
    v_proj_weight = register_parameter("v_proj_weight", empty({embed_dim, vdim}, dtype));
  }
  if (bias) in_proj_bias = register_parameter("in_proj_bias", empty({3 * embed_dim}, dtype));
  out_proj = register_module("out_proj", std::make_shared<NonDynamicallyQuantizableLinear>(
                                             embed_dim, embed_dim, bias, dtype));
  if (add_bias_kv) {
    bias_k = register_parameter("bias_k", empty({1, 1, embed_dim}, dtype));
    bias_v = register_parameter("bias_v", empty({1, 1, embed_dim}, dtype));
  }
  reset_parameters();
}

void MultiheadAttention::reset_parameters() {
  if (qkv_same_embed_dim()) {
    init::xavier_uniform_(in_proj_weight);
  } else {
    init::xavier_uniform_(q_proj_weight);
    init::xavier_uniform_(k_proj_weight);
    init::xavier_uniform_(v_proj_weight);
  }
  if (in_proj_bias.defined()) {
    init::zeros_(in_proj_bias);
    init::zeros_(out_proj->bias);
  }
  if (bias_k.defined()) init::xavier_normal_(bias_k);
  if (bias_v.defined()) init::xavier_normal_(bias_v);
}

std::tuple<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                                       const Tensor& value,
                                                       const Tensor& key_padding_mask,
                                                       bool need_weights, const Tensor& attn_mask,
                                                       bool average_attn_weights, Generator* gen) {
  const bool batched = query.dim() == 3;
  const bool transpose = batch_first && batched;  // (N, L, E) <-> (L, N, E)
  auto seq_first = [&](const Tensor& t) { return transpose ? t.transpose(0, 1) : t; };
  auto [out, weights] = functional::multi_head_attention_forward(
      seq_first(query), seq_first(key), seq_first(value), embed_dim, num_heads, in_proj_weight,
      in_proj_bias, bias_k, bias_v, add_zero_attn, dropout, out_proj->weight, out_proj->bias,
      is_training(), key_padding_mask, need_weights, attn_mask, !qkv_same_embed_dim(),
      q_proj_weight, k_proj_weight, v_proj_weight, average_attn_weights, gen);
  return {seq_first(out), weights};
}

}  // namespace ember::nn
