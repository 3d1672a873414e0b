// native::threshold_backward (core/ops/binary.h) and relu's backward that uses it
// (Note [ReLU backward] in autograd/ops/unary.cpp).

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "test_util.h"

using namespace ember;
using namespace ember::testing;
using autograd::NoGradGuard;

namespace {

// The raw bytes of t in row-major order, so that -0 and +0 (and NaN payloads) count as different.
std::vector<unsigned char> bytes_of(const Tensor& t) {
  Tensor c = t.contiguous();
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  return std::vector<unsigned char>(p, p + c.numel() * static_cast<int64_t>(c.element_size()));
}

// Values on a grid of 0.5 in [-2, 2]: many exact zeros, negatives and positives. Both signs of
// zero appear after the multiply by a random sign.
Tensor grid_values(const Shape& shape, DType dt, uint64_t seed) {
  Generator gen(seed);
  Tensor r = randn(shape, TensorOptions().dtype(kFloat64), &gen);
  return r.mul(2.0).round().div(2.0).clamp(-2.0, 2.0).to(dt);
}

// The composite relu's backward used before the native kernel.
Tensor old_composite(const Tensor& g, const Tensor& y) { return mul(g, gt(y, 0)); }

}  // namespace

TEST_CASE("threshold_backward equals the composite on random data", "[threshold_backward]") {
  NoGradGuard no_grad;
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    INFO("dtype " << dtype_name(dt));
    const Shape shape{37, 53};
    Tensor y = grid_values(shape, dt, 1);  // outputs <= 0 included, not only relu's >= 0
    Tensor g = randn(shape, TensorOptions().dtype(kFloat64), nullptr).to(dt);
    g = where(lt(grid_values(shape, kFloat64, 2), 0), g, zeros_like(g));  // exact zeros in g
    Tensor fast = native::threshold_backward(g, y, 0.0);
    CHECK(fast.dtype() == dt);
    CHECK(fast.sizes() == shape);
    // The same values as the old composite (-0 == +0 for finite g)...
    CHECK(values(fast) == values(old_composite(g, y)));
    // ... and the same bits as the differentiable formula of the create_graph path.
    CHECK(bytes_of(fast) == bytes_of(where(gt(y, 0), g, Scalar(0.0))));
    // relu's own output, the case autograd sees.
    Tensor r = relu(y);
    CHECK(values(native::threshold_backward(g, r, 0.0)) == values(old_composite(g, r)));
  }
}

TEST_CASE("threshold_backward: non-contiguous and broadcast-strided inputs",
          "[threshold_backward]") {
  NoGradGuard no_grad;
  for (DType dt : {kFloat32, kFloat64, kFloat16}) {
    INFO("dtype " << dtype_name(dt));
    Tensor y = grid_values({40, 30}, dt, 3).t();               // transposed (30, 40)
    Tensor g = grid_values({30, 80}, dt, 4).narrow(1, 5, 40);  // row stride 80
    Tensor want = where(gt(y, 0), g, Scalar(0.0));
    CHECK(bytes_of(native::threshold_backward(g, y, 0.0)) == bytes_of(want));
    // A zero-strided grad (what sum's backward hands down).
    Tensor ge = full({1, 40}, 1.5, TensorOptions().dtype(dt)).expand({30, 40});
    CHECK(bytes_of(native::threshold_backward(ge, y, 0.0)) ==
          bytes_of(where(gt(y, 0), ge, Scalar(0.0))));
    // Every other element of both.
    Tensor ys = grid_values({30, 80}, dt, 5).slice(1, 0, 80, 2);
    CHECK(bytes_of(native::threshold_backward(g, ys, 0.0)) ==
          bytes_of(where(gt(ys, 0), g, Scalar(0.0))));
  }
  // Sizes 0 and 1.
  Tensor e = zeros({0, 3});
  CHECK(native::threshold_backward(e, e, 0.0).sizes() == Shape{0, 3});
  Tensor one = full({1}, 2.0);
  CHECK(values(native::threshold_backward(full({1}, -3.0), one, 0.0)) == std::vector<double>{-3});
}

TEST_CASE("threshold_backward: non-finite values and the sign of zero", "[threshold_backward]") {
  NoGradGuard no_grad;
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    INFO("dtype " << dtype_name(dt));
    Tensor y = tensor<double>({0.0, -1.0, kNaN, 2.0, 2.0, 2.0, -0.0, 1.0}).to(dt);
    Tensor g = tensor<double>({-3.0, kInf, kNaN, kNaN, -kInf, -0.0, -kInf, 4.0}).to(dt);
    std::vector<double> got = values(native::threshold_backward(g, y, 0.0));
    // y <= 0 or NaN: +0 whatever g is (PyTorch's threshold_backward).
    for (int i : {0, 1, 2, 6}) {
      CHECK(got[i] == 0.0);
      CHECK_FALSE(std::signbit(got[i]));
    }
    // y > 0: g passes unchanged, NaN and infinities included.
    CHECK(std::isnan(got[3]));
    CHECK(got[4] == -kInf);
    CHECK(got[5] == 0.0);
    CHECK(std::signbit(got[5]));
    CHECK(got[7] == 4.0);
  }
}

TEST_CASE("threshold_backward: a non-zero threshold is rounded to the dtype",
          "[threshold_backward]") {
  NoGradGuard no_grad;
  Tensor g = full({5}, 7.0);
  Tensor y = tensor<float>({0.4f, 0.5f, 0.6f, -1.0f, 3.0f});
  CHECK(values(native::threshold_backward(g, y, 0.5)) == std::vector<double>{0, 0, 7, 0, 7});
  // float16: 0.1 is 0.0999755859375 in half, so an output equal to half(0.1) is not above it,
  // as gt(y, 0.1) compares them in half too.
  Tensor yh = tensor<double>({0.1, 0.1001, 0.2}).to(kFloat16);
  Tensor gh = full({3}, 2.0, TensorOptions().dtype(kFloat16));
  CHECK(bytes_of(native::threshold_backward(gh, yh, 0.1)) ==
        bytes_of(where(gt(yh, 0.1), gh, Scalar(0.0))));
  CHECK(values(native::threshold_backward(gh, yh, 0.1)) == std::vector<double>{0, 2, 2});
}

TEST_CASE("threshold_backward: bad inputs are clear errors", "[threshold_backward]") {
  Tensor a = zeros({2, 3}), b = zeros({3, 2});
  CHECK_THROWS_WITH(native::threshold_backward(a, b, 0.0), Catch::Contains("threshold_backward") &&
                                                               Catch::Contains("[2, 3]") &&
                                                               Catch::Contains("[3, 2]"));
  // No broadcasting: a (1, 3) grad is a mismatch too.
  CHECK_THROWS_WITH(native::threshold_backward(zeros({1, 3}), a, 0.0),
                    Catch::Contains("threshold_backward") && Catch::Contains("[1, 3]"));
  CHECK_THROWS_WITH(native::threshold_backward(a, a.to(kFloat64), 0.0),
                    Catch::Contains("threshold_backward") && Catch::Contains("float64"));
  Tensor i = zeros({2, 3}, TensorOptions().dtype(kInt32));
  CHECK_THROWS_WITH(native::threshold_backward(i, i, 0.0),
                    Catch::Contains("threshold_backward") && Catch::Contains("int32"));
}

TEST_CASE("relu backward: the same gradients with and without create_graph",
          "[threshold_backward][autograd]") {
  for (DType dt : {kFloat32, kFloat64, kFloat16}) {
    INFO("dtype " << dtype_name(dt));
    const Shape shape{17, 29};
    Tensor x = grid_values(shape, dt, 6).requires_grad_();
    Tensor w = grid_values(shape, dt, 7);  // negatives and zeros in the incoming gradient
    Tensor want;
    {
      NoGradGuard no_grad;
      want = where(gt(x, 0), w, Scalar(0.0));
    }
    // Without create_graph: the native kernel.
    Tensor plain = autograd::grad({mul(relu(x), w).sum()}, {x})[0];
    CHECK_FALSE(plain.requires_grad());
    CHECK(bytes_of(plain) == bytes_of(want));
    // With create_graph: the differentiable formula, the same bits.
    Tensor w2 = w.clone().requires_grad_();
    Tensor graphed = autograd::grad({mul(relu(x), w2).sum()}, {x}, {}, std::nullopt,
                                    /*create_graph=*/true)[0];
    CHECK(graphed.requires_grad());
    CHECK(bytes_of(graphed.detach()) == bytes_of(want));
    // Double backward through it: d/dw2 sum(grad_x * v) = v where x > 0, else 0.
    Tensor v = grid_values(shape, dt, 8);
    mul(graphed, v).sum().backward();
    // relu_ records the same node.
    Tensor x2 = x.detach().clone().requires_grad_();
    Tensor h = x2.mul(1.0);
    relu_(h);
    mul(h, w).sum().backward();
    NoGradGuard no_grad;
    CHECK(values(w2.grad()) == values(where(gt(x, 0), v, Scalar(0.0))));
    CHECK(bytes_of(x2.grad()) == bytes_of(want));
  }
}
