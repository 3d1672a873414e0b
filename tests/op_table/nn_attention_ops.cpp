// Op-table entries for the attention ops of nn/attention.h (family "nn_attention"), with float64
// references written as the loops of the definitions: scores, a softmax per query, the weighted
// sum of values; for multi-head attention also the projections and the per-head split. Dropout
// is 0 here (it is random; tests/test_nn_attention.cpp checks it). Masks keep at least one key
// per query (a fully masked row is NaN: Note [Fully masked rows], tested separately).

#include <cmath>
#include <limits>

#include "op_table.h"

namespace ember::testing {
namespace {

namespace F = nn::functional;
constexpr double kInf = std::numeric_limits<double>::infinity();

// softmax of row (in place), ignoring -inf entries as exp(-inf) = 0.
void softmax_row(std::vector<double>& row) {
  double m = -kInf;
  for (double v : row) m = std::max(m, v);
  double sum = 0;
  for (double& v : row) sum += (v = std::exp(v - m));
  for (double& v : row) v /= sum;
}

// A bool mask (as a tensor of dtype kBool) of `shape` that is true where pattern(flat index) is.
Tensor bool_mask(const Shape& shape, const std::function<bool(int64_t)>& pattern) {
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = pattern(static_cast<int64_t>(i)) ? 1.0 : 0.0;
  return tensor(v, shape).to(kBool);
}

// ---- scaled_dot_product_attention: args {q, k, v, mask or undefined, {is_causal, mask_is_bool}}
// q (*, L, E), k (*, S, E), v (*, S, Ev) with broadcasting batch dims *.
RefTensor ref_sdpa(const Refs& r) {
  const RefTensor &q = r[0], &k = r[1], &v = r[2], &mask = r[3];
  const bool causal = r[4].data[0] != 0, mask_is_bool = r[4].data[1] != 0;
  const int64_t L = q.shape[q.dim() - 2], E = q.shape[q.dim() - 1];
  const int64_t S = k.shape[k.dim() - 2], Ev = v.shape[v.dim() - 1];
  Shape qb(q.shape.begin(), q.shape.end() - 2), kb(k.shape.begin(), k.shape.end() - 2),
      vb(v.shape.begin(), v.shape.end() - 2);
  Shape batch = broadcast_shapes(broadcast_shapes(qb, kb, "ref"), vb, "ref");
  Shape out_shape = batch;
  out_shape.push_back(L);
  out_shape.push_back(Ev);
  RefTensor out(out_shape);
  const int64_t B = shape_numel(batch);
  for (int64_t bi = 0; bi < B; ++bi) {
    Shape b = unravel(bi, batch);
    auto at = [&b](const RefTensor& t, int64_t i, int64_t j) {
      Shape idx = b;
      idx.push_back(i);
      idx.push_back(j);
      return broadcast_at(t, idx);
    };
    for (int64_t i = 0; i < L; ++i) {
      std::vector<double> row(static_cast<size_t>(S));
      for (int64_t j = 0; j < S; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < E; ++e) dot += at(q, i, e) * at(k, j, e);
        double add = 0;
        if (!mask.data.empty()) {
          double m = at(mask, i, j);
          add = mask_is_bool ? (m != 0 ? 0.0 : -kInf) : m;
        }
        if (causal && j > i) add = -kInf;
        row[j] = dot / std::sqrt(static_cast<double>(E)) + add;
      }
      softmax_row(row);
      for (int64_t f = 0; f < Ev; ++f) {
        double acc = 0;
        for (int64_t j = 0; j < S; ++j) acc += row[j] * at(v, j, f);
        out.data[(bi * L + i) * Ev + f] = acc;
      }
    }
  }
  return out;
}

std::vector<Sample> sdpa_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 9500;
  auto r = [&](const Shape& shape) { return random_tensor(shape, dt, -1.5, 1.5, seed++); };
  // Every query may attend to at least one key: (i + j) % 3 != 2 holds for some j when S >= 2.
  auto allowed = [](int64_t L, int64_t S) {
    return bool_mask({L, S}, [S](int64_t f) { return (f / S + f % S) % 3 != 2; });
  };
  //                                                                   is_causal, mask_is_bool
  s.push_back({{r({2, 3, 4}), r({2, 5, 4}), r({2, 5, 6}), Tensor(), params({0, 0})},
               "(N, L, E), no mask, Ev != E"});
  s.push_back({{r({2, 2, 3, 4}), r({2, 2, 5, 4}), r({2, 2, 5, 4}), allowed(3, 5), params({0, 1})},
               "(N, H, L, E), bool (L, S) mask broadcast"});
  s.push_back({{r({2, 2, 3, 4}), r({2, 2, 5, 4}), r({2, 2, 5, 3}), r({2, 1, 3, 5}), params({0, 0})},
               "float additive mask (N, 1, L, S)"});
  s.push_back(
      {{r({2, 4, 4}), r({2, 4, 4}), r({2, 4, 4}), Tensor(), params({1, 0})}, "is_causal, L == S"});
  s.push_back(
      {{r({3, 4}), r({5, 4}), r({5, 2}), Tensor(), params({1, 0})}, "is_causal, unbatched, L < S"});
  s.push_back(
      {{r({2, 3, 4}), r({1, 5, 4}), r({5, 4}), Tensor(), params({0, 0})}, "broadcast batch dims"});
  s.push_back({{noncontiguous(r({2, 3, 4})), r({2, 5, 4}), noncontiguous(r({2, 5, 4})),
                noncontiguous(r({5, 3})).transpose(0, 1), params({0, 0})},
               "non-contiguous q, v and mask"});
  s.push_back({{r({1, 1, 3}), r({1, 1, 3}), r({1, 1, 2}), Tensor(), params({0, 0})}, "L = S = 1"});
  s.push_back(
      {{r({0, 3, 4}), r({0, 5, 4}), r({0, 5, 4}), Tensor(), params({0, 0})}, "empty batch"});
  return s;
}

Tensor run_sdpa(const Sample& s) {
  const RefTensor p = to_ref(s.args[4]);
  return F::scaled_dot_product_attention(s.args[0], s.args[1], s.args[2], s.args[3], 0.0,
                                         p.data[0] != 0);
}

// ---- multi_head_attention: args {query, key, value, in_proj_weight, in_proj_bias,
// out_proj_weight, out_proj_bias, attn_mask, key_padding_mask,
// {num_heads, need_weights, average_attn_weights, attn_mask_is_bool, padding_is_bool}}.
// Sequence first: query (L, N, E) or unbatched (L, E).
Refs ref_mha(const Refs& r) {
  const RefTensor &query = r[0], &key = r[1], &value = r[2], &w_in = r[3], &b_in = r[4];
  const RefTensor &w_out = r[5], &b_out = r[6], &amask = r[7], &kpm = r[8];
  const int64_t H = static_cast<int64_t>(r[9].data[0]);
  const bool need_weights = r[9].data[1] != 0, average = r[9].data[2] != 0;
  const bool amask_bool = r[9].data[3] != 0, kpm_bool = r[9].data[4] != 0;
  const bool batched = query.dim() == 3;
  const int64_t L = query.shape[0], S = key.shape[0], E = query.shape[query.dim() - 1];
  const int64_t N = batched ? query.shape[1] : 1, hd = E / H;
  auto x_at = [&](const RefTensor& x, int64_t t, int64_t n, int64_t e) {
    return x.data[(t * N + n) * E + e];
  };
  // Projections p[t, n, e] with rows `row0 + e` of the stacked in-projection.
  auto project = [&](const RefTensor& x, int64_t T, int64_t row0) {
    std::vector<double> p(static_cast<size_t>(T * N * E));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t e = 0; e < E; ++e) {
          double acc = b_in.data.empty() ? 0.0 : b_in.data[row0 + e];
          for (int64_t f = 0; f < E; ++f) acc += x_at(x, t, n, f) * w_in.data[(row0 + e) * E + f];
          p[(t * N + n) * E + e] = acc;
        }
    return p;
  };
  std::vector<double> qp = project(query, L, 0), kp = project(key, S, E),
                      vp = project(value, S, 2 * E);
  std::vector<double> attn(static_cast<size_t>(N * H * L * S));  // (N, H, L, S)
  std::vector<double> heads(static_cast<size_t>(L * N * E));     // (L, N, E) before out_proj
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t l = 0; l < L; ++l) {
        std::vector<double> row(static_cast<size_t>(S));
        for (int64_t j = 0; j < S; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < hd; ++d)
            dot += qp[(l * N + n) * E + h * hd + d] * kp[(j * N + n) * E + h * hd + d];
          double add = 0;
          if (!amask.data.empty()) {
            double m = amask.dim() == 2 ? amask.data[l * S + j]
                                        : amask.data[((n * H + h) * L + l) * S + j];
            add += amask_bool ? (m != 0 ? -kInf : 0.0) : m;
          }
          if (!kpm.data.empty()) {
            double m = kpm.data[n * S + j];
            add += kpm_bool ? (m != 0 ? -kInf : 0.0) : m;
          }
          row[j] = dot / std::sqrt(static_cast<double>(hd)) + add;
        }
        softmax_row(row);
        for (int64_t j = 0; j < S; ++j) attn[((n * H + h) * L + l) * S + j] = row[j];
        for (int64_t d = 0; d < hd; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < S; ++j) acc += row[j] * vp[(j * N + n) * E + h * hd + d];
          heads[(l * N + n) * E + h * hd + d] = acc;
        }
      }
  RefTensor out(batched ? Shape{L, N, E} : Shape{L, E});
  for (int64_t t = 0; t < L * N; ++t)
    for (int64_t e = 0; e < E; ++e) {
      double acc = b_out.data.empty() ? 0.0 : b_out.data[e];
      for (int64_t f = 0; f < E; ++f) acc += heads[t * E + f] * w_out.data[e * E + f];
      out.data[t * E + e] = acc;
    }
  if (!need_weights) return {out};
  RefTensor weights;
  if (average) {
    weights = RefTensor(batched ? Shape{N, L, S} : Shape{L, S});
    for (int64_t n = 0; n < N; ++n)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < L * S; ++i)
          weights.data[n * L * S + i] += attn[(n * H + h) * L * S + i] / static_cast<double>(H);
  } else {
    weights = RefTensor(batched ? Shape{N, H, L, S} : Shape{H, L, S}, attn);
  }
  return {out, weights};
}

std::vector<Sample> mha_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 9600;
  auto r = [&](const Shape& shape) { return random_tensor(shape, dt, -1.0, 1.0, seed++); };
  // Weights for embedding size E: in_proj (3E, E), in_proj_bias (3E), out_proj (E, E), (E).
  auto weights = [&](int64_t E, bool bias) {
    return std::vector<Tensor>{r({3 * E, E}), bias ? r({3 * E}) : Tensor(), r({E, E}),
                               bias ? r({E}) : Tensor()};
  };
  auto sample = [&](Tensor q, Tensor k, Tensor v, std::vector<Tensor> w, Tensor amask, Tensor kpm,
                    Shape p, std::string note) {
    s.push_back({{std::move(q), std::move(k), std::move(v), w[0], w[1], w[2], w[3],
                  std::move(amask), std::move(kpm), params(p)},
                 std::move(note)});
  };
  // attn_mask blocks (l + j) % 3 == 2, the padding mask the last key of sample 0: every query
  // keeps at least one key.
  Tensor amask_bool = bool_mask({3, 4}, [](int64_t f) { return (f / 4 + f % 4) % 3 == 2; });
  Tensor kpm_bool = bool_mask({2, 4}, [](int64_t f) { return f == 3; });
  //                                            heads, need_weights, average, amask bool, kpm bool
  sample(r({3, 2, 4}), r({4, 2, 4}), r({4, 2, 4}), weights(4, true), Tensor(), Tensor(),
         {2, 1, 1, 0, 0}, "no masks, averaged weights");
  sample(r({3, 2, 4}), r({4, 2, 4}), r({4, 2, 4}), weights(4, true), amask_bool, kpm_bool,
         {2, 1, 0, 1, 1}, "bool attn_mask (L, S) and key_padding_mask, weights per head");
  sample(r({3, 2, 4}), r({4, 2, 4}), r({4, 2, 4}), weights(4, false), r({4, 3, 4}), r({2, 4}),
         {2, 1, 1, 0, 0}, "float attn_mask (N * H, L, S) and padding mask, no biases");
  sample(r({3, 2, 6}), r({5, 2, 6}), r({5, 2, 6}), weights(6, true), Tensor(), Tensor(),
         {3, 0, 1, 0, 0}, "3 heads, need_weights = false");
  sample(r({3, 4}), r({4, 4}), r({4, 4}), weights(4, true), amask_bool,
         bool_mask({4}, [](int64_t f) { return f == 0; }), {2, 1, 1, 1, 1},
         "unbatched, bool masks");
  sample(noncontiguous(r({3, 2, 4})), r({4, 2, 4}), noncontiguous(r({4, 2, 4})), weights(4, true),
         Tensor(), Tensor(), {1, 1, 1, 0, 0}, "non-contiguous, one head");
  sample(r({1, 1, 3}), r({1, 1, 3}), r({1, 1, 3}), weights(3, true), Tensor(), Tensor(),
         {3, 1, 0, 0, 0}, "L = S = N = 1, head_dim 1");
  return s;
}

std::vector<Tensor> run_mha(const Sample& s) {
  const RefTensor p = to_ref(s.args[9]);
  const int64_t E = s.args[0].size(-1);
  const bool need_weights = p.data[1] != 0;
  auto [out, weights] = F::multi_head_attention_forward(
      s.args[0], s.args[1], s.args[2], E, static_cast<int64_t>(p.data[0]), s.args[3], s.args[4],
      Tensor(), Tensor(), false, 0.0, s.args[5], s.args[6], /*training=*/true, s.args[8],
      need_weights, s.args[7], false, Tensor(), Tensor(), Tensor(), p.data[2] != 0);
  if (!need_weights) return {out};
  return {out, weights};
}

const OpTableRegistrar reg({
    OpInfo{"scaled_dot_product_attention", floating_dtypes(), sdpa_samples,
           [](const Sample& s) { return one(run_sdpa(s)); },
           [](const Refs& r) { return Refs{ref_sdpa(r)}; },
           /*tol_scale=*/16, [](DType dt) { return dt; }},
    OpInfo{"multi_head_attention", floating_dtypes(), mha_samples, run_mha, ref_mha,
           /*tol_scale=*/32, [](DType dt) { return dt; }},
});

}  // namespace
}  // namespace ember::testing
