// Shape ops (core/ops/shape.h): clear errors on mismatched inputs, cat's dtype promotion and
// legacy-empty rule, split/chunk returning views, and the memcpy / parallel paths against
// element-wise references.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <memory>

#include "test_util.h"

using namespace ember;
using namespace ember::testing;
using Catch::Contains;

namespace {

Tensor range_tensor(const Shape& shape, DType dt = kFloat32) {
  return arange(shape_numel(shape), dt).view(shape);
}

// A tensor that claims to live on cuda:0 but points at host memory the caller owns: enough to
// test device checks in a CPU-only build (it is never read).
Tensor fake_cuda_tensor(std::vector<float>& host, const Shape& shape) {
  auto storage = std::make_shared<StorageImpl>(
      DataPtr(host.data(), nullptr, nullptr, Device(DeviceType::CUDA, 0)),
      host.size() * sizeof(float));
  return make_tensor(storage, shape, contiguous_strides(shape), 0, kFloat32);
}

}  // namespace

TEST_CASE("cat: mismatched shapes, dims and devices are errors", "[shape]") {
  Tensor a = zeros({2, 3}), b = zeros({2, 4}), c = zeros({2, 3, 1});
  CHECK_THROWS_WITH(cat({a, b}, 0),
                    Contains("cat: sizes of tensors must match except in dimension 0") &&
                        Contains("[2, 3]") && Contains("[2, 4]") && Contains("dimension 1"));
  CHECK_NOTHROW(cat({a, b}, 1));
  CHECK_THROWS_WITH(cat({a, c}, 0),
                    Contains("cat: tensors must have the same number of dimensions"));
  CHECK_THROWS_WITH(cat({}, 0), Contains("cat: expected a non-empty list"));
  CHECK_THROWS_WITH(cat({zeros({}), zeros({})}, 0), Contains("cat: zero-dimensional tensor"));
  CHECK_THROWS_WITH(cat({a, a}, 2), Contains("cat") && Contains("dimension 2 out of range"));
  std::vector<float> host(6, 0.0f);
  Tensor g = fake_cuda_tensor(host, {2, 3});
  CHECK_THROWS_WITH(
      cat({a, g}, 0),
      Contains("cat: expected all tensors to be on the same device") && Contains("cuda:0"));
  CHECK_THROWS_WITH(stack({a, g}, 0), Contains("stack") && Contains("device"));
  CHECK_THROWS_WITH(stack({a, b}, 0), Contains("stack: expects each tensor to be equal size") &&
                                          Contains("[2, 4] at entry 1"));
}

TEST_CASE("cat: dtype promotion and legacy empty tensors", "[shape]") {
  CHECK(cat({zeros({2}, kInt32), zeros({2}, kFloat32)}).dtype() == kFloat32);
  CHECK(cat({zeros({2}, kInt32), zeros({2}, kInt64)}).dtype() == kInt64);
  CHECK(cat({zeros({2}, kBool), zeros({2}, kUInt8)}).dtype() == kUInt8);
  CHECK(cat({zeros({2}, kFloat16), zeros({2}, kBFloat16)}).dtype() == kFloat32);
  Tensor mixed = cat({tensor<int32_t>({1, 2}), tensor<float>({2.5f})});
  CHECK(values(mixed) == std::vector<double>{1, 2, 2.5});
  // A [0] tensor is skipped whatever the other shapes (dim 1 is valid for x, not for it).
  Tensor x = range_tensor({2, 3});
  Tensor y = cat({empty({0}), x, empty({0}, kFloat64)}, 1);
  CHECK(y.sizes() == Shape{2, 3});
  CHECK(y.dtype() == kFloat64);  // but it still takes part in type promotion
  CHECK(values(y) == values(x));
  CHECK(cat({empty({0}), empty({0})}).sizes() == Shape{0});
}

TEST_CASE("cat: large inputs on the memcpy and strided paths", "[shape]") {
  Tensor a = range_tensor({600, 700}), b = range_tensor({600, 500}) * -1;
  for (int64_t dim : {0, 1}) {
    Tensor bb = dim == 0 ? range_tensor({500, 700}) * -1 : b;
    Tensor c = cat({a, bb}, dim);
    CHECK(values(c.narrow(dim, 0, a.size(dim))) == values(a));
    CHECK(values(c.narrow(dim, a.size(dim), bb.size(dim))) == values(bb));
    // Non-contiguous and mixed-dtype inputs go through copy_.
    Tensor ct = cat({a.t().contiguous().t(), bb.to(kFloat64)}, dim);
    CHECK(ct.dtype() == kFloat64);
    CHECK(values(ct) == values(c));
  }
}

TEST_CASE("split and chunk return views", "[shape]") {
  Tensor x = range_tensor({6, 4});
  std::vector<Tensor> parts = x.split(4, 0);
  REQUIRE(parts.size() == 2);
  CHECK(parts[1].sizes() == Shape{2, 4});
  for (const Tensor& p : parts) CHECK(p.is_alias_of(x));
  parts[1].fill_(-1);  // writes through to x
  CHECK(values(x[5]) == std::vector<double>{-1, -1, -1, -1});
  std::vector<Tensor> cols = x.chunk(3, -1);
  REQUIRE(cols.size() == 2);
  CHECK(cols[0].sizes() == Shape{6, 2});
  CHECK(cols[1].storage_offset() == x.storage_offset() + 2);
  CHECK(cols[1].is_alias_of(x));
  std::vector<Tensor> sized = split(x, Shape{1, 0, 5}, 0);
  REQUIRE(sized.size() == 3);
  CHECK(sized[2].data_ptr() == x[1].data_ptr());

  CHECK_THROWS_WITH(
      split(x, Shape{2, 2}, 0),
      Contains("split: split sizes [2, 2] add up to 4, not to the size 6 of dimension 0"));
  CHECK_THROWS_WITH(x.split(0, 0), Contains("split: split_size must be positive"));
  CHECK_THROWS_WITH(x.split(-1, 0), Contains("split"));
  CHECK_THROWS_WITH(x.chunk(0), Contains("chunk: number of chunks must be positive"));
  CHECK_THROWS_WITH(zeros({}).split(1), Contains("split"));
}

TEST_CASE("pad: reflect, circular and argument errors", "[shape]") {
  Tensor x = range_tensor({2, 3});
  CHECK_THROWS_WITH(pad(x, {3, 0}, "reflect"),
                    Contains("pad: padding (3, 0) in dimension 1 must be less than the input size "
                             "3 for reflect mode"));
  CHECK_THROWS_WITH(pad(x, {0, 0, 0, 2}, "reflect"), Contains("pad") && Contains("dimension 0"));
  CHECK_NOTHROW(pad(x, {2, 2}, "reflect"));
  CHECK_THROWS_WITH(pad(x, {4, 0}, "circular"), Contains("pad") && Contains("circular"));
  CHECK_THROWS_WITH(pad(x, {-1, 0}, "reflect"), Contains("pad: negative padding"));
  CHECK_THROWS_WITH(pad(x, {1}), Contains("pad: padding length must be divisible by 2"));
  CHECK_THROWS_WITH(pad(x, {1, 1, 1, 1, 1, 1}), Contains("pad: padding length 6 is too large"));
  CHECK_THROWS_WITH(pad(x, {1, 1}, "wrap"), Contains("pad: mode must be"));
  CHECK_THROWS_WITH(pad(zeros({2, 0}), {1, 1}, "replicate"), Contains("pad: cannot replicate-pad"));
  CHECK_THROWS_WITH(pad(x, {-2, -2}), Contains("pad") && Contains("negative output size"));
  // [0 1 2] reflected by 2 on both sides.
  CHECK(values(pad(range_tensor({3}), {2, 2}, "reflect")) ==
        std::vector<double>{2, 1, 0, 1, 2, 1, 0});
  CHECK(values(pad(range_tensor({3}), {1, 2}, "replicate")) ==
        std::vector<double>{0, 0, 1, 2, 2, 2});
  CHECK(values(pad(range_tensor({3}), {1, 3}, "circular")) ==
        std::vector<double>{2, 0, 1, 2, 0, 1, 2});
  CHECK(values(pad(range_tensor({3}), {1, -1}, "constant", 9)) == std::vector<double>{9, 0, 1});
}

TEST_CASE("repeat, tile, flip, roll, tril, triu: argument errors", "[shape]") {
  Tensor x = range_tensor({2, 3});
  CHECK_THROWS_WITH(x.repeat({2}),
                    Contains("repeat: number of repeat dims (1) can not be smaller"));
  CHECK_THROWS_WITH(x.repeat({2, -1}), Contains("repeat: repeats must be non-negative"));
  CHECK_THROWS_WITH(x.tile({-1}), Contains("tile"));
  CHECK_THROWS_WITH(x.flip({0, -2}), Contains("flip: dim 0 appears multiple times"));
  CHECK_THROWS_WITH(x.flip({2}), Contains("flip"));
  CHECK_THROWS_WITH(x.roll({1, 2}, {0}),
                    Contains("roll: shifts [1, 2] and dims [0] must have the same length"));
  CHECK_THROWS_WITH(x.roll({1, 2}), Contains("roll: with no dims"));
  CHECK_THROWS_WITH(x.roll({1}, {3}), Contains("roll"));
  CHECK_THROWS_WITH(range_tensor({3}).tril(),
                    Contains("tril: input tensor must have at least 2 dimensions"));
  CHECK_THROWS_WITH(zeros({}).triu(), Contains("triu"));
}

TEST_CASE("shape ops on large inputs match element-wise references", "[shape]") {
  const int64_t r = 300, c = 400;
  Tensor x = range_tensor({r, c}, kFloat64);
  std::vector<double> xv = values(x);
  std::vector<double> fl = values(x.flip({0, 1})), rl = values(x.roll({7, -5}, {0, 1})),
                      lo = values(x.tril(3)), up = values(x.t().triu(-2)),
                      rp = values(x.repeat({2, 1}));
  bool ok = true;
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < c; ++j) {
      const int64_t e = i * c + j;
      ok = ok && fl[e] == xv[(r - 1 - i) * c + (c - 1 - j)];
      ok = ok && rl[e] == xv[((i - 7 + r) % r) * c + (j + 5) % c];
      ok = ok && lo[e] == (j - i <= 3 ? xv[e] : 0.0);
      ok = ok && rp[e] == xv[e] && rp[r * c + e] == xv[e];
    }
  }
  for (int64_t i = 0; i < c; ++i)
    for (int64_t j = 0; j < r; ++j) ok = ok && up[i * r + j] == (j - i >= -2 ? xv[j * c + i] : 0.0);
  CHECK(ok);
  Tensor s = stack({x, x * 2}, 1);
  CHECK(s.sizes() == Shape{r, 2, c});
  CHECK(values(s.select(1, 1)) == values(x * 2));
}
