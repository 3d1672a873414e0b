// Element-wise ops (core/ops/unary.h, core/ops/binary.h): type promotion, in-place semantics,
// error messages and special values. Values against float64 references for every dtype are in
// the op table (tests/op_table/unary_ops.cpp, binary_ops.cpp).

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/isa.h"
#include "test_util.h"

using namespace ember;
using namespace ember::testing;
using Catch::Contains;

namespace {}  // namespace

TEST_CASE("elementwise: type promotion", "[elementwise]") {
  Tensor i32 = tensor({1, 2, 3});  // int32
  REQUIRE(i32.dtype() == kInt32);

  SECTION("int32 tensor * 2.5 is float32; * 2 stays int32") {
    Tensor r = i32 * 2.5;
    CHECK(r.dtype() == kFloat32);
    CHECK(values(r) == std::vector<double>{2.5, 5.0, 7.5});
    CHECK((i32 * 2).dtype() == kInt32);
    CHECK((2.5 * i32).dtype() == kFloat32);
  }
  SECTION("int32 + int64 is int64") {
    Tensor r = i32 + tensor({int64_t{10}, int64_t{20}, int64_t{30}});
    CHECK(r.dtype() == kInt64);
    CHECK(values(r) == std::vector<double>{11, 22, 33});
  }
  SECTION("float16 tensor + float64 0-dim tensor stays float16") {
    Tensor h = tensor({1.0, 2.0}).to(kFloat16);
    Tensor r = h + scalar_tensor(0.5, kFloat64);
    CHECK(r.dtype() == kFloat16);
    CHECK(values(r) == std::vector<double>{1.5, 2.5});
    // A 0-dim tensor of a higher category does promote, to its own dtype: int32 + float64 0-dim
    // is float64 (a C++ double would give the default float32).
    CHECK((i32 + scalar_tensor(0.5, kFloat64)).dtype() == kFloat64);
    CHECK((i32 + 0.5).dtype() == kFloat32);
  }
  SECTION("bool + bool is bool (logical or)") {
    Tensor a = tensor({true, true, false, false});
    Tensor b = tensor({true, false, true, false});
    Tensor r = a + b;
    CHECK(r.dtype() == kBool);
    CHECK(values(r) == std::vector<double>{1, 1, 1, 0});
    CHECK((a + 1).dtype() == kInt64);
  }
  SECTION("a C++ double reaches a float64 tensor unrounded") {
    Tensor d = tensor({1.0, 3.0});
    CHECK(values(d * 0.1) == std::vector<double>{0.1, 3.0 * 0.1});
    CHECK(values(d == 1.0) == std::vector<double>{1, 0});
    CHECK(values(tensor({0.1}) == 0.1) == std::vector<double>{1});
  }
  SECTION("true division of integers gives float32; rounding modes keep the dtype") {
    Tensor a = tensor({7, -7}), b = tensor({2, 2});
    Tensor q = a / b;
    CHECK(q.dtype() == kFloat32);
    CHECK(values(q) == std::vector<double>{3.5, -3.5});
    CHECK(div(a, b, "trunc").dtype() == kInt32);
    CHECK(values(div(a, b, "trunc")) == std::vector<double>{3, -3});
    CHECK(values(div(a, b, "floor")) == std::vector<double>{3, -4});
    CHECK(values(1 / tensor({2, 4})) == std::vector<double>{0.5, 0.25});
  }
  SECTION("float math on integers gives the default float dtype") {
    CHECK(exp(i32).dtype() == kFloat32);
    CHECK(sigmoid(tensor({true})).dtype() == kFloat32);
    CHECK(atan2(i32, i32).dtype() == kFloat32);
    CHECK(values(sqrt(tensor({4, 9}))) == std::vector<double>{2, 3});
  }
  SECTION("dtype-preserving ops keep integer dtypes") {
    CHECK(neg(i32).dtype() == kInt32);
    CHECK(abs(tensor({-3, 4})).dtype() == kInt32);
    CHECK(values(abs(tensor({-3, 4}))) == std::vector<double>{3, 4});
    CHECK(floor(i32).dtype() == kInt32);
    CHECK(values(round(i32)) == std::vector<double>{1, 2, 3});
    CHECK(relu(tensor({-1, 2})).dtype() == kInt32);
    CHECK(clamp(i32, 2).dtype() == kInt32);
  }
  SECTION("comparisons give bool; int vs 2.5 compares in float") {
    Tensor r = i32 > 2.5;
    CHECK(r.dtype() == kBool);
    CHECK(values(r) == std::vector<double>{0, 0, 1});
    CHECK(values(i32 == tensor({1.0, 0.0, 3.0})) == std::vector<double>{1, 0, 1});
  }
  SECTION("pow with a Scalar exponent follows result_type") {
    CHECK(pow(i32, 2).dtype() == kInt32);
    CHECK(values(pow(i32, 2)) == std::vector<double>{1, 4, 9});
    CHECK(pow(i32, 0.5).dtype() == kFloat32);
    CHECK(pow(tensor({true}), 2).dtype() == kInt64);
    CHECK(values(pow(2, tensor({0, 3}))) == std::vector<double>{1, 8});
  }
  SECTION("where promotes a and b, not the condition") {
    Tensor c = tensor({true, false});
    CHECK(where(c, tensor({1, 2}), tensor({0.5, 0.25})).dtype() == kFloat64);
    CHECK(where(c, 1, 0).dtype() == kInt64);
    CHECK(where(c, 1.5, 0).dtype() == kFloat32);
    CHECK(values(where(c, tensor({1, 2}), 7)) == std::vector<double>{1, 7});
    CHECK(where(c, tensor({1, 2}), 7).dtype() == kInt32);
  }
  SECTION("logical ops take mixed dtypes and give bool") {
    Tensor r = logical_and(tensor({0.0, 1.5, kNaN}), tensor({1, 1, 1}));
    CHECK(r.dtype() == kBool);
    CHECK(values(r) == std::vector<double>{0, 1, 1});
    CHECK(values(logical_xor(tensor({true, false}), tensor({2, 0}))) == std::vector<double>{0, 0});
  }
}

TEST_CASE("elementwise: in-place ops bump the version and keep self", "[elementwise]") {
  Tensor t = tensor({1.0f, -2.0f, 3.0f});
  auto bumps = [&](auto&& op) {
    uint32_t v = t.version();
    const Tensor& r = op();
    CHECK(r.is_same(t));
    return t.version() - v;
  };
  CHECK(bumps([&]() -> const Tensor& { return t.add_(1); }) == 1);
  CHECK(bumps([&]() -> const Tensor& { return t.mul_(tensor({2.0f, 2.0f, 2.0f})); }) == 1);
  CHECK(bumps([&]() -> const Tensor& { return t.div_(2); }) == 1);
  CHECK(bumps([&]() -> const Tensor& { return t.exp_(); }) == 1);
  CHECK(bumps([&]() -> const Tensor& { return t.clamp_(0, 5); }) == 1);
  CHECK(bumps([&]() -> const Tensor& { return t.neg_(); }) == 1);
  CHECK(bumps([&]() -> const Tensor& { return t.pow_(2); }) == 1);
  CHECK(bumps([&]() -> const Tensor& {
          return t.masked_fill_(tensor({true, false, false}), 9);
        }) == 1);
  CHECK(bumps([&]() -> const Tensor& { return t.lerp_(zeros({3}), 0.5); }) == 1);
  CHECK(bumps([&]() -> const Tensor& { return t.addcmul_(t, t); }) == 1);
  CHECK(bumps([&]() -> const Tensor& { return t.round_(); }) == 1);
  CHECK(bumps([&]() -> const Tensor& { return t.nan_to_num_(); }) == 1);
  // [1, -2, 3] through the chain above ends at [25, 0, 169].
  CHECK(values(t) == std::vector<double>{25, 0, 169});

  SECTION("a view shares the version counter of its base") {
    Tensor base = zeros({4});
    Tensor v = base.narrow(0, 1, 2);
    uint32_t before = base.version();
    v.add_(1);
    CHECK(base.version() > before);
    CHECK(values(base) == std::vector<double>{0, 1, 1, 0});
  }
  SECTION("a failed in-place op leaves self untouched") {
    Tensor i = tensor({5, 6});
    uint32_t before = i.version();
    CHECK_THROWS(i.div_(tensor({1, 0}), "floor"));
    CHECK(values(i) == std::vector<double>{5, 6});
    CHECK(i.version() == before);
  }
}

TEST_CASE("elementwise: in-place result type must fit self", "[elementwise]") {
  Tensor i = tensor({1, 2});
  CHECK_THROWS_WITH(i.add_(1.5), Contains("add_") && Contains("float32") && Contains("int32"));
  CHECK_THROWS_WITH(i.add_(1.5), Contains("can't be cast"));
  CHECK_THROWS_WITH(i.exp_(), Contains("exp_") && Contains("can't be cast"));
  CHECK_THROWS_WITH(i.div_(tensor({2, 2})), Contains("div_"));
  CHECK_THROWS_WITH(i.pow_(0.5), Contains("pow_") && Contains("can't be cast"));
  CHECK_THROWS_WITH(i.add_(tensor({1, 1}), 0.5), Contains("alpha"));
  // Integer results into an integer self are fine, with any rounding mode.
  i.div_(tensor({2, 2}), "floor");
  CHECK(values(i) == std::vector<double>{0, 1});
  // An in-place op cannot grow self by broadcasting.
  CHECK_THROWS_WITH(tensor({1.0f}).add_(tensor({1.0f, 2.0f})), Contains("add_"));
}

TEST_CASE("elementwise: float16 in place with a float32 other", "[elementwise]") {
  Tensor h = tensor({1.0, 2.0, 3.0}).to(kFloat16);
  Tensor f = tensor({0.25f, 0.5f, 1.0f / 3.0f});
  h.add_(f);
  CHECK(h.dtype() == kFloat16);
  std::vector<double> v = values(h);
  CHECK(v[0] == 1.25);
  CHECK(v[1] == 2.5);
  CHECK(v[2] == Approx(3.0 + 1.0 / 3.0).epsilon(1e-3));
  h.mul_(tensor({2.0f, 2.0f, 2.0f}));
  CHECK(values(h)[0] == 2.5);
  CHECK(h.dtype() == kFloat16);
}

TEST_CASE("elementwise: broadcasting errors name the op and the shapes", "[elementwise]") {
  Tensor a = zeros({2, 3}), b = zeros({4});
  CHECK_THROWS_WITH(add(a, b), Contains("add: shapes [2, 3] and [4] cannot be broadcast"));
  CHECK_THROWS_WITH(a * b, Contains("mul: shapes [2, 3] and [4]"));
  CHECK_THROWS_WITH(where(zeros({2}, kBool), a, b), Contains("where"));
  CHECK_THROWS_WITH(a.masked_fill_(zeros({4}, kBool), 1), Contains("masked_fill_"));
  CHECK_THROWS_WITH(lerp(a, b, 0.5), Contains("lerp"));
  // Broadcasting itself works across all three operands of where.
  Tensor r = where(tensor({true, false}).view({2, 1}), tensor({1.0, 2.0, 3.0}), scalar_tensor(0.0));
  CHECK(r.sizes() == Shape{2, 3});
  CHECK(values(r) == std::vector<double>{1, 2, 3, 0, 0, 0});
}

TEST_CASE("elementwise: dtype errors", "[elementwise]") {
  Tensor f = tensor({1.0f, 2.0f});
  Tensor i = tensor({1, 2});
  SECTION("bitwise ops reject floating tensors") {
    CHECK_THROWS_WITH(bitwise_and(f, i), Contains("bitwise_and") && Contains("float32"));
    CHECK_THROWS_WITH(i | f, Contains("bitwise_or") && Contains("float32"));
    CHECK_THROWS_WITH(i ^ f, Contains("bitwise_xor"));
    CHECK_THROWS_WITH(~f, Contains("bitwise_not") && Contains("float32"));
    CHECK(values(tensor({12, 10}) & tensor({10, 6})) == std::vector<double>{8, 2});
    CHECK(values(~tensor({true, false})) == std::vector<double>{0, 1});
  }
  SECTION("where needs a bool condition") {
    CHECK_THROWS_WITH(where(i, f, f), Contains("where") && Contains("bool") && Contains("int32"));
    CHECK_THROWS_WITH(where(f, f, f), Contains("float32"));
  }
  SECTION("masked_fill needs a bool mask") {
    CHECK_THROWS_WITH(f.masked_fill(i, 0), Contains("masked_fill") && Contains("int32"));
  }
  SECTION("neg and sub on bool") {
    CHECK_THROWS_WITH(-tensor({true}), Contains("neg") && Contains("logical_not"));
    CHECK_THROWS_WITH(tensor({true}) - tensor({false}), Contains("sub") && Contains("bool"));
  }
  SECTION("addcdiv of integer tensors") {
    CHECK_THROWS_WITH(addcdiv(i, i, i), Contains("addcdiv") && Contains("int32"));
    CHECK(addcdiv(i, f, i).dtype() == kFloat32);
  }
  SECTION("integer powers with negative Scalar exponents") {
    CHECK_THROWS_WITH(pow(i, -1), Contains("pow") && Contains("negative"));
    // A tensor exponent truncates 1 / base^k as PyTorch does.
    CHECK(values(pow(tensor({1, -1, -1, 2}), tensor({-2, -3, -2, -1}))) ==
          std::vector<double>{1, -1, 1, 0});
  }
  SECTION("bad arguments") {
    CHECK_THROWS_WITH(div(f, f, "round"), Contains("div") && Contains("rounding_mode"));
    CHECK_THROWS_WITH(gelu(f, "fast"), Contains("gelu") && Contains("fast"));
    CHECK_THROWS_WITH(clamp(f, std::nullopt, std::nullopt), Contains("clamp"));
    CHECK_THROWS_WITH(lerp(i, i, 0.5), Contains("lerp") && Contains("int32"));
    CHECK_THROWS_WITH(relu(tensor({true})), Contains("relu") && Contains("bool"));
  }
}

TEST_CASE("elementwise: integer division by zero raises", "[elementwise]") {
  Tensor a = tensor({5, -7, 9}), z = tensor({1, 0, 2});
  CHECK_THROWS_WITH(div(a, z, "floor"), Contains("div: ZeroDivisionError"));
  CHECK_THROWS_WITH(div(a, z, "trunc"), Contains("div: ZeroDivisionError"));
  CHECK_THROWS_WITH(remainder(a, z), Contains("remainder: ZeroDivisionError"));
  CHECK_THROWS_WITH(a.remainder(0), Contains("remainder: ZeroDivisionError"));
  CHECK_THROWS_WITH(a.div_(0, "trunc"), Contains("div_: ZeroDivisionError"));
  // A zero far into a large tensor, found by the parallel scan.
  Tensor big = ones({200000}, kInt64);
  big.narrow(0, 199999, 1).fill_(0);
  CHECK_THROWS_WITH(div(ones({200000}, kInt64), big, "floor"), Contains("ZeroDivisionError"));
  // True division never raises: int / 0 is inf or NaN in float.
  CHECK(values(a / z)[1] == -kInf);
  // Floating rounding divisions by zero follow IEEE.
  Tensor fa = tensor({1.0, -1.0, 0.0}), fz = zeros({3}, kFloat64);
  std::vector<double> fl = values(div(fa, fz, "floor"));
  CHECK(fl[0] == kInf);
  CHECK(fl[1] == -kInf);
  CHECK(std::isnan(fl[2]));
  CHECK(std::isnan(values(remainder(fa, fz))[0]));
  // INT_MIN / -1 wraps instead of trapping.
  const int64_t mn = std::numeric_limits<int64_t>::min();
  Tensor m = tensor({mn, int64_t{7}});
  CHECK(values(div(m, tensor({int64_t{-1}, int64_t{-1}}), "floor"))[1] == -7);
  CHECK(values(div(m, tensor({int64_t{-1}, int64_t{-1}}), "trunc"))[0] == static_cast<double>(mn));
  CHECK(values(remainder(m, tensor({int64_t{-1}, int64_t{-1}}))) == std::vector<double>{0, 0});
}

TEST_CASE("elementwise: Python semantics of remainder and floor division", "[elementwise]") {
  Tensor a = tensor({7, -7, 7, -7}), b = tensor({3, 3, -3, -3});
  CHECK(values(remainder(a, b)) == std::vector<double>{1, 2, -2, -1});
  CHECK(values(div(a, b, "floor")) == std::vector<double>{2, -3, -3, 2});
  CHECK(values(div(a, b, "trunc")) == std::vector<double>{2, -2, -2, 2});
  Tensor fa = tensor({7.5, -7.5, 7.5, -7.5}), fb = tensor({2.0, 2.0, -2.0, -2.0});
  CHECK(values(remainder(fa, fb)) == std::vector<double>{1.5, 0.5, -0.5, -1.5});
  CHECK(values(div(fa, fb, "floor")) == std::vector<double>{3, -4, -4, 3});
  // fmod-based floor division is exact where a / b rounds up to an integer.
  CHECK(values(div(tensor({1.0}), tensor({0.1}), "floor"))[0] == 9.0);
}

TEST_CASE("elementwise: gelu exact and tanh approximation", "[elementwise]") {
  const std::vector<double> xs{-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0};
  Tensor x = tensor(xs, {7});
  std::vector<double> exact = values(gelu(x)), approx = values(gelu(x, "tanh"));
  for (size_t k = 0; k < xs.size(); ++k) {
    const double v = xs[k];
    INFO("x = " << v);
    CHECK(exact[k] == Approx(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)))).margin(1e-15));
    const double inner = std::sqrt(2.0 / 3.14159265358979323846) * (v + 0.044715 * v * v * v);
    CHECK(approx[k] == Approx(0.5 * v * (1.0 + std::tanh(inner))).margin(1e-15));
  }
  // Known values (PyTorch): gelu(1) = 0.8413447, gelu(1, "tanh") = 0.8411920.
  CHECK(exact[5] == Approx(0.8413447460685429).epsilon(1e-12));
  CHECK(approx[5] == Approx(0.8411919906082768).epsilon(1e-12));
  CHECK(exact[5] != approx[5]);
  CHECK(exact[3] == 0.0);
  // float32 agrees with float64 to float precision.
  std::vector<double> f32 = values(gelu(x.to(kFloat32), "tanh"));
  for (size_t k = 0; k < xs.size(); ++k) CHECK(f32[k] == Approx(approx[k]).margin(1e-6));
}

TEST_CASE("elementwise: round half to even", "[elementwise]") {
  Tensor x = tensor({0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, 2.5001});
  CHECK(values(round(x)) == std::vector<double>{0, 2, 2, -0.0, -2, -2, 2, 3});
  CHECK(std::signbit(values(round(x))[3]));
  for (DType dt : {kFloat16, kBFloat16, kFloat32}) {
    INFO(dt);
    CHECK(values(round(tensor({0.5, 1.5, 2.5, 3.5}).to(dt))) == std::vector<double>{0, 2, 2, 4});
  }
  Tensor t = tensor({2.5f, 3.5f});
  t.round_();
  CHECK(values(t) == std::vector<double>{2, 4});
}

TEST_CASE("elementwise: special values", "[elementwise]") {
  Tensor s = tensor({kNaN, 1.0, -kInf, kInf});
  SECTION("maximum and minimum propagate NaN") {
    Tensor o = tensor({0.0, kNaN, 5.0, 5.0});
    std::vector<double> mx = values(maximum(s, o)), mn = values(minimum(s, o));
    CHECK(std::isnan(mx[0]));
    CHECK(std::isnan(mx[1]));
    CHECK(mx[2] == 5.0);
    CHECK(mx[3] == kInf);
    CHECK(std::isnan(mn[0]));
    CHECK(std::isnan(mn[1]));
    CHECK(mn[2] == -kInf);
    CHECK(values(maximum(tensor({true, false}), tensor({false, false}))) ==
          std::vector<double>{1, 0});
  }
  SECTION("nan_to_num defaults to the dtype's extremes") {
    CHECK(values(nan_to_num(s)) == std::vector<double>{0, 1, std::numeric_limits<double>::lowest(),
                                                       std::numeric_limits<double>::max()});
    CHECK(values(nan_to_num(s.to(kFloat16))) == std::vector<double>{0, 1, -65504, 65504});
    CHECK(values(s.nan_to_num(5.0, 6.0, 7.0)) == std::vector<double>{5, 1, 7, 6});
    CHECK(values(nan_to_num(tensor({3, 4}))) == std::vector<double>{3, 4});
  }
  SECTION("isnan, isinf, isfinite") {
    CHECK(values(isnan(s)) == std::vector<double>{1, 0, 0, 0});
    CHECK(values(isinf(s)) == std::vector<double>{0, 0, 1, 1});
    CHECK(values(isfinite(s)) == std::vector<double>{0, 1, 0, 0});
    CHECK(values(isfinite(tensor({1, 2}))) == std::vector<double>{1, 1});
    CHECK(isnan(tensor({1, 2})).dtype() == kBool);
  }
  SECTION("clamp keeps NaN; sign(NaN) is 0; relu keeps NaN") {
    std::vector<double> c = values(clamp(s, -1, 1));
    CHECK(std::isnan(c[0]));
    CHECK(c[2] == -1.0);
    CHECK(c[3] == 1.0);
    CHECK(values(sign(s)) == std::vector<double>{0, 1, -1, 1});
    CHECK(std::isnan(values(relu(s))[0]));
  }
  SECTION("clamp of an integer tensor with floating bounds rounds them inward") {
    Tensor i = tensor({-2, 0, 1, 2, 3});
    CHECK(values(clamp(i, 0.5, 2.5)) == std::vector<double>{1, 1, 1, 2, 2});
    CHECK(values(clamp(tensor({uint8_t{0}, uint8_t{200}}), -5, 1000)) ==
          std::vector<double>{0, 200});
  }
  SECTION("sigmoid and softplus saturate without overflow") {
    std::vector<double> sg = values(sigmoid(tensor({-1000.0f, 1000.0f})));
    CHECK(sg == std::vector<double>{0.0, 1.0});
    CHECK(values(softplus(tensor({100.0f})))[0] == 100.0);
  }
}

TEST_CASE("elementwise: masked_fill broadcasting", "[elementwise]") {
  Tensor x = zeros({3});
  Tensor m = tensor({true, false}).view({2, 1});
  Tensor r = masked_fill(x, m, 5);
  CHECK(r.sizes() == Shape{2, 3});
  CHECK(values(r) == std::vector<double>{5, 5, 5, 0, 0, 0});
  // In place, the mask broadcasts to self.
  Tensor y = zeros({2, 3}, kInt32);
  y.masked_fill_(tensor({false, true, false}), 2.7);
  CHECK(values(y) == std::vector<double>{0, 2, 0, 0, 2, 0});
}

TEST_CASE("elementwise: large and strided tensors take the parallel path", "[elementwise]") {
  const int64_t n = 300001;
  Tensor x = arange(n, kFloat32).div(n);
  Tensor y = exp(x);
  Tensor z = sigmoid(x.view({n, 1}).expand({n, 2}).t());  // broadcast, non-contiguous
  REQUIRE(y.numel() == n);
  REQUIRE(z.sizes() == Shape{2, n});
  std::vector<double> xv = values(x), yv = values(y), zv = values(z);
  for (int64_t k = 0; k < n; k += 997) {
    CHECK(yv[k] == Approx(std::exp(xv[k])).epsilon(1e-6));
    CHECK(zv[n + k] == Approx(1.0 / (1.0 + std::exp(-xv[k]))).epsilon(1e-6));
  }
  Tensor w = where(x > 0.5, x, -x);
  std::vector<double> wv = values(w);
  CHECK(wv[n - 1] == Approx(xv[n - 1]));
  CHECK(wv[1] == -xv[1]);
}

TEST_CASE("elementwise: float16 and bfloat16 loops give the same bits contiguous and strided",
          "[elementwise][half]") {
  // Contiguous 16-bit loops run compiled for AVX2 where the CPU has it, strided ones portable
  // (Note [16-bit loops compiled for AVX2] in kernels/cpu/loops.h): every bit must agree,
  // including NaNs, subnormals and the tails that do not fill a vector.
  const int64_t n = 4099;
  std::mt19937 gen(7);
  for (DType dt : {kFloat16, kBFloat16}) {
    INFO(dtype_name(dt));
    std::vector<uint16_t> bits_a(n), bits_b(n);
    for (int64_t i = 0; i < n; ++i) {
      bits_a[i] = static_cast<uint16_t>(gen());
      bits_b[i] = static_cast<uint16_t>(gen());
    }
    Tensor a = from_blob(bits_a.data(), {n}, dt).clone();
    Tensor b = from_blob(bits_b.data(), {n}, dt).clone();
    Tensor wide_a = zeros({n, 2}, dt), wide_b = zeros({n, 2}, dt);
    wide_a.select(1, 0).copy_(a);
    wide_b.select(1, 0).copy_(b);
    const Tensor sa = wide_a.select(1, 0), sb = wide_b.select(1, 0);  // stride 2
    REQUIRE(!sa.is_contiguous());
    auto same_bits = [&](const char* op, const Tensor& x, const Tensor& y) {
      INFO(op);
      REQUIRE(x.dtype() == dt);
      Tensor cx = x.contiguous(), cy = y.contiguous();
      const auto* px = static_cast<const uint16_t*>(cx.data_ptr());
      const auto* py = static_cast<const uint16_t*>(cy.data_ptr());
      // Equal bits, or both NaN: when two NaNs meet, which payload survives depends on the
      // order the compiler gave the operands, in either loop.
      auto is_nan = [&](uint16_t v) {
        return dt == kFloat16 ? (v & 0x7fffu) > 0x7c00u : (v & 0x7fffu) > 0x7f80u;
      };
      int64_t differ = 0;
      for (int64_t i = 0; i < n; ++i) differ += px[i] != py[i] && !(is_nan(px[i]) && is_nan(py[i]));
      CHECK(differ == 0);
    };
    same_bits("a + b", a + b, sa + sb);
    same_bits("a * b", a * b, sa * sb);
    same_bits("a / b", a / b, sa / sb);
    same_bits("a.add(b, 0.5)", a.add(b, 0.5), sa.add(sb, 0.5));
    same_bits("exp(a)", exp(a), exp(sa));
    same_bits("sqrt(abs(a))", sqrt(abs(a)), sqrt(abs(sa)));
    same_bits("tanh(a)", tanh(a), tanh(sa));
    same_bits("relu(a)", relu(a), relu(sa));
    same_bits("maximum(a, b)", maximum(a, b), maximum(sa, sb));
    same_bits("clamp(a, -1, 2)", clamp(a, -1.0, 2.0), clamp(sa, -1.0, 2.0));
    // And both are the scalar definition: round(float(a) + float(b)).
    Tensor sum = a + b;
    const auto* ps = static_cast<const uint16_t*>(sum.data_ptr());
    for (int64_t i = 0; i < n; i += 7) {
      const uint16_t want = dt == kFloat16
                                ? Half(static_cast<float>(Half::from_bits(bits_a[i])) +
                                       static_cast<float>(Half::from_bits(bits_b[i])))
                                      .x
                                : BFloat16(static_cast<float>(BFloat16::from_bits(bits_a[i])) +
                                           static_cast<float>(BFloat16::from_bits(bits_b[i])))
                                      .x;
      const float got = dt == kFloat16 ? static_cast<float>(Half::from_bits(ps[i]))
                                       : static_cast<float>(BFloat16::from_bits(ps[i]));
      if (std::isnan(got)) continue;  // NaN + x: which NaN comes out is the hardware's choice
      REQUIRE(ps[i] == want);
    }
  }
}

TEST_CASE("elementwise: hardtanh", "[elementwise]") {
  SECTION("the gradient is 0 on the bounds, as PyTorch's hardtanh_backward") {
    for (DType dt : {kFloat64, kFloat32, kFloat16, kBFloat16}) {
      INFO(dtype_name(dt));
      Tensor x = tensor(std::vector<double>{-2, -1, -0.5, 0, 0.5, 1, 2}, {7}).to(dt);
      x.requires_grad_();
      Tensor y = hardtanh(x);
      CHECK(y.grad_fn()->name() == "HardtanhBackward");
      (y * 3.0).sum().backward();
      CHECK(values(x.grad()) == std::vector<double>{0, 0, 3, 3, 3, 0, 0});
    }
    // min_val == max_val: every point is on a bound; clamp instead passes g on its bounds.
    Tensor x = tensor(std::vector<double>{-1, 0.5, 2}, {3}, kFloat64).requires_grad_();
    hardtanh(x, 0.5, 0.5).sum().backward();
    CHECK(values(x.grad()) == std::vector<double>{0, 0, 0});
    Tensor z = tensor(std::vector<double>{-1, 0.5, 2}, {3}, kFloat64).requires_grad_();
    clamp(z, 0.5, 0.5).sum().backward();
    CHECK(values(z.grad()) == std::vector<double>{0, 1, 0});
  }
  SECTION("in place on a non-leaf records the same derivative") {
    Tensor x = tensor(std::vector<double>{-1, 0, 1, 3}, {4}, kFloat64).requires_grad_();
    Tensor y = x * 1.0;
    hardtanh_(y, 0, 1);
    CHECK(values(y) == std::vector<double>{0, 0, 1, 1});
    y.sum().backward();
    CHECK(values(x.grad()) == std::vector<double>{0, 0, 0, 0});
    Tensor w = tensor(std::vector<double>{0.5}, {1}, kFloat64).requires_grad_();
    Tensor v = w * 1.0;
    hardtanh_(v).sum().backward();
    CHECK(values(w.grad()) == std::vector<double>{1});
  }
  SECTION("NaN stays NaN; integer tensors keep their dtype") {
    std::vector<double> h = values(hardtanh(tensor({std::nanf(""), -3.0f, 0.25f})));
    CHECK(std::isnan(h[0]));
    CHECK(h[1] == -1.0);
    CHECK(h[2] == 0.25);
    Tensor i = hardtanh(tensor({-5, 0, 7}), -2, 3);
    CHECK(i.dtype() == kInt32);
    CHECK(values(i) == std::vector<double>{-2, 0, 3});
  }
  SECTION("errors name the op") {
    Tensor f = tensor({1.0f, 2.0f});
    CHECK_THROWS_WITH(hardtanh(f, 2, 1),
                      Contains("hardtanh") && Contains("min_val cannot be greater than max_val"));
    CHECK_THROWS_WITH(hardtanh(f, 0.5, 0.25), Contains("min_val cannot be greater"));
    CHECK_THROWS_WITH(hardtanh_(f, 1, -1), Contains("hardtanh_") && Contains("min_val"));
    CHECK_THROWS_WITH(hardtanh(tensor({true}), 0, 1), Contains("hardtanh") && Contains("bool"));
    CHECK_NOTHROW(hardtanh(f, 1.5, 1.5));
  }
}

TEST_CASE("round(decimals) rounds to decimal places as PyTorch does", "[elementwise]") {
  // PyTorch 1.13's torch.round(z, decimals=...) on these float32 values.
  Tensor z = tensor(std::vector<float>{1.2345f, -2.5551f, 1234.5678f, 0.125f, -0.0049f, 2.675f});
  CHECK(values(z.round(2)) ==
        values(tensor(std::vector<float>{1.23f, -2.56f, 1234.57f, 0.12f, -0.0f, 2.68f})));
  CHECK(values(z.round(-2)) == std::vector<double>{0, -0.0, 1200, 0, -0.0, 0});
  CHECK(values(z.round(1)) ==
        values(tensor(std::vector<float>{1.2f, -2.6f, 1234.6f, 0.1f, -0.0f, 2.7f})));
  CHECK(values(z.round(0)) == values(z.round()));
  CHECK(values(z.to(kFloat64).round(3)) ==
        std::vector<double>{1.235, -2.555, 1234.568, 0.125, -0.005, 2.675});
  // The 16-bit floats round in float32 (PyTorch 1.13 has no float16 kernel for it).
  Tensor h = z.to(kFloat16);
  CHECK(h.round(1).dtype() == kFloat16);
  CHECK(values(h.round(1)) == values(h.to(kFloat32).round(1).to(kFloat16)));
  Tensor w = z.clone();
  w.round_(1);
  CHECK(values(w) == values(z.round(1)));
  CHECK_THROWS_WITH(arange(3).round(1), Contains("round") && Contains("int64"));
  // The gradient is 0, as round's.
  Tensor x = z.clone().requires_grad_();
  x.round(2).sum().backward();
  CHECK(values(x.grad()) == std::vector<double>(6, 0.0));
}

TEST_CASE("elementwise: the AVX2 loops and the baseline loops give the same bits",
          "[elementwise][half][reduce]") {
  // kernels/cpu/isa.h: casts, 16-bit element-wise ops and reductions computed with the AVX2
  // copies and with the baseline loops must agree exactly (on a CPU without AVX2 both runs are
  // the baseline and the test compares it with itself).
  manual_seed(9);
  const int64_t n = 7 * 14287;  // 100009: not a multiple of any vector width
  Tensor f = randn({n}) * 100;
  Tensor h = f.to(kFloat16), b = f.to(kBFloat16);
  auto run = [&] {
    return std::vector<Tensor>{f.to(kFloat16),
                               f.to(kBFloat16),
                               h.to(kFloat32),
                               b.to(kFloat32),
                               h + h * h,
                               b * b - b,
                               exp(h / 64),
                               f.sum(),
                               h.sum(),
                               b.sum(),
                               f.view({7, -1}).sum({1}),
                               f.max(),
                               f.argmax(),
                               f.to(kFloat64).sum()};
  };
  const bool prev = kernels::cpu::set_use_avx2(true);
  std::vector<Tensor> fast = run();
  kernels::cpu::set_use_avx2(false);
  std::vector<Tensor> baseline = run();
  kernels::cpu::set_use_avx2(prev);
  REQUIRE(fast.size() == baseline.size());
  for (size_t i = 0; i < fast.size(); ++i) {
    INFO("result " << i);
    REQUIRE(fast[i].dtype() == baseline[i].dtype());
    REQUIRE(fast[i].sizes() == baseline[i].sizes());
    CHECK(std::memcmp(fast[i].contiguous().data_ptr(), baseline[i].contiguous().data_ptr(),
                      fast[i].nbytes()) == 0);
  }
}
