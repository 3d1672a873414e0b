// Sizes that overflow (Note [Sizes that overflow] in core/checked_math.h): every shape, stride,
// element and byte count a user's numbers reach is checked, so an int64 overflow is an
// ember::Error naming the op and the shape, never a tensor whose numel wrapped to 0 or to a
// negative number.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>

#include "test_util.h"

using namespace ember;
using namespace ember::testing;
using Catch::Contains;

namespace {
constexpr int64_t kBig = int64_t{1} << 32;
constexpr int64_t kHuge = int64_t{1} << 62;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
}  // namespace

TEST_CASE("factories refuse shapes whose element count overflows int64", "[overflow]") {
  // Before: numel 0 and numel < 0, and a segfault at the first index.
  CHECK_THROWS_WITH(empty({kBig, kBig, 16}), Contains("empty") && Contains("int64"));
  CHECK_THROWS_WITH(empty({3, kHuge}), Contains("empty") && Contains("[3, 4611686018427387904]"));
  CHECK_THROWS_WITH(zeros({kMax, 2}), Contains("int64"));
  CHECK_THROWS_WITH(ones({kBig, kBig}), Contains("int64"));
  CHECK_THROWS_WITH(full({kHuge, 4}, 1.0), Contains("int64"));
  // The element count fits, the byte count does not.
  CHECK_THROWS_WITH(empty({kHuge}, kFloat64), Contains("empty") && Contains("bytes"));
  CHECK_THROWS_WITH(empty({-1, 3}), Contains("negative size"));
  // A zero size: no elements, whatever the others are.
  CHECK(empty({kHuge, 0, kHuge}).numel() == 0);
}

TEST_CASE("views refuse shapes and strides that overflow", "[overflow]") {
  Tensor e = zeros({0});
  CHECK_THROWS_WITH(e.view({kBig, kBig, kBig}), Contains("view") && Contains("int64"));
  CHECK_THROWS_WITH(e.reshape({kHuge, 4, 4}), Contains("reshape") && Contains("int64"));
  CHECK(e.view({kBig, kBig, 0}).numel() == 0);
  Tensor one = zeros({1});
  CHECK_THROWS_WITH(one.expand({kHuge, 4}), Contains("expand") && Contains("int64"));
  CHECK_THROWS_WITH(one.expand({kBig, kBig}), Contains("expand"));
  Tensor x = zeros({4, 4});
  CHECK_THROWS_WITH(x.as_strided({3, 3}, {kHuge, kHuge}), Contains("as_strided"));
  // A step past the end leaves one element: fine, and its stride stays in range.
  Tensor s = x.slice(0, 0, 4, kMax);
  CHECK(s.size(0) == 1);
  Tensor big = zeros({1}).expand({kHuge});
  CHECK_THROWS_WITH(big.unfold(0, kHuge / 2, 1), Contains("unfold"));
}

TEST_CASE("cat, repeat and pad refuse outputs that overflow", "[overflow]") {
  Tensor big = zeros({1}).expand({kHuge});
  CHECK_THROWS_WITH(cat({big, big}, 0), Contains("cat") && Contains("int64"));
  CHECK_THROWS_WITH(zeros({2}).repeat({kHuge}), Contains("repeat") && Contains("int64"));
  CHECK_THROWS_WITH(zeros({1}).expand({kBig}).repeat({kBig, 1}), Contains("int64"));
  CHECK_THROWS_WITH(stack({big, big}, 0), Contains("int64"));
  CHECK_THROWS_WITH(pad(zeros({2, 2}), {kMax, kMax}), Contains("pad") && Contains("int64"));
  CHECK_THROWS_WITH(pad(zeros({2, 2}), {kHuge, kHuge}, "replicate"), Contains("pad"));
}

TEST_CASE("conv and pool output sizes refuse parameters that overflow", "[overflow]") {
  Tensor img = zeros({1, 1, 4, 4});
  Tensor w = zeros({1, 1, 1, 1});
  CHECK_THROWS_WITH(conv2d(img, w, {}, {1}, {kHuge}), Contains("conv2d") && Contains("int64"));
  CHECK_THROWS_WITH(conv2d(img, zeros({1, 1, 2, 2}), {}, {1}, {0}, {kMax}), Contains("conv2d"));
  CHECK_THROWS_WITH(max_pool2d(img, {kHuge}, {1}, {0}, {4}), Contains("max_pool2d"));
  CHECK_THROWS_WITH(im2col(img, {2}, {kMax}, {0}, {1}), Contains("im2col"));
  CHECK_THROWS_WITH(nn::functional::conv_transpose2d(img, w, {}, {kHuge}),
                    Contains("conv_transpose2d") && Contains("int64"));
}

TEST_CASE("arange refuses a range whose length overflows", "[overflow]") {
  CHECK_THROWS_WITH(arange(-kMax, kMax, 1), Contains("arange") && Contains("int64"));
  CHECK_THROWS_WITH(arange(0.0, 1e300, 1.0), Contains("arange"));
  CHECK(arange(0, 10, 3).numel() == 4);
  CHECK(arange(10, 0, -3).numel() == 4);
}

TEST_CASE("linspace with one step is its start, as in PyTorch and NumPy", "[factory]") {
  CHECK(values(linspace(2, 3, 1)) == std::vector<double>{2.0});
  CHECK(values(linspace(2, 3, 2)) == std::vector<double>{2.0, 3.0});
  CHECK(values(linspace(2, 3, 3)) == std::vector<double>{2.0, 2.5, 3.0});
  CHECK(linspace(2, 3, 0).numel() == 0);
}
