// Op-table entries for the random ops (core/ops/random.h).
//
// A random op's output is a documented function of (seed, offset, element index) -- Note
// [Philox streams] in core/generator.h -- so the references below rebuild every value exactly
// from the Philox words (kernels/math/philox.h's philox_word) with naive float64 code, and the
// comparison is as strict as for any other op. Each sample carries:
//   args[0]  a tensor with the output's shape and dtype (for in-place ops: the tensor to fill,
//            possibly non-contiguous; it is cloned with its layout before the op runs)
//   args[1]  float64 {seed, dtype code}: the run seeds a private Generator of args[0]'s device
//            with `seed`, and the reference needs the dtype to know the words per element and
//            the rounding.
// Statistical properties (means, frequencies, permutations) are in tests/test_random.cpp.

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/math/philox.h"
#include "op_table.h"

namespace ember::testing {
namespace {

namespace math = kernels::math;

constexpr double kTwoPi = 6.283185307179586476925286766559;

struct Config {
  uint64_t seed;
  DType dtype;
};

Config config_of(const RefTensor& r) {
  return {static_cast<uint64_t>(r.data[0]), static_cast<DType>(static_cast<int>(r.data[1]))};
}
Config config_of(const Tensor& t) { return config_of(to_ref(t)); }

// The word stream of a generator at `offset` (Note [Philox streams]).
struct Stream {
  uint64_t seed, offset;
  uint32_t word(uint64_t k) const { return math::philox_word(seed, offset, k); }
  uint64_t u64(uint64_t k) const {  // two words, the first is the low half
    return (static_cast<uint64_t>(word(k + 1)) << 32) | word(k);
  }
};

uint64_t blocks(int64_t n, int words) { return (static_cast<uint64_t>(n) * words + 3) / 4; }

// The value `v` as dtype dt would store it.
double round_to(DType dt, double v) {
  switch (dt) {
    case kFloat16:
      return static_cast<float>(Half(static_cast<float>(v)));
    case kBFloat16:
      return static_cast<float>(BFloat16(static_cast<float>(v)));
    case kFloat32:
      return static_cast<float>(v);
    default:
      return v;
  }
}

int float_words(DType dt) { return dt == kFloat64 ? 2 : 1; }
int uniform_bits(DType dt) { return dt == kFloat16 ? 11 : dt == kBFloat16 ? 8 : 24; }

// uniform on [from, to): u with the dtype's significand bits (53 from two words for float64).
double ref_uniform(const Stream& s, int64_t i, DType dt, double from, double to) {
  double u;
  if (dt == kFloat64) {
    u = std::ldexp(static_cast<double>(s.u64(2 * i) >> 11), -53);
  } else {
    int bits = uniform_bits(dt);
    u = std::ldexp(static_cast<double>(s.word(i) >> (32 - bits)), -bits);
  }
  double v = round_to(dt, from + (to - from) * u);
  return v < to ? v : from;
}

// Box-Muller over the pair (2m, 2m+1): u1 in (0, 1] from element 2m, u2 from element 2m+1.
double ref_normal(const Stream& s, int64_t i, DType dt, double mean, double std) {
  const int64_t first = i - i % 2;
  double u1, u2;
  if (dt == kFloat64) {
    u1 = std::ldexp(static_cast<double>((s.u64(2 * first) >> 11) + 1), -53);
    u2 = std::ldexp(static_cast<double>(s.u64(2 * first + 2) >> 11), -53);
  } else {
    u1 = std::ldexp(static_cast<double>((s.word(first) >> 8) + 1), -24);
    u2 = std::ldexp(static_cast<double>(s.word(first + 1) >> 8), -24);
  }
  double r = std::sqrt(-2.0 * std::log(u1));
  double z = i % 2 == 0 ? r * std::cos(kTwoPi * u2) : r * std::sin(kTwoPi * u2);
  return mean + std * z;
}

bool ref_bernoulli(const Stream& s, int64_t i, double p) {
  return std::ldexp(static_cast<double>(s.word(i)), -32) < p;
}

double ref_randint(const Stream& s, int64_t i, int64_t low, int64_t high) {
  uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  uint64_t draw = range <= (uint64_t{1} << 32) ? s.word(i) : s.u64(2 * i);
  return static_cast<double>(static_cast<int64_t>(static_cast<uint64_t>(low) + draw % range));
}

RefTensor ref_fill(const Shape& shape, const std::function<double(int64_t)>& f) {
  RefTensor out(shape);
  for (int64_t i = 0; i < out.numel(); ++i) out.data[i] = f(i);
  return out;
}

// ---- samples --------------------------------------------------------------------------------
Tensor config(uint64_t seed, DType dt) {
  return tensor<double>({static_cast<double>(seed), static_cast<double>(static_cast<int>(dt))});
}

// Shapes covering 0-dim, empty, a partial Philox block, odd sizes (a half Box-Muller pair),
// several blocks, and non-contiguous tensors to fill in place.
std::vector<Sample> random_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 1000;
  for (const Shape& shape :
       std::vector<Shape>{{}, {0}, {1}, {3}, {7}, {3, 4}, {2, 3, 5}, {2, 0, 3}, {101}}) {
    s.push_back({{zeros(shape, dt), config(seed++, dt)}, "shape " + shape_str(shape)});
  }
  s.push_back({{noncontiguous(zeros({4, 5}, dt)), config(seed++, dt)}, "transposed [4, 5]"});
  s.push_back({{noncontiguous(zeros({9}, dt)), config(seed++, dt)}, "strided [9]"});
  s.push_back({{zeros({3, 6}, dt).slice(1, 1, 5), config(seed++, dt)}, "sliced [3, 4]"});
  return s;
}

// dtype dt on the device of the sample's tensors: each run draws from a generator of that
// device, so on cuda the op table compares the cuda results with the cpu's element by element
// (Note [Philox on the device] in kernels/cuda/random.cu).
TensorOptions on_device_of(const Sample& s, DType dt) {
  return TensorOptions(dt).device(s.args[0].device());
}

// A fresh tensor with the sample tensor's shape, dtype, device and layout, for an in-place op.
Tensor like_layout(const Tensor& t) {
  if (t.is_contiguous()) return t.clone();
  Tensor base = zeros({t.numel() * 2 + 2}, t.options());
  return base.as_strided(t.sizes(), t.strides(), 0);
}

// (low, high) for randint per dtype: inside what the dtype holds exactly.
std::pair<int64_t, int64_t> randint_range(DType dt) {
  switch (dt) {
    case kBool:
      return {0, 2};
    case kUInt8:
      return {3, 250};
    case kInt8:
      return {-128, 128};  // the whole range
    case kInt16:
      return {-300, 30000};
    case kInt32:
      return {-1000, 1000000};
    case kInt64:
      return {-5, 5};
    case kFloat16:
    case kBFloat16:
      return {-50, 50};
    default:
      return {-1000, 1000};
  }
}
// int64 also draws from a range wider than 2^32 (two words per element).
constexpr int64_t kWideLow = -(int64_t{1} << 61), kWideHigh = int64_t{1} << 61;

// ---- entries --------------------------------------------------------------------------------
// Sampling is not differentiable: the fills overwrite their target (its old value gets no
// gradient, autograd/ops/random.cpp) and the factories take no tensor input that could have one.
// bernoulli(probs) gives no gradient to probs either. So no entry is gradchecked.
std::vector<OpInfo> not_differentiable(std::vector<OpInfo> entries) {
  for (OpInfo& e : entries) {
    e.grad = GradSupport::None;
  }
  return entries;
}

const OpTableRegistrar reg(not_differentiable({
    OpInfo{"rand", floating_dtypes(), random_samples,
           [](const Sample& s) {
             Config c = config_of(s.args[1]);
             Generator g(c.seed, s.args[0].device());
             Tensor a = rand(s.args[0].sizes(), on_device_of(s, c.dtype), &g);
             Tensor b = rand_like(s.args[0], {}, &g);  // continues the stream
             return std::vector<Tensor>{a, b};
           },
           [](const Refs& r) {
             Config c = config_of(r[1]);
             Stream s0{c.seed, 0}, s1{c.seed, blocks(r[0].numel(), float_words(c.dtype))};
             return Refs{
                 ref_fill(r[0].shape, [&](int64_t i) { return ref_uniform(s0, i, c.dtype, 0, 1); }),
                 ref_fill(r[0].shape,
                          [&](int64_t i) { return ref_uniform(s1, i, c.dtype, 0, 1); })};
           }},
    OpInfo{"randn", floating_dtypes(), random_samples,
           [](const Sample& s) {
             Config c = config_of(s.args[1]);
             Generator g(c.seed, s.args[0].device());
             Tensor a = randn(s.args[0].sizes(), on_device_of(s, c.dtype), &g);
             Tensor b = randn_like(s.args[0], {}, &g);
             return std::vector<Tensor>{a, b};
           },
           [](const Refs& r) {
             Config c = config_of(r[1]);
             Stream s0{c.seed, 0}, s1{c.seed, blocks(r[0].numel(), float_words(c.dtype))};
             return Refs{
                 ref_fill(r[0].shape, [&](int64_t i) { return ref_normal(s0, i, c.dtype, 0, 1); }),
                 ref_fill(r[0].shape, [&](int64_t i) { return ref_normal(s1, i, c.dtype, 0, 1); })};
           },
           /*tol_scale=*/16},
    OpInfo{"uniform_", floating_dtypes(), random_samples,
           [](const Sample& s) {
             Config c = config_of(s.args[1]);
             Generator g(c.seed, s.args[0].device());
             Tensor self = like_layout(s.args[0]);
             const Tensor& ret = self.uniform_(-2.0, 3.0, &g);
             EMBER_CHECK(ret.is_same(self), "uniform_ must return self");
             return std::vector<Tensor>{self};
           },
           [](const Refs& r) {
             Config c = config_of(r[1]);
             Stream s{c.seed, 0};
             return Refs{ref_fill(r[0].shape,
                                  [&](int64_t i) { return ref_uniform(s, i, c.dtype, -2, 3); })};
           }},
    OpInfo{"normal_", floating_dtypes(), random_samples,
           [](const Sample& s) {
             Config c = config_of(s.args[1]);
             Generator g(c.seed, s.args[0].device());
             Tensor self = like_layout(s.args[0]);
             self.normal_(1.5, 0.5, &g);
             return std::vector<Tensor>{self};
           },
           [](const Refs& r) {
             Config c = config_of(r[1]);
             Stream s{c.seed, 0};
             return Refs{ref_fill(r[0].shape,
                                  [&](int64_t i) { return ref_normal(s, i, c.dtype, 1.5, 0.5); })};
           },
           /*tol_scale=*/16},
    OpInfo{"bernoulli_", all_dtypes(), random_samples,
           [](const Sample& s) {
             Config c = config_of(s.args[1]);
             Generator g(c.seed, s.args[0].device());
             Tensor self = like_layout(s.args[0]);
             self.bernoulli_(0.3, &g);
             return std::vector<Tensor>{self};
           },
           [](const Refs& r) {
             Config c = config_of(r[1]);
             Stream s{c.seed, 0};
             return Refs{ref_fill(r[0].shape,
                                  [&](int64_t i) { return ref_bernoulli(s, i, 0.3) ? 1.0 : 0.0; })};
           }},
    OpInfo{"bernoulli", floating_dtypes(),
           [](DType dt) {
             std::vector<Sample> s;
             s.push_back(
                 {{tensor<double>({0.0, 1.0, 0.5, 0.25, 0.75, 1.0, 0.0}).to(dt), config(7, dt)},
                  "probabilities with 0 and 1"});
             s.push_back({{random_tensor({3, 5}, dt, 0.0, 1.0, 3), config(8, dt)}, "[3, 5]"});
             s.push_back({{noncontiguous(random_tensor({4, 3}, dt, 0.0, 1.0, 4)), config(9, dt)},
                          "non-contiguous probabilities"});
             s.push_back({{zeros({0, 2}, dt), config(10, dt)}, "empty"});
             return s;
           },
           [](const Sample& s) {
             Config c = config_of(s.args[1]);
             Generator g(c.seed, s.args[0].device());
             return std::vector<Tensor>{bernoulli(s.args[0], &g)};
           },
           [](const Refs& r) {
             Config c = config_of(r[1]);
             Stream s{c.seed, 0};
             return Refs{ref_fill(r[0].shape, [&](int64_t i) {
               return ref_bernoulli(s, i, r[0].data[i]) ? 1.0 : 0.0;
             })};
           },
           4.0, [](DType dt) { return dt; }},
    OpInfo{"randint", all_dtypes(), random_samples,
           [](const Sample& s) {
             Config c = config_of(s.args[1]);
             Generator g(c.seed, s.args[0].device());
             auto [low, high] = randint_range(c.dtype);
             std::vector<Tensor> out{
                 randint(low, high, s.args[0].sizes(), on_device_of(s, c.dtype), &g)};
             if (c.dtype == kInt64)
               out.push_back(
                   randint(kWideLow, kWideHigh, s.args[0].sizes(), on_device_of(s, kInt64), &g));
             return out;
           },
           [](const Refs& r) {
             Config c = config_of(r[1]);
             auto [low, high] = randint_range(c.dtype);
             Stream s{c.seed, 0};
             Refs out{ref_fill(r[0].shape, [&, low = low, high = high](int64_t i) {
               return ref_randint(s, i, low, high);
             })};
             if (c.dtype == kInt64) {
               Stream wide{c.seed, blocks(r[0].numel(), 1)};
               out.push_back(ref_fill(r[0].shape, [&](int64_t i) {
                 return ref_randint(wide, i, kWideLow, kWideHigh);
               }));
             }
             return out;
           },
           4.0, [](DType dt) { return dt; }},
    OpInfo{"randperm", numeric_dtypes(),
           [](DType dt) {
             std::vector<Sample> s;
             uint64_t seed = 77;
             // int8 holds 0 .. 127: n = 128 is its largest permutation.
             for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{7}, int64_t{50},
                               dt == kInt8 ? int64_t{128} : int64_t{200}})
               s.push_back({{zeros({n}, dt), config(seed++, dt)}, "n = " + std::to_string(n)});
             return s;
           },
           [](const Sample& s) {
             Config c = config_of(s.args[1]);
             Generator g(c.seed, s.args[0].device());
             return std::vector<Tensor>{randperm(s.args[0].numel(), on_device_of(s, c.dtype), &g)};
           },
           [](const Refs& r) {
             // Indices sorted by (64-bit key of the element, index).
             Config c = config_of(r[1]);
             Stream s{c.seed, 0};
             const int64_t n = r[0].numel();
             std::vector<int64_t> perm(static_cast<size_t>(n));
             std::iota(perm.begin(), perm.end(), int64_t{0});
             std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
               uint64_t ka = s.u64(2 * a), kb = s.u64(2 * b);
               return ka != kb ? ka < kb : a < b;
             });
             return Refs{ref_fill({n}, [&](int64_t i) { return static_cast<double>(perm[i]); })};
           },
           4.0, [](DType dt) { return dt; }},
}));

}  // namespace
}  // namespace ember::testing
