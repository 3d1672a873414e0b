// Convolution and pooling building blocks: im2col / col2im identities, conv2d against its
// im2col + GEMM definition, pooling indices and special values, and the error messages.
// Forward values over stride / padding / dilation / groups variants are checked by the op table
// (tests/op_table/conv_ops.cpp).

#include <ember/ember.h>

#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "test_util.h"

using namespace ember;
using namespace ember::testing;
using Catch::Contains;

namespace {

double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  std::vector<double> x = values(a), y = values(b);
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

double inner_product(const Tensor& a, const Tensor& b) {
  std::vector<double> x = values(a), y = values(b);
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

Tensor randn64(const Shape& shape, uint64_t seed) {
  Generator g(seed);
  return randn(shape, kFloat64, &g);
}

struct ThreadCountGuard {
  int saved = num_threads();
  ~ThreadCountGuard() { set_num_threads(saved); }
};

}  // namespace

TEST_CASE("col2im(im2col(x)) is x for windows that tile the image", "[conv]") {
  Tensor x = randn64({2, 3, 6, 8}, 1);
  Tensor cols = im2col(x, {2, 4}, {1}, {0}, {2, 4});
  CHECK(cols.sizes() == Shape{2, 3 * 2 * 4, 3 * 2});
  CHECK(max_abs_diff(col2im(cols, {6, 8}, {2, 4}, {1}, {0}, {2, 4}), x) == 0.0);
  // Unbatched, through float32.
  Tensor y = x[0].to(kFloat32);
  CHECK(max_abs_diff(col2im(im2col(y, {3, 2}, {1}, {0}, {3, 2}), {6, 8}, {3, 2}, {1}, {0}, {3, 2}),
                     y) == 0.0);
}

TEST_CASE("col2im(im2col(x)) multiplies each pixel by the windows covering it", "[conv]") {
  Tensor x = randn64({1, 2, 5, 5}, 2);
  auto roundtrip = [](const Tensor& t) {
    return col2im(im2col(t, {3, 3}, {1}, {1}, {1}), {5, 5}, {3, 3}, {1}, {1}, {1});
  };
  Tensor counts = roundtrip(ones({1, 2, 5, 5}, kFloat64));
  // Interior pixels lie in 9 windows, edges in 6, corners in 4.
  CHECK(values(counts)[0] == 4.0);
  CHECK(values(counts)[1] == 6.0);
  CHECK(values(counts)[6] == 9.0);
  CHECK(max_abs_diff(roundtrip(x), x * counts) < 1e-12);
}

TEST_CASE("col2im is the adjoint of im2col", "[conv]") {
  // <im2col(x), y> == <x, col2im(y)> for every geometry.
  struct Geometry {
    Shape k, d, p, s;
  };
  for (const Geometry& g : std::vector<Geometry>{{{3, 3}, {1}, {1}, {1}},
                                                 {{2, 3}, {2, 1}, {1, 2}, {2, 1}},
                                                 {{1, 1}, {1}, {0}, {3}},
                                                 {{3, 2}, {1, 2}, {0, 1}, {2, 3}}}) {
    INFO("kernel " << shape_str(g.k) << " dilation " << shape_str(g.d) << " padding "
                   << shape_str(g.p) << " stride " << shape_str(g.s));
    Tensor x = randn64({2, 3, 7, 6}, 3);
    Tensor cols = im2col(x, g.k, g.d, g.p, g.s);
    Tensor y = randn64(cols.sizes(), 4);
    Tensor back = col2im(y, {7, 6}, g.k, g.d, g.p, g.s);
    CHECK(back.sizes() == x.sizes());
    CHECK(std::abs(inner_product(cols, y) - inner_product(x, back)) <
          1e-9 * (1 + std::abs(inner_product(cols, y))));
  }
}

TEST_CASE("conv2d is im2col followed by a weight product", "[conv]") {
  Tensor x = randn64({2, 4, 6, 5}, 5), w = randn64({6, 2, 3, 2}, 6), b = randn64({6}, 7);
  const int64_t groups = 2;
  Tensor out = conv2d(x, w, b, {2, 1}, {1, 1}, {1, 2}, groups);
  Tensor cols = im2col(x, {3, 2}, {1, 2}, {1, 1}, {2, 1});  // (N, C * 6, L)
  REQUIRE(out.sizes() == Shape{2, 6, 3, 5});
  REQUIRE(cols.sizes() == Shape{2, 24, 15});
  std::vector<double> xc = values(cols), wv = values(w), bv = values(b), ov = values(out);
  const int64_t K = 2 * 3 * 2, L = 15;
  double worst = 0;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t o = 0; o < 6; ++o)
      for (int64_t l = 0; l < L; ++l) {
        const int64_t g = o / 3;
        double acc = bv[o];
        for (int64_t k = 0; k < K; ++k) acc += wv[o * K + k] * xc[(n * 24 + g * K + k) * L + l];
        worst = std::max(worst, std::abs(acc - ov[(n * 6 + o) * L + l]));
      }
  CHECK(worst < 1e-12);
}

TEST_CASE("conv2d: unbatched, float16 and thread counts agree with the batched float result",
          "[conv]") {
  ThreadCountGuard guard;
  Tensor x = randn64({3, 30, 30}, 8).to(kFloat32), w = randn64({5, 3, 3, 3}, 9).to(kFloat32);
  Tensor b = randn64({5}, 10).to(kFloat32);
  set_num_threads(1);
  Tensor one = conv2d(x, w, b, {1}, {1});
  set_num_threads(2);
  Tensor two = conv2d(x, w, b, {1}, {1});
  CHECK(one.sizes() == Shape{5, 30, 30});
  CHECK(max_abs_diff(one, two) < 1e-4);
  CHECK(max_abs_diff(conv2d(x.unsqueeze(0), w, b, {1}, {1})[0], two) == 0.0);
  Tensor half = conv2d(x.to(kFloat16), w.to(kFloat16), b.to(kFloat16), {1}, {1});
  CHECK(half.dtype() == kFloat16);
  CHECK(max_abs_diff(half, two) < 0.1);  // inputs rounded to 11 bits, sums of 27 terms
  Tensor bf = conv2d(x.to(kBFloat16), w.to(kBFloat16), {}, {1}, {1});
  CHECK(bf.dtype() == kBFloat16);
}

TEST_CASE("conv2d: images batched into one GEMM equal one image at a time", "[conv]") {
  // Small planes (L = 16 output positions) make the kernel convolve several images per GEMM;
  // 37 images leave a short last block. Each image alone takes the one-image path.
  ThreadCountGuard guard;
  Tensor x = randn64({37, 4, 6, 6}, 21).to(kFloat32), w = randn64({6, 2, 3, 3}, 22).to(kFloat32);
  Tensor b = randn64({6}, 23).to(kFloat32);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    Tensor all = conv2d(x, w, b, {1}, {0}, {1}, /*groups=*/2);
    REQUIRE(all.sizes() == Shape{37, 6, 4, 4});
    double worst = 0;
    for (int64_t n = 0; n < 37; ++n)
      worst = std::max(worst, max_abs_diff(all[n], conv2d(x[n], w, b, {1}, {0}, {1}, 2)));
    CHECK(worst < 1e-5);
  }
}

TEST_CASE("max_pool2d 2x2 stride 2: ties, NaN, -inf and odd sizes as the general rule", "[conv]") {
  // The 2x2 / stride 2 case has its own loop; it must follow the general rule: the first
  // maximum in row-major window order wins, and any NaN wins (the last NaN seen).
  Tensor x = randn64({2, 3, 7, 5}, 31).round();  // small integers: many ties
  {
    NoGradGuard g;
    x[0][0][0][0].fill_(kNaN);
    x[0][0][1][1].fill_(kNaN);
    x[1][2][2].fill_(-kInf);
  }
  for (DType dt : {kFloat64, kFloat32}) {
    Tensor xd = x.to(dt);
    auto [v, idx] = max_pool2d_with_indices(xd, {2, 2}, {2, 2});
    REQUIRE(v.sizes() == Shape{2, 3, 3, 2});
    std::vector<double> xv = values(xd), vv = values(v), iv = values(idx);
    for (int64_t p = 0; p < 6; ++p)
      for (int64_t oh = 0; oh < 3; ++oh)
        for (int64_t ow = 0; ow < 2; ++ow) {
          double best = -kInf;
          int64_t at = (2 * oh) * 5 + 2 * ow;
          for (int64_t i = 0; i < 2; ++i)
            for (int64_t j = 0; j < 2; ++j) {
              const int64_t k = (2 * oh + i) * 5 + 2 * ow + j;
              const double val = xv[p * 35 + k];
              if (val > best || std::isnan(val)) {
                best = val;
                at = k;
              }
            }
          const int64_t o = (p * 3 + oh) * 2 + ow;
          CHECK(iv[o] == at);
          CHECK((std::isnan(best) ? std::isnan(vv[o]) : vv[o] == best));
        }
  }
}

TEST_CASE("max_pool2d indices point at the maxima", "[conv]") {
  Tensor x = randn64({2, 3, 7, 6}, 11);
  auto [values_t, indices] = max_pool2d_with_indices(x, {3, 2}, {2, 2}, {1, 1}, {1, 1}, true);
  CHECK(indices.dtype() == kInt64);
  CHECK(indices.sizes() == values_t.sizes());
  std::vector<double> xv = values(x), vv = values(values_t);
  const int64_t* ip = indices.contiguous().data_ptr<int64_t>();
  const int64_t planes = 6, L = values_t.size(2) * values_t.size(3);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t l = 0; l < L; ++l) {
      int64_t idx = ip[p * L + l];
      REQUIRE(idx >= 0);
      REQUIRE(idx < 42);
      CHECK(xv[p * 42 + idx] == vv[p * L + l]);
    }
  CHECK(max_abs_diff(max_pool2d(x, {3, 2}, {2, 2}, {1, 1}, {1, 1}, true), values_t) == 0.0);
}

TEST_CASE("max_pool2d propagates NaN and handles -inf", "[conv]") {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = tensor(std::vector<double>{1, 2, NAN, 4, -inf, -inf, -inf, -inf}, {1, 2, 4});
  auto [v, i] = max_pool2d_with_indices(x, {1, 2});
  std::vector<double> vv = values(v);
  CHECK(vv[0] == 2.0);
  CHECK(std::isnan(vv[1]));
  CHECK(vv[2] == -inf);
  CHECK(vv[3] == -inf);
  std::vector<double> iv = values(i);
  CHECK(iv == std::vector<double>{1, 2, 4, 6});  // -inf windows report their first tap
}

TEST_CASE("avg_pool2d divisors follow PyTorch", "[conv]") {
  Tensor x = ones({1, 1, 4, 4}, kFloat32);
  // Corner window with padding 1: 4 of its 9 taps are inside.
  CHECK(values(avg_pool2d(x, {3}, {2}, {1}, false, true))[0] == Approx(4.0 / 9.0));
  CHECK(values(avg_pool2d(x, {3}, {2}, {1}, false, false))[0] == Approx(1.0));
  CHECK(values(avg_pool2d(x, {3}, {2}, {1}, false, true, 2))[0] == Approx(2.0));
  CHECK(avg_pool2d(x, {2}).sizes() == Shape{1, 1, 2, 2});
}

TEST_CASE("conv ops report bad arguments with the op and shapes", "[conv]") {
  Tensor x = zeros({1, 4, 5, 5}, kFloat32), w = zeros({6, 2, 3, 3}, kFloat32);
  CHECK_THROWS_WITH(conv2d(zeros({4, 5}, kFloat32), w), Contains("conv2d") && Contains("[4, 5]"));
  CHECK_THROWS_WITH(conv2d(x, zeros({6, 2, 3}, kFloat32)),
                    Contains("conv2d") && Contains("4-D weight"));
  CHECK_THROWS_WITH(conv2d(x, zeros({6, 4, 3, 3}, kFloat32), {}, {1}, {0}, {1}, 3),
                    Contains("conv2d") && Contains("not divisible by groups=3"));
  CHECK_THROWS_WITH(conv2d(x, zeros({5, 2, 3, 3}, kFloat32), {}, {1}, {0}, {1}, 2),
                    Contains("out_channels") && Contains("[5, 2, 3, 3]"));
  CHECK_THROWS_WITH(conv2d(x, w), Contains("conv2d") && Contains("[6, 2, 3, 3]") &&
                                      Contains("[1, 4, 5, 5]") && Contains("2 channels"));
  CHECK_THROWS_WITH(conv2d(x, zeros({6, 4, 7, 7}, kFloat32)),
                    Contains("conv2d") && Contains("larger than the padded input"));
  CHECK_THROWS_WITH(conv2d(x, zeros({6, 4, 3, 3}, kFloat32), {}, {0}),
                    Contains("conv2d") && Contains("stride must be positive"));
  CHECK_THROWS_WITH(conv2d(x, zeros({6, 4, 3, 3}, kFloat32), {}, {1}, {-1}),
                    Contains("padding must be non-negative"));
  CHECK_THROWS_WITH(conv2d(x, zeros({6, 4, 3, 3}, kFloat32), {}, {1}, {0}, {0}),
                    Contains("dilation must be positive"));
  CHECK_THROWS_WITH(conv2d(x, zeros({6, 4, 3, 3}, kFloat32), zeros({5}, kFloat32)),
                    Contains("conv2d") && Contains("bias"));
  CHECK_THROWS_WITH(conv2d(x, zeros({6, 4, 3, 3}, kFloat64)),
                    Contains("conv2d") && Contains("float64") && Contains("same dtype"));
  CHECK_THROWS_WITH(conv2d(zeros({1, 4, 5, 5}, kInt64), zeros({6, 4, 3, 3}, kInt64)),
                    Contains("conv2d") && Contains("int64"));
  CHECK_THROWS_WITH(conv2d(x, zeros({6, 4, 3, 3}, kFloat32), {}, {1, 2, 3}),
                    Contains("stride") && Contains("[1, 2, 3]"));
  CHECK_THROWS_WITH(conv2d(x, w, {}, {1}, {0}, {1}, 0), Contains("groups must be positive"));

  CHECK_THROWS_WITH(max_pool2d(x, {3}, {}, {2}), Contains("max_pool2d") && Contains("half"));
  CHECK_THROWS_WITH(avg_pool2d(x, {2}, {}, {2}), Contains("avg_pool2d") && Contains("half"));
  CHECK_THROWS_WITH(max_pool2d(x, {6}), Contains("max_pool2d") && Contains("too small"));
  CHECK_THROWS_WITH(max_pool2d(x, {2}, {0}), Contains("max_pool2d") && Contains("stride"));
  CHECK_THROWS_WITH(max_pool2d(zeros({5, 5}, kFloat32), {2}),
                    Contains("max_pool2d") && Contains("[5, 5]"));
  CHECK_THROWS_WITH(max_pool2d(zeros({1, 0, 5, 5}, kFloat32), {2}), Contains("non-empty"));
  CHECK_THROWS_WITH(max_pool2d(zeros({1, 1, 4, 4}, kInt32), {2}),
                    Contains("max_pool2d") && Contains("int32"));
  CHECK_THROWS_WITH(avg_pool2d(x, {2}, {}, {0}, false, true, 0), Contains("divisor_override"));

  CHECK_THROWS_WITH(im2col(x, {6, 6}), Contains("im2col") && Contains("sliding blocks"));
  CHECK_THROWS_WITH(im2col(zeros({2, 3}, kFloat32), {1}), Contains("im2col") && Contains("[2, 3]"));
  CHECK_THROWS_WITH(col2im(zeros({1, 10, 9}, kFloat32), {5, 5}, {3, 3}),
                    Contains("col2im") && Contains("divisible"));
  CHECK_THROWS_WITH(col2im(zeros({1, 9, 10}, kFloat32), {5, 5}, {3, 3}),
                    Contains("col2im") && Contains("3 * 3 = 9"));
  CHECK_THROWS_WITH(col2im(zeros({1, 9, 9}, kFloat32), {0, 5}, {3, 3}),
                    Contains("output_size must be positive"));
}

namespace {

// One conv2d configuration for the backward tests.
struct ConvCase {
  Shape x_shape, w_shape, stride, padding, dilation;
  int64_t groups;
  bool bias;
};

// d(sum(conv2d(...) * r)) / d{x, w, b}, with create_graph (the differentiable im2col formula)
// or without (the fused native::conv2d_backward kernel). Only the tensors flagged in `want`
// require grad.
Tensors conv_grads(const ConvCase& c, DType dt, bool create_graph, std::array<bool, 3> want,
                   int threads) {
  ThreadCountGuard guard;
  set_num_threads(threads);
  Tensor x = randn64(c.x_shape, 31).to(dt).requires_grad_(want[0]);
  Tensor w = randn64(c.w_shape, 32).to(dt).requires_grad_(want[1]);
  Tensor b = c.bias ? randn64({c.w_shape[0]}, 33).to(dt).requires_grad_(want[2]) : Tensor();
  Tensor y = conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
  Tensor r = randn64(y.sizes(), 34).to(dt);
  Tensors inputs;
  if (want[0]) inputs.push_back(x);
  if (want[1]) inputs.push_back(w);
  if (want[2] && c.bias) inputs.push_back(b);
  return autograd::grad({(y * r).sum()}, inputs, {}, std::nullopt, create_graph);
}

}  // namespace

TEST_CASE("conv2d backward: the fused kernel matches the differentiable formula", "[conv]") {
  const std::vector<ConvCase> cases = {
      {{5, 4, 9, 8}, {6, 4, 3, 3}, {2}, {1}, {1}, 1, true},           // stride 2, padding
      {{1, 4, 11, 10}, {6, 2, 3, 2}, {1, 2}, {2, 1}, {2}, 2, false},  // groups 2, dilation 2
      {{5, 3, 7, 9}, {4, 3, 2, 4}, {1}, {0, 2}, {1, 2}, 1, true},     // non-square kernel
      {{5, 6, 5, 5}, {6, 3, 1, 1}, {1}, {0}, {1}, 2, true},           // pointwise (1x1)
      {{3, 5, 5}, {2, 3, 3, 3}, {1}, {1}, {1}, 1, true},              // unbatched
      {{2, 2, 6, 7}, {3, 2, 2, 3}, {3, 2}, {3, 4}, {2}, 1, true},     // taps beyond the image
      // Stride 1: float32 takes Note [Implicit im2col] (kernels/cpu/conv_utils.h).
      {{4, 3, 7, 6}, {5, 3, 3, 3}, {1}, {1}, {1}, 1, true},        // padding 1
      {{3, 4, 6, 9}, {4, 2, 2, 3}, {1}, {0, 2}, {2, 1}, 2, true},  // groups, dilation
      {{3, 1, 8, 8}, {32, 1, 3, 3}, {1}, {1}, {1}, 1, true},       // K = 9: transposed dW
      {{2, 3, 1, 9}, {4, 3, 1, 4}, {1}, {0, 3}, {1}, 1, false},    // one-row images
  };
  for (DType dt : {kFloat32, kFloat64}) {
    const double tol = dt == kFloat32 ? 1e-4 : 1e-11;
    for (size_t i = 0; i < cases.size(); ++i) {
      for (int threads : {1, 2}) {
        CAPTURE(i, dtype_name(dt), threads);
        const ConvCase& c = cases[i];
        Tensors slow = conv_grads(c, dt, /*create_graph=*/true, {true, true, true}, threads);
        Tensors fast = conv_grads(c, dt, /*create_graph=*/false, {true, true, true}, threads);
        REQUIRE(slow.size() == fast.size());
        for (size_t k = 0; k < slow.size(); ++k) {
          CHECK(fast[k].dtype() == dt);
          CHECK(max_abs_diff(fast[k], slow[k]) < tol);
        }
      }
    }
  }
}

TEST_CASE("conv2d backward: the fused kernel computes only the wanted gradients", "[conv]") {
  const ConvCase c{{4, 4, 6, 6}, {6, 2, 3, 3}, {1}, {1}, {1}, 2, true};
  // Input only (frozen weight), weight only (input without grad), bias only.
  for (std::array<bool, 3> want :
       {std::array<bool, 3>{true, false, false}, std::array<bool, 3>{false, true, true},
        std::array<bool, 3>{false, false, true}}) {
    CAPTURE(want[0], want[1], want[2]);
    Tensors slow = conv_grads(c, kFloat64, true, want, 2);
    Tensors fast = conv_grads(c, kFloat64, false, want, 2);
    REQUIRE(slow.size() == fast.size());
    for (size_t k = 0; k < slow.size(); ++k) CHECK(max_abs_diff(fast[k], slow[k]) < 1e-11);
  }
}

TEST_CASE("conv2d backward: native::conv2d_backward checks its arguments", "[conv]") {
  Tensor x = zeros({2, 4, 5, 5}, kFloat32), w = zeros({6, 4, 3, 3}, kFloat32);
  CHECK_THROWS_WITH(native::conv2d_backward(zeros({2, 6, 4, 4}, kFloat32), x, w, {1}, {0}, {1}, 1,
                                            {true, true, true}),
                    Contains("conv2d_backward") && Contains("[2, 6, 3, 3]"));
  CHECK_THROWS_WITH(native::conv2d_backward(zeros({2, 6, 3, 3}, kFloat64), x, w, {1}, {0}, {1}, 1,
                                            {true, true, true}),
                    Contains("conv2d_backward") && Contains("float64"));
  // An empty batch gives zero weight and bias gradients.
  auto [gx, gw, gb] =
      native::conv2d_backward(zeros({0, 6, 3, 3}, kFloat32), zeros({0, 4, 5, 5}, kFloat32), w, {1},
                              {0}, {1}, 1, {true, true, true});
  CHECK(gx.sizes() == Shape{0, 4, 5, 5});
  CHECK(max_abs_diff(gw, zeros({6, 4, 3, 3}, kFloat32)) == 0.0);
  CHECK(max_abs_diff(gb, zeros({6}, kFloat32)) == 0.0);
  // A float16 call computes in float32 and keeps the dtype.
  auto [hx, hw, hb] =
      native::conv2d_backward(zeros({2, 6, 3, 3}, kFloat16), x.to(kFloat16), w.to(kFloat16), {1},
                              {0}, {1}, 1, {true, false, true});
  CHECK(hx.dtype() == kFloat16);
  CHECK(!hw.defined());
  CHECK(hb.dtype() == kFloat16);
}

namespace {

// The input gradient of max pooling through autograd: the scatter formula when create_graph is
// set, the one-pass native kernel otherwise.
Tensor pool_grad(const Tensor& x0, const Shape& k, const Shape& s, const Shape& p, const Shape& d,
                 bool ceil_mode, bool create_graph, int threads) {
  ThreadCountGuard guard;
  set_num_threads(threads);
  Tensor x = x0.detach().requires_grad_(true);
  Tensor y = max_pool2d(x, k, s, p, d, ceil_mode);
  Generator gen(77);
  Tensor r = randn(y.sizes(), x.dtype(), &gen);
  return autograd::grad({(y * r).sum()}, {x}, {}, std::nullopt, create_graph)[0].detach();
}

}  // namespace

TEST_CASE("max_pool2d backward: the one-pass kernel matches the scatter formula", "[conv]") {
  struct PoolCase {
    Shape in, k, s, p, d;
    bool ceil_mode;
  };
  const std::vector<PoolCase> cases = {
      {{3, 4, 8, 6}, {2, 2}, {2, 2}, {0}, {1}, false},    // the 2x2 fast path
      {{2, 3, 7, 7}, {3, 3}, {1, 1}, {1}, {1}, false},    // overlapping windows share maxima
      {{2, 2, 9, 8}, {3, 2}, {2, 3}, {1, 0}, {2}, true},  // dilation, ceil_mode
      {{3, 6, 5}, {2, 2}, {1, 2}, {0}, {1}, true},        // unbatched
  };
  for (DType dt : {kFloat32, kFloat64}) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const PoolCase& c = cases[i];
      // Rounded values: ties, so that windows and taps share maxima.
      Tensor x = (randn64(c.in, 500 + i) * 2.0).round().to(dt);
      for (int threads : {1, 2}) {
        CAPTURE(i, dtype_name(dt), threads);
        Tensor slow = pool_grad(x, c.k, c.s, c.p, c.d, c.ceil_mode, true, threads);
        Tensor fast = pool_grad(x, c.k, c.s, c.p, c.d, c.ceil_mode, false, threads);
        CHECK(fast.dtype() == dt);
        CHECK(max_abs_diff(fast, slow) < (dt == kFloat32 ? 1e-5 : 1e-12));
      }
    }
  }
}

TEST_CASE("max_pool2d backward: native::max_pool2d_backward checks its arguments", "[conv]") {
  Tensor g = ones({1, 2, 2, 2}, kFloat32);
  Tensor idx = zeros({1, 2, 2, 2}, kInt64);
  // Every output's gradient lands on position 0 of its plane.
  Tensor gx = native::max_pool2d_backward(g, idx, {1, 2, 4, 4});
  CHECK(gx.sizes() == Shape{1, 2, 4, 4});
  CHECK(values(gx)[0] == 4.0);
  CHECK(values(gx)[16] == 4.0);
  CHECK(values(gx.sum())[0] == 8.0);
  CHECK_THROWS_WITH(native::max_pool2d_backward(g, full({1, 2, 2, 2}, 16, kInt64), {1, 2, 4, 4}),
                    Contains("max_pool2d_backward") && Contains("outside its plane"));
  CHECK_THROWS_WITH(native::max_pool2d_backward(g, full({1, 2, 2, 2}, -1, kInt64), {1, 2, 4, 4}),
                    Contains("max_pool2d_backward") && Contains("index -1"));
  CHECK_THROWS_WITH(native::max_pool2d_backward(g, zeros({1, 2, 2, 2}, kInt32), {1, 2, 4, 4}),
                    Contains("max_pool2d_backward") && Contains("int64"));
  CHECK_THROWS_WITH(native::max_pool2d_backward(g, zeros({1, 2, 2, 3}, kInt64), {1, 2, 4, 4}),
                    Contains("max_pool2d_backward") && Contains("[1, 2, 2, 3]"));
  CHECK_THROWS_WITH(native::max_pool2d_backward(g, idx, {1, 3, 4, 4}),
                    Contains("max_pool2d_backward") && Contains("[1, 3, 4, 4]"));
}

TEST_CASE("conv2d: stride-1 float32 (implicit im2col) equals the float64 product", "[conv]") {
  // float64 always builds the im2col matrix; float32 with stride 1 reads the padded image
  // through line pointers (Note [Implicit im2col]), with whole images per task.
  struct Case {
    Shape x, w, padding, dilation;
    int64_t groups;
  };
  const std::vector<Case> cases = {
      {{4, 3, 14, 14}, {8, 3, 3, 3}, {1}, {1}, 1},   // the CNN's shape, padding 1
      {{3, 2, 9, 7}, {5, 2, 3, 2}, {0}, {1}, 1},     // no padding, non-square kernel
      {{2, 4, 8, 8}, {6, 2, 3, 3}, {2}, {2}, 2},     // groups, dilation 2
      {{3, 1, 5, 6}, {4, 1, 5, 1}, {3, 0}, {1}, 1},  // padding wider than half the kernel
      {{2, 2, 1, 1}, {3, 2, 3, 3}, {1}, {1}, 1},     // 1x1 images
  };
  for (const Case& c : cases) {
    for (int threads : {1, 2}) {
      ThreadCountGuard guard;
      set_num_threads(threads);
      Tensor x = randn64(c.x, 41), w = randn64(c.w, 42), b = randn64({c.w[0]}, 43);
      Tensor want = conv2d(x, w, b, {1}, c.padding, c.dilation, c.groups);
      Tensor got = conv2d(x.to(kFloat32), w.to(kFloat32), b.to(kFloat32), {1}, c.padding,
                          c.dilation, c.groups);
      CAPTURE(c.x, c.w, threads);
      CHECK(max_abs_diff(got.to(kFloat64), want) < 1e-4);
    }
  }
}

TEST_CASE("conv2d: non-finite values reach the same outputs and gradients as float64", "[conv]") {
  // The implicit grid's extra columns read neighbouring pixels and are multiplied by zeros in
  // the weight and input gradients: an infinite pixel or weight must not turn those zeros into
  // NaN where the true gradient is finite (those images take the explicit path).
  for (int which : {0, 1}) {  // an infinite input pixel, or an infinite weight
    Tensor x = randn64({3, 2, 6, 6}, 51), w = randn64({4, 2, 3, 3}, 52);
    {
      NoGradGuard ng;
      if (which == 0) x[1][0][2][5].fill_(kInf);  // last column: read by the next row's extras
      if (which == 1) w[2][1][0][0].fill_(kInf);
    }
    Tensor r = randn64({3, 4, 6, 6}, 53);
    Tensors grads[2];
    for (DType dt : {kFloat64, kFloat32}) {
      Tensor xd = x.to(dt).requires_grad_(true), wd = w.to(dt).requires_grad_(true);
      Tensor y = conv2d(xd, wd, Tensor(), {1}, {1});
      Tensor loss = (y * r.to(dt)).sum();
      Tensors g = autograd::grad({loss}, {xd, wd});
      grads[dt == kFloat32] = {y.detach().to(kFloat64), g[0].to(kFloat64), g[1].to(kFloat64)};
    }
    for (size_t k = 0; k < 3; ++k) {
      std::vector<double> a = values(grads[0][k]), b = values(grads[1][k]);
      REQUIRE(a.size() == b.size());
      int mismatches = 0, non_finite = 0;
      for (size_t e = 0; e < a.size(); ++e) {
        non_finite += !std::isfinite(a[e]);
        const bool same = std::isnan(a[e])   ? std::isnan(b[e])
                          : std::isinf(a[e]) ? a[e] == b[e]
                                             : std::abs(a[e] - b[e]) < 1e-3;
        mismatches += !same;
      }
      CAPTURE(which, k);
      CHECK(mismatches == 0);
      if (k == 0) CHECK(non_finite > 0);  // the infinity does reach the output
    }
  }
}
