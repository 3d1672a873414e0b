// Attention (nn/attention.h): MultiheadAttention and scaled dot-product attention against
// PyTorch's golden values (tests/golden/gen_nn_attention.py) -- masks of both kinds, batch_first
// both ways, need_weights / average_attn_weights, kdim / vdim, add_bias_kv, add_zero_attn,
// fully masked rows -- plus what goldens cannot show: default initialisation, state_dict keys,
// printing, dropout and train/eval, and error messages.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <set>
#include <sstream>

#include "golden.h"
#include "test_util.h"

using namespace ember;
using Catch::Contains;
using ember::testing::check_close;
using ember::testing::check_param_grads;
using ember::testing::entries_under;
using ember::testing::Golden;
using ember::testing::golden;
using ember::testing::keys;
using ember::testing::values;
namespace F = ember::nn::functional;

namespace {

constexpr double kAtol = 1e-12, kRtol = 1e-10;

struct MhaCall {
  bool need_weights = true, average = true, self_attention = false;
};

// Loads case `name`'s parameters by PyTorch's state_dict keys (strict: every key the file holds
// for the module must be one of ember's and vice versa), runs the case and compares the output,
// the weights and every gradient.
void check_mha_case(nn::MultiheadAttention& mha, const std::string& name, MhaCall call) {
  const Golden& g = golden("nn_attention");
  INFO("case " << name);
  const std::string prefix = name + ".";
  // The file's parameter entries: "<case>.<key>" where <key> is not an input / output name.
  const std::set<std::string> data{"query",        "key",        "value",       "key_padding_mask",
                                   "attn_mask",    "output",     "grad_output", "weights",
                                   "grad_weights", "grad_query", "grad_key",    "grad_value"};
  nn::StateDict params = entries_under(g, prefix, [&](const std::string& key) {
    return data.count(key) == 0 && key.rfind("grad.", 0) != 0;
  });
  REQUIRE(!params.empty());
  REQUIRE_NOTHROW(mha.load_state_dict(params, /*strict=*/true));
  CHECK(keys(mha.state_dict()) == keys(params));  // PyTorch's keys, in PyTorch's order

  Tensor query = g[prefix + "query"].requires_grad_();
  Tensor key = call.self_attention ? query : g[prefix + "key"].requires_grad_();
  Tensor value = call.self_attention ? query : g[prefix + "value"].requires_grad_();
  Tensor kpm = g.has(prefix + "key_padding_mask") ? g[prefix + "key_padding_mask"] : Tensor();
  Tensor attn_mask = g.has(prefix + "attn_mask") ? g[prefix + "attn_mask"] : Tensor();
  mha.train();
  auto [output, weights] =
      mha.forward(query, key, value, kpm, call.need_weights, attn_mask, call.average);
  check_close(output, g[prefix + "output"], kAtol, kRtol, name + " output");
  Tensor loss = (output * g[prefix + "grad_output"]).sum();
  if (call.need_weights) {
    check_close(weights, g[prefix + "weights"], kAtol, kRtol, name + " weights");
    loss = loss + (weights * g[prefix + "grad_weights"]).sum();
  } else {
    CHECK_FALSE(weights.defined());
  }
  if (!g.has(prefix + "grad_query")) return;  // the NaN case has no gradients
  loss.backward();
  check_close(query.grad(), g[prefix + "grad_query"], kAtol, kRtol, name + " grad_query");
  if (!call.self_attention) {
    check_close(key.grad(), g[prefix + "grad_key"], kAtol, kRtol, name + " grad_key");
    check_close(value.grad(), g[prefix + "grad_value"], kAtol, kRtol, name + " grad_value");
  }
  check_param_grads(mha, g, prefix + "grad.", kAtol, kRtol);
}

void check_sdpa_case(const std::string& name, bool is_causal) {
  const Golden& g = golden("nn_attention");
  const std::string prefix = "sdpa_" + name + ".";
  INFO(prefix);
  Tensor q = g[prefix + "q"].requires_grad_(), k = g[prefix + "k"].requires_grad_(),
         v = g[prefix + "v"].requires_grad_();
  Tensor mask = g.has(prefix + "mask") ? g[prefix + "mask"] : Tensor();
  Tensor y = F::scaled_dot_product_attention(q, k, v, mask, 0.0, is_causal);
  check_close(y, g[prefix + "output"], kAtol, kRtol, prefix + "output");
  y.backward(g[prefix + "grad_output"]);
  check_close(q.grad(), g[prefix + "grad_q"], kAtol, kRtol, prefix + "grad_q");
  check_close(k.grad(), g[prefix + "grad_k"], kAtol, kRtol, prefix + "grad_k");
  check_close(v.grad(), g[prefix + "grad_v"], kAtol, kRtol, prefix + "grad_v");
}

// Summary statistics of a tensor's values.
struct Stats {
  double min, max, mean, std;
};
Stats stats(const Tensor& t) {
  auto v = values(t);
  Stats s{v[0], v[0], 0, 0};
  for (double x : v) s.min = std::min(s.min, x), s.max = std::max(s.max, x), s.mean += x;
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.std += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(s.std / static_cast<double>(v.size()));
  return s;
}

}  // namespace

// ---- golden values -----------------------------------------------------------------------------

TEST_CASE("MultiheadAttention with bool attn_mask and key_padding_mask matches PyTorch",
          "[nn][attention][golden]") {
  nn::MultiheadAttention mha(8, 2, 0.0, true, false, false, std::nullopt, std::nullopt, false,
                             kFloat64);
  check_mha_case(mha, "cross_bool", {});
}

TEST_CASE("MultiheadAttention batch_first with a float (N * heads, L, S) mask matches PyTorch",
          "[nn][attention][golden]") {
  nn::MultiheadAttention mha(8, 2, 0.0, true, false, false, std::nullopt, std::nullopt,
                             /*batch_first=*/true, kFloat64);
  check_mha_case(mha, "batch_first", {true, /*average=*/false, false});
}

TEST_CASE("MultiheadAttention self-attention without weights matches PyTorch",
          "[nn][attention][golden]") {
  nn::MultiheadAttention mha(8, 4, 0.0, true, false, false, std::nullopt, std::nullopt, false,
                             kFloat64);
  check_mha_case(mha, "self_noweights", {/*need_weights=*/false, true, /*self=*/true});
}

TEST_CASE("MultiheadAttention with kdim, vdim, add_bias_kv and add_zero_attn matches PyTorch",
          "[nn][attention][golden]") {
  nn::MultiheadAttention mha(8, 2, 0.0, true, /*add_bias_kv=*/true, /*add_zero_attn=*/true,
                             /*kdim=*/6, /*vdim=*/5, false, kFloat64);
  check_mha_case(mha, "kv_dims", {});
}

TEST_CASE("MultiheadAttention without bias on unbatched input matches PyTorch",
          "[nn][attention][golden]") {
  nn::MultiheadAttention mha(8, 2, 0.0, /*bias=*/false, false, false, std::nullopt, std::nullopt,
                             /*batch_first=*/true, kFloat64);  // ignored for unbatched input
  check_mha_case(mha, "nobias", {true, /*average=*/false, false});
}

TEST_CASE("MultiheadAttention gives NaN for a fully masked sample, as PyTorch 1.13",
          "[nn][attention][golden]") {
  nn::MultiheadAttention mha(8, 2, 0.0, true, false, false, std::nullopt, std::nullopt, false,
                             kFloat64);
  check_mha_case(mha, "masked_row", {});  // check_close requires NaN exactly where PyTorch has it
  const Golden& g = golden("nn_attention");
  auto [out, w] = mha.forward(g["masked_row.query"], g["masked_row.key"], g["masked_row.value"],
                              g["masked_row.key_padding_mask"]);
  CHECK(out.select(1, 1).isnan().all().item<bool>());
  CHECK_FALSE(out.select(1, 0).isnan().any().item<bool>());
}

TEST_CASE("scaled_dot_product_attention matches PyTorch", "[nn][attention][golden]") {
  check_sdpa_case("bool", false);
  check_sdpa_case("float", false);
  check_sdpa_case("causal", true);
}

// ---- module plumbing ---------------------------------------------------------------------------

TEST_CASE("MultiheadAttention has PyTorch's parameters, keys and printing", "[nn][attention]") {
  nn::MultiheadAttention mha(8, 2);
  CHECK(keys(mha.state_dict()) == std::vector<std::string>{"in_proj_weight", "in_proj_bias",
                                                           "out_proj.weight", "out_proj.bias"});
  CHECK(mha.in_proj_weight.sizes() == Shape{24, 8});
  CHECK(mha.in_proj_bias.sizes() == Shape{24});
  CHECK(mha.out_proj->weight.sizes() == Shape{8, 8});
  CHECK(mha.head_dim == 4);
  std::ostringstream os;
  os << mha;
  CHECK(os.str() ==
        "MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, "
        "out_features=8, bias=True)\n)");

  nn::MultiheadAttention sep(8, 2, 0.0, true, true, false, 6, 5);
  CHECK(keys(sep.state_dict()) ==
        std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias",
                                 "bias_k", "bias_v", "out_proj.weight", "out_proj.bias"});
  CHECK(sep.k_proj_weight.sizes() == Shape{8, 6});
  CHECK(sep.v_proj_weight.sizes() == Shape{8, 5});
  CHECK(sep.bias_k.sizes() == Shape{1, 1, 8});
  CHECK_FALSE(sep.in_proj_weight.defined());

  nn::MultiheadAttention nobias(4, 1, 0.0, false);
  CHECK(keys(nobias.state_dict()) == std::vector<std::string>{"in_proj_weight", "out_proj.weight"});
}

TEST_CASE("MultiheadAttention is initialised as PyTorch", "[nn][attention]") {
  manual_seed(7);
  const int64_t E = 64;
  nn::MultiheadAttention mha(E, 4, 0.0, true, /*add_bias_kv=*/true);
  // in_proj_weight (3E, E): xavier_uniform_, bound sqrt(6 / (E + 3E)).
  const double bound = std::sqrt(6.0 / (4.0 * E));
  Stats w = stats(mha.in_proj_weight);
  CHECK(w.max <= bound);
  CHECK(w.min >= -bound);
  CHECK(w.max > 0.95 * bound);
  CHECK(std::abs(w.mean) < 0.01);
  CHECK(w.std == Approx(bound / std::sqrt(3.0)).epsilon(0.03));
  // Biases zero, out_proj.weight Linear's default U(-1/sqrt(E), 1/sqrt(E)).
  CHECK(values(mha.in_proj_bias) == std::vector<double>(3 * E, 0.0));
  CHECK(values(mha.out_proj->bias) == std::vector<double>(E, 0.0));
  Stats o = stats(mha.out_proj->weight);
  CHECK(o.max <= 1.0 / std::sqrt(E));
  CHECK(o.std == Approx(1.0 / std::sqrt(3.0 * E)).epsilon(0.05));
  // bias_k (1, 1, E): xavier_normal_, fan_in = fan_out = E: std 1 / sqrt(E).
  Stats bk = stats(cat({mha.bias_k, mha.bias_v}).detach());
  CHECK(bk.std == Approx(1.0 / std::sqrt(E)).epsilon(0.25));
  CHECK(mha.in_proj_weight.requires_grad());
}

// ---- behaviour ---------------------------------------------------------------------------------

TEST_CASE("MultiheadAttention applies dropout to the weights only in training", "[nn][attention]") {
  manual_seed(3);
  nn::MultiheadAttention mha(8, 2, /*dropout=*/0.5);
  Tensor x = randn({6, 2, 8});
  Generator gen(11);
  auto [out_train, w_train] =
      mha.forward(x, x, x, {}, true, {}, /*average_attn_weights=*/false, &gen);
  // Per-head weights after dropout: zeros, and the kept ones doubled (rows no longer sum to 1).
  auto wv = values(w_train);
  int64_t zeros_seen = 0;
  for (double v : wv) zeros_seen += v == 0.0;
  CHECK(zeros_seen > static_cast<int64_t>(wv.size()) / 4);
  CHECK(zeros_seen < static_cast<int64_t>(wv.size()) * 3 / 4);
  // The same generator state draws the same mask.
  Generator again(11);
  auto [out_again, w_again] = mha.forward(x, x, x, {}, true, {}, false, &again);
  CHECK(values(out_again) == values(out_train));
  mha.eval();
  auto [out_eval, w_eval] = mha.forward(x, x, x, {}, true, {}, false, &gen);
  check_close(w_eval.sum({-1}), ones({2, 2, 6}), 1e-6, 1e-6, "eval weights sum to 1");
}

TEST_CASE("scaled_dot_product_attention: masks, causality, dropout and fully masked rows",
          "[nn][attention]") {
  Tensor q = randn({2, 3, 4}, kFloat64), k = randn({2, 3, 4}, kFloat64),
         v = randn({2, 3, 5}, kFloat64);
  // A causal mask is a lower-triangular bool mask, and -inf where it is false.
  Tensor tri = ones({3, 3}, kBool).tril();
  Tensor causal = F::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
  check_close(causal, F::scaled_dot_product_attention(q, k, v, tri), 1e-14, 1e-14, "causal");
  Tensor additive = zeros({3, 3}, kFloat64).masked_fill(tri.logical_not(), -INFINITY);
  check_close(causal, F::scaled_dot_product_attention(q, k, v, additive), 1e-14, 1e-14,
              "float -inf mask");
  // The first query of a causal mask sees only the first key: its output is v[:, 0].
  check_close(causal.select(1, 0), v.select(1, 0), 1e-14, 1e-14, "first query");
  // Dropout 1 drops every weight.
  CHECK(values(F::scaled_dot_product_attention(q, k, v, {}, 1.0)) == std::vector<double>(30, 0.0));
  // A row that may attend to nothing is NaN (PyTorch 1.13; Note [Fully masked rows]).
  Tensor none = ones({3, 3}, kBool);
  none.select(0, 1).fill_(false);
  Tensor y = F::scaled_dot_product_attention(q, k, v, none);
  CHECK(y.select(1, 1).isnan().all().item<bool>());
  CHECK_FALSE(y.select(1, 0).isnan().any().item<bool>());
}

// ---- errors ------------------------------------------------------------------------------------

TEST_CASE("attention rejects bad input with clear errors", "[nn][attention]") {
  CHECK_THROWS_WITH(nn::MultiheadAttention(6, 4), Contains("embed_dim 6 must be divisible by "
                                                           "num_heads 4"));
  nn::MultiheadAttention mha(8, 2);
  Tensor x = randn({4, 3, 8});
  CHECK_THROWS_WITH(mha.forward(x, x, x, {}, true, ones({4, 5}, kBool)),
                    Contains("multi_head_attention: The shape of the 2D attn_mask is [4, 5], "
                             "but should be [4, 4]"));
  CHECK_THROWS_WITH(mha.forward(x, x, x, {}, true, ones({3, 4, 4}, kBool)),
                    Contains("(N * num_heads, L, S) = [6, 4, 4]"));
  CHECK_THROWS_WITH(mha.forward(x, x, x, zeros({3, 5}, kBool)),
                    Contains("expecting key_padding_mask shape of [3, 4], but got [3, 5]"));
  CHECK_THROWS_WITH(mha.forward(x, x, x, zeros({3, 4}, kInt64)),
                    Contains("key_padding_mask must be bool or floating-point"));
  CHECK_THROWS_WITH(mha.forward(randn({4, 3, 6}), x, x),
                    Contains("was expecting embedding dimension of 8"));
  CHECK_THROWS_WITH(mha.forward(randn({2, 4, 3, 8}), x, x),
                    Contains("query should be unbatched 2-D (L, E) or batched 3-D (L, N, E)"));
  CHECK_THROWS_WITH(mha.forward(x, randn({4, 8}), randn({4, 8})), Contains("3-D key and value"));
  CHECK_THROWS_WITH(mha(x), Contains("MultiheadAttention"));  // the one-tensor form
  Tensor q = randn({2, 3, 4});
  CHECK_THROWS_WITH(F::scaled_dot_product_attention(q, q, q, ones({3, 3}, kBool), 0.0, true),
                    Contains("attn_mask must be undefined when is_causal"));
  CHECK_THROWS_WITH(F::scaled_dot_product_attention(q, randn({2, 3, 5}), q),
                    Contains("must have the same embedding size"));
  CHECK_THROWS_WITH(F::scaled_dot_product_attention(q, q.to(kFloat64), q),
                    Contains("same floating dtype"));
  CHECK_THROWS_WITH(F::scaled_dot_product_attention(q, q, q, ones({4, 3}, kBool)),
                    Contains("does not broadcast to the scores' shape [2, 3, 3]"));
  CHECK_THROWS_WITH(F::scaled_dot_product_attention(q, q, q, {}, 1.5),
                    Contains("dropout probability must be in [0, 1]"));
}
