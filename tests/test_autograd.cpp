// The autograd engine and graph (autograd/): leaves, accumulation, retain_graph, hooks,
// in-place checks and rebasing, grad modes, anomaly mode, deep graphs, memory.

#include <catch2/catch.hpp>

#include <cmath>

#include <ember/ember.h>

#include "test_util.h"

using namespace ember;
using Catch::Contains;
using ember::testing::values;

namespace {
Tensor leaf(std::vector<double> v, Shape shape) {
  return tensor(v, shape, kFloat64).requires_grad_();
}
}  // namespace

TEST_CASE("backward of a small expression gives the analytic gradients", "[autograd]") {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor b = leaf({0.5, -1, 2}, {3});
  Tensor a = leaf({0.25}, {1});
  Tensor loss = ((x * b).exp() + a).sum();
  loss.backward();
  std::vector<double> gx = values(x.grad()), gb = values(b.grad());
  for (int i = 0; i < 3; ++i) {
    const double xv = i + 1.0, bv = std::vector<double>{0.5, -1, 2}[i];
    CHECK(gx[i] == Approx(bv * std::exp(xv * bv)));
    CHECK(gb[i] == Approx(xv * std::exp(xv * bv)));
  }
  CHECK(values(a.grad()) == std::vector<double>{3.0});  // broadcast [1] -> [3]: summed
  CHECK(loss.grad_fn()->name() == "SumBackward");
  CHECK(x.is_leaf());
  CHECK(!loss.is_leaf());
}
