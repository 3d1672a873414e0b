// Indexing ops (core/ops/index.h): bad indices and shapes raise ember::Error naming the op (and
// never touch memory out of bounds: this suite also runs under AddressSanitizer), in-place forms
// bump the version counter, sort is stable and orders NaN like PyTorch, and the parallel paths
// agree with serial references.

#include <ember/ember.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <set>

#include "test_util.h"

using namespace ember;
using namespace ember::testing;
using Catch::Contains;

namespace {

std::vector<int64_t> ints(const Tensor& t) {
  Tensor c = t.to(kInt64).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}
Tensor longs(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return tensor(v, {n});
}
Tensor range_tensor(const Shape& shape, DType dt = kFloat32) {
  return arange(shape_numel(shape), dt).view(shape);
}

constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();
constexpr int64_t kTiny = std::numeric_limits<int64_t>::min();

}  // namespace

TEST_CASE("index_select: out-of-range indices raise errors naming the op", "[index]") {
  Tensor x = range_tensor({5, 3});
  CHECK_THROWS_WITH(x.index_select(0, longs({0, 7})),
                    Contains("index_select: index 7 is out of bounds for dimension 0 with size 5"));
  // index_select does not wrap negative indices (as in PyTorch).
  CHECK_THROWS_WITH(x.index_select(0, longs({-1})), Contains("index_select: index -1"));
  CHECK_THROWS_WITH(x.index_select(1, longs({kHuge})), Contains("index_select"));
  CHECK_THROWS_WITH(x.index_select(1, longs({kTiny})), Contains("index_select"));
  // The memcpy path (contiguous rows) and the strided path both check.
  Tensor wide = zeros({4, 64});
  CHECK_THROWS_WITH(wide.index_select(0, longs({4})),
                    Contains("index_select: index 4 is out of bounds for dimension 0 with size 4"));
  CHECK_THROWS_WITH(wide.t().index_select(1, longs({4})),
                    Contains("index_select: index 4 is out of bounds for dimension 1 with size 4"));
  CHECK_THROWS_WITH(x.index_select(2, longs({0})), Contains("index_select"));
  // Checked even when the result has no elements.
  CHECK_THROWS_WITH(zeros({0, 3}).index_select(1, longs({7})),
                    Contains("index_select: index 7 is out of bounds for dimension 1 with size 3"));
  CHECK_THROWS_WITH(x.index_select(0, zeros({2, 2}, kInt64)), Contains("1-D"));
}

TEST_CASE("gather and the scatters: out-of-range indices raise errors", "[index]") {
  Tensor x = range_tensor({3, 4});
  Tensor bad = tensor(std::vector<int64_t>{0, 4, 1, 2}, {2, 2});
  CHECK_THROWS_WITH(x.gather(1, bad),
                    Contains("gather: index 4 is out of bounds for dimension 1 with size 4"));
  CHECK_THROWS_WITH(x.gather(1, tensor(std::vector<int64_t>{-1}, {1, 1})),
                    Contains("gather: index -1"));
  Tensor src = ones({2, 2});
  CHECK_THROWS_WITH(x.scatter(1, bad, src),
                    Contains("scatter: index 4 is out of bounds for dimension 1 with size 4"));
  CHECK_THROWS_WITH(x.clone().scatter_(1, bad, src), Contains("scatter_: index 4"));
  CHECK_THROWS_WITH(x.scatter(1, bad, Scalar(2.0)), Contains("scatter: index 4"));
  CHECK_THROWS_WITH(x.scatter_add(1, bad, src), Contains("scatter_add: index 4"));
  CHECK_THROWS_WITH(x.clone().scatter_add_(0, tensor(std::vector<int64_t>{3}, {1, 1}), src),
                    Contains("scatter_add_: index 3 is out of bounds for dimension 0 with size 3"));
  CHECK_THROWS_WITH(x.scatter_reduce(1, bad, src, "amax"), Contains("scatter_reduce: index 4"));
  CHECK_THROWS_WITH(x.scatter_reduce(1, bad, src, "mean", false), Contains("scatter_reduce"));
  CHECK_THROWS_WITH(x.index_add(0, longs({0, 3}), ones({2, 4})),
                    Contains("index_add: index 3 is out of bounds for dimension 0 with size 3"));
  CHECK_THROWS_WITH(x.clone().index_add_(1, longs({-1}), ones({3, 1})), Contains("index_add_"));
  CHECK_THROWS_WITH(zeros({0, 3}).index_add(1, longs({3}), zeros({0, 1})),
                    Contains("index_add: index 3 is out of bounds for dimension 1 with size 3"));
  CHECK_THROWS_WITH(x.gather(0, tensor(std::vector<int64_t>{kHuge}, {1, 1})), Contains("gather"));
  CHECK_THROWS_WITH(x.scatter(0, tensor(std::vector<int64_t>{kTiny}, {1, 1}), src),
                    Contains("scatter"));
  // An empty self dim: every index is out of range.
  CHECK_THROWS_WITH(zeros({0, 2}).gather(0, zeros({1, 2}, kInt64)),
                    Contains("gather: index 0 is out of bounds for dimension 0 with size 0"));
}

TEST_CASE("advanced indexing, take, embedding: out-of-range indices raise errors", "[index]") {
  Tensor x = range_tensor({4, 5});
  CHECK_THROWS_WITH(x.index({longs({4})}),
                    Contains("index: index 4 is out of bounds for dimension 0 with size 4"));
  CHECK_THROWS_WITH(x.index({longs({-5})}), Contains("index: index -5"));
  CHECK(values(x.index({longs({-4})})) == values(x[0]));  // negatives wrap
  CHECK_THROWS_WITH(x.index({Tensor(), longs({5})}),
                    Contains("index: index 5 is out of bounds for dimension 1 with size 5"));
  // Several index tensors (combined into offsets first).
  CHECK_THROWS_WITH(x.index({longs({0, 1}), longs({2, 9})}),
                    Contains("index: index 9 is out of bounds for dimension 1 with size 5"));
  CHECK_THROWS_WITH(x.index({longs({kTiny}), longs({0})}), Contains("index"));
  CHECK_THROWS_WITH(zeros({3, 0}).index({longs({5})}),
                    Contains("index: index 5 is out of bounds for dimension 0 with size 3"));
  CHECK_THROWS_WITH(zeros({3, 0}).index_put_({longs({-4})}, zeros({})),
                    Contains("index_put_: index -4"));
  CHECK_THROWS_WITH(x.clone().index_put_({longs({7})}, ones({5})),
                    Contains("index_put_: index 7 is out of bounds for dimension 0 with size 4"));
  CHECK_THROWS_WITH(x.clone().index_put_({longs({0}), longs({-6})}, ones({1}), true),
                    Contains("index_put_: index -6 is out of bounds for dimension 1 with size 5"));
  CHECK_THROWS_WITH(take(x, longs({20})),
                    Contains("take: index 20 is out of bounds for dimension 0 with size 20"));
  CHECK_THROWS_WITH(take(x, longs({-21})), Contains("take: index -21"));
  CHECK(values(take(x, longs({-1, 0}))) == std::vector<double>{19, 0});
  Tensor w = range_tensor({6, 3});
  CHECK_THROWS_WITH(embedding(w, longs({1, 6})),
                    Contains("embedding: index 6 is out of bounds for dimension 0 with size 6"));
  CHECK_THROWS_WITH(embedding(w, longs({-1})), Contains("embedding: index -1"));
  CHECK_THROWS_WITH(embedding(w, longs({0}), 6), Contains("embedding: padding_idx 6"));
  CHECK_THROWS_WITH(embedding(zeros({6}), longs({0})), Contains("embedding: weight must be 2-D"));
}

TEST_CASE("index tensors must have an integer dtype", "[index]") {
  Tensor x = range_tensor({3, 4});
  Tensor f = zeros({2});
  CHECK_THROWS_WITH(x.index_select(0, f), Contains("index_select") && Contains("float32"));
  CHECK_THROWS_WITH(x.gather(0, zeros({2, 2})), Contains("gather") && Contains("float32"));
  // gather and scatter take int64 only, as in PyTorch.
  CHECK_THROWS_WITH(x.gather(0, zeros({2, 2}, kInt32)), Contains("gather") && Contains("int32"));
  CHECK_THROWS_WITH(x.scatter(0, zeros({2, 2}, kFloat64), ones({2, 2})),
                    Contains("scatter") && Contains("float64"));
  CHECK_THROWS_WITH(x.scatter(0, zeros({2, 2}, kFloat64), Scalar(1)), Contains("scatter"));
  CHECK_THROWS_WITH(x.scatter_add(0, zeros({2, 2}, kInt32), ones({2, 2})), Contains("scatter_add"));
  CHECK_THROWS_WITH(x.index_add(0, f, ones({2, 4})), Contains("index_add") && Contains("float32"));
  CHECK_THROWS_WITH(x.index({f}), Contains("index") && Contains("float32"));
  CHECK_THROWS_WITH(x.clone().index_put_({zeros({1}, kUInt8)}, ones({4})),
                    Contains("index_put_") && Contains("uint8"));
  CHECK_THROWS_WITH(take(x, f), Contains("take") && Contains("float32"));
  CHECK_THROWS_WITH(embedding(x, f), Contains("embedding") && Contains("float32"));
  CHECK_THROWS_WITH(x.masked_select(zeros({4}, kInt64)),
                    Contains("masked_select") && Contains("int64"));
  // int32 works where PyTorch accepts it.
  CHECK(values(x.index_select(1, tensor(std::vector<int32_t>{3, 0}))) ==
        std::vector<double>{3, 0, 7, 4, 11, 8});
  CHECK(values(x.index({tensor(std::vector<int32_t>{2})})) == std::vector<double>{8, 9, 10, 11});
}

TEST_CASE("gather/scatter/index_add: shape mismatches are clear errors", "[index]") {
  Tensor x = range_tensor({2, 4});
  CHECK_THROWS_WITH(x.gather(1, zeros({3, 2}, kInt64)),
                    Contains("gather: index [3, 2] is larger than self [2, 4] in dimension 0"));
  CHECK_THROWS_WITH(x.gather(1, zeros({2}, kInt64)), Contains("gather") && Contains("dimensions"));
  CHECK_THROWS_WITH(x.scatter(1, zeros({2, 3}, kInt64), ones({2, 2})),
                    Contains("scatter: index [2, 3] is larger than src [2, 2] in dimension 1"));
  CHECK_THROWS_WITH(x.scatter(1, zeros({3, 1}, kInt64), ones({3, 1})),
                    Contains("scatter") && Contains("larger than self"));
  CHECK_THROWS_WITH(x.scatter(1, zeros({2, 1}, kInt64), ones({2, 1}, kFloat64)),
                    Contains("scatter") && Contains("float64"));
  CHECK_THROWS_WITH(x.scatter_reduce(1, zeros({2, 1}, kInt64), ones({2, 1}), "max"),
                    Contains("scatter_reduce: reduce must be one of"));
  CHECK_THROWS_WITH(
      zeros({2}, kBool).scatter_reduce(0, zeros({1}, kInt64), ones({1}, kBool), "mean"),
      Contains("scatter_reduce") && Contains("bool"));
  CHECK_THROWS_WITH(x.index_add(1, longs({0, 1}), ones({2, 3})),
                    Contains("index_add: source [2, 3] must have 2 elements"));
  CHECK_THROWS_WITH(x.index_add(1, longs({0}), ones({3, 1})),
                    Contains("index_add") && Contains("match self"));
  CHECK_THROWS_WITH(zeros({2}, kInt32).index_add(0, longs({0}), ones({1}, kInt32), 1.5),
                    Contains("index_add") && Contains("alpha"));
  // In-place scatter_reduce with include_self=false checks src before writing anything.
  Tensor y = x.clone();
  CHECK_THROWS(y.scatter_reduce_(1, zeros({2, 3}, kInt64), ones({2, 2}), "sum", false));
  CHECK(values(y) == values(x));
}

TEST_CASE("advanced indexing: shapes, masks and their errors", "[index]") {
  Tensor x = range_tensor({4, 5, 6});
  // Adjacent indexed dims stay in place; separated ones move to the front.
  CHECK(x.index({Tensor(), longs({0, 1}), longs({2, 3})}).sizes() == Shape{4, 2});
  CHECK(x.index({longs({0, 1}), Tensor(), longs({2, 3})}).sizes() == Shape{2, 5});
  CHECK(x.index({Tensor(), zeros({2, 3}, kInt64)}).sizes() == Shape{4, 2, 3, 6});
  // x[1, :, 2] == x.select(0, 1).select(1, 2)
  CHECK(values(x.index({longs({1}), Tensor(), longs({2})})) == values(x.select(0, 1).select(1, 2)));
  std::vector<bool> mv;
  for (double v : values(x.select(2, 0))) mv.push_back(v > 50);
  Tensor mask = tensor(mv, {4, 5});
  Tensor picked = x.index({mask});
  CHECK(picked.sizes() == Shape{shape_numel({4, 5}) - 9, 6});
  CHECK(values(picked.select(1, 0)) == values(x.select(2, 0).masked_select(mask)));
  // A 0-dim mask adds a dim.
  CHECK(x.index({ones({}, kBool)}).sizes() == Shape{1, 4, 5, 6});
  CHECK(x.index({zeros({}, kBool)}).sizes() == Shape{0, 4, 5, 6});

  CHECK_THROWS_WITH(x.index({zeros({4, 4}, kBool)}),
                    Contains("index: the shape of the mask [4, 4] at position 0 does not match"));
  CHECK_THROWS_WITH(x.index({longs({0}), longs({0}), longs({0}), longs({0})}),
                    Contains("index: too many indices"));
  CHECK_THROWS_WITH(x.index({longs({0, 1}), longs({0, 1, 2})}), Contains("index"));
  CHECK_THROWS_WITH(x.index({Tensor()}), Contains("index: expected at least one index tensor"));
  CHECK_THROWS_WITH(
      x.clone().index_put_({longs({0, 1})}, ones({3, 6})),
      Contains(
          "index_put_: values of shape [3, 6] cannot be broadcast to the indexed shape [2, 5, 6]"));
  CHECK_THROWS_WITH(x.clone().index_put_({longs({0})}, ones({1}, kFloat64)),
                    Contains("index_put_") && Contains("float64"));
  CHECK_THROWS_WITH(x.masked_select(ones({3}, kBool)), Contains("masked_select"));
}

TEST_CASE("in-place indexing ops bump the version counter", "[index]") {
  Tensor x = zeros({3, 4});
  Tensor idx = zeros({1, 4}, kInt64);
  Tensor src = ones({1, 4});
  auto bumps = [&](const std::function<void()>& f) {
    const uint32_t v = x.version();
    f();
    return x.version() > v;
  };
  CHECK(bumps([&] { x.scatter_(0, idx, src); }));
  CHECK(bumps([&] { x.scatter_(0, idx, Scalar(3)); }));
  CHECK(bumps([&] { x.scatter_add_(0, idx, src); }));
  CHECK(bumps([&] { x.scatter_reduce_(0, idx, src, "amax"); }));
  CHECK(bumps([&] { x.index_add_(1, longs({0, 3}), ones({3, 2})); }));
  CHECK(bumps([&] { x.index_put_({longs({2})}, ones({4})); }));
  CHECK(bumps([&] { x.index_put_({longs({2}), longs({1})}, ones({}), true); }));
  // A view shares the counter with its base.
  Tensor row = x[1];
  const uint32_t v = x.version();
  row.index_put_({longs({0})}, ones({}));
  CHECK(x.version() > v);
  CHECK(values(x[1])[0] == 1.0);
  // Out-of-place forms leave self alone.
  const uint32_t before = x.version();
  (void)x.scatter(0, idx, src);
  (void)x.index_put({longs({0})}, ones({4}));
  (void)x.index_add(1, longs({0}), ones({3, 1}));
  CHECK(x.version() == before);
}

TEST_CASE("scatter, index_add and index_put_ accumulate duplicates", "[index]") {
  Tensor x = zeros({3});
  x.index_put_({longs({0, 2, 0, 0})}, tensor<float>({1, 2, 3, 4}), true);
  CHECK(values(x) == std::vector<double>{8, 0, 2});
  CHECK(values(zeros({3}).index_add(0, longs({1, 1, 2}), tensor<float>({1, 2, 3}), 2)) ==
        std::vector<double>{0, 6, 6});
  CHECK(values(zeros({3}).scatter_add(0, longs({2, 2, 2}), tensor<float>({1, 2, 3}))) ==
        std::vector<double>{0, 0, 6});
  // Without accumulation the last index wins for scatter (in index order).
  CHECK(values(zeros({3}).scatter(0, longs({1, 1}), tensor<float>({5, 7}))) ==
        std::vector<double>{0, 7, 0});
  // scatter_reduce: mean rounds down for integers, amax propagates NaN.
  CHECK(ints(tensor<int64_t>({0, 0}).scatter_reduce(0, longs({0, 0, 1}),
                                                    tensor<int64_t>({-3, 0, 5}), "mean", false)) ==
        std::vector<int64_t>{-2, 5});
  const double nan = std::nan("");
  std::vector<double> m = values(tensor<float>({0, 0}).scatter_reduce(
      0, longs({0, 0, 1}), tensor<float>({static_cast<float>(nan), 1, 2}), "amax"));
  CHECK(std::isnan(m[0]));
  CHECK(m[1] == 2);
}

TEST_CASE("sort is stable and orders NaN like PyTorch", "[index]") {
  Tensor keys = tensor<float>({3, 1, 3, 1, 2, 3});
  auto [v, i] = keys.sort();
  CHECK(values(v) == std::vector<double>{1, 1, 2, 3, 3, 3});
  CHECK(ints(i) == std::vector<int64_t>{1, 3, 4, 0, 2, 5});
  auto [vd, id] = keys.sort(0, true);
  CHECK(values(vd) == std::vector<double>{3, 3, 3, 2, 1, 1});
  CHECK(ints(id) == std::vector<int64_t>{0, 2, 5, 4, 1, 3});
  CHECK(ints(argsort(tensor(std::vector<bool>{true, false, true, false}))) ==
        std::vector<int64_t>{1, 3, 0, 2});

  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    INFO(dtype_name(dt));
    Tensor t = tensor<float>({nan, 1, -inf, nan, inf, 0}).to(dt);
    auto [a, ai] = sort(t);
    CHECK(ints(ai) == std::vector<int64_t>{2, 5, 1, 4, 0, 3});
    std::vector<double> av = values(a);
    CHECK(av[0] == -std::numeric_limits<double>::infinity());
    CHECK(std::isnan(av[4]));
    CHECK(std::isnan(av[5]));
    auto [d, di] = sort(t, 0, true);
    CHECK(ints(di) == std::vector<int64_t>{0, 3, 4, 1, 5, 2});
    // topk counts NaN as the largest value.
    auto [tv, ti] = topk(t, 3);
    CHECK(ints(ti) == std::vector<int64_t>{0, 3, 4});
    auto [sv, si] = topk(t, 2, 0, false);
    CHECK(ints(si) == std::vector<int64_t>{2, 5});
  }
}

TEST_CASE("sort and topk on large inputs match a serial reference", "[index]") {
  // Many slices (the parallel path) with many ties.
  std::vector<float> xs;
  for (int64_t i = 0; i < 20000; ++i) xs.push_back(static_cast<float>(i * 7919 % 13));
  Tensor x = tensor(xs, {200, 100});
  auto [v, i] = x.sort(1);
  std::vector<double> xv = values(x), vv = values(v);
  std::vector<int64_t> iv = ints(i);
  bool ok = true;
  for (int64_t r = 0; r < 200 && ok; ++r) {
    std::vector<std::pair<double, int64_t>> row;
    for (int64_t c = 0; c < 100; ++c) row.push_back({xv[r * 100 + c], c});
    std::stable_sort(row.begin(), row.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (int64_t c = 0; c < 100; ++c)
      ok = ok && vv[r * 100 + c] == row[c].first && iv[r * 100 + c] == row[c].second;
  }
  CHECK(ok);
  // topk with sorted=false returns the same set as sorted=true.
  std::vector<double> ys;
  for (int64_t i = 0; i < 1000; ++i) ys.push_back(std::fmod(static_cast<double>(i), 97.5));
  Tensor y = tensor(ys);
  auto [a, ai] = topk(y, 50, 0, true, true);
  auto [b, bi] = topk(y, 50, 0, true, false);
  std::vector<int64_t> sa = ints(ai), sb = ints(bi);
  CHECK(std::set<int64_t>(sa.begin(), sa.end()) == std::set<int64_t>(sb.begin(), sb.end()));
  CHECK_THROWS_WITH(topk(y, 1001),
                    Contains("topk: k (1001) is out of range for dimension 0 with size 1000"));
  CHECK_THROWS_WITH(topk(y, -1), Contains("topk"));
}

TEST_CASE("large scatter_add, index_put_ and nonzero match serial references", "[index]") {
  // 100000 positions into 1000 bins, parallel over the non-scattered dim.
  const int64_t rows = 100, n = 1000;
  std::vector<int64_t> is;
  for (int64_t i = 0; i < rows * n; ++i) is.push_back(i * 31 % 17);
  Tensor index = tensor(is, {rows, n});
  Tensor src = ones({rows, n}, kFloat64);
  Tensor out = zeros({rows, 17}, kFloat64).scatter_add(1, index, src);
  std::vector<int64_t> iv = ints(index);
  std::vector<double> expect(static_cast<size_t>(rows * 17), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c) expect[r * 17 + iv[r * n + c]] += 1;
  CHECK(values(out) == expect);

  Tensor acc = zeros({17}, kFloat64);
  acc.index_put_({index.flatten()}, ones({rows * n}, kFloat64), true);
  std::vector<double> counts(17, 0.0);
  for (int64_t v : iv) counts[v] += 1;
  CHECK(values(acc) == counts);

  std::vector<bool> bs;
  for (int64_t i = 0; i < 300000; ++i) bs.push_back(i % 7 == 0);
  Tensor big = tensor(bs, {300, 1000});
  Tensor nz = big.nonzero();
  CHECK(nz.sizes() == Shape{(300000 + 6) / 7, 2});
  std::vector<int64_t> nv = ints(nz);
  bool ok = true;
  int64_t k = 0;
  for (int64_t i = 0; i < 300000; i += 7, ++k)
    ok = ok && nv[2 * k] == i / 1000 && nv[2 * k + 1] == i % 1000;
  CHECK(ok);
}
