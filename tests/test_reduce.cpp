// Reductions, scans, softmax and one_hot (core/ops/reduce.h, core/ops/softmax.h): accuracy of
// long sums, error messages, dtype rules, NaN / infinity / empty cases, thread-count
// independence. Values against float64 references for every dtype and layout are in the op
// table (tests/op_table/reduce_ops.cpp).

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "test_util.h"

using namespace ember;
using namespace ember::testing;
using Catch::Contains;

namespace {

// Restores the pool size when a test changes it.
struct ThreadsGuard {
  int saved = num_threads();
  ~ThreadsGuard() { set_num_threads(saved); }
};

}  // namespace

TEST_CASE("reduce: float32 sum of 10^7 elements is accurate", "[reduce]") {
  const int64_t n = 10000000;
  Tensor x = full({n}, 0.1f, kFloat32);
  const double want = static_cast<double>(n) * static_cast<double>(0.1f);
  // A naive float loop is off by about 1% here (the sum stalls once it is large).
  float naive = 0;
  for (int64_t i = 0; i < n; ++i) naive += 0.1f;
  REQUIRE(std::abs(naive - want) / want > 1e-3);

  double got = x.sum().item<double>();
  CHECK(std::abs(got - want) / want < 1e-6);
  // Also through the outer-dim (tile) path and the per-row path.
  Tensor m = x.view({10000, 1000});
  CHECK(std::abs(m.sum({0}).sum().item<double>() - want) / want < 1e-6);
  double row = m.sum({1})[17].item<double>();
  CHECK(std::abs(row - 1000.0 * static_cast<double>(0.1f)) / 100.0 < 1e-6);
  CHECK(std::abs(x.mean().item<double>() - 0.1f) < 1e-7);

  // Random values: relative error against a float64 sum of the same floats.
  Tensor r = rand({n}, kFloat32);
  double want_r = r.to(kFloat64).sum().item<double>();
  CHECK(std::abs(r.sum().item<double>() - want_r) / want_r < 1e-6);
}

TEST_CASE("reduce: results do not depend on the number of threads", "[reduce]") {
  ThreadsGuard guard;
  Tensor x = randn({3, 200000}, kFloat32);
  Tensor col = randn({5000, 40}, kFloat32);
  set_num_threads(1);
  Tensor a = x.sum({1}), b = col.sum({0}), c = x.var({1}), d = x.sum();
  set_num_threads(2);
  CHECK(values(x.sum({1})) == values(a));
  CHECK(values(col.sum({0})) == values(b));
  CHECK(values(x.var({1})) == values(c));
  CHECK(values(x.sum()) == values(d));
}

TEST_CASE("reduce: long reductions over a leading dim (tiles split into chunks)", "[reduce]") {
  // 100000 rows: few tiles of neighbouring outputs, each range cut into chunks.
  Tensor tall = randn({100000, 40}, kFloat32);
  std::vector<double> want = values(tall.to(kFloat64).sum({0}));
  std::vector<double> got = values(tall.sum({0}));
  for (size_t j = 0; j < want.size(); ++j) CHECK(std::abs(got[j] - want[j]) < 1e-3);
  std::vector<double> idx = values(tall.argmax(0));
  std::vector<double> mx = values(tall.amax({0}));
  for (size_t j = 0; j < want.size(); ++j) {
    CHECK(tall[static_cast<int64_t>(idx[j])][static_cast<int64_t>(j)].item<double>() == mx[j]);
  }
}

TEST_CASE("reduce: bad dims name the op and the dim", "[reduce]") {
  Tensor x = zeros({2, 3});
  CHECK_THROWS_WITH(x.sum({2}), Contains("sum") && Contains("dimension 2 out of range"));
  CHECK_THROWS_WITH(x.mean({-3}), Contains("mean") && Contains("-3"));
  CHECK_THROWS_WITH(x.sum({1, -1}), Contains("sum") && Contains("dim 1 appears multiple times"));
  CHECK_THROWS_WITH(x.amax({0, 0}), Contains("amax") && Contains("multiple times"));
  CHECK_THROWS_WITH(x.max(5), Contains("max") && Contains("5"));
  CHECK_THROWS_WITH(x.argmin(-4), Contains("argmin") && Contains("-4"));
  CHECK_THROWS_WITH(x.cumsum(2), Contains("cumsum") && Contains("2"));
  CHECK_THROWS_WITH(x.softmax(3), Contains("softmax") && Contains("3"));
  // A 0-dim tensor accepts dim 0 and -1, like PyTorch.
  Tensor s = scalar_tensor(3.0, kFloat32);
  CHECK(s.sum({0}).item<float>() == 3.0f);
  CHECK(s.sum({-1}, true).dim() == 0);
  CHECK_THROWS_WITH(s.sum({1}), Contains("sum"));
}

TEST_CASE("reduce: ops without an identity reject empty dims", "[reduce]") {
  Tensor e = zeros({0, 3});
  CHECK_THROWS_WITH(e.max(), Contains("max") && Contains("non-zero size"));
  CHECK_THROWS_WITH(e.min(), Contains("min") && Contains("non-zero size"));
  CHECK_THROWS_WITH(e.amax({0}), Contains("amax") && Contains("dim 0"));
  CHECK_THROWS_WITH(e.argmax(), Contains("argmax"));
  CHECK_THROWS_WITH(e.max(0), Contains("max"));
  CHECK_THROWS_WITH(e.norm(INFINITY), Contains("norm"));
  // Reducing a non-empty dim of an empty tensor is fine: the result is empty.
  CHECK(e.amax({1}).sizes() == Shape{0});
  CHECK(std::get<1>(e.max(1)).sizes() == Shape{0});
  // Identities.
  CHECK(e.sum().item<float>() == 0.0f);
  CHECK(values(e.sum({0})) == std::vector<double>{0, 0, 0});
  CHECK(values(e.prod({0})) == std::vector<double>{1, 1, 1});
  CHECK(std::isnan(e.mean().item<float>()));
  CHECK(e.all().item<bool>());
  CHECK(!e.any().item<bool>());
  CHECK(e.logsumexp({}).item<float>() == -INFINITY);
  CHECK(e.norm(2).item<float>() == 0.0f);
}

TEST_CASE("reduce: dtype rules follow PyTorch", "[reduce]") {
  Tensor i32 = tensor({1, 2, 3});
  Tensor u8 = tensor(std::vector<uint8_t>{200, 100, 7});
  Tensor b = tensor({true, true, false});
  CHECK(i32.sum().dtype() == kInt64);
  CHECK(u8.sum().item<int64_t>() == 307);  // no uint8 wrap-around
  CHECK(b.sum().dtype() == kInt64);
  CHECK(b.sum().item<int64_t>() == 2);
  CHECK(i32.prod().dtype() == kInt64);
  CHECK(i32.cumsum(0).dtype() == kInt64);
  CHECK(b.cumsum(0).dtype() == kInt64);
  CHECK(u8.cumprod(0).dtype() == kInt64);
  CHECK(values(u8.cumsum(0)) == std::vector<double>{200, 300, 307});
  CHECK(i32.sum({}, false, kFloat64).dtype() == kFloat64);
  CHECK(i32.sum({}, false, kFloat64).item<double>() == 6.0);
  CHECK(tensor({1.5f, 2.5f}).sum({}, false, kInt32).item<int32_t>() == 3);  // cast first
  CHECK(ember::cumsum(i32, 0, kFloat32).dtype() == kFloat32);
  CHECK(i32.amax().dtype() == kInt32);
  CHECK(std::get<0>(i32.max(0)).dtype() == kInt32);
  CHECK(std::get<1>(i32.max(0)).dtype() == kInt64);
  CHECK(i32.argmax().dtype() == kInt64);
  CHECK(i32.all().dtype() == kBool);
  CHECK(u8.any().dtype() == kBool);
  CHECK(i32.logsumexp({}).dtype() == default_dtype());
  CHECK(zeros({2}, kFloat16).sum().dtype() == kFloat16);
  CHECK(zeros({2}, kBFloat16).mean().dtype() == kBFloat16);
  // Floating-only ops reject integers, naming the op and the dtype.
  CHECK_THROWS_WITH(i32.mean(), Contains("mean") && Contains("int32"));
  CHECK_THROWS_WITH(i32.var(), Contains("var") && Contains("int32"));
  CHECK_THROWS_WITH(i32.std(), Contains("std"));
  CHECK_THROWS_WITH(i32.norm(), Contains("norm"));
  CHECK_THROWS_WITH(i32.softmax(0), Contains("softmax") && Contains("int32"));
  CHECK_THROWS_WITH(i32.log_softmax(0), Contains("log_softmax"));
  CHECK_THROWS_WITH(tensor({1.0f}).norm(-1), Contains("norm: p must be"));
}

TEST_CASE("reduce: NaN propagates through max, min, amax, amin", "[reduce]") {
  Tensor x = tensor<float>({1.0f, NAN, 3.0f, NAN});
  CHECK(std::isnan(x.max().item<float>()));
  CHECK(std::isnan(x.min().item<float>()));
  CHECK(std::isnan(x.amax().item<float>()));
  CHECK(std::isnan(x.amin().item<float>()));
  CHECK(x.argmax().item<int64_t>() == 1);  // the first NaN
  CHECK(x.argmin().item<int64_t>() == 1);
  auto [v, i] = x.max(0);
  CHECK(std::isnan(v.item<float>()));
  CHECK(i.item<int64_t>() == 1);
  CHECK(std::isnan(x.norm(INFINITY).item<float>()));
  // A NaN late in a long row, found through the lanes and pairwise merges.
  Tensor long_row = zeros({1000});
  long_row.narrow(0, 997, 1).fill_(NAN);
  CHECK(std::isnan(long_row.amax().item<float>()));
  CHECK(long_row.argmax().item<int64_t>() == 997);
  // Infinities are ordinary values.
  Tensor inf = tensor<float>({-INFINITY, -INFINITY});
  CHECK(inf.max().item<float>() == -INFINITY);
  CHECK(inf.argmax().item<int64_t>() == 0);
}

TEST_CASE("reduce: argmax/argmin pick the first of tied elements", "[reduce]") {
  Tensor x = tensor<float>({1, 5, 2, 5, 5, 0, 0});
  CHECK(x.argmax().item<int64_t>() == 1);
  CHECK(x.argmin().item<int64_t>() == 5);
  // Ties spread over lanes, leaves and chunks: a constant row of 100000.
  Tensor c = ones({100000}, kFloat16);
  CHECK(c.argmax().item<int64_t>() == 0);
  CHECK(c.argmin().item<int64_t>() == 0);
  Tensor m = ones({3000, 40});
  CHECK(values(m.argmax(0)) == std::vector<double>(40, 0.0));  // tile mode
  // argmax without a dim is the flat index; keepdim keeps every dim with size 1.
  Tensor y = tensor<float>({0, 1, 9, 3, 4, 5}).view({2, 3});
  CHECK(y.argmax().item<int64_t>() == 2);
  CHECK(y.t().argmax().item<int64_t>() == 4);  // flat index in the transposed (logical) order
  CHECK(y.argmax(std::nullopt, true).sizes() == Shape{1, 1});
  CHECK(values(y.argmax(1)) == std::vector<double>{2, 2});
  CHECK(y.argmax(1, true).sizes() == Shape{2, 1});
}

TEST_CASE("reduce: keepdim and shapes", "[reduce]") {
  Tensor x = ones({2, 3, 4});
  CHECK(x.sum().sizes() == Shape{});
  CHECK(x.sum({}, true).sizes() == Shape{1, 1, 1});
  CHECK(x.sum({1}).sizes() == Shape{2, 4});
  CHECK(x.sum({-1, 0}, true).sizes() == Shape{1, 3, 1});
  CHECK(values(x.sum({0, 2})) == std::vector<double>{8, 8, 8});
  CHECK(std::get<0>(x.max(1, true)).sizes() == Shape{2, 1, 4});
  CHECK(x.cumsum(-1).sizes() == Shape{2, 3, 4});
  CHECK(values(x.cumsum(1).select(2, 0).select(0, 1)) == std::vector<double>{1, 2, 3});
}

TEST_CASE("reduce: var and std with correction", "[reduce]") {
  Tensor x = tensor<double>({1, 2, 3, 4});
  CHECK(x.var().item<double>() == Approx(5.0 / 3.0));
  CHECK(x.var({}, 0).item<double>() == Approx(1.25));
  CHECK(x.std({}, 2).item<double>() == Approx(std::sqrt(2.5)));
  CHECK(std::isnan(tensor<double>({7}).var().item<double>()));      // 0 / 0
  CHECK(tensor<double>({1, 3}).var({}, 5).item<double>() == kInf);  // divisor clamped to 0
  // Large offset: Welford does not cancel catastrophically.
  Tensor big = (arange(1000, kFloat32).to(kFloat64) + 1e8).to(kFloat32);
  double want = big.to(kFloat64).var().item<double>();
  CHECK(big.var().item<double>() == Approx(want).epsilon(1e-5));
}

TEST_CASE("reduce: logsumexp is stable", "[reduce]") {
  Tensor x = tensor<float>({1000, 1000});
  CHECK(x.logsumexp({}).item<float>() == Approx(1000 + std::log(2.0)));
  Tensor y = tensor<float>({-1000, -1000, -1000});
  CHECK(y.logsumexp({0}).item<float>() == Approx(-1000 + std::log(3.0)));
  CHECK(tensor<float>({-INFINITY, -INFINITY}).logsumexp({}).item<float>() == -INFINITY);
  CHECK(tensor<float>({INFINITY, 1}).logsumexp({}).item<float>() == INFINITY);
  CHECK(tensor<float>({INFINITY, INFINITY}).logsumexp({}).item<float>() == INFINITY);
  CHECK(std::isnan(tensor<float>({1, NAN, 3}).logsumexp({}).item<float>()));
}

TEST_CASE("reduce: norm", "[reduce]") {
  Tensor x = tensor<float>({3, -4});
  CHECK(x.norm().item<float>() == Approx(5));
  CHECK(x.norm(1).item<float>() == Approx(7));
  CHECK(x.norm(INFINITY).item<float>() == Approx(4));
  CHECK(x.norm(3).item<float>() == Approx(std::cbrt(91.0)));
  Tensor m = tensor<float>({3, 4, 6, 8}).view({2, 2});
  CHECK(values(m.norm(2, {1})) == std::vector<double>{5, 10});
}

TEST_CASE("reduce: cumsum and cumprod", "[reduce]") {
  Tensor x = tensor<float>({1, 2, 3, 4, 5, 6}).view({2, 3});
  CHECK(values(x.cumsum(1)) == std::vector<double>{1, 3, 6, 4, 9, 15});
  CHECK(values(x.cumsum(0)) == std::vector<double>{1, 2, 3, 5, 7, 9});
  CHECK(values(x.cumprod(1)) == std::vector<double>{1, 2, 6, 4, 20, 120});
  CHECK(values(x.t().cumsum(0)) == std::vector<double>{1, 4, 3, 9, 6, 15});
  CHECK(zeros({0, 3}).cumsum(0).sizes() == Shape{0, 3});
  // float32 cumsum accumulates in double: the last of 10^6 values of 0.1f is accurate.
  Tensor c = full({1000000}, 0.1f, kFloat32).cumsum(0);
  CHECK(std::abs(c[999999].item<double>() - 1e6 * static_cast<double>(0.1f)) < 1e-2);
}

TEST_CASE("softmax: stable, any dim, any layout", "[reduce][softmax]") {
  Tensor x = tensor<float>({1000, 1001, 1002});
  std::vector<double> p = values(x.softmax(0));
  double z = 1 + std::exp(1.0) + std::exp(2.0);
  CHECK(p[0] == Approx(1 / z));
  CHECK(p[2] == Approx(std::exp(2.0) / z));
  CHECK(values(x.log_softmax(0))[0] == Approx(-std::log(z)));
  // Rows sum to 1 along every dim, for a transposed input too.
  Tensor r = randn({4, 5, 6}).transpose(0, 2);
  for (int64_t d = 0; d < 3; ++d) {
    std::vector<double> s = values(r.softmax(d).sum({d}));
    for (double v : s) CHECK(v == Approx(1.0).epsilon(1e-5));
  }
  // float16 computes in float: no overflow for large logits.
  Tensor h = tensor<float>({10000, 10000}).to(kFloat16);
  CHECK(values(h.softmax(0)) == std::vector<double>{0.5, 0.5});
  // A row holding +inf gives NaN, like PyTorch.
  CHECK(std::isnan(values(tensor<float>({INFINITY, 1}).softmax(0))[0]));
}

TEST_CASE("one_hot: classes and errors", "[reduce][softmax]") {
  Tensor idx = tensor<int64_t>({0, 2, 1});
  Tensor oh = one_hot(idx);
  CHECK(oh.dtype() == kInt64);
  CHECK(oh.sizes() == Shape{3, 3});
  CHECK(values(oh) == std::vector<double>{1, 0, 0, 0, 0, 1, 0, 1, 0});
  CHECK(one_hot(idx, 5).sizes() == Shape{3, 5});
  CHECK(one_hot(tensor<int64_t>({}), 4).sizes() == Shape{0, 4});
  CHECK_THROWS_WITH(one_hot(tensor<int64_t>({0, -1})),
                    Contains("one_hot") && Contains("non-negative"));
  CHECK_THROWS_WITH(one_hot(idx, 2), Contains("one_hot") && Contains("smaller than num_classes"));
  CHECK_THROWS_WITH(one_hot(tensor({1, 2})), Contains("one_hot") && Contains("int64"));
  CHECK_THROWS_WITH(one_hot(tensor<int64_t>({})), Contains("one_hot"));
}

TEST_CASE("reduce: norm with p = 0 and p = -inf, as PyTorch's vector_norm", "[reduce]") {
  // PyTorch 1.13: vector_norm(x, 0) = 4, per row [2, 2]; vector_norm(x, -inf) = 0.
  Tensor x = tensor(std::vector<float>{0.0f, -3.0f, 4.0f, 0.5f, 0.0f, -0.25f}, {2, 3});
  CHECK(x.norm(0).item<float>() == 4.0f);
  CHECK(values(x.norm(0, {1})) == std::vector<double>{2.0, 2.0});
  CHECK(x.norm(-INFINITY).item<float>() == 0.0f);
  CHECK(values(x.norm(-INFINITY, {0})) == std::vector<double>{0.0, 0.0, 0.25});
  CHECK(std::isnan(tensor({1.0f, NAN}).norm(-INFINITY).item<float>()));  // a NaN wins
  CHECK(tensor({1.0f, NAN}).norm(0).item<float>() == 2.0f);              // NaN is non-zero
  CHECK_THROWS_WITH(zeros({0}).norm(-INFINITY), Contains("norm"));
  CHECK_THROWS_WITH(x.norm(-2), Contains("norm: p must be"));
  // The gradients: 0 for the count, the smallest |x| (split among ties) for -inf.
  Tensor y = tensor(std::vector<float>{1.0f, -3.0f, 4.0f, 0.5f, 2.0f, -0.25f}, {2, 3});
  y.requires_grad_();
  y.norm(-INFINITY, {1}).sum().backward();
  CHECK(values(y.grad()) == std::vector<double>{1, 0, 0, 0, 0, -1});
  y.set_grad(Tensor());
  y.norm(0).backward();
  CHECK(values(y.grad()) == std::vector<double>(6, 0.0));
}
