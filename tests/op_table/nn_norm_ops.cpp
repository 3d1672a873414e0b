// Op-table entries for the normalization ops of nn/normalization.h (family "nn_norm"), with
// float64 references that compute each group's mean and biased variance by direct loops. Each
// sample's last argument is an int64 tensor of the op's integer parameters (listed at each
// entry); undefined weight / bias / running statistics stand for "none".

#include <cmath>

#include "op_table.h"

namespace ember::testing {
namespace {

namespace F = nn::functional;

// y = (x - mean) / sqrt(var + eps) * w + b for the elements `idx` of x (one normalisation group),
// written into out; mean and var are the group's own unless given.
void normalize_group(const RefTensor& x, RefTensor& out, const std::vector<int64_t>& idx,
                     double eps, const double* mean_in, const double* var_in,
                     const std::function<double(int64_t)>& w,
                     const std::function<double(int64_t)>& b) {
  double mean = 0, var = 0;
  if (mean_in) {
    mean = *mean_in;
    var = *var_in;
  } else {
    for (int64_t i : idx) mean += x.data[i];
    mean /= static_cast<double>(idx.size());
    for (int64_t i : idx) var += (x.data[i] - mean) * (x.data[i] - mean);
    var /= static_cast<double>(idx.size());
  }
  for (int64_t i : idx) out.data[i] = (x.data[i] - mean) / std::sqrt(var + eps) * w(i) + b(i);
}

// The value of an optional reference tensor at flat index j (1 / 0 when undefined).
std::function<double(int64_t)> param_or(const RefTensor& t, double fallback,
                                        const std::function<int64_t(int64_t)>& index) {
  return [&t, fallback, index](int64_t i) { return t.data.empty() ? fallback : t.data[index(i)]; };
}

// ---- batch_norm: args {input, running_mean, running_var, weight, bias, {training, eps * 1e6}} --
RefTensor ref_batch_norm(const Refs& r) {
  const RefTensor& x = r[0];
  const bool training = ival(r[5]) != 0;
  const double eps = static_cast<double>(static_cast<int64_t>(r[5].data[1])) * 1e-6;
  const int64_t N = x.shape[0], C = x.shape[1];
  const int64_t inner = C == 0 || N == 0 ? 0 : x.numel() / (N * C);
  RefTensor out(x.shape);
  auto channel = [C, inner](int64_t i) { return inner == 0 ? 0 : i / inner % C; };
  for (int64_t c = 0; c < C; ++c) {
    std::vector<int64_t> idx;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t j = 0; j < inner; ++j) idx.push_back((n * C + c) * inner + j);
    const bool running = !training && !r[1].data.empty();
    normalize_group(x, out, idx, eps, running ? &r[1].data[c] : nullptr,
                    running ? &r[2].data[c] : nullptr, param_or(r[3], 1.0, channel),
                    param_or(r[4], 0.0, channel));
  }
  return out;
}

std::vector<Sample> batch_norm_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 9100;
  auto r = [&](const Shape& shape, double lo = -2.0, double hi = 2.0) {
    return random_tensor(shape, dt, lo, hi, seed++);
  };
  auto var = [&](int64_t c) { return r({c}, 0.5, 2.0); };  // positive running variances
  //                                                                training, eps * 1e6
  s.push_back({{r({4, 3}), r({3}), var(3), r({3}), r({3}), params({1, 10})},
               "(N, C) training, running stats, affine"});
  s.push_back({{r({2, 3, 5}), Tensor(), Tensor(), Tensor(), Tensor(), params({1, 10})},
               "(N, C, L) training, no running stats, no affine"});
  s.push_back({{r({2, 3, 4, 5}), r({3}), var(3), r({3}), Tensor(), params({1, 1000})},
               "(N, C, H, W) training, weight only, eps 1e-3"});
  s.push_back({{r({2, 3, 4, 5}), r({3}), var(3), r({3}), r({3}), params({0, 10})},
               "(N, C, H, W) eval: running stats"});
  s.push_back({{noncontiguous(r({3, 2, 4})), r({2}), var(2), Tensor(), r({2}), params({0, 10})},
               "eval, non-contiguous input, bias only"});
  s.push_back(
      {{noncontiguous(r({2, 3, 4, 5})), Tensor(), Tensor(), r({3}), r({3}), params({1, 10})},
       "training, non-contiguous input"});
  s.push_back({{r({1, 3, 5}), r({3}), var(3), r({3}), r({3}), params({1, 10})},
               "training, batch of 1 with 5 positions"});
  s.push_back({{r({2, 1}), r({1}), var(1), r({1}), r({1}), params({1, 10})},
               "training, one channel, two values"});
  s.push_back({{r({6, 2, 3}, 100.0, 104.0), Tensor(), Tensor(), r({2}), r({2}), params({1, 10})},
               "training, mean 100 >> std: needs a two-pass variance",
               /*device_tol_scale=*/16});
  s.push_back({{r({0, 3}), r({3}), var(3), r({3}), r({3}), params({0, 10})}, "eval, empty batch"});
  s.push_back(
      {{r({0, 3, 2}), r({3}), var(3), r({3}), r({3}), params({1, 10})}, "training, empty batch"});
  return s;
}

Tensor run_batch_norm(const Sample& s) {
  const RefTensor p = to_ref(s.args[5]);
  const bool training = ival(p) != 0;
  const double eps = static_cast<double>(static_cast<int64_t>(p.data[1])) * 1e-6;
  Tensor rm = s.args[1], rv = s.args[2];
  if (training && rm.defined()) {  // updated in place: keep the sample's own tensors intact
    rm = rm.detach().clone();
    rv = rv.detach().clone();
  }
  return F::batch_norm(s.args[0], rm, rv, s.args[3], s.args[4], training, 0.1, eps);
}

// ---- layer_norm: args {input, weight, bias, normalized_shape} ----------------------------------
RefTensor ref_layer_norm(const Refs& r) {
  const RefTensor& x = r[0];
  const Shape ns = ivals(r[3]);
  const int64_t inner = shape_numel(ns);
  const int64_t outer = inner == 0 ? 0 : x.numel() / inner;
  RefTensor out(x.shape);
  auto pos = [inner](int64_t i) { return i % inner; };
  for (int64_t o = 0; o < outer; ++o) {
    std::vector<int64_t> idx;
    for (int64_t j = 0; j < inner; ++j) idx.push_back(o * inner + j);
    normalize_group(x, out, idx, 1e-5, nullptr, nullptr, param_or(r[1], 1.0, pos),
                    param_or(r[2], 0.0, pos));
  }
  return out;
}

std::vector<Sample> layer_norm_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 9200;
  auto r = [&](const Shape& shape, double lo = -2.0, double hi = 2.0) {
    return random_tensor(shape, dt, lo, hi, seed++);
  };
  s.push_back({{r({3, 4}), r({4}), r({4}), params({4})}, "over the last dim, affine"});
  s.push_back({{r({2, 3, 4}), r({3, 4}), r({3, 4}), params({3, 4})}, "over the last 2 dims"});
  s.push_back({{r({2, 3, 4}), Tensor(), Tensor(), params({4})}, "no affine"});
  s.push_back({{r({2, 3, 4}), r({3, 4}), Tensor(), params({3, 4})}, "weight only"});
  s.push_back({{noncontiguous(r({4, 5})), noncontiguous(r({5})), r({5}), params({5})},
               "non-contiguous input and weight"});
  s.push_back({{r({5}), r({5}), r({5}), params({5})}, "1-D input"});
  s.push_back({{r({3, 1}), r({1}), r({1}), params({1})}, "one element per row: the bias"});
  s.push_back({{r({4, 6}, 100.0, 104.0), r({6}), r({6}), params({6})},
               "mean 100 >> std: needs a two-pass variance",
               /*device_tol_scale=*/16});
  s.push_back({{r({0, 4}), r({4}), r({4}), params({4})}, "empty batch"});
  return s;
}

// ---- group_norm: args {input, weight, bias, {num_groups}} --------------------------------------
RefTensor ref_group_norm(const Refs& r) {
  const RefTensor& x = r[0];
  const int64_t G = ival(r[3]);
  const int64_t N = x.shape[0], C = x.shape[1];
  const int64_t inner = N * C == 0 ? 0 : x.numel() / (N * C);
  RefTensor out(x.shape);
  auto channel = [C, inner](int64_t i) { return i / inner % C; };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      std::vector<int64_t> idx;
      for (int64_t c = g * (C / G); c < (g + 1) * (C / G); ++c)
        for (int64_t j = 0; j < inner; ++j) idx.push_back((n * C + c) * inner + j);
      if (idx.empty()) continue;
      normalize_group(x, out, idx, 1e-5, nullptr, nullptr, param_or(r[1], 1.0, channel),
                      param_or(r[2], 0.0, channel));
    }
  return out;
}

std::vector<Sample> group_norm_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 9300;
  auto r = [&](const Shape& shape, double lo = -2.0, double hi = 2.0) {
    return random_tensor(shape, dt, lo, hi, seed++);
  };
  s.push_back({{r({2, 6, 4}), r({6}), r({6}), param(3)}, "3 groups of 2 channels"});
  s.push_back({{r({3, 6}), r({6}), r({6}), param(2)}, "(N, C) input"});
  s.push_back({{r({2, 4, 3, 3}), r({4}), r({4}), param(2)}, "(N, C, H, W)"});
  s.push_back({{r({2, 4, 3, 3}), Tensor(), Tensor(), param(4)}, "a group per channel, no affine"});
  s.push_back({{r({2, 4, 3, 3}), r({4}), Tensor(), param(1)}, "one group, weight only"});
  s.push_back({{noncontiguous(r({3, 4, 5})), r({4}), r({4}), param(2)}, "non-contiguous input"});
  s.push_back({{r({1, 2, 1}), r({2}), r({2}), param(2)}, "one value per group: the bias"});
  s.push_back({{r({2, 4, 5}, 100.0, 104.0), r({4}), r({4}), param(2)},
               "mean 100 >> std: needs a two-pass variance",
               /*device_tol_scale=*/16});
  s.push_back({{r({0, 4, 3}), r({4}), r({4}), param(2)}, "empty batch"});
  return s;
}

const OpTableRegistrar reg({
    OpInfo{"batch_norm", floating_dtypes(), batch_norm_samples,
           [](const Sample& s) { return one(run_batch_norm(s)); },
           [](const Refs& r) { return Refs{ref_batch_norm(r)}; },
           /*tol_scale=*/16, [](DType dt) { return dt; }},
    OpInfo{"layer_norm", floating_dtypes(), layer_norm_samples,
           [](const Sample& s) {
             return one(F::layer_norm(s.args[0], ivals(to_ref(s.args[3])), s.args[1], s.args[2]));
           },
           [](const Refs& r) { return Refs{ref_layer_norm(r)}; },
           /*tol_scale=*/16, [](DType dt) { return dt; }},
    OpInfo{"group_norm", floating_dtypes(), group_norm_samples,
           [](const Sample& s) {
             return one(F::group_norm(s.args[0], ival(s.args[3]), s.args[1], s.args[2]));
           },
           [](const Refs& r) { return Refs{ref_group_norm(r)}; },
           /*tol_scale=*/16, [](DType dt) { return dt; }},
});

}  // namespace
}  // namespace ember::testing
