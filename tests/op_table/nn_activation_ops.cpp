// Op-table entries for the nn_activation family: leaky_relu (nn/activation.h), dropout and
// dropout2d (nn/dropout.h).
//
// Dropout is random, but a seeded Generator makes it a deterministic function: each run seeds a
// fresh Generator, so gradcheck sees the same mask at every evaluation. The references rebuild
// the mask independently from the Philox words (Note [Philox streams] in core/generator.h:
// bernoulli(q) keeps draw k when word_k * 2^-32 < q, one draw per element for dropout, one per
// channel in row-major order for dropout2d) and apply the scaling with naive loops.
// Dropout samples carry args {x, int64 {seed, p in percent}}.

#include <cmath>

#include "kernels/math/philox.h"
#include "op_table.h"

namespace ember::testing {
namespace {

namespace F = nn::functional;

double ref_leaky(double x, double slope) { return x > 0 ? x : x * slope; }

// ---- dropout --------------------------------------------------------------------------------
// The dropout of reference x with {seed, percent}: an element is kept when its draw (its
// channel's draw with `per_channel`, channels being the planes of the last two dims) is below
// 1 - p, and scaled by 1 / (1 - p).
RefTensor ref_dropout(const RefTensor& x, const RefTensor& config, bool per_channel) {
  const uint64_t seed = static_cast<uint64_t>(config.data[0]);
  const double p = config.data[1] / 100.0;
  if (p == 0.0) return x;
  const int64_t plane = per_channel ? x.shape[x.dim() - 1] * x.shape[x.dim() - 2] : 1;
  RefTensor out(x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const uint32_t word = kernels::math::philox_word(seed, 0, static_cast<uint64_t>(i / plane));
    const bool keep = std::ldexp(static_cast<double>(word), -32) < 1.0 - p;
    out.data[i] = keep && p < 1.0 ? x.data[i] / (1.0 - p) : 0.0;
  }
  return out;
}

Tensor config(int64_t seed, int64_t percent) { return params({seed, percent}); }

std::vector<Sample> dropout_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 700;
  auto r = [&](const Shape& shape) { return random_tensor(shape, dt, -2.0, 2.0, seed++); };
  s.push_back({{r({}), config(1, 50)}, "0-dim, p = 0.5"});
  s.push_back({{r({0}), config(2, 50)}, "empty"});
  s.push_back({{r({1}), config(3, 20)}, "size 1, p = 0.2"});
  s.push_back({{r({7}), config(4, 50)}, "[7], p = 0.5"});
  s.push_back({{r({3, 4}), config(5, 30)}, "[3, 4], p = 0.3"});
  s.push_back({{r({2, 3, 5}), config(6, 90)}, "[2, 3, 5], p = 0.9"});
  s.push_back({{noncontiguous(r({4, 5})), config(7, 50)}, "transposed [4, 5]"});
  s.push_back({{r({3, 4}), config(8, 0)}, "p = 0: the identity"});
  s.push_back({{r({3, 4}), config(9, 100)}, "p = 1: zeros"});
  s.push_back({{r({64}), config(10, 50)}, "[64]: several Philox blocks"});
  return s;
}

std::vector<Sample> dropout2d_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 800;
  auto r = [&](const Shape& shape) { return random_tensor(shape, dt, -2.0, 2.0, seed++); };
  s.push_back({{r({2, 3, 4, 5}), config(11, 50)}, "(N, C, H, W), p = 0.5"});
  s.push_back({{r({4, 3, 2}), config(12, 20)}, "unbatched (C, H, W), p = 0.2"});
  s.push_back({{r({1, 1, 1, 1}), config(13, 50)}, "one 1x1 channel"});
  s.push_back({{r({2, 6, 1, 1}), config(14, 50)}, "1x1 planes"});
  s.push_back({{r({0, 3, 2, 2}), config(15, 50)}, "empty batch"});
  s.push_back({{noncontiguous(r({2, 4, 3, 3})), config(16, 30)}, "non-contiguous"});
  s.push_back({{r({2, 3, 2, 2}), config(17, 0)}, "p = 0: the identity"});
  s.push_back({{r({2, 3, 2, 2}), config(18, 100)}, "p = 1: zeros"});
  return s;
}

// {training with a seeded generator, the same in place on a copy, training = false}.
template <class Fn>
std::vector<Tensor> run_dropout(const Sample& s, Fn fn) {
  const Tensor& x = s.args[0];
  const Shape c = ivals(to_ref(s.args[1]));  // {seed, percent}
  const double p = static_cast<double>(c[1]) / 100.0;
  Generator g1(static_cast<uint64_t>(c[0]), x.device()),
      g2(static_cast<uint64_t>(c[0]), x.device());
  Tensor trained = fn(x, p, true, &g1, false);
  Tensor in_place = fn(x.clone(), p, true, &g2, true);
  Tensor evaluated = fn(x, p, false, nullptr, false);
  return {trained, in_place, evaluated};
}

Refs ref_dropout_outputs(const Refs& r, bool per_channel) {
  RefTensor y = ref_dropout(r[0], r[1], per_channel);
  return {y, y, r[0]};
}

const OpTableRegistrar reg({
    OpInfo{"leaky_relu", floating_dtypes(), [](DType dt) { return unary_samples(dt, -3, 3); },
           [](const Sample& s) {
             const Tensor& x = s.args[0];
             return std::vector<Tensor>{F::leaky_relu(x), F::leaky_relu(x, 0.2),
                                        F::leaky_relu(x, -0.5),
                                        F::leaky_relu(x.clone(), 0.2, /*inplace=*/true)};
           },
           [](const Refs& r) {
             auto with = [&](double slope) {
               return ref_unary(r[0], [=](double x) { return ref_leaky(x, slope); });
             };
             return Refs{with(0.01), with(0.2), with(-0.5), with(0.2)};
           }},
    OpInfo{"dropout", floating_dtypes(), dropout_samples,
           [](const Sample& s) {
             return run_dropout(
                 s, [](const Tensor& x, double p, bool training, Generator* g, bool inplace) {
                   return F::dropout(x, p, training, g, inplace);
                 });
           },
           [](const Refs& r) { return ref_dropout_outputs(r, false); }},
    OpInfo{"dropout2d", floating_dtypes(), dropout2d_samples,
           [](const Sample& s) {
             return run_dropout(
                 s, [](const Tensor& x, double p, bool training, Generator* g, bool inplace) {
                   return F::dropout2d(x, p, training, g, inplace);
                 });
           },
           [](const Refs& r) { return ref_dropout_outputs(r, true); }},
});

}  // namespace
}  // namespace ember::testing
