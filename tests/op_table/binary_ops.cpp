// Op-table entries for the binary element-wise family (core/ops/binary.h), including the
// ternary where / lerp / addcmul / addcdiv and masked_fill. Where an op has an in-place form the
// entry also runs it, on a copy of the first input expanded to the broadcast shape.

#include <cmath>
#include <cstdint>

#include "op_table.h"

namespace ember::testing {
namespace {

DType same(DType dt) { return dt; }
DType float_result(DType dt) { return is_floating(dt) ? dt : kFloat32; }
DType to_bool(DType) { return kBool; }

// A copy of `a` with the broadcast shape of all of `others`: a valid `self` for an in-place op.
Tensor self_for(const Tensor& a, std::initializer_list<Tensor> others) {
  Shape shape = a.sizes();
  for (const Tensor& o : others) shape = broadcast_shapes(shape, o.sizes(), "self_for");
  return a.expand(shape).clone();
}

// Keep integer results in range for uint8 (no wrap-around in the reference).
std::vector<Sample> small_binary(DType dt) { return binary_samples(dt, 0.0, 5.0, 0.0, 5.0); }

// Values rounded to integers in place (layouts kept), so that floating samples also hold
// equal pairs and zeros.
std::vector<Sample> integer_valued(std::vector<Sample> samples) {
  for (Sample& s : samples)
    for (Tensor& t : s.args)
      if (t.is_floating_point() && t.numel() > 0) t.copy_(t.to(kInt64));
  return samples;
}

// Divisors bounded away from zero, of both signs (uint8: positive only).
std::vector<Sample> divisor_samples(DType dt) {
  if (dt == kBool) return binary_samples(dt);
  std::vector<Sample> s = binary_samples(dt, -4, 4, 0.5, 3);
  if (dt != kUInt8) {
    for (Sample& n : binary_samples(dt, -4, 4, -3, -0.5)) {
      n.note = "negative divisor, " + n.note;
      s.push_back(std::move(n));
    }
  }
  return s;
}

struct Range {
  DType dtype;
  double lo, hi;
};

// Three operands with broadcasting, sizes 0 and 1, and each operand non-contiguous in turn.
std::vector<Sample> ternary_samples(Range r0, Range r1, Range r2) {
  std::vector<Sample> s;
  uint64_t seed = 301;
  auto make = [&](const Range& r, const Shape& shape) {
    return random_tensor(shape, r.dtype, r.lo, r.hi, seed++);
  };
  auto add = [&](const Shape& a, const Shape& b, const Shape& c, const std::string& note) {
    s.push_back({{make(r0, a), make(r1, b), make(r2, c)}, note});
  };
  add({}, {}, {}, "0-dim");
  add({5}, {5}, {5}, "same shape");
  add({0}, {0}, {0}, "empty");
  add({1}, {1}, {1}, "size 1");
  add({3, 4}, {3, 4}, {3, 4}, "2-D");
  add({3, 1}, {1, 4}, {4}, "broadcast [3,1] [1,4] [4]");
  add({2, 3, 4}, {4}, {3, 1}, "broadcast [2,3,4] [4] [3,1]");
  add({}, {2, 3}, {3}, "0-dim with [2,3] and [3]");
  add({2, 0, 3}, {3}, {1}, "empty broadcast");
  for (int k = 0; k < 3; ++k) {
    std::vector<Tensor> args{make(r0, {4, 5}), make(r1, {4, 5}), make(r2, {4, 5})};
    args[k] = noncontiguous(args[k]);
    s.push_back({args, "non-contiguous operand " + std::to_string(k)});
  }
  return s;
}

// (self, mask) with the mask broadcastable to self.
std::vector<Sample> masked_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 501;
  auto add = [&](Tensor self, const Shape& mask, const std::string& note) {
    s.push_back({{std::move(self), random_tensor(mask, kBool, 0, 1, seed++)}, note});
  };
  add(random_tensor({}, dt, -3, 3, seed++), {}, "0-dim");
  add(random_tensor({5}, dt, -3, 3, seed++), {5}, "same shape");
  add(random_tensor({0}, dt, -3, 3, seed++), {0}, "empty");
  add(random_tensor({3, 4}, dt, -3, 3, seed++), {4}, "mask [4] on [3,4]");
  add(random_tensor({3, 4}, dt, -3, 3, seed++), {3, 1}, "mask [3,1] on [3,4]");
  add(random_tensor({2, 3, 4}, dt, -3, 3, seed++), {}, "0-dim mask");
  add(random_tensor({2, 0, 3}, dt, -3, 3, seed++), {3}, "empty self");
  add(noncontiguous(random_tensor({4, 5}, dt, -3, 3, seed++)), {4, 5}, "non-contiguous self");
  s.push_back({{random_tensor({4, 5}, dt, -3, 3, seed++),
                noncontiguous(random_tensor({4, 5}, kBool, 0, 1, seed++))},
               "non-contiguous mask"});
  return s;
}

double py_mod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
int64_t bits(double v) { return static_cast<int64_t>(v); }
double ref_lerp(double a, double b, double w) { return a + w * (b - a); }

// A comparison entry: tensor and Scalar forms and the operator.
OpInfo comparison(const char* name, Tensor (*fn)(const Tensor&, const Tensor&),
                  Tensor (*fn_scalar)(const Tensor&, const Scalar&),
                  Tensor (*op)(const Tensor&, const Tensor&), bool (*ref)(double, double)) {
  return OpInfo{name,
                all_dtypes(),
                [](DType dt) { return integer_valued(binary_samples(dt, -2, 2, -2, 2)); },
                [fn, fn_scalar, op](const Sample& s) {
                  return std::vector<Tensor>{fn(s.args[0], s.args[1]), fn_scalar(s.args[0], 1),
                                             op(s.args[0], s.args[1])};
                },
                [ref](const Refs& r) {
                  auto f = [ref](double a, double b) { return double(ref(a, b)); };
                  return Refs{ref_binary(r[0], r[1], f),
                              ref_unary(r[0], [f](double a) { return f(a, 1.0); }),
                              ref_binary(r[0], r[1], f)};
                },
                4.0,
                to_bool};
}

// A logical entry: functional form and the in-place form (self keeps its dtype, holds 1 / 0).
OpInfo logical(const char* name, Tensor (*fn)(const Tensor&, const Tensor&),
               const Tensor& (*fn_)(const Tensor&, const Tensor&), bool (*ref)(bool, bool)) {
  return OpInfo{
      name,
      all_dtypes(),
      [](DType dt) { return integer_valued(binary_samples(dt, -1, 1, -1, 1)); },
      [fn, fn_](const Sample& s) {
        Tensor self = self_for(s.args[0], {s.args[1]});
        return std::vector<Tensor>{fn(s.args[0], s.args[1]), fn_(self, s.args[1]).to(kBool)};
      },
      [ref](const Refs& r) {
        auto f = [ref](double a, double b) { return double(ref(a != 0, b != 0)); };
        return Refs{ref_binary(r[0], r[1], f), ref_binary(r[0], r[1], f)};
      },
      4.0,
      to_bool};
}

// A bitwise entry: functional, in-place and operator forms (integers and bool).
OpInfo bitwise(const char* name, Tensor (*fn)(const Tensor&, const Tensor&),
               const Tensor& (*fn_)(const Tensor&, const Tensor&),
               Tensor (*op)(const Tensor&, const Tensor&), int64_t (*ref)(int64_t, int64_t)) {
  return OpInfo{name,
                integral_dtypes(/*include_bool=*/true),
                [](DType dt) { return binary_samples(dt, -40, 40, -40, 40); },
                [fn, fn_, op](const Sample& s) {
                  Tensor self = self_for(s.args[0], {s.args[1]});
                  return std::vector<Tensor>{fn(s.args[0], s.args[1]), fn_(self, s.args[1]),
                                             op(s.args[0], s.args[1])};
                },
                [ref](const Refs& r) {
                  auto f = [ref](double a, double b) { return double(ref(bits(a), bits(b))); };
                  return Refs{ref_binary(r[0], r[1], f), ref_binary(r[0], r[1], f),
                              ref_binary(r[0], r[1], f)};
                },
                4.0,
                same};
}

std::vector<OpInfo> entries() {
  return {
      OpInfo{"add", numeric_dtypes(), small_binary,
             [](const Sample& s) {
               Tensor self = self_for(s.args[0], {s.args[1]});
               return std::vector<Tensor>{add(s.args[0], s.args[1], 2), self.add_(s.args[1], 2),
                                          s.args[0] + 1};
             },
             [](const Refs& r) {
               auto f = [](double a, double b) { return a + 2 * b; };
               return Refs{ref_binary(r[0], r[1], f), ref_binary(r[0], r[1], f),
                           ref_unary(r[0], [](double a) { return a + 1; })};
             },
             4.0, same},
      // bool + bool is logical or.
      OpInfo{"add",
             {kBool},
             [](DType dt) { return binary_samples(dt); },
             [](const Sample& s) { return one(s.args[0] + s.args[1]); },
             [](const Refs& r) {
               return Refs{
                   ref_binary(r[0], r[1], [](double a, double b) { return double(a || b); })};
             },
             4.0,
             same},
      OpInfo{"sub",
             {kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64},
             [](DType dt) { return binary_samples(dt); },
             [](const Sample& s) {
               return std::vector<Tensor>{sub(s.args[0], s.args[1]), s.args[0] - s.args[1],
                                          3 - s.args[0]};
             },
             [](const Refs& r) {
               auto f = [](double a, double b) { return a - b; };
               return Refs{ref_binary(r[0], r[1], f), ref_binary(r[0], r[1], f),
                           ref_unary(r[0], [](double a) { return 3 - a; })};
             },
             4.0,
             same},
      OpInfo{"mul", all_dtypes(), small_binary,
             [](const Sample& s) { return one(s.args[0] * s.args[1]); },
             [](const Refs& r) {
               return std::vector<RefTensor>{
                   ref_binary(r[0], r[1], [](double a, double b) { return a * b; })};
             },
             4.0, same},

      // True division: bool and integers give float32.
      OpInfo{"div", all_dtypes(), divisor_samples,
             [](const Sample& s) {
               return std::vector<Tensor>{div(s.args[0], s.args[1]), s.args[0] / s.args[1],
                                          s.args[0] / 4, 2 / s.args[1]};
             },
             [](const Refs& r) {
               auto f = [](double a, double b) { return a / b; };
               return Refs{ref_binary(r[0], r[1], f), ref_binary(r[0], r[1], f),
                           ref_unary(r[0], [](double a) { return a / 4; }),
                           ref_unary(r[1], [](double b) { return 2 / b; })};
             },
             4.0, float_result},
      OpInfo{"div", floating_dtypes(), divisor_samples,
             [](const Sample& s) {
               Tensor self = self_for(s.args[0], {s.args[1]});
               self /= s.args[1];
               return one(self);
             },
             [](const Refs& r) {
               return Refs{ref_binary(r[0], r[1], [](double a, double b) { return a / b; })};
             },
             4.0, same},
      OpInfo{"div_trunc", numeric_dtypes(), divisor_samples,
             [](const Sample& s) {
               Tensor self = self_for(s.args[0], {s.args[1]});
               return std::vector<Tensor>{div(s.args[0], s.args[1], "trunc"),
                                          self.div_(s.args[1], "trunc"), s.args[0].div(2, "trunc")};
             },
             [](const Refs& r) {
               auto f = [](double a, double b) { return std::trunc(a / b); };
               return Refs{ref_binary(r[0], r[1], f), ref_binary(r[0], r[1], f),
                           ref_unary(r[0], [](double a) { return std::trunc(a / 2); })};
             },
             4.0, same},
      OpInfo{"div_floor", numeric_dtypes(), divisor_samples,
             [](const Sample& s) {
               Tensor self = self_for(s.args[0], {s.args[1]});
               return std::vector<Tensor>{div(s.args[0], s.args[1], "floor"),
                                          self.div_(s.args[1], "floor"), s.args[0].div(2, "floor")};
             },
             [](const Refs& r) {
               auto f = [](double a, double b) { return std::floor(a / b); };
               return Refs{ref_binary(r[0], r[1], f), ref_binary(r[0], r[1], f),
                           ref_unary(r[0], [](double a) { return std::floor(a / 2); })};
             },
             4.0, same},
      OpInfo{"remainder", numeric_dtypes(), divisor_samples,
             [](const Sample& s) {
               Tensor self = self_for(s.args[0], {s.args[1]});
               return std::vector<Tensor>{remainder(s.args[0], s.args[1]),
                                          self.remainder_(s.args[1]), s.args[0].remainder(3)};
             },
             [](const Refs& r) {
               return Refs{ref_binary(r[0], r[1], py_mod), ref_binary(r[0], r[1], py_mod),
                           ref_unary(r[0], [](double a) { return py_mod(a, 3); })};
             },
             4.0, same},

      // Exponents in [0, 3] (integer powers with negative exponents are in test_elementwise).
      OpInfo{"pow", numeric_dtypes(), [](DType dt) { return binary_samples(dt, -2, 3, 0, 3); },
             [](const Sample& s) {
               Tensor self = self_for(s.args[0], {s.args[1]});
               return std::vector<Tensor>{pow(s.args[0], s.args[1]), self.pow_(s.args[1]),
                                          pow(2, s.args[1])};
             },
             [](const Refs& r) {
               auto f = [](double a, double b) { return std::pow(a, b); };
               return Refs{ref_binary(r[0], r[1], f), ref_binary(r[0], r[1], f),
                           ref_unary(r[1], [](double b) { return std::pow(2.0, b); })};
             },
             4.0, same, GradSupport::Full,
             // A negative base to a fractional power is NaN: no derivative to check there.
             // The positive-base entry below checks the gradients.
             [](const Sample& s) { return !lt(s.args[0], 0).any().item<bool>(); }},
      // Positive bases with exponents of both signs: gradients for base and exponent, in place
      // and with a Scalar base.
      OpInfo{"pow", floating_dtypes(), [](DType dt) { return binary_samples(dt, 0.2, 3, -2, 3); },
             [](const Sample& s) {
               Tensor self = self_for(s.args[0], {s.args[1]});
               return std::vector<Tensor>{pow(s.args[0], s.args[1]), self.pow_(s.args[1]),
                                          pow(0.5, s.args[1])};
             },
             [](const Refs& r) {
               auto f = [](double a, double b) { return std::pow(a, b); };
               return Refs{ref_binary(r[0], r[1], f), ref_binary(r[0], r[1], f),
                           ref_unary(r[1], [](double b) { return std::pow(0.5, b); })};
             },
             4.0, same},

      OpInfo{"maximum", all_dtypes(), [](DType dt) { return binary_samples(dt); },
             [](const Sample& s) {
               Tensor self = self_for(s.args[0], {s.args[1]});
               return std::vector<Tensor>{maximum(s.args[0], s.args[1]), self.maximum_(s.args[1])};
             },
             [](const Refs& r) {
               auto f = [](double a, double b) { return std::max(a, b); };
               return Refs{ref_binary(r[0], r[1], f), ref_binary(r[0], r[1], f)};
             },
             4.0, same},
      OpInfo{"minimum", all_dtypes(), [](DType dt) { return binary_samples(dt); },
             [](const Sample& s) {
               Tensor self = self_for(s.args[0], {s.args[1]});
               return std::vector<Tensor>{minimum(s.args[0], s.args[1]), self.minimum_(s.args[1])};
             },
             [](const Refs& r) {
               auto f = [](double a, double b) { return std::min(a, b); };
               return Refs{ref_binary(r[0], r[1], f), ref_binary(r[0], r[1], f)};
             },
             4.0, same},
      OpInfo{"atan2", all_dtypes(), [](DType dt) { return binary_samples(dt); },
             [](const Sample& s) { return one(atan2(s.args[0], s.args[1])); },
             [](const Refs& r) {
               return Refs{
                   ref_binary(r[0], r[1], [](double a, double b) { return std::atan2(a, b); })};
             },
             4.0, float_result},
      OpInfo{
          "atan2", floating_dtypes(), [](DType dt) { return binary_samples(dt); },
          [](const Sample& s) { return one(self_for(s.args[0], {s.args[1]}).atan2_(s.args[1])); },
          [](const Refs& r) {
            return Refs{
                ref_binary(r[0], r[1], [](double a, double b) { return std::atan2(a, b); })};
          },
          4.0, same},

      comparison("eq", eq, eq, operator==, [](double a, double b) { return a == b; }),
      comparison("ne", ne, ne, operator!=, [](double a, double b) { return a != b; }),
      comparison("lt", lt, lt, operator<, [](double a, double b) { return a < b; }),
      comparison("le", le, le, operator<=, [](double a, double b) { return a <= b; }),
      comparison("gt", gt, gt, operator>, [](double a, double b) { return a > b; }),
      comparison("ge", ge, ge, operator>=, [](double a, double b) { return a >= b; }),

      logical("logical_and", logical_and, logical_and_, [](bool a, bool b) { return a && b; }),
      logical("logical_or", logical_or, logical_or_, [](bool a, bool b) { return a || b; }),
      logical("logical_xor", logical_xor, logical_xor_, [](bool a, bool b) { return a != b; }),

      bitwise("bitwise_and", bitwise_and, bitwise_and_, operator&,
              [](int64_t a, int64_t b) { return a & b; }),
      bitwise("bitwise_or", bitwise_or, bitwise_or_, operator|,
              [](int64_t a, int64_t b) { return a | b; }),
      bitwise("bitwise_xor", bitwise_xor, bitwise_xor_, operator^,
              [](int64_t a, int64_t b) { return a ^ b; }),

      OpInfo{"where", all_dtypes(),
             [](DType dt) {
               return ternary_samples({kBool, 0, 1}, {dt, -3, 3}, {dt, -3, 3});
             },
             [](const Sample& s) {
               return std::vector<Tensor>{where(s.args[0], s.args[1], s.args[2]),
                                          s.args[1].where(s.args[0], s.args[2])};
             },
             [](const Refs& r) {
               auto f = [](double c, double a, double b) { return c != 0 ? a : b; };
               return Refs{ref_ternary(r[0], r[1], r[2], f), ref_ternary(r[0], r[1], r[2], f)};
             },
             4.0, same},

      OpInfo{"lerp", floating_dtypes(),
             [](DType dt) {
               return ternary_samples({dt, -3, 3}, {dt, -3, 3}, {dt, 0, 1});
             },
             [](const Sample& s) {
               const Tensor &a = s.args[0], &b = s.args[1], &w = s.args[2];
               return std::vector<Tensor>{lerp(a, b, 0.3), a.lerp(b, 0.8), lerp(a, b, w),
                                          self_for(a, {b}).lerp_(b, 0.6),
                                          self_for(a, {b, w}).lerp_(b, w)};
             },
             [](const Refs& r) {
               auto with = [&](double w) {
                 return ref_binary(r[0], r[1],
                                   [w](double a, double b) { return ref_lerp(a, b, w); });
               };
               return Refs{with(0.3), with(0.8), ref_ternary(r[0], r[1], r[2], ref_lerp), with(0.6),
                           ref_ternary(r[0], r[1], r[2], ref_lerp)};
             },
             4.0, same},

      OpInfo{"addcmul", numeric_dtypes(),
             [](DType dt) {
               return ternary_samples({dt, -3, 3}, {dt, -3, 3}, {dt, -3, 3});
             },
             [](const Sample& s) {
               const Tensor &a = s.args[0], &b = s.args[1], &c = s.args[2];
               return std::vector<Tensor>{addcmul(a, b, c, 2),
                                          self_for(a, {b, c}).addcmul_(b, c, 2), a.addcmul(b, c)};
             },
             [](const Refs& r) {
               auto f = [](double v) {
                 return [v](double a, double b, double c) { return a + v * b * c; };
               };
               return Refs{ref_ternary(r[0], r[1], r[2], f(2)), ref_ternary(r[0], r[1], r[2], f(2)),
                           ref_ternary(r[0], r[1], r[2], f(1))};
             },
             4.0, same},
      OpInfo{"addcdiv", floating_dtypes(),
             [](DType dt) {
               return ternary_samples({dt, -3, 3}, {dt, -3, 3}, {dt, 0.5, 2});
             },
             [](const Sample& s) {
               const Tensor &a = s.args[0], &b = s.args[1], &c = s.args[2];
               return std::vector<Tensor>{addcdiv(a, b, c, 0.5),
                                          self_for(a, {b, c}).addcdiv_(b, c, -2), a.addcdiv(b, c)};
             },
             [](const Refs& r) {
               auto f = [](double v) {
                 return [v](double a, double b, double c) { return a + v * b / c; };
               };
               return Refs{ref_ternary(r[0], r[1], r[2], f(0.5)),
                           ref_ternary(r[0], r[1], r[2], f(-2)),
                           ref_ternary(r[0], r[1], r[2], f(1))};
             },
             4.0, same},

      OpInfo{"masked_fill", all_dtypes(), masked_samples,
             [](const Sample& s) {
               return std::vector<Tensor>{masked_fill(s.args[0], s.args[1], 1),
                                          s.args[0].clone().masked_fill_(s.args[1], 1)};
             },
             [](const Refs& r) {
               auto f = [](double x, double m) { return m != 0 ? 1.0 : x; };
               return Refs{ref_binary(r[0], r[1], f), ref_binary(r[0], r[1], f)};
             },
             4.0, same},
  };
}

const OpTableRegistrar reg(entries());

}  // namespace
}  // namespace ember::testing
