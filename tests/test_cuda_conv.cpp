// The CUDA convolution and pooling kernels (kernels/cuda/conv.cu, im2col.cu, pool.cu) against
// the CPU: conv2d forward and backward (Note [Implicit GEMM convolution]) over stride / padding /
// dilation / groups at odd sizes, non-contiguous inputs, every floating dtype, split-K weight
// gradients, and bit-identical reruns; im2col / col2im and the pooling kernels bit for bit
// (ties, NaN, -inf padding, ceil_mode, overlapping windows); the autograd path on cuda. Every
// case is tagged [cuda] and returns with the reason where there is no device. Sizes stay small:
// the simulator runs a thread-instruction in tens of nanoseconds.

#include <ember/ember.h>

#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/conv_backend.h"
#include "core/cuda.h"
#include "cuda_test_util.h"
#include "test_util.h"

using namespace ember;
using Catch::Contains;
using ember::testing::check_deferred_error;
using ember::testing::have_cuda;
using ember::testing::kInf;
using ember::testing::kNaN;
using ember::testing::launch_blocking_env;
using ember::testing::values;

namespace {

const Device kDev = Device::cuda(0);

Tensor rnd(const Shape& shape, DType dt, uint64_t seed) {
  Generator g(seed);
  return randn(shape, kFloat32, &g).to(dt);
}

// The same sizes, dtype and bits (NaN equal to NaN); `dev` is copied back to the cpu.
bool same(const Tensor& dev, const Tensor& cpu) {
  return (dev.device() == kDev || dev.numel() == 0) && ember::testing::same_bits(dev, cpu);
}

// max |dev - cpu| / (1 + max |cpu|), after a check of sizes, dtype and device.
double rel_diff(const Tensor& dev, const Tensor& cpu) {
  REQUIRE(dev.device() == kDev);
  REQUIRE(dev.sizes() == cpu.sizes());
  REQUIRE(dev.dtype() == cpu.dtype());
  const std::vector<double> a = values(dev.cpu()), b = values(cpu);
  double m = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    m = std::max(m, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return m / (1 + scale);
}

double tol_for(DType dt) {
  switch (dt) {
    case kFloat64:
      return 1e-12;
    case kFloat32:
      return 1e-5;
    case kFloat16:
      return 2e-3;
    default:
      return 1.6e-2;  // bfloat16
  }
}

// One conv2d configuration.
struct ConvCase {
  Shape x_shape, w_shape, stride, padding, dilation;
  int64_t groups;
  bool bias;
};

const std::vector<ConvCase> kConvCases = {
    {{2, 3, 7, 6}, {5, 3, 3, 3}, {1}, {1}, {1}, 1, true},           // padding 1, odd sizes
    {{3, 4, 9, 8}, {6, 4, 3, 3}, {2}, {1}, {1}, 1, true},           // stride 2
    {{1, 4, 11, 10}, {6, 2, 3, 2}, {1, 2}, {2, 1}, {2}, 2, false},  // groups 2, dilation 2
    {{2, 3, 7, 9}, {4, 3, 2, 4}, {1}, {0, 2}, {1, 2}, 1, true},     // non-square kernel
    {{2, 6, 5, 5}, {6, 1, 3, 3}, {1}, {1}, {1}, 6, true},           // depthwise
    {{1, 2, 5, 5}, {70, 2, 1, 1}, {1}, {0}, {1}, 1, true},          // pointwise, 2 column tiles
    {{2, 2, 6, 7}, {3, 2, 2, 3}, {3, 2}, {3, 4}, {2}, 1, true},     // taps beyond the image
    {{3, 5, 5}, {2, 3, 3, 3}, {1}, {1}, {1}, 1, true},              // unbatched
    {{2, 3, 12, 12}, {4, 3, 5, 5}, {1}, {2}, {1}, 1, true},         // K = 75: several k-steps
};

}  // namespace

TEST_CASE("cuda conv2d forward matches the cpu", "[cuda]") {
  if (!have_cuda()) return;
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    for (size_t i = 0; i < kConvCases.size(); ++i) {
      const ConvCase& c = kConvCases[i];
      CAPTURE(i, dtype_name(dt));
      Tensor x = rnd(c.x_shape, dt, 10 + i), w = rnd(c.w_shape, dt, 20 + i);
      Tensor b = c.bias ? rnd({c.w_shape[0]}, dt, 30 + i) : Tensor();
      Tensor want = native::conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
      Tensor got = native::conv2d(x.to(kDev), w.to(kDev), b.defined() ? b.to(kDev) : b, c.stride,
                                  c.padding, c.dilation, c.groups);
      CHECK(rel_diff(got, want) < tol_for(dt));
    }
  }
}

TEST_CASE("cuda conv2d reads non-contiguous inputs", "[cuda]") {
  if (!have_cuda()) return;
  // x (2, 3, 6, 7) as a transposed view of (2, 3, 7, 6); w with a permuted layout.
  Tensor x = rnd({2, 3, 7, 6}, kFloat32, 1).transpose(2, 3);
  Tensor w = rnd({3, 3, 4, 2}, kFloat32, 2).permute({1, 0, 2, 3});  // (4, 3, 3, 2)
  REQUIRE(!x.is_contiguous());
  REQUIRE(!w.is_contiguous());
  Tensor want = native::conv2d(x, w, {}, {1}, {1}, {1}, 1);
  Tensor got = native::conv2d(x.to(kDev).transpose(2, 3).contiguous().transpose(2, 3), w.to(kDev),
                              {}, {1}, {1}, {1}, 1);
  CHECK(rel_diff(got, want) < 1e-5);
  auto [gx, gw, gb] =
      native::conv2d_backward(got, x.to(kDev), w.to(kDev), {1}, {1}, {1}, 1, {true, true, true});
  auto [cx, cw, cb] = native::conv2d_backward(want, x, w, {1}, {1}, {1}, 1, {true, true, true});
  CHECK(rel_diff(gx, cx) < 1e-5);
  CHECK(rel_diff(gw, cw) < 1e-5);
  CHECK(rel_diff(gb, cb) < 1e-5);
}

TEST_CASE("cuda conv2d backward matches the cpu", "[cuda]") {
  if (!have_cuda()) return;
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    for (size_t i = 0; i < kConvCases.size(); ++i) {
      const ConvCase& c = kConvCases[i];
      CAPTURE(i, dtype_name(dt));
      Tensor x = rnd(c.x_shape, dt, 10 + i), w = rnd(c.w_shape, dt, 20 + i);
      Tensor y = native::conv2d(x, w, {}, c.stride, c.padding, c.dilation, c.groups);
      Tensor gy = rnd(y.sizes(), dt, 40 + i);
      auto want = native::conv2d_backward(gy, x, w, c.stride, c.padding, c.dilation, c.groups,
                                          {true, true, c.bias});
      auto got = native::conv2d_backward(gy.to(kDev), x.to(kDev), w.to(kDev), c.stride, c.padding,
                                         c.dilation, c.groups, {true, true, c.bias});
      CHECK(rel_diff(std::get<0>(got), std::get<0>(want)) < tol_for(dt));
      CHECK(rel_diff(std::get<1>(got), std::get<1>(want)) < tol_for(dt));
      if (c.bias) CHECK(rel_diff(std::get<2>(got), std::get<2>(want)) < tol_for(dt));
    }
  }
}

TEST_CASE("cuda conv2d backward: partial masks, split weight gradient, bit-identical reruns",
          "[cuda]") {
  if (!have_cuda()) return;
  // N * out_h * out_w = 2 * 18 * 17 = 612 > 256: the weight gradient splits its depth.
  Tensor x = rnd({2, 3, 18, 17}, kFloat32, 3), w = rnd({4, 3, 3, 3}, kFloat32, 4);
  Tensor gy = rnd({2, 4, 18, 17}, kFloat32, 5);
  const Tensor xd = x.to(kDev), wd = w.to(kDev), gyd = gy.to(kDev);
  auto want = native::conv2d_backward(gy, x, w, {1}, {1}, {1}, 1, {true, true, true});
  auto a = native::conv2d_backward(gyd, xd, wd, {1}, {1}, {1}, 1, {true, true, true});
  auto b = native::conv2d_backward(gyd, xd, wd, {1}, {1}, {1}, 1, {true, true, true});
  CHECK(rel_diff(std::get<1>(a), std::get<1>(want)) < 1e-5);
  CHECK(same(std::get<0>(a), std::get<0>(b).cpu()));
  CHECK(same(std::get<1>(a), std::get<1>(b).cpu()));
  CHECK(same(std::get<2>(a), std::get<2>(b).cpu()));
  // Only the input gradient: the weight's values are read, the input's are not.
  auto only_x = native::conv2d_backward(gyd, xd, wd, {1}, {1}, {1}, 1, {true, false, false});
  CHECK(same(std::get<0>(only_x), std::get<0>(a).cpu()));
  CHECK(!std::get<1>(only_x).defined());
  CHECK(!std::get<2>(only_x).defined());
  auto only_w = native::conv2d_backward(gyd, xd, wd, {1}, {1}, {1}, 1, {false, true, false});
  CHECK(!std::get<0>(only_w).defined());
  CHECK(same(std::get<1>(only_w), std::get<1>(a).cpu()));
}

TEST_CASE("cuda conv2d and pooling backward through autograd match the cpu", "[cuda]") {
  if (!have_cuda()) return;
  auto grads = [](Device dev) {
    Tensor x = rnd({2, 3, 9, 9}, kFloat32, 6).to(dev).requires_grad_(true);
    Tensor w = rnd({4, 3, 3, 3}, kFloat32, 7).to(dev).requires_grad_(true);
    Tensor b = rnd({4}, kFloat32, 8).to(dev).requires_grad_(true);
    Tensor y = conv2d(x, w, b, {1}, {1}, {1}, 1);
    Tensor p = max_pool2d(y, {2, 2}) + avg_pool2d(y, {3, 3}, {2}, {1}).mean();
    Tensor r = rnd(p.sizes(), kFloat32, 9).to(dev);
    return autograd::grad({(p * r).sum()}, {x, w, b});
  };
  const Tensors want = grads(kCPU), got = grads(kDev);
  REQUIRE(got.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(rel_diff(got[i], want[i]) < 1e-5);
}

TEST_CASE("cuda im2col and col2im match the cpu bit for bit", "[cuda]") {
  if (!have_cuda()) return;
  struct Case {
    Shape x_shape, k, d, p, s;
  };
  const std::vector<Case> cases = {
      {{2, 3, 7, 6}, {3, 3}, {1}, {1}, {1}},
      {{1, 2, 9, 8}, {2, 3}, {2, 1}, {1, 2}, {2, 3}},
      {{3, 5, 4}, {3}, {1}, {0}, {1}},     // unbatched
      {{1, 1, 5, 5}, {2}, {3}, {3}, {2}},  // taps beyond the image
  };
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      CAPTURE(i, dtype_name(dt));
      Tensor x = rnd(c.x_shape, dt, 50 + i);
      Tensor cols = native::im2col(x, c.k, c.d, c.p, c.s);
      CHECK(same(native::im2col(x.to(kDev), c.k, c.d, c.p, c.s), cols));
      // A transposed (non-contiguous) view of the columns folds to the same image.
      Tensor back = native::col2im(cols, {c.x_shape[c.x_shape.size() - 2], c.x_shape.back()}, c.k,
                                   c.d, c.p, c.s);
      Tensor dev_cols = cols.to(kDev).transpose(-1, -2).contiguous().transpose(-1, -2);
      Tensor dev_back = native::col2im(
          dev_cols, {c.x_shape[c.x_shape.size() - 2], c.x_shape.back()}, c.k, c.d, c.p, c.s);
      CHECK(same(dev_back, back));
    }
  }
}

TEST_CASE("cuda max_pool2d matches the cpu: ties, NaN, -inf padding, ceil_mode", "[cuda]") {
  if (!have_cuda()) return;
  struct Case {
    Shape k, s, p, d;
    bool ceil;
  };
  const std::vector<Case> cases = {
      {{2}, {}, {0}, {1}, false},   // 2x2, stride 2
      {{3}, {1}, {1}, {1}, false},  // overlapping windows, padding
      {{3, 2}, {2, 1}, {1, 0}, {1, 2}, false},
      {{3}, {2}, {1}, {1}, true},  // ceil_mode
      {{2}, {2}, {1}, {2}, true},
  };
  Generator gen(11);
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    // Small integers: many ties inside a window. All negative in the second image, so the
    // -inf padding must never win.
    Tensor xd = randint(-3, 3, {2, 3, 7, 9}, kInt64, &gen).to(kFloat64);
    double* p = xd.data_ptr<double>();
    for (int64_t e = xd.numel() / 2; e < xd.numel(); ++e) p[e] -= 10;
    p[1 * 63 + 2 * 9 + 3] = kNaN;
    p[xd.numel() - 1] = -kInf;  // a corner window of -inf values and padding
    p[xd.numel() - 2] = -kInf;
    p[xd.numel() - 10] = -kInf;
    Tensor x = xd.to(dt);
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      CAPTURE(i, dtype_name(dt));
      auto [v, idx] = native::max_pool2d_with_indices(x, c.k, c.s, c.p, c.d, c.ceil);
      auto [dv, didx] = native::max_pool2d_with_indices(x.to(kDev), c.k, c.s, c.p, c.d, c.ceil);
      CHECK(same(dv, v));
      CHECK(same(didx, idx));
      // Overlapping windows share maxima: the backward adds them in the CPU's order.
      Tensor gy = rnd(v.sizes(), dt, 60 + i);
      Tensor gx = native::max_pool2d_backward(gy, idx, x.sizes());
      Tensor dgx = native::max_pool2d_backward(gy.to(kDev), didx, x.sizes());
      CHECK(same(dgx, gx));
      CHECK(same(native::max_pool2d_backward(gy.to(kDev), didx, x.sizes()), dgx.cpu()));
    }
  }
}

TEST_CASE("cuda max_pool2d_backward rejects an index outside its plane",
          "[cuda][launch_blocking]") {
  if (!have_cuda()) return;
  Tensor gy = ones({1, 2, 2, 2}, kFloat32).to(kDev);
  Tensor idx = zeros({1, 2, 2, 2}, kInt64);
  idx.data_ptr<int64_t>()[5] = 16;  // the plane is 4 x 4
  // Checked on the device and raised at the next synchronisation (Note [Deferred device checks]).
  const Tensor didx = idx.to(kDev);
  check_deferred_error(
      [&] {
        return native::max_pool2d_backward(gy, didx, {1, 2, 4, 4});
      },
      Catch::StartsWith("max_pool2d_backward: index 16 at output position 5 lies "
                        "outside its plane of 16 elements (input shape [1, 2, "
                        "4, 4])"));
}

TEST_CASE("cuda avg_pool2d matches the cpu bit for bit", "[cuda]") {
  if (!have_cuda()) return;
  struct Case {
    Shape k, s, p;
    bool ceil, include_pad;
    std::optional<int64_t> divisor;
  };
  const std::vector<Case> cases = {
      {{2}, {}, {0}, false, true, std::nullopt},
      {{3}, {2}, {1}, false, true, std::nullopt},
      {{3}, {2}, {1}, false, false, std::nullopt},
      {{3, 2}, {2, 1}, {1, 1}, true, false, std::nullopt},
      {{3}, {2}, {1}, true, true, std::nullopt},
      {{2}, {1}, {1}, false, true, int64_t{3}},
  };
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    Tensor x = rnd({2, 3, 7, 8}, dt, 70);
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      CAPTURE(i, dtype_name(dt));
      Tensor want = native::avg_pool2d(x, c.k, c.s, c.p, c.ceil, c.include_pad, c.divisor);
      Tensor got = native::avg_pool2d(x.to(kDev), c.k, c.s, c.p, c.ceil, c.include_pad, c.divisor);
      CHECK(same(got, want));
    }
  }
}

TEST_CASE("cuda conv backend switch: ember, auto and cudnn", "[cuda]") {
  CHECK(parse_conv_backend("auto") == ConvBackend::automatic);
  CHECK_THROWS_WITH(parse_conv_backend("fast"), Contains("EMBER_CONV") && Contains("fast"));
  if (!have_cuda()) return;
  struct Restore {
    ConvBackend previous = conv_backend();
    ~Restore() { set_conv_backend(previous); }
  } restore;
  Tensor x = rnd({2, 3, 6, 5}, kFloat32, 80).to(kDev), w = rnd({4, 3, 3, 3}, kFloat32, 81).to(kDev);
  Tensor b = rnd({4}, kFloat32, 82).to(kDev);
  set_conv_backend(ConvBackend::ember);
  CHECK(std::string(conv_backend_name(conv_backend())) == "ember");
  const Tensor want = native::conv2d(x, w, b, {1}, {1}, {1}, 1);
  set_conv_backend(ConvBackend::automatic);
  const Tensor got = native::conv2d(x, w, b, {1}, {1}, {1}, 1);
  auto grads = native::conv2d_backward(got, x, w, {1}, {1}, {1}, 1, {true, true, true});
  if (cuda::is_simulated()) {
    // No cuDNN in a simulator build: auto runs ember, cudnn is an error.
    CHECK(same(got, want.cpu()));
    set_conv_backend(ConvBackend::cudnn);
    CHECK_THROWS_WITH(native::conv2d(x, w, b, {1}, {1}, {1}, 1),
                      Contains("cudnn") && Contains("EMBER_CUDA=real"));
    CHECK_THROWS_WITH(native::conv2d_backward(got, x, w, {1}, {1}, {1}, 1, {true, false, false}),
                      Contains("cudnn"));
  } else {
    // A real GPU: cuDNN against ember.
    CHECK(rel_diff(got, want.cpu()) < 1e-5);
    set_conv_backend(ConvBackend::cudnn);
    const Tensor ref = native::conv2d(x, w, b, {1}, {1}, {1}, 1);
    CHECK(rel_diff(ref, want.cpu()) < 1e-5);
    auto ref_grads = native::conv2d_backward(got, x, w, {1}, {1}, {1}, 1, {true, true, true});
    CHECK(rel_diff(std::get<0>(ref_grads), std::get<0>(grads).cpu()) < 1e-5);
    CHECK(rel_diff(std::get<1>(ref_grads), std::get<1>(grads).cpu()) < 1e-5);
    CHECK(rel_diff(std::get<2>(ref_grads), std::get<2>(grads).cpu()) < 1e-5);
  }
}
