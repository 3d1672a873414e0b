// Writes over overlapping memory (Note [Writes over overlapping memory] in core/mem_overlap.h):
// the detector's answers on layouts it must catch and layouts it must let through, and every
// kind of writing op refusing a partly overlapping or self-overlapping output with an
// ember::Error naming the op, while exact aliasing (x.add_(x)) still works.

#include <ember/ember.h>

#include <catch2/catch.hpp>

#include "core/mem_overlap.h"
#include "core/ops/optim.h"
#include "test_util.h"

using namespace ember;
using namespace ember::testing;
using Catch::Contains;

namespace {
const char* kPartial = "some elements of the input tensor";
const char* kInternal = "more than one element of the written-to tensor";

Tensor iota(const Shape& shape) { return arange(shape_numel(shape), kFloat32).view(shape); }
}  // namespace

TEST_CASE("has_internal_overlap finds repeated locations and clears real layouts",
          "[mem_overlap]") {
  CHECK(has_internal_overlap(zeros({3, 4})) == MemOverlap::No);
  CHECK(has_internal_overlap(zeros({3, 4}).t()) == MemOverlap::No);
  CHECK(has_internal_overlap(zeros({6, 4}).slice(0, 0, 6, 2)) == MemOverlap::No);
  CHECK(has_internal_overlap(zeros({4, 6}).narrow(1, 1, 3)) == MemOverlap::No);
  CHECK(has_internal_overlap(zeros({3, 1}).expand({3, 4})) == MemOverlap::Yes);
  CHECK(has_internal_overlap(zeros({1}).expand({5})) == MemOverlap::Yes);
  // Windows of a sliding unfold share elements: a stride smaller than the extent before it.
  CHECK(has_internal_overlap(zeros({6}).unfold(0, 3, 1)) == MemOverlap::TooHard);
  CHECK(has_internal_overlap(zeros({6}).unfold(0, 2, 2)) == MemOverlap::No);
}

TEST_CASE("get_overlap_status tells full, partial and no overlap apart", "[mem_overlap]") {
  Tensor x = zeros({4, 4});
  CHECK(get_overlap_status(x, x) == MemOverlapStatus::Full);
  CHECK(get_overlap_status(x, x.view({16}).view({4, 4})) == MemOverlapStatus::Full);
  CHECK(get_overlap_status(x, x.t()) == MemOverlapStatus::Partial);
  CHECK(get_overlap_status(x.narrow(0, 1, 3), x.narrow(0, 0, 3)) == MemOverlapStatus::Partial);
  CHECK(get_overlap_status(x.narrow(0, 0, 2), x.narrow(0, 2, 2)) == MemOverlapStatus::No);
  CHECK(get_overlap_status(x, x[0][0]) == MemOverlapStatus::Partial);
  CHECK(get_overlap_status(x, zeros({4, 4})) == MemOverlapStatus::No);
  // Two interleaved columns share no element, though their ranges meet: not refused.
  CHECK(get_overlap_status(x.select(1, 0), x.select(1, 1)) == MemOverlapStatus::TooHard);
  CHECK(get_overlap_status(x.narrow(0, 0, 0), x) == MemOverlapStatus::No);
}

TEST_CASE("element-wise in-place ops refuse a partly overlapping input", "[mem_overlap]") {
  Tensor x = iota({4, 4});
  CHECK_THROWS_WITH(x.add_(x.t()), Contains("add_") && Contains(kPartial));
  const int64_t n = 6;
  Tensor y = iota({n});
  CHECK_THROWS_WITH(y.narrow(0, 1, n - 1).add_(y.narrow(0, 0, n - 1)), Contains(kPartial));
  CHECK_THROWS_WITH(x.mul_(x[0]), Contains(kPartial));
  CHECK_THROWS_WITH(x.copy_(x.t()), Contains("copy_") && Contains(kPartial));
  CHECK_THROWS_WITH(x.div_(x[1][1]), Contains("div_") && Contains(kPartial));
  // Nothing was written by the refused ops.
  CHECK(values(x) == values(iota({4, 4})));
  CHECK(values(y) == values(iota({n})));
}

TEST_CASE("exact aliasing and disjoint views still work", "[mem_overlap]") {
  Tensor x = iota({3, 3});
  x.add_(x);
  CHECK(values(x) == values(iota({3, 3}).mul(2.0)));
  x.mul_(x);
  CHECK(values(x)[2] == 16.0);
  Tensor y = iota({6});
  y.narrow(0, 3, 3).add_(y.narrow(0, 0, 3));
  CHECK(values(y) == std::vector<double>{0, 1, 2, 3, 5, 7});
  Tensor z = iota({2, 2});
  z.select(1, 0).copy_(z.select(1, 1));  // interleaved columns: allowed
  CHECK(values(z) == std::vector<double>{1, 1, 3, 3});
}

TEST_CASE("an output that overlaps itself is refused", "[mem_overlap]") {
  Tensor e = zeros({3, 1}).expand({3, 4});
  CHECK_THROWS_WITH(e.add_(1.0), Contains("add_") && Contains(kInternal));
  CHECK_THROWS_WITH(e.fill_(2.0), Contains(kInternal));
  CHECK_THROWS_WITH(e.copy_(ones({3, 4})), Contains("copy_") && Contains(kInternal));
  CHECK_THROWS_WITH(e.uniform_(), Contains(kInternal));
  CHECK_THROWS_WITH(e.zero_(), Contains(kInternal));
}

TEST_CASE("scatter, index_add_ and index_put_ refuse overlapping operands", "[mem_overlap]") {
  Tensor x = iota({4});
  Tensor idx = tensor(std::vector<int64_t>{0, 1});
  CHECK_THROWS_WITH(x.scatter_(0, idx, x.narrow(0, 1, 2)),
                    Contains("scatter_") && Contains(kPartial));
  CHECK_THROWS_WITH(x.scatter_add_(0, idx, x.narrow(0, 2, 2)), Contains("scatter_add_"));
  CHECK_THROWS_WITH(x.index_add_(0, idx, x.narrow(0, 0, 2)), Contains("index_add_"));
  CHECK_THROWS_WITH(x.index_put_({idx}, x.narrow(0, 2, 2)), Contains("index_put_"));
  Tensor e = zeros({1}).expand({4});
  CHECK_THROWS_WITH(e.index_put_({idx}, ones({2})), Contains("index_put_") && Contains(kInternal));
  CHECK_THROWS_WITH(e.scatter_(0, idx, ones({2})), Contains(kInternal));
  // The index itself may not be the destination's memory either.
  Tensor li = tensor(std::vector<int64_t>{0, 1, 2});
  CHECK_THROWS_WITH(li.scatter_(0, li.narrow(0, 0, 2), li.narrow(0, 1, 2)), Contains("scatter_"));
  CHECK(values(x) == values(iota({4})));
  // Separate memory: fine.
  x.index_put_({idx}, tensor(std::vector<float>{7, 8}));
  CHECK(values(x) == std::vector<double>{7, 8, 2, 3});
}

TEST_CASE("the fused optimizer steps refuse overlapping state", "[mem_overlap]") {
  Tensor p = iota({4}), g = ones({4});
  Tensor buf = zeros({4});
  SgdCoefficients c;
  c.lr = 0.1;
  c.momentum = 0.9;
  CHECK_THROWS_WITH(native::sgd_step_(p, g, p, c), Contains(kPartial) || Contains("sgd"));
  Tensor e = zeros({1}).expand({4});
  CHECK_THROWS_WITH(native::sgd_step_(e, g, buf, c), Contains(kInternal));
  Tensor big = zeros({8});
  CHECK_THROWS_WITH(native::sgd_step_(big.narrow(0, 0, 4), big.narrow(0, 2, 4), buf, c),
                    Contains(kPartial));
  native::sgd_step_(p, g, buf, c);  // separate memory: steps
  CHECK(values(p)[0] == Approx(-0.1));
}
