// Op-table entries for the unary element-wise family (core/ops/unary.h).
//
// Floating math runs over every dtype: bool and integer inputs must give float32 (the default
// dtype). Each floating entry checks the functional form and the in-place form (on a floating
// copy of the input). Entries whose reference depends on the dtype (uint8 wrap-around, the
// dtype's largest finite value) are made once per dtype.

#include <cmath>
#include <limits>

#include "op_table.h"

namespace ember::testing {
namespace {

DType float_result(DType dt) { return is_floating(dt) ? dt : kFloat32; }
DType same(DType dt) { return dt; }
DType to_bool(DType) { return kBool; }

// The in-place form runs on a copy that can hold the result.
Tensor float_copy(const Tensor& t) { return t.is_floating_point() ? t.clone() : t.to(kFloat32); }

// A floating-math entry: functional and in-place forms against `ref`, values in [lo, hi).
OpInfo float_unary(const char* name, Tensor (*fn)(const Tensor&),
                   const Tensor& (*fn_)(const Tensor&), double (*ref)(double), double lo, double hi,
                   double tol_scale = 4.0) {
  OpInfo op{name,
            all_dtypes(),
            [lo, hi](DType dt) { return unary_samples(dt, lo, hi); },
            [fn, fn_](const Sample& s) {
              return std::vector<Tensor>{fn(s.args[0]), fn_(float_copy(s.args[0]))};
            },
            [ref](const Refs& r) {
              return Refs{ref_unary(r[0], ref), ref_unary(r[0], ref)};
            },
            tol_scale,
            float_result};
  return op;
}

double ref_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double ref_silu(double x) { return x * ref_sigmoid(x); }
double ref_rsqrt(double x) { return 1.0 / std::sqrt(x); }
double ref_reciprocal(double x) { return 1.0 / x; }
double ref_gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double ref_gelu_tanh(double x) {
  const double k = std::sqrt(2.0 / 3.14159265358979323846);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
double ref_softplus(double x, double beta, double threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(beta * x)) / beta;
}
double ref_sign(double x) { return static_cast<double>((0 < x) - (x < 0)); }

// A dtype-preserving entry over `dtypes`: functional and in-place forms.
OpInfo same_dtype_unary(const char* name, std::vector<DType> dtypes, Tensor (*fn)(const Tensor&),
                        const Tensor& (*fn_)(const Tensor&), double (*ref)(double),
                        double lo = -3.0, double hi = 3.0) {
  return OpInfo{name,
                std::move(dtypes),
                [lo, hi](DType dt) { return unary_samples(dt, lo, hi); },
                [fn, fn_](const Sample& s) {
                  return std::vector<Tensor>{fn(s.args[0]), fn_(s.args[0].clone())};
                },
                [ref](const Refs& r) {
                  return Refs{ref_unary(r[0], ref), ref_unary(r[0], ref)};
                },
                4.0,
                same};
}

// unary_samples plus a sample holding NaN, +-inf and ordinary values (floating dtypes).
std::vector<Sample> special_samples(DType dt) {
  std::vector<Sample> s = unary_samples(dt);
  if (is_floating(dt)) {
    const double inf = std::numeric_limits<double>::infinity();
    Tensor t =
        tensor(std::vector<double>{std::nan(""), inf, -inf, 1.5, -2.0, 0.0, -0.0}, {7}).to(dt);
    s.push_back({{t}, "NaN and infinities"});
    s.push_back({{noncontiguous(t.view({7, 1}).expand({7, 2}).contiguous())},
                 "NaN and infinities, non-contiguous"});
  }
  return s;
}

double largest(DType dt) {
  switch (dt) {
    case kFloat16:
      return 65504.0;
    case kBFloat16:
      return static_cast<float>(std::numeric_limits<BFloat16>::max());
    case kFloat32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

std::vector<OpInfo> entries() {
  std::vector<OpInfo> v = {
      float_unary(
          "exp", exp, exp_, [](double x) { return std::exp(x); }, -3, 3),
      float_unary(
          "exp2", exp2, exp2_, [](double x) { return std::exp2(x); }, -3, 3),
      float_unary(
          "expm1", expm1, expm1_, [](double x) { return std::expm1(x); }, -2, 2),
      float_unary(
          "log", log, log_, [](double x) { return std::log(x); }, 0.05, 4),
      float_unary(
          "log2", log2, log2_, [](double x) { return std::log2(x); }, 0.05, 4),
      float_unary(
          "log1p", log1p, log1p_, [](double x) { return std::log1p(x); }, -0.9, 4),
      float_unary(
          "sqrt", sqrt, sqrt_, [](double x) { return std::sqrt(x); }, 0.0, 4),
      float_unary("rsqrt", rsqrt, rsqrt_, ref_rsqrt, 0.05, 4),
      float_unary("reciprocal", reciprocal, reciprocal_, ref_reciprocal, 0.1, 3),
      float_unary(
          "sin", sin, sin_, [](double x) { return std::sin(x); }, -4, 4),
      float_unary(
          "cos", cos, cos_, [](double x) { return std::cos(x); }, -4, 4),
      float_unary(
          "tan", tan, tan_, [](double x) { return std::tan(x); }, -1.4, 1.4),
      float_unary(
          "tanh", tanh, tanh_, [](double x) { return std::tanh(x); }, -3, 3),
      float_unary("sigmoid", sigmoid, sigmoid_, ref_sigmoid, -6, 6),
      float_unary("silu", silu, silu_, ref_silu, -6, 6),
      float_unary(
          "erf", erf, erf_, [](double x) { return std::erf(x); }, -3, 3),

      OpInfo{"gelu", all_dtypes(), [](DType dt) { return unary_samples(dt, -4, 4); },
             [](const Sample& s) {
               return std::vector<Tensor>{gelu(s.args[0]), s.args[0].gelu("tanh")};
             },
             [](const Refs& r) {
               return Refs{ref_unary(r[0], ref_gelu), ref_unary(r[0], ref_gelu_tanh)};
             },
             4.0, float_result},
      OpInfo{"softplus", all_dtypes(), [](DType dt) { return unary_samples(dt, -3, 3); },
             [](const Sample& s) {
               return std::vector<Tensor>{softplus(s.args[0]), s.args[0].softplus(2, 1.5)};
             },
             [](const Refs& r) {
               return Refs{ref_unary(r[0], [](double x) { return ref_softplus(x, 1, 20); }),
                           ref_unary(r[0], [](double x) { return ref_softplus(x, 2, 1.5); })};
             },
             4.0, float_result},

      // uint8 has its own neg entry below (wrap-around).
      same_dtype_unary("neg",
                       {kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64},
                       neg, neg_, [](double x) { return -x; }),
      same_dtype_unary("abs", numeric_dtypes(), abs, abs_, [](double x) { return std::abs(x); }),
      same_dtype_unary("sign", all_dtypes(), sign, sign_, ref_sign),
      same_dtype_unary("relu", numeric_dtypes(), relu, relu_,
                       [](double x) { return x < 0 ? 0.0 : x; }),
      same_dtype_unary("floor", numeric_dtypes(), floor, floor_,
                       [](double x) { return std::floor(x); }),
      same_dtype_unary("ceil", numeric_dtypes(), ceil, ceil_,
                       [](double x) { return std::ceil(x); }),
      // nearbyint rounds half to even in the default rounding mode, as round() must.
      same_dtype_unary("round", numeric_dtypes(), round, round_,
                       [](double x) { return std::nearbyint(x); }),
      same_dtype_unary("trunc", numeric_dtypes(), trunc, trunc_,
                       [](double x) { return std::trunc(x); }),

      OpInfo{"neg",
             {kUInt8},
             [](DType dt) { return unary_samples(dt, 0, 255); },
             [](const Sample& s) { return std::vector<Tensor>{-s.args[0]}; },
             [](const Refs& r) {
               return Refs{ref_unary(r[0], [](double x) { return x == 0 ? 0.0 : 256.0 - x; })};
             },
             4.0,
             same},
      OpInfo{"round",
             {kFloat16, kBFloat16, kFloat32, kFloat64},
             [](DType dt) {
               // Exact halves: round half to even.
               return std::vector<Sample>{
                   {{tensor(std::vector<double>{-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 4.5}, {8})
                         .to(dt)},
                    "halves"}};
             },
             [](const Sample& s) { return std::vector<Tensor>{s.args[0].round()}; },
             [](const Refs& r) {
               return Refs{ref_unary(r[0], [](double x) { return std::nearbyint(x); })};
             },
             4.0,
             same,
             GradSupport::Full,
             // Every value sits on a jump of round(): no derivative there for gradcheck to
             // measure (the "round" entry above checks the zero gradient elsewhere).
             [](const Sample&) { return false; }},

      // Integer bounds, so the references hold for every dtype; uint8 clamps within [0, 5].
      OpInfo{"clamp", numeric_dtypes(), [](DType dt) { return unary_samples(dt, -4, 5); },
             [](const Sample& s) {
               const Tensor& x = s.args[0];
               return std::vector<Tensor>{clamp(x, -1, 2),        clamp_min(x, 1),
                                          x.clamp_max(3),         x.clamp(std::nullopt, 0),
                                          x.clone().clamp_(1, 3), x.clone().clamp_min_(2),
                                          x.clone().clamp_max_(1)};
             },
             [](const Refs& r) {
               auto c = [&](double lo, double hi) {
                 return ref_unary(r[0], [=](double x) { return std::min(std::max(x, lo), hi); });
               };
               const double inf = std::numeric_limits<double>::infinity();
               return Refs{c(-1, 2), c(1, inf), c(-inf, 3), c(-inf, 0),
                           c(1, 3),  c(2, inf), c(-inf, 1)};
             },
             4.0, same},

      // Integer bounds, so the references hold for every dtype (uint8 saturates the lower
      // bound -1 to 0, as clamp does). The "bounds" sample holds values exactly on every bound
      // used here, and (2, 2) / (1, 1) have min_val == max_val.
      OpInfo{"hardtanh", numeric_dtypes(),
             [](DType dt) {
               std::vector<Sample> s = unary_samples(dt, -3, 3);
               const std::vector<double> v = dt == kUInt8
                                                 ? std::vector<double>{0, 1, 2, 3}
                                                 : std::vector<double>{-3, -2, -1, 0, 1, 2, 3};
               s.push_back({{tensor(v, {static_cast<int64_t>(v.size())}).to(dt)}, "bounds"});
               return s;
             },
             [](const Sample& s) {
               const Tensor& x = s.args[0];
               return std::vector<Tensor>{hardtanh(x), hardtanh(x, 0, 2), hardtanh(x, 2, 2),
                                          hardtanh_(x.clone()), hardtanh_(x.clone(), 1, 1)};
             },
             [](const Refs& r) {
               auto c = [&](double lo, double hi) {
                 return ref_unary(r[0], [=](double x) { return std::min(std::max(x, lo), hi); });
               };
               return Refs{c(-1, 1), c(0, 2), c(2, 2), c(-1, 1), c(1, 1)};
             },
             4.0, same, GradSupport::Full,
             // The "bounds" sample sits on the kinks, where the one-sided slopes differ; the
             // zero gradient there is tested in tests/test_elementwise.cpp.
             [](const Sample& s) { return s.note != "bounds"; }},
      // Floating bounds on floating tensors (exact in every floating dtype).
      OpInfo{"hardtanh", floating_dtypes(),
             [](DType dt) {
               std::vector<Sample> s = unary_samples(dt, -1, 1);
               s.push_back({{tensor(std::vector<double>{-1, -0.5, 0, 0.25, 0.5, 1}, {6}).to(dt)},
                            "bounds"});
               return s;
             },
             [](const Sample& s) {
               const Tensor& x = s.args[0];
               return std::vector<Tensor>{hardtanh(x, -0.5, 0.5), hardtanh(x, 0.25, 0.25),
                                          hardtanh_(x.clone(), -0.5, 0.25)};
             },
             [](const Refs& r) {
               auto c = [&](double lo, double hi) {
                 return ref_unary(r[0], [=](double x) { return std::min(std::max(x, lo), hi); });
               };
               return Refs{c(-0.5, 0.5), c(0.25, 0.25), c(-0.5, 0.25)};
             },
             4.0, same, GradSupport::Full, [](const Sample& s) { return s.note != "bounds"; }},

      OpInfo{"pow_scalar", numeric_dtypes(), [](DType dt) { return unary_samples(dt, -3, 4); },
             [](const Sample& s) {
               const Tensor& x = s.args[0];
               return std::vector<Tensor>{pow(x, 2), x.pow(3), pow(x, 0), pow(x, 1),
                                          x.clone().pow_(2)};
             },
             [](const Refs& r) {
               auto p = [&](double e) {
                 return ref_unary(r[0], [=](double x) { return std::pow(x, e); });
               };
               return Refs{p(2), p(3), p(0), p(1), p(2)};
             },
             4.0, same},
      // bool ** int is int64, as result_type(bool tensor, int) says.
      OpInfo{"pow_scalar",
             {kBool},
             [](DType dt) { return unary_samples(dt); },
             [](const Sample& s) { return std::vector<Tensor>{pow(s.args[0], 3)}; },
             [](const Refs& r) { return Refs{r[0]}; },
             4.0,
             [](DType) { return kInt64; }},
      // Floating exponents (each special-cased exponent and a general one) on positive values.
      OpInfo{"pow_scalar", floating_dtypes(), [](DType dt) { return unary_samples(dt, 0.2, 3); },
             [](const Sample& s) {
               const Tensor& x = s.args[0];
               return std::vector<Tensor>{pow(x, 0.5),  pow(x, -0.5), pow(x, -1),
                                          pow(x, -2.0), pow(x, 1.7),  x.clone().pow_(-0.25)};
             },
             [](const Refs& r) {
               auto p = [&](double e) {
                 return ref_unary(r[0], [=](double x) { return std::pow(x, e); });
               };
               return Refs{p(0.5), p(-0.5), p(-1), p(-2), p(1.7), p(-0.25)};
             },
             4.0, same},
      // Integer tensors with a floating exponent compute in float32.
      OpInfo{"pow_scalar", integral_dtypes(), [](DType dt) { return unary_samples(dt, 0, 4); },
             [](const Sample& s) { return std::vector<Tensor>{pow(s.args[0], 1.5)}; },
             [](const Refs& r) {
               return Refs{ref_unary(r[0], [](double x) { return std::pow(x, 1.5); })};
             },
             4.0, [](DType) { return kFloat32; }},

      OpInfo{"isnan", all_dtypes(), special_samples,
             [](const Sample& s) { return std::vector<Tensor>{isnan(s.args[0])}; },
             [](const Refs& r) {
               return Refs{ref_unary(r[0], [](double x) { return double(std::isnan(x)); })};
             },
             4.0, to_bool},
      OpInfo{"isinf", all_dtypes(), special_samples,
             [](const Sample& s) { return std::vector<Tensor>{s.args[0].isinf()}; },
             [](const Refs& r) {
               return Refs{ref_unary(r[0], [](double x) { return double(std::isinf(x)); })};
             },
             4.0, to_bool},
      OpInfo{"isfinite", all_dtypes(), special_samples,
             [](const Sample& s) { return std::vector<Tensor>{s.args[0].isfinite()}; },
             [](const Refs& r) {
               return Refs{ref_unary(r[0], [](double x) { return double(std::isfinite(x)); })};
             },
             4.0, to_bool},
      // Integer samples hold zeros; the floating ones get theirs (and NaN) from special_samples.
      OpInfo{"logical_not", all_dtypes(), special_samples,
             [](const Sample& s) { return std::vector<Tensor>{logical_not(s.args[0])}; },
             [](const Refs& r) {
               return Refs{ref_unary(r[0], [](double x) { return double(x == 0); })};
             },
             4.0, to_bool},
      // In place, self keeps its dtype and holds 1 / 0.
      OpInfo{"logical_not",
             {kInt8, kInt32, kFloat32},
             [](DType dt) { return unary_samples(dt, -1, 1); },
             [](const Sample& s) { return std::vector<Tensor>{s.args[0].clone().logical_not_()}; },
             [](const Refs& r) {
               return Refs{ref_unary(r[0], [](double x) { return double(x == 0); })};
             },
             4.0,
             same},
  };

  // Per-dtype references.
  for (DType dt : integral_dtypes(/*include_bool=*/true)) {
    double (*ref)(double) = nullptr;
    if (dt == kBool)
      ref = [](double x) { return 1.0 - x; };
    else if (dt == kUInt8)
      ref = [](double x) { return 255.0 - x; };
    else
      ref = [](double x) { return -x - 1.0; };  // two's complement
    v.push_back(same_dtype_unary("bitwise_not", {dt}, bitwise_not, bitwise_not_, ref, -50, 50));
    v.push_back(OpInfo{"bitwise_not",
                       {dt},
                       [](DType d) { return unary_samples(d, -50, 50); },
                       [](const Sample& s) { return std::vector<Tensor>{~s.args[0]}; },
                       [ref](const Refs& r) { return Refs{ref_unary(r[0], ref)}; },
                       4.0,
                       same});
  }
  for (DType dt : floating_dtypes()) {
    const double big = largest(dt);
    v.push_back(OpInfo{"nan_to_num",
                       {dt},
                       special_samples,
                       [](const Sample& s) {
                         const Tensor& x = s.args[0];
                         return std::vector<Tensor>{nan_to_num(x), x.nan_to_num(1.0, 2.0, -3.0),
                                                    x.clone().nan_to_num_(std::nullopt, 7.0)};
                       },
                       [big](const Refs& r) {
                         auto f = [&](double nan, double pos, double negv) {
                           return ref_unary(r[0], [=](double x) {
                             return std::isnan(x) ? nan : std::isinf(x) ? (x > 0 ? pos : negv) : x;
                           });
                         };
                         return Refs{f(0, big, -big), f(1, 2, -3), f(0, 7, -big)};
                       },
                       4.0,
                       same});
  }
  v.push_back(OpInfo{"nan_to_num", integral_dtypes(true),
                     [](DType dt) { return unary_samples(dt); },
                     [](const Sample& s) { return std::vector<Tensor>{nan_to_num(s.args[0])}; },
                     [](const Refs& r) { return Refs{r[0]}; }, 4.0, same});
  return v;
}

const OpTableRegistrar reg(entries());

}  // namespace
}  // namespace ember::testing
