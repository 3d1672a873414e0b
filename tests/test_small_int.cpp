// The int8 and int16 dtypes against PyTorch 1.13 (tests/golden/gen_small_int.py): the whole
// promotion table, wrapping arithmetic, Python's integer division, the int64 reductions, sort,
// indexing, conversions from float; and the ember-side rules: item<T> and fill_ refuse values
// that overflow (Note [Scalars that overflow]), printing names the dtype.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "golden.h"
#include "test_util.h"

using namespace ember;
using namespace ember::testing;
using Catch::Contains;

namespace {

const Golden& g() { return golden("small_int"); }

// Same dtype, same shape, the same values exactly.
void check_same(const Tensor& got, const Tensor& want, const std::string& what) {
  INFO(what << ": got " << got << ", want " << want);
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.sizes() == want.sizes());
  CHECK(values(got) == values(want));
}

}  // namespace

TEST_CASE("small int: promote_types matches torch.promote_types for every pair", "[int8]") {
  // The golden's dtype list is ember's enum order (Note [DType values are stable]).
  const std::string names = g().file().metadata.at("dtypes");
  std::string ours;
  for (int i = 0; i < kNumDTypes; ++i)
    ours += (i ? "," : "") + std::string(dtype_name(static_cast<DType>(i)));
  REQUIRE(names == ours);
  const Tensor table = g()["promote"];
  REQUIRE(table.sizes() == Shape{kNumDTypes, kNumDTypes});
  for (int i = 0; i < kNumDTypes; ++i) {
    for (int j = 0; j < kNumDTypes; ++j) {
      const DType a = static_cast<DType>(i), b = static_cast<DType>(j);
      const auto want = static_cast<DType>(table.data_ptr<int64_t>()[i * kNumDTypes + j]);
      INFO(dtype_name(a) << " with " << dtype_name(b));
      CHECK(dtype_name(promote_types(a, b)) == std::string(dtype_name(want)));
    }
  }
  CHECK(promote_types(kUInt8, kInt8) == kInt16);
  CHECK(promote_types(kInt8, kInt16) == kInt16);
  CHECK(promote_types(kBool, kInt8) == kInt8);
}

TEST_CASE("small int: dtype basics", "[int8]") {
  CHECK(itemsize(kInt8) == 1);
  CHECK(itemsize(kInt16) == 2);
  CHECK(std::string(dtype_name(kInt8)) == "int8");
  CHECK(std::string(dtype_name(kInt16)) == "int16");
  CHECK(is_integral(kInt8));
  CHECK(is_integral(kInt16));
  CHECK_FALSE(is_floating(kInt16));
  CHECK(dtype_of_v<int8_t> == kInt8);
  CHECK(dtype_of_v<int16_t> == kInt16);
  CHECK(tensor(std::vector<int8_t>{1, -2}).dtype() == kInt8);
  CHECK(tensor(std::vector<int16_t>{1, -2}).dtype() == kInt16);
}

TEST_CASE("small int: arithmetic, division and reductions match PyTorch", "[int8]") {
  for (const char* p : {"int8", "int16"}) {
    const std::string k = std::string(p) + ".";
    auto want = [&](const std::string& op) { return g()[k + op]; };
    const Tensor a = want("a"), b = want("b"), u8 = want("uint8");
    const bool i8 = std::string(p) == "int8";
    const int64_t big = i8 ? 300 : 70000;
    SECTION(std::string(p)) {
      REQUIRE(a.dtype() == (i8 ? kInt8 : kInt16));
      check_same(a + b, want("add"), "add");
      check_same(a - b, want("sub"), "sub");
      check_same(sub(a, b, 5), want("sub_alpha"), "sub alpha");
      check_same(a * b, want("mul"), "mul");
      check_same(a + big, want("add_scalar"), "add a number out of range");
      check_same(a * 3, want("mul_scalar"), "mul scalar");
      check_same(a / b, want("div_true"), "true division");
      check_same(div(a, b, "trunc"), want("div_trunc"), "div trunc");
      check_same(div(a, b, "floor"), want("div_floor"), "div floor");
      check_same(remainder(a, b), want("remainder"), "remainder");
      check_same(remainder(a, -3), want("remainder_scalar"), "remainder scalar");
      check_same(div(a, -3, "floor"), want("div_floor_scalar"), "div floor scalar");
      check_same(pow(a, 3), want("pow_scalar"), "pow scalar");
      check_same(pow(a, remainder(b, 5)), want("pow"), "pow");
      check_same(-a, want("neg"), "neg");
      check_same(abs(a), want("abs"), "abs");
      check_same(sign(a), want("sign"), "sign");
      check_same(bitwise_and(a, b), want("bitwise_and"), "and");
      check_same(bitwise_or(a, b), want("bitwise_or"), "or");
      check_same(bitwise_xor(a, b), want("bitwise_xor"), "xor");
      check_same(bitwise_not(a), want("bitwise_not"), "not");
      check_same(maximum(a, b), want("maximum"), "maximum");
      check_same(minimum(a, b), want("minimum"), "minimum");
      check_same(a < b, want("lt"), "lt");
      check_same(a == -7, want("eq_scalar"), "eq scalar");
      check_same(clamp(a, -5, 50), want("clamp"), "clamp");
      check_same(where(a > 0, a, b), want("where"), "where");
      check_same(sum(a), want("sum"), "sum is int64");
      check_same(prod(a.slice(0, 0, 4)), want("prod"), "prod is int64");
      check_same(cumsum(a, 0), want("cumsum"), "cumsum is int64");
      check_same(max(a), want("max"), "max");
      check_same(argmax(a), want("argmax"), "argmax");
      check_same(argmin(a), want("argmin"), "argmin");
      auto [sv, si] = sort(a);
      check_same(sv, want("sort.values"), "sort values");
      check_same(si, want("sort.indices"), "sort indices");
      auto [tv, ti] = topk(a, 3);
      check_same(tv, want("topk.values"), "topk values");
      check_same(ti, want("topk.indices"), "topk indices");
      check_same(cat({a, b}), want("cat"), "cat");
      check_same(stack({a, b}), want("stack"), "stack");
      const Tensor gi = tensor(std::vector<int64_t>{3, 0, 1, 1, 2, 0}, {3, 2});
      check_same(gather(a.reshape({3, 4}), 1, gi), want("gather"), "gather");
      const Tensor si32 = tensor(std::vector<int32_t>{11, 0, 5});
      check_same(index_select(a, 0, si32), want("index_select"), "index_select");
      check_same(matmul(a.reshape({3, 4}), b.reshape({4, 3})), want("matmul"), "matmul wraps");
      check_same(a.to(kFloat32), want("to_float32"), "to float32");
      check_same(a + u8, want("add_uint8"), "with uint8");
      check_same(a + b.to(kInt16), want("add_int16"), "with int16");
      check_same(a + b.to(kInt32), want("add_int32"), "with int32");
      check_same(a + b.to(kFloat16), want("add_float16"), "with float16");
      // In place keeps the dtype and wraps.
      Tensor c = a.clone();
      c.add_(big);
      check_same(c, want("add_scalar"), "add_ wraps");
      // Integer division by zero is an error, as for the other integer dtypes.
      CHECK_THROWS_WITH(div(a, zeros_like(a), "floor"), Contains("ZeroDivisionError"));
    }
  }
}

TEST_CASE("small int: conversions from float wrap as PyTorch's", "[int8]") {
  const Tensor f = g()["convert.float32"];
  check_same(f.to(kInt8), g()["convert.int8"], "float32 -> int8");
  check_same(f.to(kInt16), g()["convert.int16"], "float32 -> int16");
  check_same(f.to(kUInt8), g()["convert.uint8"], "float32 -> uint8");
  check_same(g()["convert.float64"].to(kInt8), g()["convert.float64.int8"], "float64 -> int8");
  // And back, and between the integers.
  CHECK(values(tensor(std::vector<int16_t>{300, -129, 32767}).to(kInt8)) ==
        std::vector<double>{44, 127, -1});
  CHECK(values(tensor(std::vector<int8_t>{-1, -128}).to(kUInt8)) == std::vector<double>{255, 128});
}

TEST_CASE("small int: factories and random ops", "[int8]") {
  CHECK(zeros({3}, kInt8).dtype() == kInt8);
  CHECK(values(ones({2}, kInt16)) == std::vector<double>{1, 1});
  CHECK(values(full({2}, -128, kInt8)) == std::vector<double>{-128, -128});
  CHECK(values(full({2}, 2.7, kInt8)) == std::vector<double>{2, 2});
  check_same(arange(0, 300, 100, kInt8), g()["arange.int8"], "arange wraps");
  CHECK(values(arange(-3, 3, 2, kInt16)) == std::vector<double>{-3, -1, 1});
  CHECK(values(eye(2, std::nullopt, kInt8)) == std::vector<double>{1, 0, 0, 1});

  Generator gen(7);
  Tensor r = randint(-128, 128, {1000}, kInt8, &gen);
  CHECK(r.dtype() == kInt8);
  CHECK(min(r).item<int64_t>() >= -128);
  CHECK(max(r).item<int64_t>() <= 127);
  CHECK(max(r).item<int64_t>() > 100);  // the whole range is drawn, not a part of it
  CHECK(min(r).item<int64_t>() < -100);
  Tensor r16 = randint(-30000, 30000, {100}, kInt16, &gen);
  CHECK(r16.dtype() == kInt16);
  CHECK(max(abs(r16)).item<int64_t>() < 30001);
  CHECK_THROWS_WITH(randint(-200, 0, {3}, kInt8),
                    Contains("randint") && Contains("does not fit dtype int8"));
  CHECK_THROWS_WITH(randint(0, 40000, {3}, kInt16), Contains("does not fit dtype int16"));
  CHECK(randperm(100, kInt8, &gen).sum().item<int64_t>() == 4950);
  CHECK_THROWS_WITH(randperm(200, kInt8), Contains("too large for dtype int8"));
}

TEST_CASE("small int: numbers that overflow are refused where PyTorch refuses them", "[int8]") {
  // Note [Scalars that overflow]
  CHECK_THROWS_WITH(full({2}, 300, kInt8), Contains("fill_") && Contains("300") &&
                                               Contains("int8") && Contains("without overflow"));
  CHECK_THROWS_WITH(full({2}, -129, kInt8), Contains("without overflow"));
  CHECK_THROWS_WITH(zeros({2}, kInt16).fill_(40000), Contains("fill_: value 40000"));
  CHECK_THROWS_WITH(zeros({2}, kInt32).fill_(std::nan("")), Contains("int32"));
  CHECK_THROWS_WITH(zeros({2}, kInt8).fill_(127.5), Contains("int8"));
  CHECK_NOTHROW(zeros({2}, kInt8).fill_(127.0));
  // uint8 takes negative numbers down to -255, which wrap (PyTorch's rule).
  CHECK(values(zeros({2}, kUInt8).fill_(-1)) == std::vector<double>{255, 255});
  CHECK_THROWS(zeros({2}, kUInt8).fill_(256));
  CHECK(values(zeros({1}, kBool).fill_(5)) == std::vector<double>{1});
  Tensor m = tensor({true, false});
  CHECK_THROWS_WITH(zeros({2}, kInt8).masked_fill(m, 300), Contains("masked_fill"));
  CHECK(values(zeros({2}, kInt8).masked_fill(m, 2.5)) == std::vector<double>{2, 0});
}

TEST_CASE("small int: item and printing", "[int8]") {
  Tensor a = tensor(std::vector<int8_t>{-128});
  CHECK(a.item<int8_t>() == -128);
  CHECK(a.item<int64_t>() == -128);
  CHECK(a.item<double>() == -128.0);
  CHECK(a.item().is_integral());
  CHECK(a.item().to_int64() == -128);
  Tensor s = tensor(std::vector<int16_t>{300});
  CHECK(s.item<int16_t>() == 300);
  CHECK_THROWS_WITH(s.item<int8_t>(), Contains("item") && Contains("300") && Contains("int8") &&
                                          Contains("without overflow"));
  CHECK_THROWS_WITH(tensor({1e10}).item<int32_t>(), Contains("int32"));
  CHECK(tensor({2.7}).item<int8_t>() == 2);  // truncates, as a C++ conversion

  std::ostringstream os;
  os << tensor(std::vector<int8_t>{1, -2, 127});
  CHECK(os.str() == "tensor([  1,  -2, 127], dtype=int8)");
  std::ostringstream os16;
  os16 << tensor(std::vector<int16_t>{-32768, 5});
  CHECK(os16.str() == "tensor([-32768,      5], dtype=int16)");
}

TEST_CASE("small int: numbers and 0-dim tensors promote as PyTorch's", "[int8]") {
  Tensor a = tensor(std::vector<int8_t>{1, -2});
  CHECK((a * 2).dtype() == kInt8);
  CHECK((a * 2.5).dtype() == kFloat32);
  CHECK((a + true).dtype() == kInt8);
  // A 0-dim int64 tensor does not widen int8 (the sum wraps: 1 + 1000 is -23, as in PyTorch);
  // a 0-dim float one does.
  Tensor r = a + scalar_tensor(1000, kInt64);
  CHECK(r.dtype() == kInt8);
  CHECK(values(r) == std::vector<double>{-23, -26});
  CHECK((a + scalar_tensor(1000.0, kFloat64)).dtype() == kFloat64);
  CHECK((tensor(std::vector<int16_t>{1, 2}) + a).dtype() == kInt16);
  CHECK((tensor(std::vector<int16_t>{1}) + a).dtype() == kInt8);  // 0-dim: same category
  CHECK((tensor(std::vector<uint8_t>{1, 2}) + a).dtype() == kInt16);
}

TEST_CASE("small int: int8 and int16 are data, never indices", "[int8]") {
  Tensor a = tensor(std::vector<int16_t>{10, 20, 30});
  Tensor i8 = tensor(std::vector<int8_t>{2, 0});
  CHECK_THROWS_WITH(index_select(a, 0, i8), Contains("index_select") && Contains("int8"));
  CHECK_THROWS_WITH(gather(a, 0, i8.to(kInt16)), Contains("gather") && Contains("int16"));
  // As data, every indexing op takes them.
  Tensor idx = tensor(std::vector<int64_t>{2, 0});
  CHECK(values(index_select(a, 0, idx)) == std::vector<double>{30, 10});
  Tensor s = zeros({3}, kInt8).scatter_add(0, idx, tensor(std::vector<int8_t>{100, 100}));
  CHECK(values(s.scatter_add(0, idx, tensor(std::vector<int8_t>{100, 1}))) ==
        std::vector<double>{101, 0, -56});  // 200 wraps to -56
  Tensor m = a > 15;
  CHECK(values(a.masked_select(m)) == std::vector<double>{20, 30});
}

TEST_CASE("small int: integer overflow wraps for every integer dtype", "[int8]") {
  // Note [Integer overflow wraps]: PyTorch's results, without C++'s undefined signed overflow.
  const int64_t i64max = std::numeric_limits<int64_t>::max();
  const int64_t i64min = std::numeric_limits<int64_t>::min();
  Tensor i64 = tensor(std::vector<int64_t>{i64max, i64min});
  CHECK((i64 + 1).data_ptr<int64_t>()[0] == i64min);
  CHECK((i64 * 2).data_ptr<int64_t>()[0] == -2);
  CHECK(sum(tensor(std::vector<int64_t>{i64max, 1})).item<int64_t>() == i64min);
  CHECK(prod(tensor(std::vector<int64_t>{i64max, 3})).item<int64_t>() == i64max - 2);
  Tensor i32 = tensor(std::vector<int32_t>{2147483647, -2147483647 - 1});
  CHECK((i32 + 1).data_ptr<int32_t>()[0] == -2147483647 - 1);
  CHECK((i32 - 1).data_ptr<int32_t>()[1] == 2147483647);
  CHECK((i32 * i32).data_ptr<int32_t>()[0] == 1);
  CHECK(cumsum(tensor(std::vector<int64_t>{i64max, 1}), 0).data_ptr<int64_t>()[1] == i64min);
  CHECK(
      addcmul(zeros({1}, kInt16), full({1}, 300, kInt16), full({1}, 300, kInt16)).item<int64_t>() ==
      24464);  // 90000 - 65536
  CHECK(values(pow(tensor(std::vector<int16_t>{-32768, 255}), 2)) == std::vector<double>{0, -511});
}
